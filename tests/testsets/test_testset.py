"""Test-set generation: each filter on known inputs, and the whole loop on the bundled model with
each filter made to bite; the `testset` command writes a questions file the run reads."""

import json

import numpy as np
import pytest

from documents_fixture import make_folder
from helpers.data.documents import ingest
from helpers.data.questions import read_questions
from helpers.errors import UserError
from helpers.testsets.writer import FILTERS, KINDS, copy_overlap, generate_testset, grounding, span_ref

ENGLISH = """# Prenatal care

Healthy pregnant women should attend at least eight prenatal visits. The first visit should happen before the
twelfth week of pregnancy, with a complete clinical history.

## Supplements

Folic acid, 400 micrograms a day, is recommended from three months before conception until week twelve. Iron is
given to pregnant women with anaemia.

## Birth

Routine episiotomy is not recommended during the second stage of labour. Oxytocin is used in the third stage to
prevent postpartum haemorrhage.

## Postpartum

The postpartum period lasts six weeks after birth. Fever above 38 degrees and heavy bleeding are warning signs.
"""


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """Four English sections (the bundled 135M model writes questions in English far more often
    than in Spanish: 3 of 5 candidates against 1 of 12 on the Spanish fixture)."""
    folder = tmp_path_factory.mktemp("docs")
    (folder / "care.md").write_text(ENGLISH, encoding="utf-8")
    return ingest(folder, chunk_size=200, chunk_overlap=0, progress=False).corpus


@pytest.fixture(scope="module")
def llm():
    from helpers.llm import LLM

    return LLM({"provider": "local", "model": "smollm2", "max_tokens": 80})


def test_grounding_counts_the_answers_content_words_in_the_sources():
    passage = ["Se recomienda ácido fólico, 400 microgramos al día, desde tres meses antes."]
    assert grounding("400 microgramos de ácido fólico", passage) == 1.0
    assert grounding("Hierro y calcio cada semana", passage) == 0.0
    assert grounding("400 microgramos de hierro", passage) == pytest.approx(2 / 3)  # 400, microgramos / hierro


def test_copy_overlap_is_the_best_sentence_jaccard():
    passage = ["El puerperio dura seis semanas. La fiebre es un signo de alarma."]
    assert copy_overlap("El puerperio dura seis semanas?", passage) == 1.0
    # only "el" is shared: 1 word of the 12 in the union
    assert copy_overlap("¿Cuánto tiempo se extiende el periodo tras el parto?", passage) == pytest.approx(1 / 12)


def test_standalone_and_reference_list_checks():
    from helpers.testsets.question_checks import SELF_REFERENCE, looks_like_references, self_reference

    assert SELF_REFERENCE.search("What is the passage about?")
    assert SELF_REFERENCE.search("¿Qué recomienda el pasaje A sobre la oxitocina?")
    assert not SELF_REFERENCE.search("¿Qué dosis de ácido fólico se recomienda?")
    assert self_reference("¿Qué recomienda el pasaje A?") == "pasaje" and self_reference("¿Qué dosis?") is None
    assert looks_like_references(
        "144. Conde-Agudelo A, et al. Am J Obstet Gynecol. 1999;181(4):1026-35. Epub 2000/05/05."
    )
    assert not looks_like_references("Se recomienda ácido fólico, 400 microgramos al día, desde 2010.")


def test_span_ref_uses_character_spans_when_there_are_some():
    assert span_ref("a.pdf#p1_c1", {"source": "a.pdf", "char_start": 3, "char_end": 9}) == "a.pdf@3-9"
    assert span_ref("p1_c1", {"text": "x"}) == "p1_c1"


class ConstantEmbedder:
    """Every question the same vector: the duplicate filter must keep only the first."""

    name = "constant"

    def embed_queries(self, texts):
        return np.ones((len(texts), 4), dtype=np.float32)


@pytest.mark.parametrize(
    "settings, dropped_at",
    [
        ({"min_grounding": 1.01, "mix": {"single": 0.5, "two": 0.5}}, "grounded"),  # no answer is that grounded
        ({"min_grounding": 0.0, "llm_check": False, "max_copy_overlap": 0.0}, "not_a_copy"),  # any overlap
        (
            {
                "min_grounding": 0.0,
                "llm_check": False,
                "max_copy_overlap": 1.01,
                "embedder": ConstantEmbedder(),
                "max_similarity": 0.5,
                "max_candidates": 12,
            },
            "not_a_duplicate",
        ),
    ],
)
@pytest.mark.slow
def test_each_filter_bites_on_the_bundled_model(corpus, llm, settings, dropped_at):
    settings = {"max_candidates": 6, **settings}
    testset = generate_testset(corpus, llm, n=3, language="en", seed=0, min_chars=40, progress=False, **settings)
    statuses = [item.status for item in testset.items]
    assert set(statuses) <= {*FILTERS, "kept"}
    assert len(testset.items) == settings["max_candidates"] or len(testset.kept) == 3
    parsed = [s for s in statuses if s not in ("parsed", "standalone")]  # those that reach the later filters
    assert parsed, "the bundled model wrote no parseable, standalone question"
    if dropped_at == "not_a_duplicate":
        assert statuses.count("kept") == 1 and set(parsed) == {"kept", "not_a_duplicate"}
    else:
        assert set(parsed) == {dropped_at}
    counts = testset.counts()
    assert sum(c["candidates"] for c in counts.values()) == len(testset.items)
    assert sum(c[f"dropped_{dropped_at}"] for c in counts.values()) == statuses.count(dropped_at)
    assert dropped_at in testset.format_report() or f"-{dropped_at}" in testset.format_report()


def test_kept_questions_are_a_questions_file_with_span_qrels(corpus, llm, tmp_path):
    testset = generate_testset(
        corpus,
        llm,
        n=2,
        language="en",
        seed=0,
        min_chars=40,
        max_candidates=6,
        min_grounding=0.0,
        llm_check=False,
        max_copy_overlap=1.01,
        progress=False,
        mix={"single": 1.0},
    )
    assert testset.kept, [i.detail for i in testset.items]
    path = testset.write(tmp_path / "t.jsonl")
    asked = read_questions(path, corpus)
    assert set(asked.queries) == {i.id for i in testset.kept}
    for item in testset.kept:  # the span qrels find the source chunk again
        assert set(item.source_doc_ids) <= set(asked.qrels[item.id])
    everything = testset.write(tmp_path / "all.jsonl", all_candidates=True)
    assert len(everything.read_text().splitlines()) == len(testset.items)


def test_bad_settings_are_refused(corpus, llm):
    with pytest.raises(UserError, match="testset n must be > 0"):
        generate_testset(corpus, llm, n=0)
    with pytest.raises(UserError, match="unknown kinds \\['yesno'\\]; valid: single, two, unanswerable"):
        generate_testset(corpus, llm, mix={"yesno": 1.0})
    assert KINDS == ("single", "two", "unanswerable")


@pytest.mark.slow
def test_testset_command_writes_questions_candidates_and_report(tmp_path, capsys):
    from helpers.__main__ import main

    folder = make_folder(tmp_path / "docs")
    out = tmp_path / "t.jsonl"
    assert main(["testset", str(folder), "--n", "1", "--config", "configs/smoke.yaml", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "candidates" in text and "escaneado.pdf" in text  # the filter table and the ingest report
    assert out.exists() and out.with_suffix(".candidates.jsonl").exists()
    report = json.loads(out.with_suffix(".report.json").read_text())
    assert set(report["counts"]) == set(KINDS)


def test_agreement_is_content_word_f1():
    from helpers.testsets.writer import agreement

    assert agreement("400 microgramos al día", "Se recomiendan 400 microgramos diarios") == pytest.approx(
        2 * 2 / (2 + 4)
    )  # {400, microgramos} vs 4 words
    assert agreement("hidralazina", "ketanserin") == 0.0


def test_two_passage_questions_pair_a_passage_with_a_near_one(corpus):
    from helpers.retrieval.architectures.sparse import BM25
    from helpers.testsets.writer import _neighbours

    bm25 = BM25("en").index(corpus)
    first = next(d for d, doc in corpus.items() if "Folic acid" in doc["text"])
    near = _neighbours(bm25, corpus, first, set(corpus))
    assert first not in near and near and set(near) <= set(corpus)
