"""The obstetrics questions' hand-marked passages (src/helpers/data/obstetrics_qrels.yaml) and the
resolver that turns quotes into qrels for any chunking (helpers.data.quote_qrels)."""

import pytest

from helpers.data import DataError, load_dataset
from helpers.data import obstetrics as obstetrics_module
from helpers.data.obstetrics import QRELS_YAML
from helpers.data.quote_qrels import QuoteLabel, read_quote_labels, resolve_quote_qrels

QIDS = {f"q{i}" for i in range(1, 11)}
QUOTE = "se recomienda la valoración del GO en la semana 28 - 30 y semana 34 – 36 para una nueva valoración del riesgo"


def label(qid="q1", quote=QUOTE, grade=2, page=1):
    return QuoteLabel(qid, page, " ".join(quote.split()), grade)


def test_every_question_has_passages_on_the_full_guideline_and_only_on_their_pages(raw_ready):
    ds = load_dataset("obstetrics")
    assert set(ds.qrels) == QIDS
    assert all(2 in rels.values() for rels in ds.qrels.values())  # each has a passage that answers it fully
    labels = read_quote_labels(QRELS_YAML)
    for qid, rels in ds.qrels.items():
        pages = {item.page for item in labels if item.qid == qid}
        for doc_id in rels:  # no stray match elsewhere in the guideline (a quote's edges are specific)
            doc = ds.corpus[doc_id]
            assert any(doc["page"] - 1 <= page <= doc["page_end"] for page in pages), (qid, doc_id)
        for page in pages:  # and every labelled page holds a relevant chunk
            assert any(ds.corpus[d]["page"] <= page <= ds.corpus[d]["page_end"] for d in rels), (qid, page)
    # question 4: the chunk with both numbers of visits is graded 2, one with the nulliparous half alone 1
    both = [d for d, doc in ds.corpus.items() if "diez citas" in doc["text"] and "siete citas" in doc["text"]]
    assert both and all(ds.qrels["q4"][d] == 2 for d in both)
    assert 1 in ds.qrels["q4"].values()


def test_labels_file_is_well_formed():
    labels = read_quote_labels(QRELS_YAML)
    assert {item.qid for item in labels} == QIDS
    assert all(40 <= len(item.quote) <= 120 and item.grade in (1, 2) and item.note for item in labels)


def test_a_quote_cut_by_a_chunk_boundary_marks_both_chunks_with_the_highest_grade():
    cut = 60
    corpus = {
        "a": {"text": "Texto previo.\n" + QUOTE[:cut]},
        "b": {"text": QUOTE[cut:] + "   y texto siguiente."},
        "c": {"text": "Nada que ver con la pregunta."},
        "d": {"text": "Otra  recomendación:\n" + QUOTE},  # whitespace differs: still the quote
    }
    labels = [label(), label(quote=QUOTE, grade=1), label("q2", quote=QUOTE, grade=1)]
    qrels = resolve_quote_qrels(labels, corpus, source="labels.yaml", strict=True)
    assert qrels == {"q1": {"a": 2, "b": 2, "d": 2}, "q2": {"a": 1, "b": 1, "d": 1}}


def test_chunks_shorter_than_the_quote_still_find_it():
    pieces = [QUOTE[:30], QUOTE[30:80], QUOTE[80:]]  # cut twice: neither edge of 40 is whole anywhere
    corpus = {
        f"c{i}": {"text": text} for i, text in enumerate(["antes " + pieces[0], pieces[1], pieces[2] + " después"])
    }
    corpus["short"] = {"text": "semana 28"}  # a piece of the quote, but too short to say anything
    assert resolve_quote_qrels([label()], corpus, source="labels.yaml", strict=True) == {"q1": {"c1": 2}}


def test_a_quote_that_matches_nothing_names_file_question_and_quote_unless_lenient():
    corpus = {"a": {"text": "Un texto que no contiene la cita buscada en ninguna parte de sus palabras."}}
    labels = [label("q7", quote="una cita que no aparece en el texto de la guía de ninguna forma")]
    with pytest.raises(DataError, match=r"labels\.yaml, record q7, field 'quote': quote matches no chunk.*no aparece"):
        resolve_quote_qrels(labels, corpus, source="labels.yaml", strict=True)
    assert resolve_quote_qrels(labels, corpus, source="labels.yaml", strict=False) == {}


@pytest.mark.parametrize(
    ("item", "message"),
    [
        ("{page: 3, quote: 'demasiado corta', grade: 2}", r"record q1 #1, field 'quote': quote must be 40-120"),
        ("{page: 3, quote: '" + "x" * 50 + "', grade: 3}", r"record q1 #1, field 'grade': grade must be one of"),
        ("{page: tres, quote: '" + "x" * 50 + "', grade: 2}", r"record q1 #1, field 'page'"),
    ],
)
def test_malformed_labels_name_question_item_and_field(tmp_path, item, message):
    path = tmp_path / "labels.yaml"
    path.write_text(f"q1:\n  - {item}\n", encoding="utf-8")
    with pytest.raises(DataError, match=message):
        read_quote_labels(path)


def test_labels_for_an_unknown_question_are_an_error(raw_ready, tmp_path, monkeypatch):
    path = tmp_path / "labels.yaml"
    path.write_text(f"q99:\n  - {{page: 27, quote: '{QUOTE}', grade: 2}}\n", encoding="utf-8")
    monkeypatch.setattr(obstetrics_module, "QRELS_YAML", path)
    with pytest.raises(DataError, match=r"labels\.yaml: labels for questions that do not exist: \['q99'\]"):
        load_dataset("obstetrics", pages="27-28")


def test_a_quote_missing_from_the_full_guideline_is_an_error_a_page_subset_skips_it(raw_ready, tmp_path, monkeypatch):
    path = tmp_path / "labels.yaml"
    missing = "esta frase no aparece en ninguna página de la guía de práctica clínica"
    path.write_text(f"q3:\n  - {{page: 30, quote: '{missing}', grade: 2}}\n", encoding="utf-8")
    monkeypatch.setattr(obstetrics_module, "QRELS_YAML", path)
    with pytest.raises(DataError, match=rf"labels\.yaml, record q3, field 'quote': quote matches no chunk.*{missing}"):
        load_dataset("obstetrics")
    assert load_dataset("obstetrics", pages="124-143").qrels == {}


def test_smoke_page_subset_keeps_the_passages_it_holds(raw_ready):
    ds = load_dataset("obstetrics", pages="124-143")  # configs/smoke.yaml
    assert set(ds.qrels) == {"q1", "q2", "q4", "q5", "q6"}  # q3, q7-q10: their passages lie outside
    assert all(set(rels) <= set(ds.corpus) for rels in ds.qrels.values())
    assert {"q2", "q4"} <= set(ds.qrels)  # the smoke config's questions


def test_seed_chunks_get_the_quotes_they_hold(raw_ready):
    ds = load_dataset("obstetrics", chunks="seed")
    assert set(ds.qrels) == QIDS  # every quote is in the seed's cleaned text too
    assert all(set(rels) <= set(ds.corpus) for rels in ds.qrels.values())


def test_extra_questions_are_asked_beside_the_ten_and_unanswerable_ones_are_marked(raw_ready, tmp_path):
    """Issue 36 (4): the refusal sweep's questions the guideline does not answer."""
    shipped = load_dataset(
        "obstetrics", pages="124-143", extra_questions="benchmarks/questions/obstetrics-unanswerable.csv"
    )
    assert len(shipped.queries) == 18 and shipped.unanswerable == [f"x{i}" for i in range(1, 9)]
    assert set(shipped.qrels) == {"q1", "q2", "q4", "q5", "q6"}  # the extra ones have no passages
    clash = tmp_path / "clash.csv"
    clash.write_text("id,question,answerable\nq3,¿Otra pregunta?,false\n", encoding="utf-8")
    with pytest.raises(DataError, match=r"clash\.csv.*ids \['q3'\] are the benchmark's own.*other ids"):
        load_dataset("obstetrics", pages="124-143", extra_questions=clash)
