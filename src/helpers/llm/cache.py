"""Persistent, content-addressed cache of LLM responses, shared by all notebooks and runs.

SQLite, one row per key; a row is written in one transaction after a successful call only, so a
killed process or a failed call never leaves a half-written or failed entry.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
from pathlib import Path

from helpers import paths


def cache_key(payload: dict) -> str:
    """SHA-256 of the canonical JSON of everything that determines the answer."""
    canonical = json.dumps(payload, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


class ResponseCache:
    def __init__(self, path: str | Path | None = None):
        self.path = Path(path or paths.CACHE_DIR / "llm.sqlite")
        paths.private_sqlite(self.path)  # prompts and answers: the owner's alone (0600 in a 0700 folder)
        self._lock = threading.Lock()
        with self._connect() as db:
            db.execute("PRAGMA journal_mode=WAL")
            db.execute(
                "CREATE TABLE IF NOT EXISTS responses (key TEXT PRIMARY KEY, provider TEXT, model TEXT, "
                "text TEXT NOT NULL, input_tokens INTEGER, output_tokens INTEGER, "
                "created TEXT DEFAULT CURRENT_TIMESTAMP)"
            )

    def _connect(self) -> sqlite3.Connection:
        return sqlite3.connect(self.path, timeout=30)

    def get(self, key: str) -> dict | None:
        with self._lock, self._connect() as db:
            row = db.execute("SELECT text, input_tokens, output_tokens FROM responses WHERE key = ?", (key,)).fetchone()
        if row is None:
            return None
        return {"text": row[0], "input_tokens": row[1], "output_tokens": row[2]}

    def put(self, key: str, *, provider: str, model: str, text: str, input_tokens: int, output_tokens: int) -> None:
        if not isinstance(text, str):
            raise TypeError("only a complete text response is cached")
        with self._lock, self._connect() as db:  # the with-block commits atomically
            db.execute(
                "INSERT OR REPLACE INTO responses (key, provider, model, text, input_tokens, "
                "output_tokens) VALUES (?, ?, ?, ?, ?, ?)",
                (key, provider, model, text, input_tokens, output_tokens),
            )

    def __len__(self) -> int:
        with self._lock, self._connect() as db:
            return db.execute("SELECT COUNT(*) FROM responses").fetchone()[0]
