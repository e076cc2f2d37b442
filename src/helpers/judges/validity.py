"""How far people agree with each judge: the validity table, and what a report may claim from it.

Every judge metric is checked against the people's label it predicts (its `Metric.label`):
`supported` (is every claim backed by the answer's contexts?), `correct` (does it say what the
reference says?) or `context` (is the reference's answer in the retrieved contexts?), from the hand
labels kept in benchmarks/labels/. Per metric: n, how many answers people labelled "yes", the
AUROC for telling those from the rest (the metric's direction: higher is better unless the metric
says otherwise) and Cohen's kappa of its verdict at its threshold (`Metric.threshold`, else 0.5),
each with a 95 % bootstrap interval over answers.

What a report does with it (`status`):
- "agrees": the AUROC interval lies above 0.5. Shown with its band, may name a pattern, and is in
  the headline.
- "cannot tell on hand-labelled answers": the interval includes 0.5 (or one class has fewer than
  MIN_CLASS answers). Shown with its validity, no band, no pattern, not in the headline.
- "not checked against people's labels": no label to check it against. As "cannot tell".
- "against people's labels": computed from people's relevance labels (retrieval against qrels).

    python -m helpers judge-eval --labels benchmarks/labels     # writes results/validity.csv

Which table a report reads: results/validity.csv where `judge-eval --labels` has written one (a
user's own labels, or the shipped sheets under a retrained judge), else the table shipped with the
package, SHIPPED_CSV: a versioned artefact, made from the sheets in benchmarks/labels/ (its
`labels` column names them) by

    python -m helpers judge-eval --labels benchmarks/labels --out src/helpers/judges/validity.csv

and checked against them by tests/judges/test_correctness.py. Nothing writes into src/ unless asked.
"""

from __future__ import annotations

import functools
from pathlib import Path

import numpy as np
import pandas as pd

from helpers import paths
from helpers.inference.classical import auroc, bootstrap_ci, cohen_kappa
from helpers.interpretation import AGREES, BY_CONSTRUCTION
from helpers.judges.judge_base import JUDGES

SHIPPED_CSV = Path(__file__).with_name("validity.csv")  # the artefact shipped with the package


def written_csv() -> Path:
    """Where `judge-eval --labels` writes the table (and where reports look for it first)."""
    return paths.RESULTS_DIR / "validity.csv"


def validity_csv() -> Path:
    """The table reports read: the one judge-eval wrote here, else the shipped one."""
    written = written_csv()
    return written if written.is_file() else SHIPPED_CSV


def source() -> str:
    """Which table the numbers come from, as a report names it."""
    if validity_csv() == SHIPPED_CSV:
        return "the shipped table, helpers/judges/validity.csv"
    return f"{written_csv()}, written by judge-eval --labels"


COLUMNS = [
    "judge", "metric", "label", "n", "positives", "auroc", "auroc_low", "auroc_high",
    "threshold", "kappa", "kappa_low", "kappa_high", "status", "labels",
]  # fmt: skip
CANNOT_TELL, NOT_CHECKED = "cannot tell on hand-labelled answers", "not checked against people's labels"
MIN_CLASS = 3  # fewer answers than this in either class: no AUROC worth reading


def metric_of(judge: str, metric: str):
    """The registered Metric (None for a judge or metric not registered): any metric the judge can
    score (its `metrics`: RAGAS's answer correctness too, which is not among its defaults), then its
    defaults (`metrics_for(None)`: retrieval's, named after k)."""
    cls = JUDGES.get(judge)
    if cls is None:
        return None
    base = metric.split("@")[0]
    known = (*cls.metrics, *cls.metrics_for(None))
    return next((m for m in known if m.name == metric or m.name.split("@")[0] == base), None)


def agreement(
    labels: pd.DataFrame, scores: pd.DataFrame, *, keys=("model", "architecture", "qid"), seed: int = 0
) -> pd.DataFrame:
    """The validity table (COLUMNS) of every (judge, metric) in `scores` (long: keys, judge,
    metric, value) whose label column is in `labels` (keys plus yes / partly / no columns)."""
    keys = list(keys)
    rows = []
    for (judge, name), part in scores.groupby(["judge", "metric"], sort=False):
        metric = metric_of(judge, name)
        label = metric.label if metric else None
        if label is None or label not in labels.columns or label == "qrels":
            continue
        merged = labels[[*keys, label]].merge(part.drop_duplicates(keys)[[*keys, "value"]], on=keys)
        merged = merged[merged["value"].notna() & merged[label].isin(["yes", "partly", "no"])]
        y = (merged[label] == "yes").to_numpy(float)
        value = merged["value"].to_numpy(float) * (1 if metric.higher_is_better else -1)
        threshold = metric.threshold if metric.threshold is not None else 0.5
        row = {
            "judge": judge,
            "metric": name,
            "label": label,
            "n": len(merged),
            "positives": int(y.sum()),
            "threshold": threshold,
        }
        if min(y.sum(), len(y) - y.sum()) >= MIN_CLASS:
            row.update(zip(("auroc", "auroc_low", "auroc_high"), bootstrap_ci(y, value, statistic=auroc, seed=seed)))
            verdict = (merged["value"].to_numpy(float) >= threshold).astype(float)
            if not metric.higher_is_better:
                verdict = 1 - verdict
            row.update(
                zip(("kappa", "kappa_low", "kappa_high"), bootstrap_ci(verdict, y, statistic=cohen_kappa, seed=seed))
            )
        row["status"] = AGREES if row.get("auroc_low", np.nan) > 0.5 else CANNOT_TELL
        rows.append(row)
    return pd.DataFrame(rows).reindex(columns=COLUMNS)


@functools.lru_cache(maxsize=4)
def _read(path: str, mtime: float) -> pd.DataFrame:
    return pd.read_csv(path, keep_default_na=True)


def validity_table(path: Path | None = None) -> pd.DataFrame:
    """The validity table at `path` (default: validity_csv()); empty when there is none."""
    path = Path(path or validity_csv())
    if not path.exists():
        return pd.DataFrame(columns=COLUMNS)
    # a copy: the parsed file is cached, and a caller that edits its table must not edit every
    # later reader's (a test did, and the shipped 'agrees' read 'cannot tell' for the rest of its process)
    return _read(str(path), path.stat().st_mtime).copy()


def _split(judge: str, metric: str | None) -> tuple[str, str]:
    if metric is not None:
        return judge, metric
    judge, metric = judge.split("/", 1)  # "offline/adherence"
    return judge, metric


def row_of(judge: str, metric: str | None = None) -> dict | None:
    judge, metric = _split(judge, metric)
    table = validity_table()
    base = metric.split("@")[0]
    match = table[(table["judge"] == judge) & (table["metric"].str.split("@").str[0] == base)]
    return match.iloc[0].to_dict() if len(match) else None


def status(judge: str, metric: str | None = None) -> str:
    """AGREES, CANNOT_TELL, NOT_CHECKED or BY_CONSTRUCTION for a (judge, metric) or 'judge/metric'."""
    judge, metric = _split(judge, metric)
    registered = metric_of(judge, metric)
    if registered is not None and registered.label == "qrels":
        return BY_CONSTRUCTION
    row = row_of(judge, metric)
    return row["status"] if row else NOT_CHECKED


def trusted(judge: str, metric: str | None = None) -> bool:
    """Whether a report may give the metric a band, name patterns on it, and put it in the headline."""
    return status(judge, metric) in (AGREES, BY_CONSTRUCTION)


def note(judge: str, metric: str | None = None) -> str:
    """One line for people: how far people agree with this metric, or that nobody checked."""
    judge, metric = _split(judge, metric)
    kind = status(judge, metric)
    if kind == BY_CONSTRUCTION:
        return "computed against people's relevance labels (qrels)"
    row = row_of(judge, metric)
    if row is None:
        return NOT_CHECKED
    if pd.isna(row["auroc"]):
        return f"{CANNOT_TELL}: {row['positives']} of {row['n']} labelled '{row['label']}: yes', too few of one kind"
    text = (
        f"AUROC {row['auroc']:.2f} [{row['auroc_low']:.2f}, {row['auroc_high']:.2f}] for '{row['label']}: yes', "
        f"kappa {row['kappa']:.2f} [{row['kappa_low']:.2f}, {row['kappa_high']:.2f}] at {row['threshold']:g}, "
        f"n = {row['n']} hand-labelled answers"
    )
    return text if kind == AGREES else f"{CANNOT_TELL} ({text})"
