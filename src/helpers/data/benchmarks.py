"""Public retrieval benchmarks in BEIR contracts: SciFact (BEIR test set) and XQuAD."""

from __future__ import annotations

import ast
import csv
import io
import json
import re
import zipfile
from pathlib import Path

from helpers.data.contracts import DataError, Dataset
from helpers.data.fetch import raw_path
from helpers.errors import UserError

SCIFACT_ZIP = "beir_scifact/scifact.zip"
XQUAD_JSON = "xquad/xquad.{lang}.json"
# a quoted string inside numpy's printed array of sentences: ['a' 'b'] or ["a" 'b']
_PY_STRING = re.compile(r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"", re.S)


XQUAD_LANGUAGES = ("es", "en")  # the two XQuAD files the data sources fetch (docs/data.md)


def _read_zip_csv(archive: zipfile.ZipFile, name: str, source: str) -> list[dict]:
    if name not in archive.namelist():
        raise DataError(source, f"member {name} is missing", fix=f"The archive has {archive.namelist()}")
    csv.field_size_limit(1 << 30)
    with archive.open(name) as fh:
        return list(csv.DictReader(io.TextIOWrapper(fh, encoding="utf-8")))


def _abstract_sentences(value: str, source: str, doc_id: str) -> list[str]:
    try:
        return [ast.literal_eval(m) for m in _PY_STRING.findall(value)]
    except (ValueError, SyntaxError) as exc:
        raise DataError(source, f"unparseable abstract ({exc})", record=doc_id, field_name="abstract") from exc


def _id_list(value: str) -> list[str]:
    return re.findall(r"\d+", value or "")


SCIFACT_SPLITS = {"test": "claims_validation.csv", "train": "claims_train.csv"}


def load_scifact(path: str | Path | None = None, split: str = "test") -> Dataset:
    """BEIR's SciFact: 5,183 abstracts; split 'test' = the 300 validation claims (BEIR's test
    set), 'train' = the train claims (for training rerankers, never for evaluation);
    qrels = the claims' cited documents."""
    if split not in SCIFACT_SPLITS:
        raise UserError(f"scifact split must be one of {sorted(SCIFACT_SPLITS)}, got {split!r}")
    path = Path(path) if path else raw_path(SCIFACT_ZIP)
    source = str(path)
    try:
        archive = zipfile.ZipFile(path)
    except (OSError, zipfile.BadZipFile) as exc:
        raise DataError(source, f"not a readable zip ({exc})", fix="Run `make data` again") from exc
    with archive:
        docs = _read_zip_csv(archive, "corpus_train.csv", source)
        claims = _read_zip_csv(archive, SCIFACT_SPLITS[split], source)
    corpus = {}
    for row in docs:
        for name in ("doc_id", "title", "abstract"):
            if name not in row:
                raise DataError(f"{source}:corpus_train.csv", "column missing", field_name=name)
        sentences = _abstract_sentences(row["abstract"], f"{source}:corpus_train.csv", row["doc_id"])
        corpus[row["doc_id"]] = {"title": row["title"], "text": " ".join(s.strip() for s in sentences)}
    queries: dict = {}
    qrels: dict = {}
    for row in claims:  # one row per (claim, evidence doc): claims repeat
        qid = row["id"]
        queries[qid] = row["claim"]
        for doc_id in _id_list(row["cited_doc_ids"]):
            qrels.setdefault(qid, {})[doc_id] = 1
    queries = {qid: text for qid, text in queries.items() if qid in qrels}  # claims citing nothing
    name = "scifact" if split == "test" else f"scifact-{split}"
    return Dataset(name, "en", corpus, queries, qrels, source=source)


def load_xquad(lang: str = "es", path: str | Path | None = None) -> Dataset:
    """XQuAD in one language: paragraphs as corpus, questions as queries, each question's
    paragraph as its qrel, the first gold answer as reference answer."""
    if lang not in XQUAD_LANGUAGES:
        raise UserError(f"xquad language must be 'es' or 'en', got {lang!r}")
    path = Path(path) if path else raw_path(XQUAD_JSON.format(lang=lang))
    try:
        articles = json.loads(Path(path).read_text(encoding="utf-8"))["data"]
    except (OSError, json.JSONDecodeError, KeyError) as exc:
        raise DataError(str(path), f"not a SQuAD-format file ({exc!r})") from exc
    corpus, queries, qrels, answers = {}, {}, {}, {}
    for a, article in enumerate(articles):
        for p, paragraph in enumerate(article["paragraphs"]):
            doc_id = f"{a}-{p}"
            corpus[doc_id] = {"title": article.get("title", ""), "text": paragraph["context"]}
            for qa in paragraph["qas"]:
                queries[qa["id"]] = qa["question"]
                qrels[qa["id"]] = {doc_id: 1}
                if qa.get("answers"):
                    answers[qa["id"]] = qa["answers"][0]["text"]
    return Dataset(f"xquad-{lang}", lang, corpus, queries, qrels, answers, source=str(path))
