"""TRACe scores from sentence keys, computed as RAGBench's gold labels (arXiv:2407.11005, §3).

    relevance    = |relevant keys| / |document sentences|
    utilization  = |utilized keys| / |document sentences|
    completeness = |relevant ∩ utilized| / |relevant|        (1.0 when nothing is relevant)
    adherence    = no response sentence is unsupported

Two conventions for counting keys:
- "ragbench" reproduces the shipped gold scores on every row of the shipped splits: the key lists
  are counted as the annotator wrote them (a key listed twice counts twice, keys naming no sentence
  count too), the intersection is over normalised unique keys. 9 of 3,933 shipped rows list a key
  twice; only there does it differ from the unique count.
- "unique" (default for new judgements) counts unique, normalised keys that name a sentence.
Aggregates: mean and a percentile-bootstrap interval (95% by default) from helpers.inference.classical.bootstrap_ci.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from helpers.inference.classical import bootstrap_ci
from helpers.trace.sentence_keys import all_keys, normalize_key, parse_keys

# The TRACe metric names, defined here only (import them: helpers.trace.METRICS).
METRICS = ("relevance", "utilization", "completeness", "adherence")


@dataclass
class TraceScores:
    relevance: float
    utilization: float
    completeness: float
    adherence: float  # 1.0 / 0.0 (NaN when unknown)
    adherence_score: float = math.nan  # continuous P(adherent), for AUROC; = adherence for gold
    invalid_keys: list[str] = field(default_factory=list)
    error: str | None = None

    def as_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def failed(cls, error: str) -> "TraceScores":
        nan = math.nan
        return cls(nan, nan, nan, nan, nan, [], error)


def trace_scores(
    documents_sentences, relevant_keys, utilized_keys, unsupported_keys, convention: str = "unique"
) -> TraceScores:
    """TRACe scores of one example from its key lists (see module docstring)."""
    if convention not in ("unique", "ragbench"):
        raise ValueError(f"convention must be 'unique' or 'ragbench', got {convention!r}")
    n_sentences = len(all_keys(documents_sentences))
    valid = set(all_keys(documents_sentences))
    relevant, utilized = parse_keys(relevant_keys, valid), parse_keys(utilized_keys, valid)
    unsupported = parse_keys(unsupported_keys)
    invalid = relevant.invalid + utilized.invalid + unsupported.invalid
    if n_sentences == 0:
        return TraceScores(math.nan, math.nan, math.nan, math.nan, math.nan, invalid, "no document sentences")
    if convention == "ragbench":
        n_relevant, n_utilized = len(list(relevant_keys)), len(list(utilized_keys))
        both = {normalize_key(k) or k for k in relevant_keys} & {normalize_key(k) or k for k in utilized_keys}
        adherent = len(list(unsupported_keys)) == 0
    else:
        n_relevant, n_utilized = len(relevant.keys), len(utilized.keys)
        both = set(relevant.keys) & set(utilized.keys)
        adherent = not unsupported.keys
    completeness = len(both) / n_relevant if n_relevant else 1.0
    adherence = 1.0 if adherent else 0.0
    return TraceScores(n_relevant / n_sentences, n_utilized / n_sentences, completeness, adherence, adherence, invalid)


def scores_from_probabilities(p_relevant, p_utilized, p_supported) -> TraceScores:
    """Expected TRACe scores from per-sentence probabilities (independence assumed):
    E[relevance] = mean P(relevant); E[utilization] = mean P(utilized); completeness =
    Σ P(rel)·P(util) / Σ P(rel) (1.0 when Σ P(rel) ≈ 0); adherence_score = min P(supported)."""
    p_rel, p_util = np.asarray(p_relevant, float), np.asarray(p_utilized, float)
    p_sup = np.asarray(p_supported, float)
    if p_rel.size == 0:
        return TraceScores.failed("no document sentences")
    mass = p_rel.sum()
    completeness = float((p_rel * p_util).sum() / mass) if mass > 1e-9 else 1.0
    adherence_score = float(p_sup.min()) if p_sup.size else 1.0
    return TraceScores(
        float(p_rel.mean()),
        float(p_util.mean()),
        min(completeness, 1.0),
        1.0 if adherence_score >= 0.5 else 0.0,
        adherence_score,
    )


def gold_scores(row, convention: str = "ragbench") -> TraceScores:
    """Scores of a RAGBench row recomputed from its gold keys."""
    return trace_scores(
        row["documents_sentences"],
        row["all_relevant_sentence_keys"],
        row["all_utilized_sentence_keys"],
        row["unsupported_response_sentence_keys"],
        convention,
    )


def aggregate(scores: list[TraceScores], *, n_resamples: int = 2000, seed: int = 0, confidence: float = 0.95) -> dict:
    """The seed guide's JSON layout (mean per metric, 'average', 'num_samples',
    'individual_scores') plus, per metric, the [low, high] percentile-bootstrap interval of the
    mean (helpers.inference.classical.bootstrap_ci; NaN scores left out) under 'ci95' ('ci90' for
    confidence=0.90, ...), the level itself under 'confidence', and the number of failures."""
    out: dict = {}
    ci: dict = {}
    for metric in METRICS:
        values = [getattr(s, metric) for s in scores]
        mean, low, high = bootstrap_ci(values, confidence=confidence, n_resamples=n_resamples, seed=seed)
        out[metric] = mean
        ci[metric] = [low, high]
    finite_means = [out[m] for m in METRICS if not math.isnan(out[m])]
    out["average"] = float(np.mean(finite_means)) if finite_means else math.nan
    out["num_samples"] = len(scores)
    out["num_failed"] = sum(s.error is not None for s in scores)
    out["confidence"] = confidence
    out[f"ci{100 * confidence:g}"] = ci
    out["individual_scores"] = [s.as_dict() for s in scores]
    return out


def _json_safe(value):
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, dict):
        return {k: _json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_safe(v) for v in value]
    if isinstance(value, np.generic):
        return _json_safe(value.item())
    return value


def to_json(result: dict, path: str | Path | None = None) -> str:
    """JSON text (NaN written as null); also written to `path` when given."""
    text = json.dumps(_json_safe(result), indent=2, ensure_ascii=False)
    if path is not None:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_text(text, encoding="utf-8")
    return text
