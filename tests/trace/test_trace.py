"""TRACe: sentence keys, gold-score reproduction on real RAGBench rows, aggregation, the offline
judge (determinism, Spanish, any input form) and the LLM judge path."""

import json
import math

import pandas as pd
import pytest

from helpers.errors import UserError
from helpers.trace import (
    aggregate,
    gold_scores,
    key_document,
    key_response,
    letters,
    parse_keys,
    scores_from_probabilities,
    split_sentences,
    to_json,
    trace_scores,
)
from helpers.trace.sentence_keys import all_keys, letters_index, normalize_key

SPANISH = (
    "¿Cuándo se recomienda iniciar los controles prenatales? Se recomienda realizar el primer "
    "control prenatal en el primer trimestre, idealmente antes de la semana 10 de gestación. "
    "El Dr. Pérez indicó que la ecografía se hace entre las semanas 11 y 14. ¡Es importante!"
)


@pytest.fixture(scope="module")
def ragbench(raw_ready):
    from helpers.data import list_splits, load_ragbench

    return {(s, p): load_ragbench(s, p) for s, splits in list_splits().items() for p in splits}


# ---- keys
def test_letters_continue_past_z_like_ragbench():
    assert [letters(i) for i in (0, 1, 25, 26, 27, 51, 52, 701, 702)] == [
        "a",
        "b",
        "z",
        "aa",
        "ab",
        "az",
        "ba",
        "zz",
        "aaa",
    ]
    assert all(letters_index(letters(i)) == i for i in range(2000))


def test_keys_match_the_shipped_keys_of_long_documents(ragbench):
    frame = ragbench[("expertqa", "validation")]
    longest = max((doc for docs in frame["documents_sentences"] for doc in docs), key=len)
    assert len(longest) > 26 * 3
    doc_index = int(longest[0][0][:-1])
    assert [k for k, _ in longest] == [f"{doc_index}{letters(i)}" for i in range(len(longest))]


@pytest.mark.parametrize(
    "raw, expected",
    [
        ("0b.", "0b"),
        (" 1C ", "1c"),
        ("'2a'", "2a"),
        ("a.", "a"),
        ("0AA", "0aa"),
        ("supported_without_sentence", None),
        ("", None),
        (None, None),
        ("1a b", None),
    ],
)
def test_normalize_key(raw, expected):
    assert normalize_key(raw) == expected


def test_parse_keys_reports_invalid_and_splits_commas():
    parsed = parse_keys(
        ["0b.", " 1C ", "0b", "1as, 1av", "9z", "supported_without_sentence"],
        valid_keys=["0a", "0b", "1c", "1as", "1av"],
    )
    assert parsed.keys == ["0b", "1c", "1as", "1av"]
    assert parsed.invalid == ["9z", "supported_without_sentence"]
    assert parse_keys(None).keys == [] and parse_keys("0a").keys == ["0a"]


def test_split_sentences_spanish_and_english():
    sentences = split_sentences(SPANISH)
    assert sentences[0].startswith("¿Cuándo") and sentences[0].endswith("?")
    assert any("Dr. Pérez" in s for s in sentences)  # abbreviation kept inside its sentence
    assert sentences[-1] == "¡Es importante!"
    assert split_sentences("Title: A study\nPassage: It works. It is cheap.") == [
        "Title: A study",
        "Passage: It works.",
        "It is cheap.",
    ]
    assert split_sentences("") == [] and split_sentences("   \n ") == []


def test_long_document_keys():
    text = " ".join(f"Sentence number {i} is here." for i in range(60))
    keyed = key_document(text, 2)
    assert len(keyed) == 60 and keyed[25][0] == "2z" and keyed[26][0] == "2aa" and keyed[59][0] == "2bh"
    assert [k for k, _ in key_response("It works. It is cheap. Yes it is.")] == ["a", "b", "c"]


# ---- scores
def test_trace_scores_by_hand():
    docs = [[["0a", "x"], ["0b", "y"]], [["1a", "z"], ["1b", "w"]]]
    s = trace_scores(docs, ["0a", "0b.", "1a"], ["0b", "1b"], [])
    assert (s.relevance, s.utilization, s.completeness, s.adherence) == (0.75, 0.5, 1 / 3, 1.0)
    s = trace_scores(docs, [], ["0a"], ["b"])
    assert s.completeness == 1.0 and s.adherence == 0.0
    s = trace_scores(docs, ["0a", "7q"], [], [])
    assert s.relevance == 0.25 and s.invalid_keys == ["7q"]
    assert math.isnan(trace_scores([], ["0a"], [], []).relevance)


def test_gold_scores_reproduced_on_first_rows(ragbench):
    for frame in ragbench.values():
        for _, row in frame.head(20).iterrows():
            s = gold_scores(row)
            assert s.relevance == pytest.approx(row["relevance_score"])
            assert s.adherence == float(bool(row["adherence_score"]))


def test_gold_scores_reproduced_on_every_shipped_row(ragbench):
    """relevance/utilization/completeness/adherence from the gold keys equal the shipped gold scores
    on every row (ragbench convention); the unique-key count differs only where a key is listed twice."""
    for (subset, split), frame in ragbench.items():
        for _, row in frame.iterrows():
            s = gold_scores(row, "ragbench")
            assert s.relevance == pytest.approx(row["relevance_score"]), (subset, split, row["id"])
            assert s.utilization == pytest.approx(row["utilization_score"]), (subset, split, row["id"])
            assert s.completeness == pytest.approx(row["completeness_score"]), (subset, split, row["id"])
            assert s.adherence == float(bool(row["adherence_score"])), (subset, split, row["id"])
            relevant, utilized = row["all_relevant_sentence_keys"], row["all_utilized_sentence_keys"]
            named = {k for d in row["documents_sentences"] for k, _ in d}
            clean = (
                all(len({normalize_key(k) for k in keys}) == len(keys) for keys in (relevant, utilized))
                and {normalize_key(k) for k in relevant + utilized} <= named
            )
            if clean:  # no key listed twice, every key names a sentence: both conventions agree
                unique = gold_scores(row, "unique")
                assert (unique.relevance, unique.utilization) == pytest.approx((s.relevance, s.utilization))


def test_scores_from_probabilities():
    s = scores_from_probabilities([1, 0, 1, 0], [1, 0, 0, 0], [0.9, 0.2])
    assert (s.relevance, s.utilization, s.completeness, s.adherence_score, s.adherence) == (0.5, 0.25, 0.5, 0.2, 0.0)


def test_aggregate_and_json(tmp_path):
    docs = [[["0a", "x"], ["0b", "y"]]]
    scores = [
        trace_scores(docs, ["0a"], ["0a"], []),
        trace_scores(docs, ["0a", "0b"], ["0a"], ["a"]),
        trace_scores(docs, [], [], []),
    ]
    failed = scores + [trace_scores([], [], [], [])]
    result = aggregate(failed, n_resamples=200, seed=1)
    assert result["num_samples"] == 4 and result["num_failed"] == 1
    assert result["relevance"] == pytest.approx(0.5) and result["adherence"] == pytest.approx(2 / 3)
    lo, hi = result["ci95"]["relevance"]
    assert lo <= result["relevance"] <= hi
    assert set(result) >= {"utilization", "relevance", "adherence", "completeness", "average", "individual_scores"}
    text = to_json(result, tmp_path / "r.json")
    loaded = json.loads((tmp_path / "r.json").read_text())
    assert loaded == json.loads(text) and loaded["individual_scores"][3]["relevance"] is None
    assert aggregate(failed, n_resamples=200, seed=1) == result  # seeded bootstrap


# ---- offline judge
@pytest.fixture(scope="module")
def tiny_training(ragbench):
    return pd.concat(
        [
            ragbench[("covidqa", "validation")].head(40),
            ragbench[("hotpotqa", "validation")].head(40),
            ragbench[("emanual", "validation")].head(20),
        ],
        ignore_index=True,
    )


def test_offline_judge_is_deterministic(tiny_training, ragbench):
    from helpers.judges.models.trace_trees import featurise_frame, fit_judge

    rows = tiny_training.iloc[::2]
    first = fit_judge(featurise_frame(rows), seed=0, max_iter=10)
    second = fit_judge(featurise_frame(rows), seed=0, max_iter=10)
    probe = ragbench[("covidqa", "test")].head(5)
    for a, b in zip(first.judge_frame(probe), second.judge_frame(probe)):
        assert a.scores.as_dict() == b.scores.as_dict()
        assert a.document_predictions == b.document_predictions
        assert a.response_predictions == b.response_predictions


def test_offline_judge_on_raw_text_spanish_and_edge_cases(tiny_training):
    from helpers.judges.models.trace_trees import featurise_frame, fit_judge

    judge = fit_judge(featurise_frame(tiny_training), seed=0, max_iter=15)
    docs = [SPANISH, "La ecografía del primer trimestre se realiza entre las semanas 11 y 14 de gestación."]
    out = judge.judge(
        "¿Cuándo iniciar los controles prenatales?",
        docs,
        "Antes de la semana 10. La ecografía se hace entre las semanas 11 y 14.",
    )
    assert [d["key"] for d in out.document_predictions][:2] == ["0a", "0b"]
    assert [r["key"] for r in out.response_predictions] == ["a", "b"]
    for m in ("relevance", "utilization", "completeness", "adherence_score"):
        assert 0.0 <= getattr(out.scores, m) <= 1.0
    assert set(out.keys()) == {
        "all_relevant_sentence_keys",
        "all_utilized_sentence_keys",
        "unsupported_response_sentence_keys",
    }
    long_doc = " ".join(f"Frase número {i} sobre el embarazo." for i in range(40))
    out = judge.judge("¿Qué?", [long_doc], "")
    assert out.document_predictions[27]["key"] == "0ab" and out.response_predictions == []
    assert not math.isnan(out.scores.relevance)
    assert judge.judge("?", [], "Algo.").scores.error == "no document sentences"


def test_train_judge_writes_a_small_artefact(tmp_path, raw_ready):
    from helpers.judges.models.trace_trees import OfflineJudge, train_judge

    info = train_judge(out_path=tmp_path / "judge.skops", subsets=["covidqa", "hotpotqa"], limit=25, max_iter=15)
    assert info["artefact_bytes"] < 5_000_000 and info["n_examples"] == 50
    assert info["trained_on"] == ["covidqa/validation", "hotpotqa/validation"]  # never test
    judge = OfflineJudge.load(tmp_path / "judge.skops")
    assert judge.meta["training_means"]["relevance"] > 0
    with pytest.raises(UserError, match="no trained judge; run `python -m helpers train-judge`"):
        OfflineJudge.load(tmp_path / "missing.skops")


# ---- LLM judge
class _ScriptedLLM:
    """Stands in for helpers.llm.LLM: answers from a script (no model)."""

    def __init__(self, texts):
        self.texts = list(texts)

    def complete(self, messages, **params):
        from helpers.llm import CallRecord, LLMResult

        return LLMResult(self.texts.pop(0), CallRecord("scripted", "scripted", "k"))


def test_llm_judge_parses_an_annotation_and_records_failures():
    from helpers.judges.models.trace_annotator import llm_judge

    docs = [[["0a", "Paris is the capital of France."], ["0b", "It has 2 million people."]]]
    answer = json.dumps(
        {
            "all_relevant_sentence_keys": ["0a", "0b."],
            "sentence_support_information": [
                {"response_sentence_key": "a", "supporting_sentence_keys": ["0a"], "fully_supported": True},
                {"response_sentence_key": "b", "supporting_sentence_keys": [], "fully_supported": False},
            ],
        }
    )
    out = llm_judge(
        _ScriptedLLM(["Sure! ```json\n" + answer + "\n```"]),
        "Capital?",
        docs,
        "Paris is the capital. It has 9 million people.",
    )
    assert out.error is None and out.relevant_keys == ["0a", "0b"] and out.utilized_keys == ["0a"]
    assert out.unsupported_keys == ["b"] and out.scores.adherence == 0.0 and out.scores.relevance == 1.0
    failed = llm_judge(_ScriptedLLM(["no json here", "still none"]), "Capital?", docs, "Paris.")
    assert failed.error and math.isnan(failed.scores.relevance)


@pytest.mark.slow
def test_llm_judge_end_to_end_with_the_local_model(ragbench):
    from helpers.judges.models.trace_annotator import llm_judge_frame

    frame = ragbench[("hotpotqa", "test")]
    shortest = frame["documents"].map(lambda docs: sum(map(len, docs))).nsmallest(1).index
    judgements = llm_judge_frame(frame.loc[shortest], {"provider": "local", "max_tokens": 64, "n_ctx": 2048})
    assert len(judgements) == 1
    (judgement,) = judgements
    if judgement.error is not None:  # the small model's JSON did not parse: every score NaN, the reason kept
        assert all(math.isnan(v) for v in judgement.scores.as_dict().values() if isinstance(v, float))
        assert judgement.raw is None and judgement.error == judgement.scores.error
    else:  # parsed: the scores are TRACe's formulas over the keys the model gave, nothing else
        docs = frame.loc[shortest[0], "documents_sentences"]
        expected = trace_scores(docs, judgement.relevant_keys, judgement.utilized_keys, judgement.unsupported_keys)
        got, want = judgement.scores.as_dict(), expected.as_dict()
        for metric in ("relevance", "utilization", "completeness", "adherence"):
            assert got[metric] == pytest.approx(want[metric]), metric
        n_sentences = len(all_keys(docs))  # RAGBench's relevance: relevant sentences / all sentences
        assert got["relevance"] == pytest.approx(len(judgement.relevant_keys) / n_sentences)
