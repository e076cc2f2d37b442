"""The cuts `helpers diagnose` reads its two judges through, and the people's labels they come from
(issue 49): a judge's score is "yes" at or above its high cut, "no" at or below its low cut, and
"cannot tell" between them (`Band`).

    correct   the correctness judge's score, against a person's `correct` label (yes vs partly / no)
    holds     context_recall's score, against `reference_in_contexts` (do the contexts hold the
              reference's fact? yes vs partly / no)

Where a person labelled enough of the answers being diagnosed (`MIN_LABELS` of each kind), the cuts
are fitted on their labels (`fit_bands`): the labelling panel's `results/RUN/labels.csv`, or any
labels file given to `diagnose --cuts-from`. Otherwise the shipped cuts (`SHIPPED`), fitted on four
corpora (helpers.experiment.diagnosis_calibration), stand; each band says which (`Band.source`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from helpers.errors import UserError
from helpers.experiment.label_format import ALIASES, CHOICES, LABEL_SCORE

PRECISION = 0.95  # the share of a person's labelled answers a cut must get right (their own cuts)
MAX_IN_ZONE = 0.2  # more of a run's scores than this where the calibration corpora disagree: unlike them
MIN_LABELS = 5  # answers labelled of each kind (yes, and partly / no) before a person's labels fit a cut
LABEL_OF = {"correct": "correct", "holds": "reference_in_contexts"}  # band -> the label column it is fitted on
SCORE_OF = {"correct": "correctness", "holds": "context_recall"}  # band -> the judge score it reads


@dataclass(frozen=True)
class Band:
    """A judge's score read three ways: at or above `high` yes, at or below `low` no, between them
    "cannot tell". `source` says where the cuts come from. `zone` (shipped cuts only): the lowest
    and highest cuts fitted with any one calibration corpus left out; where more than
    MAX_IN_ZONE of a run's scores fall in it, the run is unlike the calibration corpora and the
    scores there read "cannot tell" (`widened`)."""

    low: float
    high: float
    source: str
    zone: tuple[float, float] | None = None

    def widened(self) -> "Band":
        """The band whose cuts are the zone's ends (itself where it has no zone)."""
        if self.zone is None:
            return self
        return Band(min(self.low, self.zone[0]), max(self.high, self.zone[1]), self.source, self.zone)

    def for_scores(self, scores) -> "Band":
        """The band these scores are read with: widened to the zone where more than MAX_IN_ZONE of
        them fall in it (scores unlike the calibration corpora's), else itself."""
        scores = pd.Series(scores, dtype=float).dropna()
        if self.zone is None or scores.empty or scores.between(*self.zone).mean() <= MAX_IN_ZONE:
            return self
        return self.widened()

    def read(self, value: float | None) -> bool | None:
        if value is None or (isinstance(value, float) and math.isnan(value)):
            return None
        if value >= self.high:
            return True
        if value <= self.low:
            return False
        return None


def band_from_labels(scores, positive, *, precision: float = PRECISION, source: str = "labels") -> Band:
    """Cuts where people's labels say the judge is right `precision` of the time: `high`, the lowest
    score above which (inclusive) at least that share of the answers is labelled positive; `low`, the
    highest score below which (inclusive) at least that share is labelled negative. Where no cut
    reaches the precision, the band is empty on that side (high above every score, low below every
    one); crossing cuts meet at the midpoint."""
    scores, positive = np.asarray(scores, float), np.asarray(positive, bool)
    keep = ~np.isnan(scores)
    scores, positive = scores[keep], positive[keep]
    if len(scores) < 2 or positive.all() or not positive.any():
        raise UserError(f"{source}: the cuts need labelled answers of both kinds ({len(scores)} labelled)")
    cuts = np.unique(scores)
    high = next((t for t in cuts if positive[scores >= t].mean() >= precision), np.inf)
    low = next((t for t in cuts[::-1] if (~positive[scores <= t]).mean() >= precision), -np.inf)
    if low >= high:
        low = high = (low + high) / 2
    return Band(float(low), float(high), source)


# Shipped cuts (issue 59), fitted by `python benchmarks/diagnosis_bands.py` on five kinds of labelled
# items from four corpora, every corpus weighing the same (diagnosis_calibration.fit_cuts): gold
# passage in the contexts or not (MaternaQA-es, XQuAD es and en, the obstetrics qrels), answers that
# state the reference or not (MaternaQA-es, XQuAD es and en), and people's labels of the default
# model's answers on two corpora (the obstetrics guideline and MaternaQA-es, 60 answers each). The
# precision, 0.85, was chosen on the items made without people (the best worst corpus left out).
# Each corpus left out of the fit, the verdicts agree with the person's at Cohen's kappa 0.80 on the
# obstetrics answers and 0.71 on MaternaQA-es's, none "cannot tell": docs/measurements/diagnosis.md. `zone`: the cuts fitted with one
# corpus left out range over it.
_SOURCE = (
    "shipped: fitted on 4 corpora, people's labels on 2 (benchmarks/diagnosis_bands.py; each corpus left out: "
    "kappa 0.80 obstetrics, 0.71 MaternaQA-es)"
)
SHIPPED = {
    "correct": Band(0.5239328469910576, 0.5239328469910576, _SOURCE, (0.49149201921479596, 0.5599996555239151)),
    "holds": Band(0.848001188019627, 0.848001188019627, _SOURCE, (0.7629896288303233, 0.8672877774409551)),
}


def read_diagnosis_labels(path: str | Path, *, required: tuple[str, ...] = ("correct",)) -> pd.DataFrame:
    """A person's labels as diagnose reads them: `id` (a judge CSV's id, or the question's qid),
    `architecture` and `model` where the file has them, and `correct` and `reference_in_contexts`
    (yes / partly / no, lower-cased; empty: not labelled). It reads the one labels format
    (helpers.experiment.label_format: the panel's labels.csv) and a shipped answers sheet, whose
    contexts sheet beside it (contexts-NAME.csv) gives `reference_in_contexts` from its `context`.
    The `required` label columns must be there; the other is added empty."""
    path = Path(path)
    if not path.is_file():
        raise UserError(f"{path}: labels file not found")
    labels = pd.read_csv(path, dtype=str, keep_default_na=False)
    labels = labels.rename(columns={old: new for old, new in ALIASES.items() if new not in labels.columns})
    beside = path.with_name(f"contexts-{path.name}")  # a shipped answers sheet's contexts sheet
    if "reference_in_contexts" not in labels.columns and "context" not in labels.columns and beside.is_file():
        contexts = pd.read_csv(beside, dtype=str, keep_default_na=False)
        labels = labels.merge(
            contexts[["architecture", "qid", "context", "contexts_holding"]], on=["architecture", "qid"]
        )
    if "contexts_holding" in labels.columns and "reference_in_contexts" not in labels.columns:  # a shipped sheet
        labels = labels.rename(columns={"context": "reference_in_contexts"})
    if "id" not in labels.columns:
        labels = labels.rename(columns={"qid": "id"})
    missing = [c for c in ("id", *required) if c not in labels.columns]
    if missing:
        raise UserError(
            f"{path}: missing column(s) {missing}; labels for diagnose have id (or qid), correct and "
            "reference_in_contexts (yes / partly / no), as the labelling panel's labels.csv does"
        )
    for column in ("correct", "reference_in_contexts"):
        if column not in labels.columns:
            labels[column] = ""
    for column in ("correct", "reference_in_contexts"):
        labels[column] = labels[column].str.strip().str.lower()
        bad = labels.index[~labels[column].isin(("", *CHOICES[column]))]
        if len(bad):
            raise UserError(
                f"{path}: row {int(bad[0]) + 2}, column '{column}': {labels.at[bad[0], column]!r} is not one of "
                f"{list(CHOICES[column])}"
            )
    return labels


def match_labels(answers: pd.DataFrame, labels: pd.DataFrame, what: str) -> pd.DataFrame:
    """The labels of `answers` (rows with `id` and `architecture`), one row per answer: several
    annotators' labels of one answer averaged (yes 1, partly 0.5, no 0) and read back as yes only
    where all said yes. A run's answer of several LLMs is named `qid|llm`: so are the labels."""
    labels = labels.copy()
    if "model" in labels.columns and answers["id"].astype(str).str.contains("|", regex=False).any():
        labels["id"] = labels["id"] + "|" + labels["model"]
    keys = ["id", "architecture"] if "architecture" in labels.columns else ["id"]
    merged = answers[list(dict.fromkeys(["id", "architecture"]))].merge(labels, on=keys, how="inner")
    if merged.empty:
        raise UserError(
            f"{what}: no labelled answer matches an answer here (by {' and '.join(keys)}; e.g. ours "
            f"{answers[keys].head(3).to_dict('records')}, labels {labels[keys].head(3).to_dict('records')})"
        )

    def pooled(values: pd.Series) -> str:
        known = [LABEL_SCORE[v] for v in values if v]
        return "" if not known else "yes" if min(known) == 1.0 else "partly" if max(known) > 0 else "no"

    return merged.groupby(["id", "architecture"], sort=False)[["correct", "reference_in_contexts"]].agg(pooled)


def fit_bands(wide: pd.DataFrame, labels: pd.DataFrame, what: str, *, precision: float = PRECISION) -> dict:
    """The two bands for the answers of `wide` (id, architecture, correctness, context_recall): each
    fitted on the person's labels (`read_diagnosis_labels`) where at least MIN_LABELS answers are
    labelled yes and MIN_LABELS otherwise, else the shipped band. `what` names the labels' file."""
    pooled = match_labels(wide, labels, what)
    joined = wide.set_index(["id", "architecture"]).join(pooled, how="inner")
    bands = {}
    for name, column in LABEL_OF.items():
        part = joined[(joined[column] != "") & joined[SCORE_OF[name]].notna()]
        positive = part[column] == "yes"
        if positive.sum() >= MIN_LABELS and (~positive).sum() >= MIN_LABELS:
            source = f"your labels: {len(part)} answers labelled '{column}' in {what}"
            bands[name] = band_from_labels(part[SCORE_OF[name]], positive, precision=precision, source=source)
        else:
            bands[name] = SHIPPED[name]
    return bands


def sources(bands: dict) -> str:
    """Where each band's cuts come from, one clause per source."""
    by_source: dict[str, list[str]] = {}
    for name, band in bands.items():
        by_source.setdefault(band.source, []).append(f"{name} {band.low:.2f}-{band.high:.2f}")
    return "; ".join(f"{', '.join(names)}: {source}" for source, names in by_source.items())
