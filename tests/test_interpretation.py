"""Issue 26: scores read as the reference documents read them: bands at every boundary, each
metric's own reading, and the diagnostic patterns, named only when the intervals support them."""

import math

import pandas as pd
import pytest

from helpers.interpretation import PATTERNS, band, band_table, detect, patterns_of, reading

# (metric, value, band): every boundary of both families, and a value just under each
RAGAS_CASES = [
    ("faithfulness", 1.0, "Excellent"),
    ("faithfulness", 0.9, "Excellent"),
    ("faithfulness", 0.8999, "Good"),
    ("faithfulness", 0.85, "Good"),  # TRACe's scale would call this Excellent: the example
    ("faithfulness", 0.8, "Good"),
    ("faithfulness", 0.7999, "Needs improvement"),
    ("faithfulness", 0.7, "Needs improvement"),  # the seed's unnamed [0.7, 0.8)
    ("faithfulness", 0.5, "Needs improvement"),
    ("faithfulness", 0.4999, "Poor"),
    ("faithfulness", 0.0, "Poor"),
    ("answer_relevancy", 0.85, "Excellent"),
    ("answer_relevancy", 0.8499, "Good"),
    ("answer_relevancy", 0.75, "Good"),
    ("answer_relevancy", 0.7499, "Needs improvement"),
    ("answer_relevancy", 0.5, "Needs improvement"),
    ("answer_relevancy", 0.4999, "Poor"),
    ("context_precision", 0.85, "Excellent"),
    ("context_precision", 0.8499, "Good"),
    ("context_precision", 0.75, "Good"),
    ("context_precision", 0.7499, "Needs improvement"),
    ("context_precision", 0.5, "Needs improvement"),
    ("context_precision", 0.4999, "Poor"),
    ("context_recall", 0.8, "Excellent"),
    ("context_recall", 0.7999, "Good"),
    ("context_recall", 0.7, "Good"),
    ("context_recall", 0.6999, "Needs improvement"),
    ("context_recall", 0.5, "Needs improvement"),
    ("context_recall", 0.4999, "Poor"),
]
TRACE_CASES = [
    (metric, value, name)
    for metric in ("relevance", "utilization", "completeness", "adherence", "average")
    for value, name in [
        (1.0, "Excellent"),
        (0.8, "Excellent"),
        (0.7999, "Good"),
        (0.6, "Good"),
        (0.5999, "Fair"),
        (0.4, "Fair"),
        (0.3999, "Poor"),
        (0.0, "Poor"),
    ]
]


@pytest.mark.parametrize("metric,value,expected", RAGAS_CASES + TRACE_CASES)
def test_every_band_boundary(metric, value, expected):
    assert band(metric, value).name == expected
    assert band(f"judge/{metric}", value).name == expected  # summaries name metrics judge/metric


def test_bands_come_from_their_family_and_missing_values_have_none():
    assert band_table("ragas/faithfulness").family == "RAGAS"
    assert band_table("offline/adherence").family == "TRACe"
    assert "Interpreting RAGAS Scores" in band_table("faithfulness").source
    assert band_table("retrieval/ndcg@10") is None and band("retrieval/ndcg@10", 0.9).name == "n/a"
    assert band("faithfulness", None).name == "n/a" and band("faithfulness", math.nan).name == "n/a"


def test_each_metric_reads_as_its_seed_section_says():
    assert reading("context_precision", 0.95) == "nearly all retrieved contexts are relevant"
    assert reading("context_precision", 0.9) == "nearly all retrieved contexts are relevant"
    assert reading("context_precision", 0.89) == "good precision, some noise"
    assert reading("context_precision", 0.49) == "poor retrieval, mostly irrelevant contexts"
    assert reading("faithfulness", 1.0) == "all claims are supported by the context"
    assert reading("faithfulness", 0.99) == "mostly faithful, minor unsupported details"
    assert reading("context_recall", 0.59) == "incomplete retrieval, major gaps"
    assert reading("answer_relevancy", 0.5) == "partially relevant, misses key aspects"
    assert reading("adherence", 0.5) == "" and reading("faithfulness", None) == ""


def _summary(architecture: str, values: dict[str, tuple[float, float, float]], n: int = 20) -> pd.DataFrame:
    return pd.DataFrame(
        [
            {
                "architecture": architecture,
                "metric": f"ragas/{m}",
                "mean": v[0],
                "ci_low": v[1],
                "ci_high": v[2],
                "n": n,
            }
            for m, v in values.items()
        ]
    )


# one summary per pattern whose intervals clear every threshold; each pattern, by name
CLEAR = {
    "High precision, low recall": {"context_precision": (0.9, 0.85, 0.95), "context_recall": (0.4, 0.3, 0.5)},
    "High recall, low precision": {"context_recall": (0.9, 0.85, 0.95), "context_precision": (0.4, 0.3, 0.5)},
    "High faithfulness, low relevancy": {"faithfulness": (0.95, 0.92, 0.98), "answer_relevancy": (0.4, 0.3, 0.5)},
    "Low faithfulness, high relevancy": {"faithfulness": (0.5, 0.4, 0.6), "answer_relevancy": (0.9, 0.85, 0.95)},
    "Low utilization, low relevance": {"utilization": (0.2, 0.1, 0.3), "relevance": (0.2, 0.1, 0.3)},
    "Low utilization alone": {"utilization": (0.2, 0.1, 0.3), "relevance": (0.5, 0.45, 0.55)},
    "High relevance, low utilization": {"relevance": (0.7, 0.65, 0.75), "utilization": (0.2, 0.1, 0.3)},
    "Low completeness, high utilization": {"completeness": (0.2, 0.1, 0.3), "utilization": (0.7, 0.65, 0.75)},
    "Low adherence": {"adherence": (0.2, 0.1, 0.3)},
    "High relevance, utilization and completeness": {
        "relevance": (0.7, 0.65, 0.75),
        "utilization": (0.7, 0.65, 0.75),
        "completeness": (0.7, 0.65, 0.75),
    },
}


def test_every_pattern_has_a_case():
    assert set(CLEAR) == {p.name for p in PATTERNS}


@pytest.mark.parametrize("name", sorted(CLEAR))
def test_each_pattern_is_named_when_its_intervals_support_it(name):
    found = detect(_summary("hybrid", CLEAR[name]))
    named = found[found.status == "named"]
    assert name in set(named.pattern), found
    row = named[named.pattern == name].iloc[0]
    assert (
        row.architecture == "hybrid" and "n = 20" in row.evidence and row.source.endswith((".md", "metric", "Patterns"))
    )


@pytest.mark.parametrize("name", sorted(CLEAR))
def test_a_pattern_whose_interval_straddles_a_threshold_is_only_possible(name):
    pattern = next(p for p in PATTERNS if p.name == name)
    condition = pattern.conditions[0]
    values = dict(CLEAR[name])
    mean = values[condition.metric][0]
    # the same mean, with an interval that crosses the first condition's threshold
    values[condition.metric] = (mean, min(mean, condition.threshold) - 0.05, max(mean, condition.threshold) + 0.05)
    found = detect(_summary("bm25", values))
    assert found[found.pattern == name].status.tolist() == ["possible"], found


def test_no_pattern_when_the_means_do_not_meet_it_or_a_metric_is_missing():
    assert detect(_summary("dense", {"context_precision": (0.7, 0.6, 0.8), "context_recall": (0.7, 0.6, 0.8)})).empty
    assert detect(_summary("dense", {"context_precision": (0.9, 0.85, 0.95)})).empty  # recall not scored
    assert detect(pd.DataFrame()).empty


def test_patterns_of_one_answer_use_its_values():
    names = [p.name for p in patterns_of({"faithfulness": 0.5, "answer_relevancy": 0.9, "adherence": 0.0})]
    assert names == ["Low faithfulness, high relevancy", "Low adherence"]
    assert patterns_of({"faithfulness": math.nan, "answer_relevancy": 0.9}) == []
