"""A judge's scores of every answer and a person's labels of a few, turned into estimates per
architecture and per paired difference: labels only, judge only (biased: not valid) and
prediction-powered (helpers.inference.ppi), side by side.

    scores = read_scores("obstetrics-default-8eb4bca9")            # a run id, or `helpers judge --out`'s CSV
    labels = read_labels("results/RUN/labels.csv", column="correct")
    table = estimate_table(scores, labels, metric="correctness/correctness", baseline="bm25")

`scores`: long, one row per answer and metric: item (the qid, or the CSV's id), architecture, judge,
metric, value. `labels`: item, architecture (where the file has one), label in [0, 1]
(yes 1, partly 0.5, no 0). The table: architecture ("hybrid - bm25" for a difference), baseline
(None for a mean), method (labels, judge, ppi), estimate, low, high, n_labels, n_unlabelled.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from helpers.errors import UserError
from helpers.experiment.analysis import load_scores, natural_key, run_config, run_dir
from helpers.experiment.label_format import ALIASES, LABEL_SCORE
from helpers.experiment.label_sheets import load_labels
from helpers.experiment.store import RunStore
from helpers.inference.ppi import METHOD_TEXT, MIN_LABELS, paired_difference, three_estimates

LABEL_VALUES = {"yes": 1.0, "partly": 0.5, "no": 0.0, "1": 1.0, "1.0": 1.0, "0.5": 0.5, "0": 0.0, "0.0": 0.0}
ALL = "all"  # the one group of a file without an architecture column
POOLED = "(all architectures)"  # every answer of a run with several architectures, as one group
COLUMNS = ["architecture", "baseline", "method", "estimate", "low", "high", "n_labels", "n_unlabelled"]
DEFAULT_METRIC = "correctness/correctness"


@dataclass
class Scores:
    frame: pd.DataFrame  # item, architecture, judge, metric, value
    source: str  # what it was read from, for messages
    labels_path: Path | None = None  # a run's own labels.csv
    baseline: str | None = None  # a run's statistics.baseline
    confidence: float = 0.95


def read_scores(source: str, *, results_dir: Path | None = None) -> Scores:
    """A run's scores (by run id) or the long CSV `python -m helpers judge --out` writes (id, judge,
    metric, value; an architecture column is used where there is one)."""
    path = Path(source)
    if path.suffix.lower() == ".csv" or path.is_file():
        if not path.is_file():
            raise UserError(
                f"{path}: scores file not found; write one with `python -m helpers judge ANSWERS --out {path}`"
            )
        frame = pd.read_csv(path, dtype={"id": str, "architecture": str})
        missing = [c for c in ("id", "judge", "metric", "value") if c not in frame.columns]
        if missing:
            raise UserError(
                f"{path}: missing column(s) {missing}; a scores CSV has id, judge, metric, value "
                "(as `python -m helpers judge --out` writes it)"
            )
        frame = frame.rename(columns={"id": "item"})
        frame["architecture"] = frame["architecture"].fillna(ALL) if "architecture" in frame else ALL
        frame["value"] = pd.to_numeric(frame["value"], errors="coerce")
        return Scores(frame[["item", "architecture", "judge", "metric", "value"]], str(path))
    frame = load_scores(source, results_dir)
    if frame["llm"].nunique() > 1:  # one group per architecture and answering model
        frame = frame.assign(architecture=frame["architecture"] + " / " + frame["llm"])
    config = run_config(source, results_dir)
    return Scores(
        frame.rename(columns={"qid": "item"})[["item", "architecture", "judge", "metric", "value"]],
        f"run {source}",
        labels_path=run_dir(source, results_dir) / "labels.csv",
        baseline=config.statistics.baseline if config else None,
        confidence=config.statistics.confidence if config else 0.95,
    )


def metric_scores(scores: Scores, metric: str | None) -> tuple[str, pd.DataFrame]:
    """('judge/metric', its rows): `metric` as judge/metric or a metric name one judge produced;
    default correctness. A metric no judge produced is an error that lists those produced."""
    frame = scores.frame[scores.frame["judge"] != "system"]
    produced = sorted({f"{j}/{m}" for j, m in zip(frame["judge"], frame["metric"])})
    wanted = metric or DEFAULT_METRIC
    matches = [p for p in produced if p == wanted or p.split("/", 1)[1] == wanted]
    if len(matches) != 1:
        why = "names several" if matches else "was not produced by any judge"
        raise UserError(
            f"{scores.source}: metric {wanted!r} {why} ({matches or 'none'}); metrics there: {produced}. "
            "Pass --metric JUDGE/METRIC, one of them"
        )
    judge, name = matches[0].split("/", 1)
    return matches[0], frame[(frame["judge"] == judge) & (frame["metric"] == name)]


def read_labels(path: str | Path, *, column: str | None = None) -> tuple[pd.DataFrame, str]:
    """(labels, the column used): item, architecture (where the file has one, with the answering model
    joined as the scores join their llm), label. A labels file (helpers.experiment.label_format: the
    panel's labels.csv, a shipped sheet) or any CSV with
    an `id` column. column: default `correct`, else `label`. Empty cells are not labelled; a value
    outside yes / partly / no (or 1 / 0.5 / 0) is an error naming the row. Several annotators of one
    answer: the mean of their labels."""
    path = Path(path)
    if not path.is_file():
        raise UserError(
            f"{path}: labels file not found; label answers in notebook 09's labelling panel, or give a CSV "
            "with an `id` column and a label column"
        )
    frame = pd.read_csv(path, dtype=str, keep_default_na=False)
    columns = list(frame.columns)
    if "id" in frame.columns:
        frame = frame.rename(columns={"id": "item"})
    elif {"architecture", "qid"} <= set(frame.columns):  # the labels format (helpers.experiment.label_format)
        frame = frame.rename(columns={"qid": "item", **{a: n for a, n in ALIASES.items() if n not in frame.columns}})
        if "model" in frame.columns and frame["model"].nunique() > 1:
            frame["architecture"] = frame["architecture"] + " / " + frame["model"]
    else:
        raise UserError(
            f"{path}: no `id` column (nor the labelling panel's architecture and qid); columns: {list(frame.columns)}"
        )
    column = column or next((c for c in ("correct", "label") if c in frame.columns), None)
    if column is None or column not in frame.columns:
        raise UserError(
            f"{path}: no label column {column or 'correct or label'!r}; columns: {columns}. Pass --label COLUMN"
        )
    values = frame[column].str.strip().str.lower()
    bad = frame.index[(values != "") & ~values.isin(LABEL_VALUES)]
    if len(bad):
        row = int(bad[0])
        raise UserError(
            f"{path}: row {row + 2}, column {column!r}: {frame.at[row, column]!r} is not a label "
            f"(yes = 1, partly = 0.5, no = 0; or 1 / 0.5 / 0); {len(bad)} such row(s). "
            "Fix those cells, or pass --label with the column that holds the labels"
        )
    frame = frame.assign(label=values.map(LABEL_VALUES))[values != ""]
    keys = ["item", "architecture"] if "architecture" in frame.columns else ["item"]
    return frame.groupby(keys, as_index=False)["label"].mean(), column


def _matched(scores: pd.DataFrame, labels: pd.DataFrame, source: str, labels_name: str) -> pd.DataFrame:
    """The scores with a `label` column (NaN: not labelled), checked: the labels name the scores' items."""
    architectures = sorted(scores["architecture"].unique())
    keys = ["item", "architecture"]
    if "architecture" not in labels.columns:
        if len(architectures) > 1:
            raise UserError(
                f"{labels_name}: no architecture column, but {source} scores {len(architectures)} architectures "
                f"({', '.join(architectures)}); add an architecture column to the labels"
            )
        labels = labels.assign(architecture=architectures[0])
    merged = scores.merge(labels[keys + ["label"]], on=keys, how="left")
    if merged["label"].notna().sum() == 0:
        raise UserError(
            f"{labels_name}: none of its {len(labels)} labelled answers matches a scored answer of {source} "
            f"(labels e.g. {labels[keys].head(3).values.tolist()}, scores e.g. {scores[keys].head(3).values.tolist()}); "
            "a label's id (and architecture) must be the scores' id (a run's qid)"
        )
    return merged


def estimate_table(
    scores: Scores,
    labels: pd.DataFrame,
    *,
    metric: str | None = None,
    baseline: str | None = None,
    confidence: float | None = None,
    labels_name: str = "labels",
    strict: bool = True,
) -> tuple[str, pd.DataFrame]:
    """('judge/metric', the table of COLUMNS): three estimates per architecture, then per paired
    difference against `baseline` (default the run's statistics.baseline, else the first
    architecture) where at least MIN_LABELS questions have both answers labelled; with several
    architectures, a row POOLED of every answer as one group.
    strict: an architecture with fewer than MIN_LABELS labels is an error (the command line); else
    it is left out (the labelling panel, while labels come in)."""
    name, part = metric_scores(scores, metric)
    confidence = confidence or scores.confidence
    merged = _matched(part, labels, scores.source, labels_name)
    architectures = sorted(merged["architecture"].unique(), key=natural_key)
    rows = []
    for architecture in architectures:
        group = merged[merged["architecture"] == architecture]
        n = int((group["label"].notna() & group["value"].notna()).sum())
        if n < MIN_LABELS:
            if strict:
                raise UserError(
                    f"{labels_name}: architecture {architecture!r} has {n} labelled answer(s) with a {name} score; "
                    f"at least {MIN_LABELS} are needed for an interval: label more of its answers"
                )
            continue
        rows += [
            {"architecture": architecture, "baseline": None, **e.as_dict()}
            for e in three_estimates(group["label"], group["value"], confidence=confidence)
        ]
    if len(architectures) > 1 and int((merged["label"].notna() & merged["value"].notna()).sum()) >= MIN_LABELS:
        # every answer of the run as one group: what the labels buy when each architecture has few
        rows += [
            {"architecture": POOLED, "baseline": None, **e.as_dict()}
            for e in three_estimates(merged["label"], merged["value"], confidence=confidence)
        ]
    baseline = baseline or (scores.baseline if scores.baseline in architectures else architectures[0])
    if baseline not in architectures:
        raise UserError(f"--baseline {baseline!r} is not an architecture of {scores.source}: {architectures}")
    wide = merged.pivot_table(index="item", columns="architecture", values=["label", "value"], aggfunc="mean")
    for architecture in (a for a in architectures if a != baseline):
        la, lb = (wide["label"].get(x, pd.Series(np.nan, index=wide.index)) for x in (architecture, baseline))
        sa, sb = wide["value"][architecture], wide["value"][baseline]
        if int((la.notna() & lb.notna() & sa.notna() & sb.notna()).sum()) < MIN_LABELS:
            continue  # too few questions with both answers labelled: no paired estimate
        rows += [
            {"architecture": f"{architecture} - {baseline}", "baseline": baseline, **e.as_dict()}
            for e in paired_difference(la, sa, lb, sb, confidence=confidence)
        ]
    table = pd.DataFrame(rows, columns=COLUMNS)
    # labels lie in [0, 1] (a difference in [-1, 1]): an interval past that range says nothing more
    valid, difference = table["method"] != "judge", table["baseline"].notna()
    for column in ("low", "high"):
        table.loc[valid, column] = table.loc[valid, column].clip(
            lower=np.where(difference[valid], -1.0, 0.0), upper=1.0
        )
    return name, table


def format_table(metric: str, table: pd.DataFrame, confidence: float) -> str:
    """The three estimates side by side, one line per architecture or difference."""
    lines = [f"{metric}: {confidence:.0%} intervals; labels only | judge only (biased: not valid) | prediction-powered"]
    for architecture, rows in table.groupby("architecture", sort=False):
        by = {r.method: r for r in rows.itertuples()}
        cells = [_cell(by[m]) if m in by else "-" for m in ("labels", "judge", "ppi")]
        n = next(iter(by.values()))
        lines.append(f"  {architecture:24s} {' | '.join(cells)}   ({n.n_labels} labelled, {n.n_unlabelled} not)")
    if table.empty:
        lines.append("  (no group has enough labels)")
    return "\n".join(lines)


def _cell(row) -> str:
    if row.low != row.low:  # NaN: a point without an interval
        return f"{row.estimate:+.3f} (n = {row.n_labels}, no interval)"
    return f"{row.estimate:+.3f} [{row.low:+.3f}, {row.high:+.3f}]"


def estimates_json(table: pd.DataFrame) -> dict:
    keep = ["architecture", "baseline", "method", "estimate", "low", "high", "n_labels", "n_unlabelled"]
    records = table[keep].astype(object).where(table[keep].notna(), None).to_dict("records")
    return {"estimates": records, "methods": METHOD_TEXT}


def sheet_labels(sheet: str | Path, run_id: str, *, column: str = "correct", results_dir: Path | None = None):
    """The labels (item, architecture, label) a hand-labelled sheet (benchmarks/labels/*.csv) gives
    the answers of `run_id` that are word for word the sheet's: an answer that changed since it was
    labelled keeps no label. Empty when none is the same."""
    labelled = load_labels(sheet)
    answers = {
        (r["architecture"], r["qid"]): r.get("answer") for r in RunStore(run_dir(run_id, results_dir)).of_kind("answer")
    }
    same = [answers.get((r.architecture, r.qid)) == r.answer for r in labelled.itertuples()]
    kept = labelled[same]
    return pd.DataFrame(
        {"item": kept["qid"], "architecture": kept["architecture"], "label": kept[column].map(LABEL_SCORE)}
    ).reset_index(drop=True)
