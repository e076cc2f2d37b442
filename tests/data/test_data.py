"""Loaders on the real shipped data (published counts) and on bad input."""

import json

import pandas as pd
import pytest

from helpers.data import DataError, Dataset, list_splits, load_dataset, load_ragbench
from helpers.data.obstetrics import load_maternaqa, load_questions

# RAGBench rows per shipped subset/split (HF rungalileo/ragbench)
RAGBENCH_ROWS = {
    ("covidqa", "test"): 246,
    ("covidqa", "validation"): 267,
    ("delucionqa", "test"): 184,
    ("delucionqa", "validation"): 182,
    ("emanual", "test"): 132,
    ("emanual", "train"): 1054,
    ("emanual", "validation"): 132,
    ("expertqa", "validation"): 203,
    ("hagrid", "validation"): 322,
    ("hotpotqa", "test"): 390,
    ("hotpotqa", "validation"): 424,
    ("msmarco", "validation"): 397,
}


def test_scifact_published_counts(raw_ready):
    ds = load_dataset("scifact")
    assert (len(ds.corpus), len(ds.queries), sum(map(len, ds.qrels.values()))) == (5183, 300, 339)
    assert ds.language == "en"
    doc = ds.corpus["4983"]
    assert doc["title"].startswith("Microstructural development of human newborn")
    assert doc["text"].startswith("Alterations of the architecture of cerebral white matter")


@pytest.mark.parametrize("lang", ["es", "en"])
def test_xquad_counts(raw_ready, lang):
    ds = load_dataset(f"xquad-{lang}")
    assert (len(ds.corpus), len(ds.queries), len(ds.answers)) == (240, 1190, 1190)
    qid, rels = next(iter(ds.qrels.items()))
    (doc_id,) = rels
    assert ds.answers[qid] in ds.corpus[doc_id]["text"]  # the answer lies in its gold paragraph


def test_obstetrics_questions_and_chunks(raw_ready):
    ds = load_dataset("obstetrics")
    assert len(ds.queries) == 10 and set(ds.answers) == set(ds.queries)
    assert "Herrera" in ds.answers["q5"]  # questions 5/6 ground truths are the corrected ones
    assert 3000 < len(ds.corpus) < 4000
    pages = [doc["page"] for doc in ds.corpus.values()]
    assert pages == sorted(pages) and min(pages) >= 1 and max(pages) <= 623
    assert all(0 < len(doc["text"]) <= 500 for doc in ds.corpus.values())
    # the recommendation behind question 4 is in the corpus, in one chunk
    assert any("diez citas" in doc["text"] and "siete citas" in doc["text"] for doc in ds.corpus.values())


def test_maternaqa_and_obstetrics_es(raw_ready):
    materna = load_dataset("maternaqa")
    assert len(materna.queries) == 306 == len(materna.answers)
    ds = load_dataset("obstetrics-es")
    assert len(ds.queries) == 306 and all(len(r) == 1 for r in ds.qrels.values())
    guideline = load_dataset("obstetrics").corpus
    assert set(guideline) <= set(ds.corpus)
    assert len(ds.corpus) <= len(guideline) + len(materna.corpus)
    # gold passages are deduplicated against each other and against the guideline chunks
    norm = lambda text: " ".join(text.split())
    added = [norm(d["text"]) for doc_id, d in ds.corpus.items() if doc_id not in guideline]
    assert len(added) == len(set(added)) and not set(added) & {norm(d["text"]) for d in guideline.values()}


def test_ragbench_row_counts_and_columns(raw_ready):
    found = {(s, sp) for s, splits in list_splits().items() for sp in splits}
    assert found == set(RAGBENCH_ROWS)
    for (subset, split), rows in RAGBENCH_ROWS.items():
        frame = load_ragbench(subset, split)
        assert len(frame) == rows, (subset, split)
    row = load_ragbench("covidqa", "test").iloc[0]
    assert isinstance(row["documents_sentences"][0][0], list) and row["documents_sentences"][0][0][0] == "0a"
    assert row["all_utilized_sentence_keys"] == ["0c", "1b", "2b"]


# --- bad input -----------------------------------------------------------------------------


def test_query_splits_hold_out_whole_passages_and_articles(raw_ready):
    from helpers.data.splits import query_group

    for name in ("obstetrics-es", "xquad-es"):
        full, dev, test = (load_dataset(name, query_split=part) for part in ("all", "dev", "test"))
        assert set(dev.queries).isdisjoint(test.queries) and set(dev.queries) | set(test.queries) == set(full.queries)
        assert 0.35 < len(dev.queries) / len(full.queries) < 0.65
        assert dev.corpus == full.corpus and set(dev.qrels) == set(dev.queries)
        groups = [{query_group(full, q) for q in part.queries} for part in (dev, test)]
        assert groups[0].isdisjoint(groups[1])  # no gold passage / article on both sides
        assert sorted(load_dataset(name, query_split="dev").queries) == sorted(dev.queries)  # deterministic
    with pytest.raises(DataError, match=r"query_split must be one of \['all', 'dev', 'test'\], got 'val'"):
        load_dataset("xquad-es", query_split="val")


def test_jsonl_missing_field(tmp_path):
    path = tmp_path / "qa.jsonl"
    good = {"qa_id": "a1", "pregunta": "¿Qué?", "respuesta": "Esto.", "contexto_fuente": "Texto."}
    path.write_text(json.dumps(good) + "\n" + json.dumps({**good, "qa_id": "a2", "pregunta": ""}) + "\n")
    with pytest.raises(DataError, match=r"qa.jsonl, record line 2, field 'pregunta': missing or empty"):
        load_maternaqa(path)
    path.write_text("{not json\n")
    with pytest.raises(DataError, match=r"record line 1: invalid JSON"):
        load_maternaqa(path)
    path.write_text("\n")
    with pytest.raises(DataError, match="no records"):
        load_maternaqa(path)


def test_parquet_missing_columns(tmp_path):
    (tmp_path / "toy").mkdir()
    pd.DataFrame({"id": ["1"], "question": ["q"]}).to_parquet(tmp_path / "toy" / "test-00000.parquet")
    with pytest.raises(DataError, match=r"test-00000.parquet: columns missing: \['documents'"):
        load_ragbench("toy", "test", tmp_path)
    with pytest.raises(DataError, match="no 'validation-"):
        load_ragbench("toy", "validation", tmp_path)


def test_empty_corpus_and_bad_records():
    with pytest.raises(DataError, match="mine: the corpus is empty"):
        Dataset("mine", "en", {}, {"q": "x"})
    with pytest.raises(DataError, match="record d1, field 'text'"):
        Dataset("mine", "en", {"d1": {"title": "t", "text": "  "}}, {"q": "x"})
    with pytest.raises(DataError, match="record q1, field 'text': query is empty"):
        Dataset("mine", "en", {"d1": {"text": "a"}}, {"q1": ""})
    with pytest.raises(DataError, match="qrels name documents not in the corpus"):
        Dataset("mine", "en", {"d1": {"text": "a"}}, {"q1": "x"}, {"q1": {"d9": 1}})


def test_questions_file_errors(tmp_path):
    path = tmp_path / "questions.json"
    path.write_text(json.dumps({"questions": [{"id": 1, "question": "¿?", "ground_truth": ""}]}))
    with pytest.raises(DataError, match=r"record #0, field 'ground_truth'"):
        load_questions(path)


def test_unknown_dataset():
    with pytest.raises(ValueError, match="valid names: .*'obstetrics-es'.*'scifact'"):
        load_dataset("nope")
