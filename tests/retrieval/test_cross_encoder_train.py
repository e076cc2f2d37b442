"""The retrieval cross-encoder: a tiny real training (a CrossEncoder folder with its card, a
deterministic Rerank scorer), resumed = trained straight through, and settings checked."""

import json

import numpy as np
import pytest

TINY = dict(
    sources=("scifact", "obstetrics-es", "ragbench"),
    max_queries={"scifact": 10, "obstetrics-es": 10, "ragbench": 10},
    first_stage="bm25",
    negatives=2,
    negative_depth=5,
    batch_size=8,
    max_length=64,
    checkpoint_every=2,
    limit_pairs=40,
    held_out=0.2,
)

TOY = {
    "d1": {"title": "Folic acid", "text": "Folic acid before conception prevents neural tube defects."},
    "d2": {"title": "Iron", "text": "Iron supplements treat anaemia in pregnancy."},
    "d3": {"title": "Football", "text": "The football match ended in a draw after extra time."},
    "d4": {"title": "Weather", "text": "Heavy rain is expected in the north this weekend."},
}


@pytest.fixture(scope="module")
def torch_one_thread():
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def tiny_model(raw_ready, torch_one_thread, tmp_path_factory):
    from helpers.retrieval.learned.cross_encoder_training import RetrievalTrainSettings, train_retrieval_cross_encoder

    out = tmp_path_factory.mktemp("cross-encoder")
    card = train_retrieval_cross_encoder(out, RetrievalTrainSettings.from_options(**TINY), progress=False)
    return out, card


@pytest.mark.slow
def test_tiny_training_writes_a_cross_encoder_and_its_card(tiny_model):
    from sentence_transformers import CrossEncoder

    out, card = tiny_model
    assert not (out / "checkpoint.pt").exists()
    saved = json.loads((out / "card.json").read_text())
    assert saved == json.loads(json.dumps(card))
    assert saved["pairs"]["total_train"] == 40 and saved["steps"] == 5
    assert set(saved["pairs"]["train"]) <= {"scifact", "obstetrics-es", "ragbench"}
    assert all(not s.endswith("/test") for s in saved["ragbench_splits"]) and saved["ragbench_splits"]
    assert {"train", "held_out", "train/scifact"} <= set(saved["data_sha256"]) and saved["artefact_bytes"] > 1e6
    assert saved["settings"]["max_length"] == 64 and saved["seconds"]["train"] > 0
    assert saved["held_out"] and all("auroc" in m and "mrr_model" in m for m in saved["held_out"].values())
    model = CrossEncoder(str(out), device="cpu")
    assert model.max_seq_length == 64  # truncates as trained
    p = model.predict([("folic acid pregnancy", TOY["d1"]["text"]), ("folic acid pregnancy", TOY["d3"]["text"])])
    assert p.shape == (2,) and np.all((0 <= p) & (p <= 1))


@pytest.mark.slow
def test_the_cross_encoder_reranks_a_toy_corpus_deterministically(tiny_model):
    from helpers.retrieval.architectures.composed import Rerank
    from helpers.retrieval.architectures.sparse import BM25
    from helpers.retrieval.learned.scorers import CrossEncoderScorer

    out, _ = tiny_model
    queries = {"q": "Does folic acid prevent neural tube defects?", "r": "rain this weekend"}
    runs = [
        Rerank(BM25("en"), CrossEncoderScorer(str(out)), candidates=4).index(TOY).retrieve(queries, 4) for _ in range(2)
    ]
    assert runs[0] == runs[1]
    assert all(len(run) <= 4 and set(run) <= set(TOY) for run in runs[0].values())
    first = BM25("en").index(TOY).retrieve(queries, 4)["q"]
    scores = CrossEncoderScorer(str(out)).score(queries["q"], first, BM25("en").index(TOY))
    assert np.allclose(sorted(scores, reverse=True), list(runs[0]["q"].values()), atol=1e-6)


@pytest.mark.slow
def test_interrupted_training_resumes_to_the_same_weights(tiny_model, tmp_path):
    import torch
    from safetensors.torch import load_file

    from helpers.retrieval.learned.cross_encoder_training import RetrievalTrainSettings, train_retrieval_cross_encoder

    straight, card = tiny_model
    settings = RetrievalTrainSettings.from_options(**TINY)
    assert train_retrieval_cross_encoder(tmp_path, settings, progress=False, stop_after=3) is None
    assert (tmp_path / "checkpoint.pt").exists() and not (tmp_path / "card.json").exists()
    resumed = train_retrieval_cross_encoder(tmp_path, settings, progress=False)
    assert resumed is not None and not (tmp_path / "checkpoint.pt").exists()
    assert resumed["data_sha256"] == card["data_sha256"] and resumed["held_out"] == card["held_out"]
    a, b = load_file(straight / "model.safetensors"), load_file(tmp_path / "model.safetensors")
    assert a.keys() == b.keys()
    assert all(torch.allclose(a[k], b[k], atol=1e-6) for k in a)
    other = tmp_path / "other"
    assert train_retrieval_cross_encoder(other, settings, progress=False, stop_after=1) is None
    with pytest.raises(ValueError, match="other settings"):
        train_retrieval_cross_encoder(
            other, RetrievalTrainSettings.from_options(**(TINY | {"seed": 1})), progress=False
        )


@pytest.mark.parametrize(
    "bad, message",
    [
        (
            {"sources": ("scifact", "msmarco")},
            "unknown or no source 'msmarco'; valid: scifact, obstetrics-es, ragbench",
        ),
        ({"sources": ()}, "unknown or no source"),
        ({"max_queries": {"xquad-es": 5}}, "unknown or no source 'xquad-es'"),
        ({"first_stage": "dense"}, "first_stage must be one of hybrid, bm25"),
        ({"first_stage": {"ragbench": "hybrid"}}, "unknown or no source .ragbench."),
        ({"negatives": 0}, "negatives must be a positive integer"),
        ({"negatives": 8, "negative_depth": 4}, "make negative_depth >= negatives"),
        ({"max_length": 16}, "leaves no room for the passage"),
        ({"epochs": 0}, "epochs must be > 0"),
        ({"held_out": 1.0}, "held_out is a share"),
        ({"max_queries": {"scifact": -1}}, r"max_queries\['scifact'\] must be a positive integer"),
    ],
)
def test_bad_settings_are_named(bad, message):
    from helpers.retrieval.learned.cross_encoder_training import RetrievalTrainSettings

    with pytest.raises(ValueError, match=message):
        RetrievalTrainSettings.from_options(**bad)


def test_bad_calls_fail_before_any_work(tmp_path):
    from helpers.retrieval.learned.cross_encoder_training import train_retrieval_cross_encoder

    with pytest.raises(ValueError, match="stop_after must be a positive number"):
        train_retrieval_cross_encoder(tmp_path, stop_after=0)
    with pytest.raises(TypeError, match="RetrievalTrainSettings"):
        train_retrieval_cross_encoder(tmp_path, settings={"epochs": 1})


def test_relevant_documents_from_sentence_keys():
    from helpers.retrieval.learned.cross_encoder_data import relevant_documents

    assert relevant_documents(["0a", "0b", "12c", "3a"]) == {0, 3, 12}
    assert relevant_documents([]) == set() and relevant_documents(None) == set()


def test_settings_hold_the_loop_and_record_it_flat():
    """The loop's settings live in `loop` (a LoopSettings); flat options, as the command line gives
    them, land there, and the card and the checkpoint keep one flat record, as before."""
    from helpers.finetune import LoopSettings
    from helpers.retrieval.learned.cross_encoder_training import RetrievalTrainSettings

    settings = RetrievalTrainSettings.from_options(seed=3, batch_size=8, epochs=2.0)
    assert isinstance(settings.loop, LoopSettings) and settings.epochs == 2.0
    loop = settings.loop
    assert (loop.seed, loop.batch_size, loop.max_length, loop.head_lr) == (3, 8, 192, 5e-4)  # the others: defaults
    record = settings.record()
    assert "loop" not in record and (record["seed"], record["batch_size"], record["epochs"]) == (3, 8, 2.0)
    assert list(record)[:4] == ["base", "sources", "max_queries", "first_stage"]
    with pytest.raises(ValueError, match="retrieval cross-encoder settings: batch_size must be a positive integer"):
        RetrievalTrainSettings.from_options(batch_size=0)
