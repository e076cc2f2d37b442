"""Figures: saved as PNG and PDF under figures/, each with a JSON sidecar saying what made it."""

from __future__ import annotations

import json
import subprocess
from datetime import datetime, timezone
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # headless by default; notebooks still display figures inline
import matplotlib.pyplot as plt  # noqa: E402

from helpers import paths  # noqa: E402
from helpers.inputs import inside  # noqa: E402


def git_commit() -> str:
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=paths.PROJECT_ROOT, capture_output=True, text=True, timeout=5
        )
        commit = out.stdout.strip() or "unknown"
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=paths.PROJECT_ROOT,
            capture_output=True,
            text=True,
            timeout=5,
        )
        return commit + ("-dirty" if dirty.stdout.strip() else "")
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def save_figure(
    fig,
    name: str,
    *,
    run_ids: list[str] | None = None,
    config: dict | None = None,
    data_sources: list[str] | None = None,
    out_dir: Path | None = None,
) -> dict[str, Path]:
    """Write `name`.png, `name`.pdf and `name`.json (run ids, config, commit, sources)."""
    out_dir = Path(out_dir or paths.FIGURES_DIR)
    out_dir.mkdir(parents=True, exist_ok=True)
    written = {}
    for ext in ("png", "pdf"):
        written[ext] = inside(out_dir, f"{name}.{ext}", what="figure name")  # names carry run ids from configs
        fig.savefig(written[ext], dpi=150, bbox_inches="tight")
    sidecar = {
        "figure": name,
        "run_ids": run_ids or [],
        "config": config or {},
        "data_sources": data_sources or [],
        "git_commit": git_commit(),
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
    }
    written["json"] = inside(out_dir, f"{name}.json", what="figure name")
    written["json"].write_text(json.dumps(sidecar, indent=2, ensure_ascii=False), encoding="utf-8")
    return written


def chunk_length_histogram(corpus: dict[str, dict], *, title: str = "", target: int | None = None):
    """Histogram of chunk lengths in characters, with the configured chunk size marked."""
    lengths = [len(doc["text"]) for doc in corpus.values()]
    fig, ax = plt.subplots(figsize=(6, 3.5))
    ax.hist(lengths, bins=50, color="#4C72B0")
    if target:
        ax.axvline(target, color="#C44E52", linestyle="--", label=f"chunk size = {target}")
        ax.legend()
    ax.set_xlabel("chunk length (characters)")
    ax.set_ylabel("chunks")
    ax.set_title(title or f"{len(lengths)} chunks")
    fig.tight_layout()
    return fig
