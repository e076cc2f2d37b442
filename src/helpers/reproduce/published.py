"""A published table beside ours, saved where the book (helpers.book) and anyone else can read it.

`save_comparison` writes `results/reproduce/<name>.json`: the rows (each with the published
number, ours and the difference, plus whatever explains them), where the published numbers were
read, where our data came from, and when and at which commit ours were computed. The notebook
that computes a reproduction saves it; the book's page of reproduced figures reads them all.
"""

from __future__ import annotations

import json
import math
from datetime import datetime, timezone
from pathlib import Path

import pandas as pd

from helpers import paths
from helpers.figures import git_commit
from helpers.inputs import inside

REQUIRED_COLUMNS = ("published", "ours", "difference")


def comparisons_dir(results_dir: Path | None = None) -> Path:
    return Path(results_dir or paths.RESULTS_DIR) / "reproduce"


def _plain(value):
    """JSON-ready: NaN and pandas' NA as None, numpy scalars as Python numbers."""
    if value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value)):
        return None
    return value.item() if hasattr(value, "item") else value


def save_comparison(
    name: str,
    table: pd.DataFrame,
    *,
    title: str,
    published_source: str,
    data_source: str,
    notes: str = "",
    figures: list[Path] | None = None,
    results_dir: Path | None = None,
) -> Path:
    """Write `table` (one row per published number: columns `published`, `ours`, `difference`
    and any others that explain them) with its sources, date and commit, and the PNGs of our
    figures that redraw the published ones (`figures`); returns the path."""
    missing = [c for c in REQUIRED_COLUMNS if c not in table.columns]
    if missing:
        raise ValueError(
            f"comparison {name!r} lacks the column(s) {missing}: a row needs published, ours and difference"
        )
    records = [{k: _plain(v) for k, v in row.items()} for row in table.to_dict("records")]
    out = inside(comparisons_dir(results_dir), f"{name}.json", what="comparison name")
    out.parent.mkdir(parents=True, exist_ok=True)
    document = {
        "name": name,
        "title": title,
        "published_source": published_source,
        "data_source": data_source,
        "notes": notes,
        "computed": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "commit": git_commit(),
        "figures": [str(Path(p)) for p in figures or []],
        "columns": list(table.columns),
        "rows": records,
    }
    out.write_text(json.dumps(document, indent=1, ensure_ascii=False), encoding="utf-8")
    return out


def load_comparisons(results_dir: Path | None = None) -> list[dict]:
    """Every saved comparison, by name."""
    folder = comparisons_dir(results_dir)
    return [json.loads(p.read_text(encoding="utf-8")) for p in sorted(folder.glob("*.json"))] if folder.exists() else []


def comparison_frame(document: dict) -> pd.DataFrame:
    return pd.DataFrame(document["rows"], columns=document["columns"])
