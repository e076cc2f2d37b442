"""A run directory that survives being killed: records are appended to a JSONL file one line at
a time (flushed and fsynced), a torn last line is dropped on reopen, and tables are written to a
temporary file and renamed. Finished work is found by key and never redone; a record that holds
an `error` is not finished, so a rerun redoes it (the newer line of a key wins on reopen).

Keys, defined here only:
  answer|<architecture>|<llm>|<qid>                 retrieval + generation of one sample
  score|<judge>|<answer key>|<digest of the answer>  one judge's scores of that exact answer
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TypedDict

import pandas as pd

from helpers.redaction import redact


class AnswerRow(TypedDict, total=False):
    """One `answer` record of records.jsonl, as the runner writes it (a JSON object on disk; this is
    its type for readers and checkers). Every key is written for every sample unless marked: a
    failed sample has `error` and no answer, a retrieval-only run no generation keys."""

    key: str  # answer|ARCHITECTURE|LLM|QID (answer_key)
    kind: str  # "answer"
    architecture: str
    llm: str  # the config's name of the generating LLM
    qid: str
    question: str
    answer: str | None  # None: failed, or a retrieval-only run
    contexts: list[dict]  # rank, doc_id, score, text (as prompted), truncated
    retrieved: list[str]  # the top k doc ids, before any context budget
    retrieval_s: float
    latency_s: float  # the whole sample: retrieval, every LLM call, generation
    llm_calls: int  # calls this sample took (HyDE and multi-query take more than one)
    llm_requests: int
    cache_hits: int
    input_tokens: int
    output_tokens: int
    max_output_tokens: int
    cost_usd: float
    # generation (helpers.generation.answering.AnswerRecord's fields)
    language: str
    dropped: list[str]  # retrieved doc ids left out by the token budget
    context_tokens_est: int
    cached: bool
    provider: str
    model: str
    quote: str | None
    at_max_tokens: bool
    generation_s: float
    pages: list  # each context's page, where the corpus has pages
    sources: list[str]  # only for a user's own files: each context's file and place
    retrieval_fallback: str  # only where HyDE or multi-query fell back to the plain query
    error: str | None  # only on a failed sample
    error_kind: str | None


def answer_key(architecture: str, llm: str, qid: str) -> str:
    return f"answer|{architecture}|{llm}|{qid}"


def score_key(judge: str, answer: Mapping[str, Any]) -> str:
    """Keyed by the answer's content too: an answer redone after a failure is scored anew, and
    the scores of the failed attempt are never mistaken for the new answer's."""
    content = json.dumps(
        [answer.get("answer"), [c.get("text") for c in answer.get("contexts") or []]], ensure_ascii=False
    )
    return f"score|{judge}|{answer['key']}|{hashlib.sha256(content.encode()).hexdigest()[:12]}"


class RunStore:
    def __init__(self, directory: str | Path):
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.path = self.directory / "records.jsonl"
        self.records: dict[str, dict] = {}
        self._load()

    def _load(self) -> None:
        if not self.path.exists():
            return
        data = self.path.read_bytes()
        good_end = 0
        for line in data.splitlines(keepends=True):
            if not line.endswith(b"\n"):
                break  # torn write: the process died mid-line
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                break
            self.records[record["key"]] = record
            good_end += len(line)
        if good_end < len(data):
            with open(self.path, "r+b") as fh:
                fh.truncate(good_end)

    def reload(self) -> None:
        """Read what another process (a Ray worker answering for this run) appended since."""
        self._load()

    def has(self, key: str) -> bool:
        return key in self.records

    def finished(self, key: str) -> bool:
        """Recorded without an error: a failed sample is redone by the next run."""
        record = self.records.get(key)
        return record is not None and not record.get("error")

    def add(self, key: str, record: dict) -> dict:
        record = {"key": key, **record}
        # redacted: an error text may carry an API key a server echoed back (helpers.llm.keys)
        text = json.dumps(record, ensure_ascii=False, default=str)
        if (clean := redact(text)) != text:
            text, record = clean, json.loads(clean)
        line = text + "\n"
        with open(self.path, "a", encoding="utf-8") as fh:
            fh.write(line)
            fh.flush()
            os.fsync(fh.fileno())
        self.records[key] = record
        return record

    def of_kind(self, kind: str) -> list[dict]:
        return [r for r in self.records.values() if r.get("kind") == kind]

    def write_table(self, frame: pd.DataFrame, name: str) -> Path:
        target = self.directory / name
        tmp = target.with_name(target.name + ".tmp")
        if name.endswith(".parquet"):
            frame.to_parquet(tmp, index=False)
        else:
            frame.to_csv(tmp, index=False)
        tmp.replace(target)
        return target

    def write_json(self, obj, name: str) -> Path:
        target = self.directory / name
        tmp = target.with_name(target.name + ".tmp")
        tmp.write_text(redact(json.dumps(obj, indent=2, ensure_ascii=False, default=str)), encoding="utf-8")
        tmp.replace(target)
        return target
