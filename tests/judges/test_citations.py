"""Citation accuracy: each [n] against the context it names, with context recall's attribution check
(the multilingual e5 and the fitted weights: real models, no LLM)."""

import pytest

from helpers.data.contracts import Sample
from helpers.judges import JUDGES
from helpers.judges.citations import cited_sentences
from helpers.judges.judge_base import JudgeContext

CONTEXTS = [
    "Se recomienda un programa de diez controles prenatales para las mujeres nulíparas.",
    "El parto debe ocurrir en una institución de salud con atención calificada.",
]


@pytest.fixture(scope="module")
def judge():
    judge = JUDGES["citations"](context=JudgeContext(language="es"))
    judge.prepare()
    return judge


def _scores(judge, answer):
    rows = judge.score_sample(Sample("q", "?", answer, CONTEXTS))[0]
    return {metric: value for metric, value, _ in rows}, rows[0][2]


def test_citations_are_read_and_removed():
    assert cited_sentences("Diez controles [1]. En una institución [1, 2][3]. Nada.") == [
        ("Diez controles .", [1]),
        ("En una institución .", [1, 2, 3]),
    ]


def test_right_and_swapped_citations(judge):
    right, _ = _scores(
        judge, "Se recomiendan diez controles prenatales [1]. El parto debe ser en una institución de salud [2]."
    )
    assert right == {"citation_precision": 1.0, "citation_coverage": 1.0}
    swapped, reason = _scores(
        judge, "Se recomiendan diez controles prenatales [2]. El parto debe ser en una institución de salud [1]."
    )
    assert swapped == {"citation_precision": 0.0, "citation_coverage": 0.0}
    assert "sentence 1: cites [2] ✗; [1] holds it" in reason and "sentence 2: cites [1] ✗; [2] holds it" in reason
    half, _ = _scores(
        judge, "Se recomiendan diez controles prenatales [1]. El parto debe ser en una institución de salud [1]."
    )
    assert half == {"citation_precision": 0.5, "citation_coverage": 0.5}


def test_no_citation_and_a_number_with_no_context(judge):
    none, _ = _scores(judge, "Se recomiendan diez controles prenatales.")
    assert none == {"citation_precision": None, "citation_coverage": 0.0}
    beyond, reason = _scores(judge, "Se recomiendan diez controles prenatales [7].")
    assert beyond == {"citation_precision": 0.0, "citation_coverage": 0.0} and "[7] ✗" in reason
