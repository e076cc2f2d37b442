"""Where things live. Every path can be moved with an environment variable."""
from __future__ import annotations

import os
from pathlib import Path

# src/helpers/paths.py -> project root is two levels above src/
PROJECT_ROOT = Path(__file__).resolve().parents[2]


def _dir(env: str, default: Path) -> Path:
    return Path(os.environ.get(env, default)).expanduser().resolve()


DATA_DIR = _dir("HELPERS_DATA_DIR", PROJECT_ROOT / "data")
RAW_DIR = DATA_DIR / "raw"
PROCESSED_DIR = _dir("HELPERS_PROCESSED_DIR", DATA_DIR / "processed")
# Caches that every clone on this machine can share, outside the repository (overridable):
# a new clone or a `make clean` keeps what was embedded, answered or converted before.
SHARED_CACHE_DIR = _dir("HELPERS_SHARED_CACHE",
                        Path(os.environ.get("XDG_CACHE_HOME") or "~/.cache").expanduser() / "rag-workbench")
# content-addressed SQLite stores (embeddings by model and text hash, LLM replies by request
# hash): safe to share between processes and clones
CACHE_DIR = _dir("HELPERS_CACHE_DIR", SHARED_CACHE_DIR)
# vector indexes (Chroma folders) stay in the project: one writer per folder
INDEX_DIR = _dir("HELPERS_INDEX_DIR", DATA_DIR / "cache" / "indexes")
# models converted from package files (the e5 rebuilt for torch, the bundled GGUF as Q8_0):
# each carries the sha256 of its source, so a stale one is rebuilt, never used
DERIVED_MODELS_DIR = _dir("HELPERS_DERIVED_MODELS_DIR", SHARED_CACHE_DIR / "models")
# trained artefacts (reranker, TRACe judge, evidence model): movable, e.g. to share them between clones
MODELS_DIR = _dir("HELPERS_MODELS_DIR", DATA_DIR / "models")
# ../shared/data beside the project root: the offline copy of every public source.
SHARED_DATA_DIR = _dir("HELPERS_SHARED_DATA", PROJECT_ROOT.parent / "shared" / "data")
FIGURES_DIR = _dir("HELPERS_FIGURES_DIR", PROJECT_ROOT / "figures")
RESULTS_DIR = _dir("HELPERS_RESULTS_DIR", PROJECT_ROOT / "results")
CONFIGS_DIR = PROJECT_ROOT / "configs"
# the gitignored file API keys may come from (after the environment)
ENV_FILE = _dir("HELPERS_ENV_FILE", PROJECT_ROOT / ".env")


def write_json(path: str | Path, obj, *, echo: bool = False) -> Path:
    """Write `obj` as indented UTF-8 JSON (parents created); print it too when `echo`."""
    import json

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(obj, indent=2, default=str, ensure_ascii=False)
    path.write_text(text, encoding="utf-8")
    if echo:
        print(text)
    return path
