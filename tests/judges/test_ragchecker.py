"""The `ragchecker` judge (helpers.judges.ragchecker): RAGChecker's metrics worked by hand from
entailment tables, the judge on a known answer, and its validity rows."""

import pytest

from helpers.data.contracts import Sample
from helpers.judges.ragchecker import claim_metrics

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
    from helpers.judges.judge_base import JudgeContext, judge_class

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


class _OneLLM:
    """A run's source of LLM clients (helpers.judges.judge_base.LLMSource) holding one client."""

    def __init__(self, client):
        self.client = client

    def llm(self, name):
        return self.client

    def llm_copy(self, name):
        return self.client


def _llm_judge(proxy, tmp_path, monkeypatch):
    from helpers.judges.judge_base import JudgeContext, judge_class
    from helpers.llm import LLM, ResponseCache

    monkeypatch.setenv("TEST_OAI_API_KEY", "sk-test-claims")
    client = LLM(
        {"provider": "openai-compatible", "model": "m", "base_url": proxy.url + "/v1"}
        | {"api_key_env": "TEST_OAI_API_KEY", "timeout_s": 5, "max_retries": 0},
        cache=ResponseCache(tmp_path / "llm.sqlite"),
    )
    judge = judge_class("ragchecker_llm")({"llm": "judge"}, context=JudgeContext(language="en", llms=_OneLLM(client)))
    judge.prepare()
    return judge


def test_the_llm_variant_reads_claims_and_verdicts_over_http_in_order(tmp_path, monkeypatch):
    """An OpenAI-compatible server on 127.0.0.1 that answers each call with a scripted reply (the
    fault proxy's `content`): 2 + 2 (k + 1) calls for k = 2 chunks, read into the same metrics as
    the offline judge's; a reply with too few verdicts (the schema says how many) is a recorded
    failure, not padded."""
    from faults import FaultProxy
    from helpers.judges.judge_base import judge_sample

    replies = [
        '{"claims": ["a1", "a2"]}',  # the answer's claims
        '{"claims": ["g1"]}',  # the reference's
        '{"supported": [true, false]}',  # answer claims x chunk 1
        '{"supported": [false, true]}',  # answer claims x chunk 2
        '{"supported": [true]}',  # reference claims x chunk 1
        '{"supported": [false]}',  # reference claims x chunk 2
        '{"supported": [true, false]}',  # answer claims x the reference
        '{"supported": [true]}',  # reference claims x the answer
    ]
    sample = Sample("q1", "When?", "Answer text [1].", ("chunk one", "chunk two"), "Reference text.")
    with FaultProxy("http://127.0.0.1:9") as proxy:  # every request answered by the proxy itself
        proxy.faults.extend(("content", text) for text in replies)
        judge = _llm_judge(proxy, tmp_path, monkeypatch)
        rows, usage = judge.score_sample(sample)
        assert proxy.requests == 8 and usage["calls"] == 8
        assert {metric: value for metric, value, _ in rows} == pytest.approx(
            {
                "precision": 0.5,
                "recall": 1.0,
                "f1": 2 / 3,
                "claim_recall": 1.0,
                "context_precision": 0.5,
                "context_utilization": 1.0,
                "noise_sensitivity_relevant": 0.0,
                "noise_sensitivity_irrelevant": 0.5,  # a2: not the reference's, from chunk 2 only
                "hallucination": 0.0,
                "self_knowledge": 0.0,
                "faithfulness": 1.0,
            }
        )
        proxy.faults.extend(("content", text) for text in ['{"claims": ["b1", "b2"]}', '{"claims": ["h1"]}'])
        # one verdict for two claims, twice (the schema asks for exactly two; the first reply is sent
        # back once for a fix)
        proxy.faults.extend([("content", '{"supported": [true]}')] * 2)
        other = Sample("q2", "Why?", "Another answer.", ("chunk one",), "Another reference.")
        rows, _, error = judge_sample(judge, other)
        assert type(error).__name__ == "ClaimCheckError" and proxy.requests == 8 + 4
        (reason,) = {reason for _, value, reason in rows if value is None}
        assert reason.startswith("judge failed: ClaimCheckError: invalid JSON output after 2 attempt(s)")
        assert "List should have at least 2 items" in reason
