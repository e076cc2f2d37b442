import re

import pytest

from helpers.data.chunking import chunk_spans, sentence_spans

TEXT = (
    "La gestante debe iniciar el control prenatal en el primer trimestre. ¿Cuándo se considera tardío? "
    "Después de la semana 16. El Dr. Pérez recomienda diez citas para nulíparas y siete para multíparas. "
    "La ecografía se realiza entre las semanas 10 y 13,6. " * 12
)


def _words(text):
    return re.findall(r"\S+", text)


@pytest.mark.parametrize("size,overlap", [(500, 100), (200, 50), (120, 0), (80, 79)])
@pytest.mark.parametrize("boundary", ["sentence", "word"])
def test_chunk_invariants(size, overlap, boundary):
    spans = chunk_spans(TEXT, size=size, overlap=overlap, boundary=boundary)
    assert spans, "non-empty text gives chunks"
    for span in spans:
        assert 0 < span.end - span.start <= size
        assert TEXT[span.start : span.end].strip() == TEXT[span.start : span.end]  # no empty/padded chunk
    for prev, nxt in zip(spans, spans[1:]):
        assert nxt.start > prev.start and nxt.end > prev.end  # progress, no chunk inside another
        assert max(0, prev.end - nxt.start) <= overlap
    # every word of the text lies in some chunk
    covered = set()
    for span in spans:
        covered.update(m.start() + span.start for m in re.finditer(r"\S+", TEXT[span.start : span.end]))
    assert covered == {m.start() for m in re.finditer(r"\S+", TEXT)}


def test_sentence_boundary_chunks_start_at_sentences():
    starts = {s.start for s in sentence_spans(TEXT)}
    spans = chunk_spans(TEXT, size=300, overlap=100)
    assert all(span.start in starts for span in spans)
    # there is real overlap when the sentences allow it
    assert any(prev.end > nxt.start for prev, nxt in zip(spans, spans[1:]))


def test_spanish_sentences_and_abbreviations():
    sentences = [TEXT[s.start : s.end] for s in sentence_spans(TEXT[:260])]
    assert sentences[1] == "¿Cuándo se considera tardío?"
    assert any(s.startswith("El Dr. Pérez") for s in sentences)  # "Dr." does not end a sentence


def test_long_sentence_cut_at_words():
    text = " ".join(["palabra"] * 200) + "."
    spans = chunk_spans(text, size=100, overlap=20)
    assert all(span.end - span.start <= 100 for span in spans)
    assert all(text[span.start : span.end].split()[0] == "palabra" for span in spans)


def test_empty_text_and_bad_settings():
    assert chunk_spans("   \n ") == []
    with pytest.raises(ValueError, match="overlap"):
        chunk_spans(TEXT, size=100, overlap=100)
    with pytest.raises(ValueError, match="size"):
        chunk_spans(TEXT, size=0, overlap=0)
    with pytest.raises(ValueError, match="boundary"):
        chunk_spans(TEXT, boundary="paragraph")


def test_dot_leaders_with_runs_of_spaces_never_overflow_a_chunk():
    """A real PDF's table of contents (dot leaders, page numbers, runs of spaces) made a sentence
    piece one character longer than a chunk, and chunk_spans raised IndexError on it."""
    import random

    rng = random.Random(0)
    for _ in range(300):
        text = "".join(
            rng.choice([".", ". .", "asn1_x", "10", "word"]) + " " * rng.choice([1, 1, 1, 2, 3])
            for _ in range(rng.randint(20, 200))
        )
        spans = chunk_spans(text, size=50, overlap=10)
        assert spans and all(s.end - s.start <= 50 for s in spans)
        assert spans[-1].end == len(text.rstrip()) or spans[-1].end == len(text)
