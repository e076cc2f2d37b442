"""Figures: saved as PNG and PDF under figures/, each with a JSON sidecar saying what made it
(`save_figure`), and the layout every figure module shares, none of it about what is plotted:
panels in a balanced grid, a note naming what was left out, a stand-in figure when there is
nothing to draw, seeded jitter, PNG bytes for embedding, and point labels placed where they
overlap nothing; and the chunk-length histogram of a corpus. A run's figures:
helpers.experiment.figures_run."""

from __future__ import annotations

import contextlib
import io
import json
import math
import subprocess
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING

# no backend chosen here (issue 63: nothing happens on import): matplotlib picks one (Agg where there is
# no display), a notebook's kernel keeps its inline backend, and the command line chooses Agg
# (helpers.__main__.main), so that a figure it writes never opens a window
import matplotlib.pyplot as plt
import numpy as np
from matplotlib.transforms import Bbox

from helpers import paths
from helpers.inputs import inside

if TYPE_CHECKING:  # pandas is slow to import; the frames come from the caller
    import pandas as pd


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


# ---- layout

PER_ROW = 4  # panels per row at most: 8 metrics are 2 rows of 4, not a strip of 8
PANEL_INCHES = (3.0, 3.2)  # width, height of one panel
BAR_COLOR = "#4C72B0"
POINT_COLOR = "#C44E52"
EMPTY_NOTE = "left out, nothing scored (every value NaN): "
# label offsets (points) place_labels tries in this order around a point (the Pareto plots' labels)
LABEL_OFFSETS = (
    (5, 5),
    (5, -13),
    (-5, 5),
    (-5, -13),
    (5, 17),
    (-5, 17),
    (5, -25),
    (-5, -25),
    (20, 30),
    (-20, 30),
    (20, -38),
    (-20, -38),
)


def grid(n_panels: int, *, per_row: int = PER_ROW, panel: tuple[float, float] = PANEL_INCHES):
    """(figure, the first n axes) of a grid with at most `per_row` panels a row, the columns
    balanced (5 panels: 3 + 2, not 4 + 1); the axes left over are hidden."""
    n = max(1, n_panels)
    rows = math.ceil(n / per_row)
    cols = math.ceil(n / rows)
    fig, axes = plt.subplots(rows, cols, figsize=(panel[0] * cols, panel[1] * rows), squeeze=False)
    flat = list(axes.flat)
    for ax in flat[n:]:
        ax.set_visible(False)
    return fig, flat[:n]


def split_empty(frame: pd.DataFrame, value_column: str, *, by: str = "metric") -> tuple[list[str], list[str]]:
    """(names with at least one value, names whose every value is NaN), each in first-seen order."""
    if frame.empty or by not in frame:
        return [], []
    order = list(dict.fromkeys(frame[by]))
    scored = set(frame.dropna(subset=[value_column])[by])
    return [m for m in order if m in scored], [m for m in order if m not in scored]


def note_empty(fig, empty) -> None:
    """Name what was left out on a line beneath the panels (the suptitle stays the title)."""
    if len(empty):
        fig.text(0.5, 0.0, EMPTY_NOTE + ", ".join(empty), ha="center", va="top", fontsize=8, color="#555555")


def nothing_to_show(message: str, *, size: tuple[float, float] = (5, 2)):
    """A figure holding only `message`: an empty result still gets its file, saying why."""
    fig, ax = plt.subplots(figsize=size)
    ax.axis("off")
    ax.text(0.5, 0.5, message, ha="center", va="center", fontsize=9, transform=ax.transAxes)
    return fig


@contextlib.contextmanager
def fixed_jitter(seed: int = 0):
    """seaborn's stripplot jitters with numpy's global generator: seed it for the plot (the same
    figure on every run) and give the caller's state back afterwards."""
    state = np.random.get_state()
    np.random.seed(seed)
    try:
        yield
    finally:
        np.random.set_state(state)


def png_bytes(fig, *, dpi: int = 110) -> bytes:
    """The figure as PNG (for reports that embed their images)."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=dpi, bbox_inches="tight")
    return buffer.getvalue()


def place_labels(ax, xs, ys, names, *, fontsize: int = 8) -> list:
    """Label each point where its label overlaps no other label or point, trying LABEL_OFFSETS
    in order (else the offset with the fewest overlaps). adjustText is not installed; a greedy
    pass over fixed offsets is deterministic and enough for the few points of one run."""
    renderer = ax.figure.canvas.get_renderer()
    frame = ax.get_window_extent(renderer)
    radius = 4 * ax.figure.dpi / 72
    taken = [_box(ax.transData.transform((x, y)), radius) for x, y in zip(xs, ys)]
    placed = []
    for i in sorted(range(len(names)), key=lambda i: (xs[i], ys[i], str(names[i]))):
        # i bound as a default: annotate and cost belong to this iteration
        def annotate(offset, i=i):
            far = abs(offset[1]) > 13  # beyond the first ring: a leader line says whose label
            return ax.annotate(
                str(names[i]),
                (xs[i], ys[i]),
                xytext=offset,
                textcoords="offset points",
                va="bottom",
                ha="left" if offset[0] >= 0 else "right",
                fontsize=fontsize,
                arrowprops={"arrowstyle": "-", "color": "grey", "lw": 0.5} if far else None,
            )

        def cost(offset, i=i):
            text = annotate(offset)
            box = text.get_window_extent(renderer)
            text.remove()
            others = [b for j, b in enumerate(taken) if j != i]
            return (sum(box.overlaps(b) for b in others), not _inside(box, frame)), box

        scored = [(cost(offset), offset) for offset in LABEL_OFFSETS]
        (_, box), best = min(scored, key=lambda item: item[0][0])  # min keeps the first of ties
        placed.append(annotate(best))
        taken.append(box)
    return placed


def _box(center, radius):
    return Bbox.from_extents(center[0] - radius, center[1] - radius, center[0] + radius, center[1] + radius)


def _inside(box, frame) -> bool:
    return box.x0 >= frame.x0 and box.x1 <= frame.x1 and box.y0 >= frame.y0 and box.y1 <= frame.y1


# ---- figures of the data


def chunk_length_histogram(corpus: dict[str, dict], *, title: str = "", target: int | None = None):
    """Histogram of chunk lengths in characters, with the configured chunk size marked."""
    lengths = [len(doc["text"]) for doc in corpus.values()]
    fig, ax = plt.subplots(figsize=(6, 3.5))
    ax.hist(lengths, bins=50, color=BAR_COLOR)
    if target:
        ax.axvline(target, color=POINT_COLOR, linestyle="--", label=f"chunk size = {target}")
        ax.legend()
    ax.set_xlabel("chunk length (characters)")
    ax.set_ylabel("chunks")
    ax.set_title(title or f"{len(lengths)} chunks")
    fig.tight_layout()
    return fig
