"""A LangChain app's retriever as an architecture (`langchain:MODULE:FACTORY`): real LangChain
retrievers (its BM25Retriever; its in-memory vector store over the bundled e5), built over the
corpus, ranked on labelled questions beside the workbench's own, and the errors a user meets."""

import pytest

from helpers.experiment.config import ExperimentConfig
from helpers.retrieval import RetrievalError, build_retriever
from helpers.retrieval.registry import needs_llm

CORPUS = {
    "e1": {"title": "", "text": "Se recomienda iniciar el control prenatal antes de la semana 10."},
    "e2": {"title": "", "text": "La ecografía del primer trimestre confirma la edad gestacional."},
    "e3": {"title": "", "text": "La preeclampsia grave se trata con sulfato de magnesio."},
    "e4": {"title": "", "text": "El parto debe ocurrir en una institución de salud."},
}
QUERIES = {"a": "¿Cuándo iniciar el control prenatal?", "b": "¿Con qué se trata la preeclampsia?"}


@pytest.fixture(autouse=True)
def trusted(monkeypatch):
    """The user's say-so these tests' modules need (a config runs no code without it: test_security)."""
    monkeypatch.setenv("HELPERS_TRUST_CODE", "langchain_app,no_such_app")


@pytest.mark.parametrize("factory", ["bm25", "vector_store"])
def test_a_langchain_retriever_ranks_the_labelled_documents_first(factory):
    name = f"langchain:langchain_app:{factory}"
    retriever = build_retriever(name, language="es").index(CORPUS)
    run = retriever.retrieve(QUERIES, 2)
    assert next(iter(run["a"])) == "e1" and next(iter(run["b"])) == "e3"
    assert list(run["a"].values()) == [1.0, 0.5]  # 1 / rank: LangChain gives no scores
    assert retriever.describe()["retriever"] in {"BM25Retriever", "VectorStoreRetriever"}
    assert not needs_llm(name)


def test_beside_the_six_in_a_run(tmp_path):
    from helpers.experiment.runner import Experiment

    raw = {
        "name": "lc",
        "dataset": {"name": "obstetrics", "options": {"pages": "124-135"}, "questions": ["q2", "q4", "q3"]},
        "architectures": ["bm25", "langchain:langchain_app:bm25"],
        "retrieval": {"k": 3},
        "generate": False,
        "figures": False,
        "statistics": {"baseline": "bm25", "n_resamples": 200},
    }
    summary = Experiment(ExperimentConfig(**raw), results_dir=tmp_path).run()
    assert summary["ok"], summary
    import pandas as pd

    scores = pd.read_parquet(tmp_path / summary["run_id"] / "scores.parquet")
    assert set(scores.architecture) == {"bm25", "langchain:langchain_app:bm25"}


def test_what_a_user_gets_wrong_is_named():
    with pytest.raises(Exception, match=r"langchain:MODULE:FACTORY"):
        ExperimentConfig(architectures=["langchain:no_factory_part"])
    with pytest.raises(RetrievalError, match=r"cannot import 'no_such_app'.*PYTHONPATH"):
        build_retriever("langchain:no_such_app:build")
    with pytest.raises(RetrievalError, match=r"langchain_app has no function 'missing'"):
        build_retriever("langchain:langchain_app:missing")
    with pytest.raises(RetrievalError, match=r"returned list, not a LangChain BaseRetriever"):
        build_retriever("langchain:langchain_app:not_a_retriever").index(CORPUS)
    # a factory with the wrong signature: one line naming it and what it must do
    with pytest.raises(RetrievalError) as failed:
        build_retriever("langchain:langchain_app:takes_nothing").index(CORPUS)
    assert str(failed.value) == (
        "architecture langchain:langchain_app:takes_nothing: the factory failed (TypeError: takes_nothing() takes "
        "0 positional arguments but 1 was given); langchain_app:takes_nothing must take the corpus (a list of "
        "LangChain Documents) and return a BaseRetriever"
    )
    with pytest.raises(RetrievalError, match=r"unknown architecture 'colbert'.*or langchain:MODULE:FACTORY"):
        build_retriever("colbert")
