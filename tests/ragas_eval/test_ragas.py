"""RAGAS with the workbench judge: the four metrics on hand-made samples with a scripted judge
(a LangChain chat model answering in ragas's JSON with stated verdicts), the n=1 path through the
LLM layer, NaN recording, Spanish prompts, and end-to-end runs through the real local model."""

import asyncio
import importlib.util
import json
import math
import re
import time
import zlib

import numpy as np
import pytest
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from pydantic import ConfigDict, Field

from helpers.data.contracts import Sample
from helpers.inference.classical import auroc
from helpers.llm import LLM, LLMError, ResponseCache
from helpers.llm.backends import Completion
from helpers.llm.scripted import ScriptedBackend
from helpers.ragas_eval import RagasJudge
from helpers.ragas_eval.ragas_validity import hallucination_auroc, validity_table
from helpers.ragas_eval.spanish import in_language, seed_examples, verdict_agreement

KINDS = {
    "did not satisfy the constraints": "fix",  # first: a repair prompt quotes the original prompt
    "Break down each sentence": "statements",
    "judge the faithfulness of a series": "verdicts",
    "Generate a question for the given answer": "question",
    "verify if the context was useful": "context_verdict",
    "can be attributed to the given context": "classifications",
    "Given a ground truth and an answer statements": "correctness",
}


def judge_kind(prompt: str) -> str:
    return next(kind for marker, kind in KINDS.items() if marker in prompt)


def judge_input(prompt: str) -> dict:
    """The input ragas appends after its instruction and examples."""
    return json.loads(prompt.rsplit("\ninput: ", 1)[1].rsplit("\nOutput:", 1)[0])


class ScriptedJudge(BaseChatModel):
    """Answers each ragas prompt with `script[kind](input, i)` (a dict, sent as JSON, or raw text)."""

    model_config = ConfigDict(arbitrary_types_allowed=True)
    script: dict
    calls: list = Field(default_factory=list)
    delay_s: float = 0.0

    @property
    def _llm_type(self) -> str:
        return "scripted-judge"

    def _generate(self, messages, stop=None, run_manager=None, **kwargs):
        prompt = messages[-1].content
        kind = judge_kind(prompt)
        data = judge_input(prompt)
        n = kwargs.get("n", 1)
        self.calls.append(
            {"kind": kind, "input": data, "n": n, "temperature": kwargs.get("temperature"), "prompt": prompt}
        )
        time.sleep(self.delay_s)
        outs = [self.script[kind](data, i) for i in range(n)]
        return ChatResult(
            generations=[
                ChatGeneration(
                    message=AIMessage(content=o if isinstance(o, str) else json.dumps(o, ensure_ascii=False))
                )
                for o in outs
            ]
        )


class BowEmbedder:
    """Deterministic bag-of-words vectors: identical texts get cosine 1."""

    name = "bow-test"

    def _one(self, text):
        v = np.zeros(64)
        for w in re.findall(r"\w+", text.lower()):
            v[zlib.crc32(w.encode()) % 64] += 1
        return v / (np.linalg.norm(v) or 1)

    def embed_queries(self, texts):
        return np.stack([self._one(t) for t in texts])

    embed_documents = embed_queries


def cos(a, b):
    e = BowEmbedder()
    return float(e._one(a) @ e._one(b))


Q = "What is the capital of France?"
FACTS = {"Paris is the capital of France.": 1, "France is in Europe.": 1, "Paris has 40 million inhabitants.": 0}
STATEMENTS = {
    "Paris is the capital of France, in Europe.": ["Paris is the capital of France.", "France is in Europe."],
    "Paris is the capital of France and has 40 million inhabitants.": [
        "Paris is the capital of France.",
        "Paris has 40 million inhabitants.",
    ],
}
RELEVANT = {
    "Paris is the capital of France.": 1,
    "Bananas are yellow.": 0,
    "Rome is in Italy.": 0,
    "The Eiffel Tower is in Paris, the French capital.": 1,
}
IN_CONTEXT = {
    "Paris is the capital of France.": 1,
    "Paris has about 2.1 million inhabitants.": 0,
    "The Seine flows through Paris.": 1,
}
GEN_QUESTIONS = [Q, "Which city is the capital of France?", "What is the population of Paris?"]


def base_script():
    return {
        "statements": lambda d, i: {"statements": STATEMENTS[d["answer"]]},
        "verdicts": lambda d, i: {
            "statements": [
                {"statement": s, "reason": f"stated verdict {FACTS[s]}", "verdict": FACTS[s]} for s in d["statements"]
            ]
        },
        "question": lambda d, i: {"question": GEN_QUESTIONS[i], "noncommittal": int("don't know" in d["response"])},
        "context_verdict": lambda d, i: {"reason": "stated", "verdict": RELEVANT[d["context"]]},
        "classifications": lambda d, i: {
            "classifications": [
                {"statement": s, "reason": "stated", "attributed": IN_CONTEXT[s]}
                for s in re.split(r"(?<=\.)\s+", d["answer"])
            ]
        },
        "correctness": lambda d, i: {
            "TP": [{"statement": s, "reason": "stated"} for s in d["answer"] if s in d["ground_truth"]],
            "FP": [{"statement": s, "reason": "stated"} for s in d["answer"] if s not in d["ground_truth"]],
            "FN": [{"statement": s, "reason": "stated"} for s in d["ground_truth"] if s not in d["answer"]],
        },
        "fix": lambda d, i: "still not json",
    }


def scripted(script=None, **kwargs):
    judge = ScriptedJudge(script=script or base_script())
    return judge, RagasJudge(judge, BowEmbedder(), **kwargs)


def test_faithfulness_faithful_and_fabricated():
    judge, scorer = scripted(metrics=("faithfulness",))
    contexts = ["Paris is the capital of France.", "France is in Europe."]
    rows = scorer.score(
        [
            Sample("ok", Q, "Paris is the capital of France, in Europe.", contexts),
            Sample("fab", Q, "Paris is the capital of France and has 40 million inhabitants.", contexts),
        ]
    ).rows.set_index("qid")
    assert rows.loc["ok", "value"] == 1.0
    assert rows.loc["fab", "value"] == 0.5  # 1 of 2 statements supported
    assert "✗ 'Paris has 40 million inhabitants.'" in rows.loc["fab", "reason"]
    nli = [c for c in judge.calls if c["kind"] == "verdicts"]
    assert nli[0]["input"]["context"] == "\n".join(contexts)  # contexts reach the judge joined
    assert nli[1]["input"]["statements"] == STATEMENTS["Paris is the capital of France and has 40 million inhabitants."]
    gen = [c for c in judge.calls if c["kind"] == "statements"]
    assert gen[0]["input"] == {"question": Q, "answer": "Paris is the capital of France, in Europe."}
    assert all(c["n"] == 1 and c["temperature"] == pytest.approx(0.01) for c in judge.calls)


def test_context_precision_irrelevant_contexts_and_recall_missing_fact():
    judge, scorer = scripted(metrics=("context_precision", "context_recall"))
    ref = "Paris is the capital of France. Paris has about 2.1 million inhabitants. The Seine flows through Paris."
    mixed = [
        "Paris is the capital of France.",
        "Bananas are yellow.",
        "The Eiffel Tower is in Paris, the French capital.",
    ]
    rows = scorer.score(
        [
            Sample("mixed", Q, None, mixed, ref),
            Sample("junk", Q, None, ["Bananas are yellow.", "Rome is in Italy."], ref),
        ]
    ).rows
    value = rows.set_index(["qid", "metric"])["value"]
    # average precision over verdicts [1, 0, 1]: (1/1 + 2/3) / 2
    assert value["mixed", "context_precision"] == pytest.approx((1 + 2 / 3) / 2)
    assert value["junk", "context_precision"] == pytest.approx(0.0)
    assert value["mixed", "context_recall"] == pytest.approx(2 / 3)  # the population fact is missing
    verdict_calls = [c for c in judge.calls if c["kind"] == "context_verdict"]
    assert [c["input"]["context"] for c in verdict_calls[:3]] == mixed  # one call per context, in rank order
    assert all(c["input"]["answer"] == ref for c in verdict_calls)  # the reference, not the response
    recall_call = next(c for c in judge.calls if c["kind"] == "classifications")
    assert recall_call["input"]["context"] == "\n".join(mixed) and recall_call["input"]["answer"] == ref
    assert "verdicts by rank [1, 0, 1]" in rows.iloc[0]["reason"]


def test_answer_correctness_follows_the_formula_and_needs_a_reference():
    judge, scorer = scripted(metrics=("answer_correctness",))
    reference = "Paris is the capital of France, in Europe."
    half = "Paris is the capital of France and has 40 million inhabitants."
    rows = scorer.score(
        [
            Sample("same", Q, reference, [], reference),
            Sample("half", Q, half, [], reference),
            Sample("noref", Q, half, [], None),
        ]
    ).rows.set_index("qid")
    assert rows.loc["same", "value"] == pytest.approx(1.0)  # F1 1, cosine 1
    # 1 TP, 1 FP (the population), 1 FN (Europe): F1 = 1 / (1 + (1 + 1) / 2) = 0.5
    assert rows.loc["half", "value"] == pytest.approx(0.75 * 0.5 + 0.25 * cos(half, reference))
    assert "1 TP, 1 FP, 1 FN" in rows.loc["half", "reason"] and "40 million" in rows.loc["half", "reason"]
    assert math.isnan(rows.loc["noref", "value"]) and "no reference answer" in rows.loc["noref", "reason"]
    classified = [c for c in judge.calls if c["kind"] == "correctness"]
    assert classified[1]["input"]["ground_truth"] == STATEMENTS[reference]  # the reference's own statements


def test_context_precision_without_a_reference_judges_the_contexts_against_the_answer():
    judge, scorer = scripted(metrics=("context_precision",))
    mixed = ["Paris is the capital of France.", "Bananas are yellow.", "Rome is in Italy."]
    rows = scorer.score(
        [
            Sample("free", Q, "Paris is the capital of France.", mixed, None),
            Sample("none", Q, None, mixed, None),
        ]
    ).rows.set_index("qid")
    assert rows.loc["free", "value"] == pytest.approx(1.0)  # verdicts [1, 0, 0]: the useful one first
    assert rows.loc["free", "reason"].startswith("reference-free (contexts judged against the answer)")
    calls = [c for c in judge.calls if c["kind"] == "context_verdict"]
    assert len(calls) == 3 and all(c["input"]["answer"] == "Paris is the capital of France." for c in calls)
    assert math.isnan(rows.loc["none", "value"]) and "no reference answer" in rows.loc["none", "reason"]


def test_unknown_ragas_metric_is_named_with_the_valid_ones():
    from helpers.experiment.judges_config import JudgesConfig

    with pytest.raises(ValueError, match="unknown RAGAS metric.*'answer_corectness'.*answer_correctness"):
        JudgesConfig({"ragas_metrics": ["faithfulness", "answer_corectness"]})
    with pytest.raises(ValueError, match="unknown RAGAS metric.*'answer_corectness'.*answer_correctness"):
        JudgesConfig({"ragas": {"llm": "local", "metrics": ["answer_corectness"]}})
    assert JudgesConfig({"ragas_metrics": ["answer_correctness"]}).options("ragas")["metrics"] == ["answer_correctness"]


def test_answer_relevancy_asks_n_samples_and_follows_the_formula():
    judge, scorer = scripted(metrics=("answer_relevancy",))
    rows = scorer.score([Sample("rel", Q, "Paris.", []), Sample("evasive", Q, "I don't know.", [])]).rows.set_index(
        "qid"
    )
    assert rows.loc["rel", "value"] == pytest.approx(np.mean([cos(Q, q) for q in GEN_QUESTIONS]))
    assert rows.loc["evasive", "value"] == 0.0  # every generation noncommittal
    call = judge.calls[0]
    assert call["n"] == 3 and call["temperature"] == pytest.approx(0.3)  # n reaches the chat model
    assert len(judge.calls) == 2 and rows.loc["rel", "judge_calls"] == 3


def scripted_backend(script) -> ScriptedBackend:
    """A backend of the LLM layer answering ragas's prompts from `script`: one completion per
    request, like an n=1-only provider."""

    def reply(call):
        out = script[judge_kind(call.prompt)](judge_input(call.prompt), call.seed)
        return Completion(json.dumps(out), input_tokens=len(call.prompt) // 4, output_tokens=20)

    return ScriptedBackend(reply)


def test_n_samples_as_single_requests_through_the_llm_layer(tmp_path):
    script = base_script()
    backend = scripted_backend(script)
    llm = LLM(
        {"provider": "groq", "model": "llama-3.1-8b-instant", "max_retries": 0},
        cache=ResponseCache(tmp_path / "c.sqlite"),
        backend=backend,
    )
    scorer = RagasJudge(llm, BowEmbedder(), metrics=("answer_relevancy",), strictness=3)
    result = scorer.score([Sample("rel", Q, "Paris.", [])])
    assert [c.seed for c in backend.calls] == [0, 1, 2]  # sample=0..2: three requests, own seeds
    assert result.rows["value"][0] == pytest.approx(np.mean([cos(Q, q) for q in GEN_QUESTIONS]))
    assert result.totals["calls"] == 3 and result.totals["cost_usd"] > 0  # accounted with Groq's price
    again = scorer.score([Sample("rel", Q, "Paris.", [])])
    assert again.totals["cache_hits"] == 3 and len(backend.calls) == 3  # cached: no new request


def test_nan_reasons_and_the_run_goes_on(tmp_path):
    script = base_script()
    garbage = {
        "Paris is the capital of France, in Europe.": "no json here",
        "Paris is the capital of France and has 40 million inhabitants.": "I'm sorry, I can't help with that.",
    }
    script["statements"] = lambda d, i: garbage[d["answer"]]
    script["fix"] = lambda d, i: "I'm sorry, I can't help with that." if "sorry" in json.dumps(d) else "still bad"
    judge, scorer = scripted(script, metrics=("faithfulness", "context_recall"))
    samples = [
        Sample("parse", Q, "Paris is the capital of France, in Europe.", ["Paris is the capital of France."]),
        Sample("refusal", Q, "Paris is the capital of France and has 40 million inhabitants.", ["x"]),
        Sample("failed_gen", Q, None, ["Paris is the capital of France."], None, "LLMError: boom"),
        Sample("ok", Q, None, ["Paris is the capital of France."], "Paris is the capital of France."),
    ]
    result = scorer.score(samples)
    rows = result.rows.set_index(["qid", "metric"])
    assert rows.loc[("parse", "faithfulness"), "error_kind"] == "parse"
    assert "no json here" in rows.loc[("parse", "faithfulness"), "reason"]
    assert rows.loc[("parse", "faithfulness"), "judge_calls"] == 2  # the output + one repair attempt
    assert rows.loc[("refusal", "faithfulness"), "error_kind"] == "refusal"
    assert rows.loc[("failed_gen", "faithfulness"), "error_kind"] == "skipped"
    assert "generation failed" in rows.loc[("failed_gen", "faithfulness"), "reason"]
    assert "no reference" in rows.loc[("failed_gen", "context_recall"), "reason"]
    assert rows.loc[("ok", "context_recall"), "value"] == 1.0  # the run went on
    assert result.nan_counts() == {"faithfulness": 4, "context_recall": 3}
    assert result.rows["reason"].str.len().min() > 0


def test_timeout_and_llm_error_become_nan():
    judge, scorer = scripted(metrics=("faithfulness",), timeout_s=0.3)
    judge.delay_s = 1.0
    row = scorer.score([Sample("slow", Q, "Paris is the capital of France, in Europe.", ["c"])]).rows.iloc[0]
    assert math.isnan(row["value"]) and row["error_kind"] == "timeout"
    llm = LLM({"provider": "local", "cache": "off", "max_retries": 0}, backend=ScriptedBackend(LLMError("boom")))
    row = (
        RagasJudge(llm, BowEmbedder(), metrics=("faithfulness",))
        .score([Sample("err", Q, "Paris.", ["c"])])
        .rows.iloc[0]
    )
    assert row["error_kind"] == "llm_error" and "boom" in row["reason"]


def test_score_inside_a_running_event_loop():
    judge, scorer = scripted(metrics=("context_precision",))

    async def notebook_cell():  # Jupyter runs cells inside a loop
        return scorer.score([Sample("a", Q, None, ["Paris is the capital of France."], "Paris")])

    assert asyncio.run(notebook_cell()).rows["value"][0] == pytest.approx(1.0)


def test_spanish_prompts_reach_the_judge_unescaped():
    script = base_script()
    script["statements"] = lambda d, i: {"statements": ["Se recomiendan diez citas."]}
    script["verdicts"] = lambda d, i: {
        "statements": [{"statement": s, "reason": "igual", "verdict": 1} for s in d["statements"]]
    }
    judge, scorer = scripted(script, metrics=("faithfulness",), language="es")
    rows = scorer.score([Sample("q", "¿Cuántas citas?", "Diez citas.", ["Se recomiendan diez citas."])]).rows
    assert rows["value"][0] == 1.0
    prompt = judge.calls[0]["prompt"]
    assert "write every statement in the language of the answer" in prompt
    assert "¿Cuántas citas?" in prompt and "hipertensión arterial" in prompt  # raw UTF-8, Spanish example
    stock = ScriptedJudge(script=script)
    RagasJudge(stock, BowEmbedder(), metrics=("faithfulness",), language="en").score(
        [Sample("q", "¿Cuántas citas?", "Diez citas.", ["Se recomiendan diez citas."])]
    )
    assert "language of the answer" not in stock.calls[0]["prompt"]


def test_seed_examples_score_as_ragas_defines_with_expected_verdicts():
    """A judge giving exactly the seed document's verdicts gets ragas's scores (precision: 11/12,
    not the seed's 0.81)."""
    examples = {e.sample.qid: e for e in seed_examples()}
    script = {
        "context_verdict": lambda d, i: {
            "reason": "seed",
            "verdict": examples["prec"].expected_verdicts[examples["prec"].sample.contexts.index(d["context"])],
        },
        "classifications": lambda d, i: {
            "classifications": [
                {"statement": s, "reason": "seed", "attributed": int(i < 3 or "25 y 29,9" in d["context"])}
                for i, s in enumerate(re.findall(r"[^.]+\.", d["answer"]))
            ]
        },
    }
    judge, scorer = scripted(script, metrics=("context_precision", "context_recall"), language="es")
    rows = scorer.score([examples[q].sample for q in ("prec", "rec_full", "rec_part")]).rows
    value = rows.set_index(["qid", "metric"])["value"]
    assert value["prec", "context_precision"] == pytest.approx(examples["prec"].expected_score)
    assert value["rec_full", "context_recall"] == 1.0 and value["rec_part", "context_recall"] == pytest.approx(0.6)
    assert verdict_agreement([1, 1, 0, 1, 0], [1, 1, 0, 1, 1]) == 0.8 and verdict_agreement([0], [0, 1]) == 0.5
    assert in_language("Se recomienda un programa de diez citas.", "es") and not in_language(
        "Ten visits are advised.", "es"
    )


def test_auroc_and_validity_table():
    import pandas as pd

    assert hallucination_auroc([True, True, False, False], [0.9, 0.8, 0.1, 0.2]) == 1.0
    assert math.isnan(hallucination_auroc([True, True], [0.1, 0.2]))
    frame = pd.DataFrame(
        {
            "subset": ["a"] * 4 + ["b"] * 4,
            "adherence_score": [True, False] * 4,
            "ours_faithfulness": [1, 0, 1, np.nan, 0.5, 0.5, 1, 0],
            "ragas_faithfulness": [0.9, 0.1, 0.2, 0.8, 0.7, 0.3, 0.6, 0.4],
        }
    )
    table = validity_table(frame).set_index("subset")
    assert table.loc["all", "ours_nan"] == 1 and table.loc["a", "auroc_ours"] == 1.0
    assert table.loc["all", "rows"] == 8
    rng = np.random.default_rng(1)
    y, score = rng.random(40) < 0.5, rng.integers(0, 5, 40) / 4  # ties, as faithfulness has
    assert auroc(~y, 1 - score) == pytest.approx(hallucination_auroc(y, score))


# ----------------------------------------------------------------------------- real local model


def local_judge(cache, **overrides):
    backend = "llama-cpp" if importlib.util.find_spec("llama_cpp") else "transformers"
    return LLM(
        {"provider": "local", "local_backend": backend, "max_tokens": 160, "timeout_s": 120, **overrides}, cache=cache
    )


E2E = Sample(
    "e2e",
    "¿Cuántas citas prenatales se recomiendan?",
    "Se recomiendan diez citas para primigestantes [1].",
    ["Se recomienda un programa de diez citas para primigestantes."],
    "Se recomienda un programa de diez citas.",
)


def by_formula(metric: str, outputs: list[dict], sample: Sample) -> float:
    """A metric recomputed from the judge's own parsed outputs (the row's `detail`) by the formula
    ragas 0.4.3 documents, so that a wrong aggregation (a mean of the wrong field, a missing weight,
    precision read as recall) is caught whatever the model said."""
    roles = {}
    for o in outputs:
        roles.setdefault(o["role"], []).append(o)
    e = BowEmbedder()
    if metric == "faithfulness":  # supported answer statements / answer statements
        verdicts = [st["verdict"] for o in roles["verdicts"] for st in o["statements"]]
        return sum(verdicts) / len(verdicts)
    if metric == "context_recall":  # reference statements attributed to the contexts / reference statements
        cls = [c["attributed"] for o in roles["classifications"] for c in o["classifications"]]
        return sum(cls) / len(cls)
    if metric == "context_precision":  # mean precision@k over the relevant ranks
        v = [int(o["verdict"]) for o in roles["context_verdict"]]
        hits = [sum(v[: k + 1]) / (k + 1) * v[k] for k in range(len(v))]
        return sum(hits) / (sum(v) + 1e-10)
    if metric == "answer_correctness":  # 0.75 F1 of the statement classes + 0.25 cosine(answer, reference)
        c = roles["correctness"][0]
        tp, fp, fn = len(c["TP"]), len(c["FP"]), len(c["FN"])
        f1 = tp / (tp + 0.5 * (fp + fn)) if tp else 0.0
        return 0.75 * f1 + 0.25 * float(e._one(sample.answer) @ e._one(sample.reference))
    # answer_relevancy: mean cosine(question, generated question), 0 when every one is noncommittal
    questions = roles["question"]
    sims = [float(e._one(sample.question) @ e._one(o["question"])) for o in questions]
    return float(np.mean(sims)) * int(not all(o["noncommittal"] for o in questions))


def check_finished(result, metrics, sample=None):
    """Every metric scored, each equal to its formula over the judge's outputs (NaN only with a reason)."""
    sample = sample or E2E
    assert list(result.rows["metric"]) == list(metrics)
    scored = 0
    for row in result.rows.itertuples():
        if math.isnan(row.value):
            assert row.error_kind and row.reason, row
            continue
        expected = by_formula(row.metric, json.loads(row.detail), sample)
        assert row.value == pytest.approx(expected, abs=1e-6), (row.metric, row.detail)
        scored += 1
    # the 135M judge can leave a metric unparsed (a reply cut at max_tokens: a NaN with its reason);
    # what it scores must be its formula's value
    assert scored, result.rows[["metric", "value", "reason"]]


@pytest.mark.slow
def test_end_to_end_with_the_local_model(tmp_path):
    """The metrics the server test below leaves out (it scores faithfulness and answer relevancy
    with the same model), in process."""
    llm = local_judge(ResponseCache(tmp_path / "c.sqlite"))
    metrics = ("context_precision", "context_recall", "answer_correctness")
    result = RagasJudge(llm, BowEmbedder(), language="es", strictness=2, timeout_s=300, metrics=metrics).score([E2E])
    check_finished(result, metrics)
    # one verdict per context, one classification, two statement lists and their classes (+ repairs)
    assert result.totals["calls"] >= 5 and result.totals["cost_usd"] == 0


@pytest.mark.slow
def test_end_to_end_through_the_local_openai_compatible_server(tmp_path):
    from helpers.llm.serving import local_server

    backend = "llama-cpp" if importlib.util.find_spec("llama_cpp") else "transformers"
    with local_server(local_backend=backend, startup_timeout=300) as base_url:
        llm = LLM(
            {
                "provider": "openai-compatible",
                "model": "smollm2",
                "base_url": base_url,
                "max_tokens": 160,
                "timeout_s": 300,
                "max_retries": 1,
            },
            cache=ResponseCache(tmp_path / "c.sqlite"),
        )
        result = RagasJudge(
            llm,
            BowEmbedder(),
            language="es",
            strictness=2,
            timeout_s=600,
            parse_retries=0,
            metrics=("faithfulness", "answer_relevancy"),
        ).score([E2E])
    check_finished(result, ("faithfulness", "answer_relevancy"))
    assert sum(r.error is None for r in llm.calls) >= 3  # statements (+ verdicts) + 2 questions, one request each
