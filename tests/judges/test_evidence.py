"""The evidence model: evidence selection, synthetic negatives and NLI pairs on tiny inputs; a tiny
real training (resumed from a checkpoint = trained straight through, and its card); the stacked
offline judge; judge-eval's judge names."""

import json

import numpy as np
import pytest

from helpers.judges.models.evidence_pairs import nli_pairs, perturb, select_evidence

DOCS = [
    [
        ["0a", "Marie Curie was born in Warsaw in 1867."],
        ["0b", "She moved to Paris to study physics."],
        ["0c", "The weather in Warsaw is cold in winter."],
    ],
    [["1a", "Pierre Curie taught at the Sorbonne from 1900."], ["1b", "Albert Einstein met the Curies in Brussels."]],
]


def test_select_evidence_takes_the_sentences_sharing_rare_words_in_document_order():
    evidence = select_evidence("Curie was born in Warsaw.", DOCS, k=2)
    assert evidence == "Marie Curie was born in Warsaw in 1867. The weather in Warsaw is cold in winter."
    assert select_evidence("Anything at all", [], k=3) == ""


def test_perturbations_change_what_the_documents_support():
    for seed in range(6):  # whichever kind is drawn, the claim changes as that kind says
        fake, kind = perturb("Marie Curie was born in 1867.", DOCS, "", seed=seed)
        assert {
            "number": "1900" in fake,
            "negation": "was not born" in fake,
            "name": "Einstein" in fake or "Sorbonne" in fake or "Brussels" in fake,
        }[kind], (kind, fake)
    fake, kind = perturb(
        "She studied with Albert Einstein.",
        [[["0a", "Albert Einstein met Curie."]], [["1a", "Niels Bohr lived in Copenhagen."]]],
        "",
        seed=1,
    )
    assert kind == "name" and fake != "She studied with Albert Einstein."
    assert any(name in fake for name in ("Niels", "Bohr", "Copenhagen"))  # a name of the other document
    negated, kind = perturb("The drug is safe in pregnancy.", [[["0a", "No numbers or names here."]]], "", seed=0)
    assert (negated, kind) == ("The drug is not safe in pregnancy.", "negation")
    restored, _ = perturb("The drug is not safe.", [[["0a", "x"]]], "", seed=0)
    assert restored == "The drug is safe."
    assert perturb("zebras graze", [[["0a", "x"]]], "", seed=0) is None
    assert perturb("zebras graze", [[["0a", "x"]]], "Lions hunt at night.", seed=0) == ("Lions hunt at night.", "other")


def test_nli_pairs_are_binary_deduplicated_and_a_missing_folder_is_named(tmp_path):
    (tmp_path / "breaking_nli").mkdir()
    rows = [
        {"sentence1": "A man sleeps.", "sentence2": "A man rests.", "gold_label": "entailment"},
        {"sentence1": "A man sleeps.", "sentence2": "A man rests.", "gold_label": "entailment"},
        {"sentence1": "A red car.", "sentence2": "A blue car.", "gold_label": "contradiction"},
        {"sentence1": "A dog.", "sentence2": "A pet.", "gold_label": "-"},
    ]
    (tmp_path / "breaking_nli" / "dataset.jsonl").write_text("\n".join(map(json.dumps, rows)))
    pairs = nli_pairs(tmp_path)
    assert [(p.claim, p.evidence, p.label) for p in pairs] == [
        ("A man rests.", "A man sleeps.", 1),
        ("A blue car.", "A red car.", 0),
    ]
    with pytest.raises(Exception, match="prepare-data nli"):
        nli_pairs(tmp_path / "empty")


TINY = dict(limit_nli=48, limit_support=10, nli_epochs=1, support_epochs=1, batch_size=16, checkpoint_every=2)


@pytest.fixture(scope="module")
def tiny_model(raw_ready, tmp_path_factory):
    from helpers.judges.models.evidence_training import TrainSettings, train_evidence_model

    out = tmp_path_factory.mktemp("evidence")
    card = train_evidence_model(out, TrainSettings.from_options(**TINY), progress=False, stack=False)
    return out, card


@pytest.mark.slow
def test_tiny_training_writes_a_model_and_its_card(tiny_model):
    from helpers.judges.models.evidence_model import EvidenceModel

    out, card = tiny_model
    assert EvidenceModel.exists(out) and not (out / "checkpoint.pt").exists()
    saved = json.loads((out / "card.json").read_text())
    assert saved["settings"]["seed"] == 0 and saved["steps"]["nli"] >= 2 and saved["steps"]["support"] >= 1
    assert set(saved["data_sha256"]) == {"nli", "support"} and saved["artefact_bytes"] > 1e6
    assert "ragbench/covidqa" in str(saved["trained_on"]) or saved["trained_on"]["ragbench_splits"]
    assert all(not s.endswith("/test") for s in saved["trained_on"]["ragbench_splits"])
    model = EvidenceModel.load(out)
    p = model.support(
        ["Marie Curie was born in Warsaw.", "Paris is in Peru."],
        ["Marie Curie was born in Warsaw in 1867.", "Paris is the capital of France."],
    )
    assert p.shape == (2,) and np.all((0 <= p) & (p <= 1))
    per_sentence = model.response_support(DOCS, "Curie was born in Warsaw. Yes.")
    assert per_sentence.shape == (2,) and per_sentence[1] == 1.0  # "Yes." makes no claim


@pytest.mark.slow
def test_interrupted_training_resumes_to_the_same_weights(tiny_model, tmp_path):
    import torch
    from safetensors.torch import load_file

    from helpers.judges.models.evidence_training import TrainSettings, train_evidence_model

    straight, _ = tiny_model
    settings = TrainSettings.from_options(**TINY)
    assert train_evidence_model(tmp_path, settings, progress=False, stop_after=3, stack=False) is None
    assert (tmp_path / "checkpoint.pt").exists() and not (tmp_path / "card.json").exists()
    card = train_evidence_model(tmp_path, settings, progress=False, stack=False)
    assert card is not None and not (tmp_path / "checkpoint.pt").exists()
    a, b = load_file(straight / "model.safetensors"), load_file(tmp_path / "model.safetensors")
    assert a.keys() == b.keys()
    assert all(torch.allclose(a[k], b[k], atol=1e-6) for k in a)
    assert train_evidence_model(tmp_path / "other", settings, progress=False, stop_after=1) is None
    with pytest.raises(ValueError, match="other settings"):
        train_evidence_model(tmp_path / "other", TrainSettings.from_options(**(TINY | {"seed": 1})), progress=False)


@pytest.mark.slow
def test_stacked_judge_mixes_lexical_and_neural_support(tiny_model, tmp_path):
    from helpers.data import load_ragbench
    from helpers.judges.models.evidence_model import EvidenceModel
    from helpers.judges.models.trace_trees import OfflineJudge, featurise_frame, fit_judge

    frame = load_ragbench("covidqa", "validation").head(30)
    lexical = fit_judge(featurise_frame(frame), max_iter=10)
    evidence = EvidenceModel.load(tiny_model[0])
    item = (frame.question.iloc[0], frame.documents_sentences.iloc[0], frame.response_sentences.iloc[0])
    judges = {
        use: OfflineJudge(
            lexical.sentence_models, lexical.example_models, lexical.meta, None if use == "lexical" else evidence, use
        )
        for use in ("lexical", "evidence", "stacked")
    }
    out = {use: j.judge(*item) for use, j in judges.items()}
    neural = evidence.response_support(item[1], item[2], item[0])
    assert out["evidence"].scores.adherence_score == pytest.approx(neural.min())
    assert out["stacked"].scores.adherence_score == pytest.approx(
        (out["lexical"].scores.adherence_score + neural.min()) / 2
    )
    lexical_p = [r["p_supported"] for r in out["lexical"].response_predictions]
    stacked_p = [r["p_supported"] for r in out["stacked"].response_predictions]
    assert stacked_p == pytest.approx((np.array(lexical_p) + neural) / 2)
    assert out["stacked"].scores.relevance == out["lexical"].scores.relevance  # support only
    assert "evidence model" in judges["stacked"].describe() and "evidence model" not in judges["lexical"].describe()
    with pytest.raises(Exception, match="make evidence-model"):
        OfflineJudge(lexical.sentence_models, lexical.example_models, lexical.meta, None, "stacked")


def test_judge_eval_names_the_valid_judges():
    from helpers.judges.judge_eval import judge_eval

    with pytest.raises(Exception, match="valid: offline, lexical, evidence, stacked, llm"):
        judge_eval(judges="offline,nli")


@pytest.mark.slow
def test_ragas_faithfulness_with_evidence_verdicts(tiny_model):
    """Statements from the answer's sentences (no LLM, or an LLM whose statements do not restate
    the answer), each judged by the evidence model; the score is the supported share."""
    from helpers.judges.models.evidence_faithfulness import EvidenceFaithfulness, usable_statements
    from helpers.judges.models.evidence_model import EvidenceModel

    model = EvidenceModel.load(tiny_model[0])
    judge = EvidenceFaithfulness(model, threshold=0.5)
    contexts = ["Marie Curie was born in Warsaw in 1867. She moved to Paris to study physics."]
    out = judge.score("Where was Curie born?", "Curie was born in Warsaw. She studied physics in Paris.", contexts)
    assert out["statements_from"] == "sentences" and len(out["statements"]) == 2
    assert out["value"] == sum(p >= 0.5 for p in out["p_supported"]) / 2
    assert "statements supported by the evidence model" in out["reason"]
    assert np.isnan(judge.score("q", "", contexts)["value"])
    assert "no retrieved contexts" in judge.score("q", "An answer.", [])["reason"]
    # a small LLM copies the question or invents: such statements are dropped
    kept = usable_statements(
        ["Where was Curie born?", "Curie was born in Warsaw.", "Bananas are yellow fruit."],
        "Where was Curie born?",
        "Curie was born in Warsaw.",
    )
    assert kept == ["Curie was born in Warsaw."]


@pytest.mark.slow
def test_a_run_uses_the_evidence_model_and_says_so(tiny_model, tmp_path):
    """`python -m helpers run` with a trained evidence model (HELPERS_MODELS_DIR): the offline TRACe
    judge is the stacked one, RAGAS faithfulness is scored with the evidence model's verdicts on
    every answer, the evidence model judges on its own too (`judges: {evidence: ...}`), and
    summary.json names the artefacts."""
    import pandas as pd

    from helpers.judges.models.trace_trees import DEFAULT_PATH as LEXICAL
    from helpers.retrieval.learned.ltr_training import DEFAULT_PATH as RERANKER
    from runs import TINY, cli, run_env, write_config

    models = tmp_path / "models"
    models.mkdir()
    for artefact in (LEXICAL, RERANKER):  # each with its card (the sha256 checked before loading)
        for path in (artefact, artefact.with_suffix(".json")):
            (models / path.name).symlink_to(path)
    (models / "evidence").symlink_to(tiny_model[0], target_is_directory=True)
    config = write_config(
        tmp_path,
        dict(
            TINY,
            architectures=["bm25"],
            judges={"offline": True, "trace_llm": None, "ragas": None, "evidence": {"threshold": 0.5}},
        ),
    )
    done = cli("run", str(config), env=run_env(tmp_path, HELPERS_MODELS_DIR=str(models)))
    assert done.returncode == 0, done.stderr[-2000:]
    assert "offline TRACe judge: stacked" in done.stdout + done.stderr
    run_dir = next((tmp_path / "results").iterdir())
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["judge_artefacts"]["offline"][0].startswith("stacked: lexical judge")
    assert "evidence model" in summary["judge_artefacts"]["ragas_evidence"][0]
    scores = pd.read_parquet(run_dir / "scores.parquet")
    faithfulness = scores[(scores.judge == "ragas_evidence") & (scores.metric == "faithfulness")]
    assert len(faithfulness) == 3 and faithfulness.reason.str.contains("statements: the answer's sentences").all()
    assert faithfulness.value.dropna().between(0, 1).all()
    assert "evidence model" in summary["judge_artefacts"]["evidence"][0]
    evidence = scores[scores.judge == "evidence"].pivot(index="qid", columns="metric", values="value")
    assert len(evidence) == 3 and evidence.notna().all().all(), scores[scores.judge == "evidence"]
    # every sentence clears the threshold exactly when the weakest one does
    assert ((evidence.support >= 0.5) == (evidence.supported_share == 1.0)).all()
    assert evidence.support.between(0, 1).all() and evidence.supported_share.between(0, 1).all()


@pytest.mark.slow
def test_stack_weight_is_chosen_on_held_out_examples_and_used(tiny_model, tmp_path):
    import shutil

    from helpers.judges.models.evidence_model import EvidenceModel
    from helpers.judges.models.evidence_training import fit_stack_weight
    from helpers.judges.models.trace_trees import OfflineJudge

    folder = tmp_path / "evidence"
    shutil.copytree(tiny_model[0], folder)
    # 100 of the ~300 held-out examples (~10% of ~2,980), the lexical judge on 1,000 of the rest
    stacking = fit_stack_weight(folder, max_iter=5, max_examples=100)
    grid = stacking["mean_subset_auroc_by_weight"]
    assert len(grid) == 11 and stacking["weight"] in grid
    assert grid[stacking["weight"]] == max(grid.values())
    assert stacking["examples"] == 100 and stacking["hallucinated"] > 3
    evidence = EvidenceModel.load(folder)
    assert evidence.card["stacking"]["weight"] == stacking["weight"]
    judge = OfflineJudge({}, {}, {}, evidence, "stacked")
    assert judge.stack_weight == stacking["weight"] and f"weight {stacking['weight']:g}" in judge.describe()
