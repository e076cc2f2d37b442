"""Logprob verdicts of a local chat model (helpers.judges.models.llm_verdicts): the pure parts on hand-made
inputs, and one tiny real check with the assembled Qwen2.5-Coder-1.5B when it is on disk."""

import math

import numpy as np
import pytest

from helpers import paths
from helpers.judges.models.llm_verdicts import (
    LogprobJudge,
    claim_score,
    select_evidence,
    split_sentences,
    yes_probability,
)

QWEN = paths.DERIVED_MODELS_DIR / "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
TOY_DOCUMENT = (
    "The Eiffel Tower stands in Paris. Gustave Eiffel's company built it for the 1889 "
    "World's Fair. The tower is 330 metres tall. Millions of tourists visit the tower every year."
)


def test_yes_probability_sums_each_group_and_ignores_every_other_token():
    logits = np.full(10, 50.0)  # tokens outside both groups: far likelier, ignored
    logits[[1, 2, 3]] = [math.log(2.0), 0.0, 0.0]  # yes ids 1, 2: weights 2 + 1; no id 3: weight 1
    assert yes_probability(logits, [1, 2], [3]) == pytest.approx(0.75)
    assert yes_probability(logits, [3], [1, 2]) == pytest.approx(0.25)
    huge = np.array([1000.0, 999.0])  # no overflow: computed from the largest logit
    assert yes_probability(huge, [0], [1]) == pytest.approx(1 / (1 + math.exp(-1)))


def test_evidence_is_the_top_bm25_sentences_of_a_toy_document():
    sentences = split_sentences(TOY_DOCUMENT)
    assert len(sentences) == 4
    height, visitors = select_evidence(["The tower is 330 metres high.", "Many tourists visit it."], sentences)
    assert len(height) == 3 and height[0] == sentences[2]
    assert visitors[0] == sentences[3]
    assert select_evidence(["Where is it?"], sentences, k=4) == [sentences]  # k >= sentences: all
    assert select_evidence(["Zebras gallop."], sentences) == [sentences[:3]]  # no shared term: first k
    assert select_evidence([], sentences) == []


def test_claim_score_is_the_lowest_claim_and_nan_without_claims():
    assert claim_score([{"p_supported": 0.9}, {"p_supported": 0.2}, {"p_supported": 0.7}]) == 0.2
    assert math.isnan(claim_score([]))
    assert math.isnan(claim_score([{"p_supported": 0.9}, {"p_supported": math.nan}]))
    assert split_sentences("   ") == [] and split_sentences("") == []


class _ScriptedJudge(LogprobJudge):
    """The judge's orchestration without a model: P(yes) from the claim text."""

    def __init__(self):
        self.model = type("Model", (), {"reset": lambda self: None, "previous_prompt": 0})()
        self._bm25_tokenizer, self.last_error = None, None

    def p_yes(self, messages):
        text = messages[-1]["content"]
        if "Claim" in text and "unreadable" in text.rsplit("Claim", 1)[1]:
            raise RuntimeError("llama_decode returned -1")
        return 0.1 if "1925" in text.rsplit("Claim", 1)[-1] else 0.8


def test_claims_get_evidence_and_a_failed_claim_is_nan_with_its_reason():
    judge = _ScriptedJudge()
    claims = judge.claim_verdicts(
        "When was it built?", [TOY_DOCUMENT], "The Eiffel Tower stands in Paris. It was built in 1925."
    )
    assert [c["claim"] for c in claims] == ["The Eiffel Tower stands in Paris.", "It was built in 1925."]
    assert claims[0]["evidence"][0] == "The Eiffel Tower stands in Paris." and len(claims[0]["evidence"]) == 3
    assert claim_score(claims) == 0.1 and all(c["error"] is None for c in claims)
    failed = judge.claim_verdicts("q", [TOY_DOCUMENT], "The tower is tall. This one is unreadable.")
    assert failed[0]["p_supported"] == 0.8 and math.isnan(failed[1]["p_supported"])
    assert failed[1]["error"].startswith("RuntimeError: llama_decode")
    assert judge.claim_verdicts("q", [TOY_DOCUMENT], " ") == []
    listed = judge.claim_verdicts("q", [TOY_DOCUMENT], "Facts:\n1. It is in Paris.\n2. It is tall.")
    assert [c["claim"] for c in listed] == ["Facts: 1.", "It is in Paris.", "It is tall."]  # no bare "2."
    assert math.isnan(judge.response_verdict("q", [TOY_DOCUMENT], "")) and judge.last_error == "empty response"


@pytest.mark.slow
def test_qwen_prefers_a_supported_claim_to_a_contradicted_one():
    if not QWEN.exists():
        pytest.skip(f"{QWEN} not assembled: run `python -m helpers assemble-model qwen2.5-coder-1.5b`")
    judge = LogprobJudge(QWEN, n_ctx=1024)
    question = "When was the Eiffel Tower built?"
    supported = "The Eiffel Tower was built for the 1889 World's Fair."
    contradicted = "The Eiffel Tower was built for the 1925 World's Fair."
    claims = judge.claim_verdicts(question, [TOY_DOCUMENT], f"{supported} {contradicted}")
    assert claims[0]["p_supported"] > claims[1]["p_supported"], claims
    p_supported = judge.response_verdict(question, [TOY_DOCUMENT], supported)
    assert judge.last_error is None
    assert p_supported > judge.response_verdict(question, [TOY_DOCUMENT], contradicted)
    # whole-block prefix reuse: the same prompt after another one gives the same P, bit for bit
    assert judge.response_verdict(question, [TOY_DOCUMENT], supported) == p_supported
    assert judge.tokens_reused > 0
