"""The `ragchecker` judge (helpers.judges.claim_checks): RAGChecker's metrics worked by hand from
entailment tables, the judge on a known answer, and its validity rows."""

import pytest

from helpers.data.contracts import Sample
from helpers.judges.claim_checks import claim_metrics

T, F = True, False


def test_ragchecker_metrics_from_entailment_tables_worked_by_hand():
    # answer claims a1..a4 (a1, a2 in the reference); reference claims g1..g3 (g1 in the answer);
    # chunk 1 holds g1 and g3 (relevant), chunks 2 and 3 none; a1, a3 from chunk 1, a4 from chunk 2
    values = claim_metrics(
        answer_in_reference=[T, T, F, F],
        reference_in_answer=[T, F, F],
        reference_in_chunks=[[T, F, F], [F, F, F], [T, F, F]],
        answer_in_chunks=[[T, F, F], [F, F, F], [T, F, F], [F, T, F]],
    )
    assert values == pytest.approx(
        {
            "precision": 2 / 4,
            "recall": 1 / 3,
            "f1": 0.4,
            "claim_recall": 2 / 3,
            "context_precision": 1 / 3,
            "context_utilization": 1 / 2,  # of g1, g3 (retrieved), g1 is in the answer
            "noise_sensitivity_relevant": 1 / 4,  # a3: wrong, from the relevant chunk
            "noise_sensitivity_irrelevant": 1 / 4,  # a4: wrong, from an irrelevant chunk only
            "hallucination": 0.0,
            "self_knowledge": 1 / 4,  # a2: right, in no chunk
            "faithfulness": 3 / 4,
        }
    )
    # nothing retrieved holds the reference: utilization has no denominator
    assert claim_metrics([T], [F], [[F]], [[F]])["context_utilization"] is None


def test_the_judge_on_an_answer_half_right_from_the_wrong_chunk():
    from helpers.judges.base import JudgeContext, judge_class

    judge = judge_class("ragchecker")(context=JudgeContext(language="en"))
    judge.prepare()
    reference = (
        "The first prenatal visit should happen before week 12 of pregnancy. "
        "Iron supplements are recommended when anaemia is diagnosed."
    )
    contexts = (
        "Labour usually starts between weeks 37 and 42.",
        "The first prenatal visit should happen before week 12.",
    )
    answer = "The first prenatal visit should happen before week 12 [2]. Labour starts between weeks 37 and 42 [1]."
    rows, _ = judge.score_sample(Sample("q1", "When?", answer, contexts, reference))
    values = {metric: value for metric, value, _ in rows}
    assert values == pytest.approx(
        {
            "precision": 0.5,
            "recall": 0.5,
            "f1": 0.5,
            "claim_recall": 0.5,
            "context_precision": 0.5,
            "context_utilization": 1.0,
            "noise_sensitivity_relevant": 0.0,
            "noise_sensitivity_irrelevant": 0.5,  # the labour claim: not the reference's, from chunk 1
            "hallucination": 0.0,
            "self_knowledge": 0.0,
            "faithfulness": 1.0,
        }
    )
    assert rows[0][2].endswith("relevant chunks [2]")
    rows, _ = judge.score_sample(Sample("q1", "When?", "[1]", contexts, reference))
    assert {reason for _, value, reason in rows if value is None} == {"the answer has no statement"}


def test_validity_rows_of_the_metrics_people_can_check():
    from helpers.judges import validity

    table = validity.validity_table(validity.SHIPPED_CSV).set_index(["judge", "metric"])
    f1 = table.loc[("ragchecker", "f1")]
    assert (f1["n"], f1["positives"], f1["status"]) == (93, 21, validity.AGREES) and f1["auroc"] == pytest.approx(
        0.9398
    )
    assert ("ragchecker", "self_knowledge") not in table.index  # no label checks it: not in the headline
    assert not validity.trusted("ragchecker/self_knowledge")
