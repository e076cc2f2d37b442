"""A user's questions file: CSV, JSONL or XLSX, one question per row.

Columns: `question` (required); `id` (default q1, q2, ... by row); `reference` (a reference answer:
enables context recall and answer correctness); `relevant` (the files, or `file#page`, or
`file@start-end` character spans, that answer it, separated by ';' or '|': they become qrels, so
retrieval nDCG and recall are measured); `answerable` (false, no or 0: the documents do not answer
it, and a good answer says so: the `refusal` judge). A generated set's `kind: unanswerable` counts
as `answerable: false`; its other columns are kept aside.

    asked = read_questions("questions.csv", corpus)   # asked.queries, asked.answers, asked.qrels

A file, row or column that is wrong is a DataError naming all three and the fix. Rows count from 1
as a spreadsheet shows them (the header is row 1 in CSV and XLSX; JSONL counts lines).
"""

from __future__ import annotations

import csv
import io
import math
import re
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from helpers.data.contracts import DataError, read_jsonl
from helpers.data.readers import decode_text
from helpers.inputs import MAX_QUESTION_CHARS

FORMATS = (".csv", ".jsonl", ".xlsx")
COLUMNS = ("id", "question", "reference", "relevant")


@dataclass
class Questions:
    queries: dict[str, str]
    answers: dict[str, str] = field(default_factory=dict)
    qrels: dict[str, dict[str, int]] = field(default_factory=dict)
    unanswerable: list[str] = field(default_factory=list)
    # qids whose `relevant` names a whole file or page (every chunk of it relevant), not a span or a
    # chunk: a run narrows them to the chunks that hold the reference (helpers.experiment.relevance)
    by_file: list[str] = field(default_factory=list)


NOT_ANSWERABLE = {"false", "no", "0", "n", "falso", "f"}
ANSWERABLE = {"true", "yes", "1", "y", "si", "sí", "verdadero", "t", ""}


def read_table(path: Path, *, what: str = "questions") -> tuple[pd.DataFrame, int]:
    """(the rows of a CSV, XLSX or JSONL file, CSV and XLSX cells as strings; the row number of the
    first data row). CSV in any encoding (helpers.data.readers.decode_text), separated by commas,
    semicolons or tabs; JSONL rows carry their line number in `_line`. `what` names the file's
    kind in an error."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in FORMATS:
        raise DataError(
            str(path),
            f"unsupported {what} format {suffix or '(none)'!r}",
            fix=f"Use {', '.join(FORMATS)} with a 'question' column",
        )
    try:
        if suffix == ".csv":
            text = decode_text(path)
            try:  # comma, semicolon (spreadsheets in Spanish locales) or tab
                sep = csv.Sniffer().sniff(text[:4096], delimiters=",;\t").delimiter
            except csv.Error:
                sep = ","
            return pd.read_csv(io.StringIO(text), dtype=str, keep_default_na=False, sep=sep), 2
        if suffix == ".xlsx":
            return pd.read_excel(path, dtype=str, keep_default_na=False), 2
        rows = [record | {"_line": line_no} for line_no, record in read_jsonl(path)]
        return pd.DataFrame(rows), 1
    except DataError:
        raise
    except Exception as exc:  # pandas / openpyxl parse errors
        raise DataError(str(path), f"cannot be read as {suffix[1:].upper()} ({type(exc).__name__}: {exc})") from exc


def _cell(value) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    return str(value).strip()


def spec_items(spec: str) -> list[str]:
    """The items of one `relevant` cell, separated by ';', '|' or a new line."""
    return [part.strip() for part in re.split(r"[;|\n]", spec) if part.strip()]


def relevant_doc_ids(spec: str, corpus: dict[str, dict]) -> tuple[dict[str, int], list[str]]:
    """qrels of one `relevant` cell. Each item (separated by ';', '|' or a new line) is a doc_id,
    a file (every chunk of it; by its path in the folder or its name), `file#page` (the chunks on
    that page), or `file@start-end` (the chunks covering at least half of that character span, or
    half of themselves: what generated test sets write, valid under any chunking).
    Returns (qrels, the items that match nothing)."""
    rels, unknown = {}, []
    for item in spec_items(spec):
        if item in corpus:
            rels[item] = 1
            continue
        match = re.fullmatch(r"(.+?)(?:#(\d+)|@(\d+)-(\d+))?", item)
        assert match is not None  # `.+?` takes any item (spec_items drops the empty ones)
        name, page = match[1].strip(), match[2]
        span = (int(match[3]), int(match[4])) if match[3] else None
        hits = [
            doc_id
            for doc_id, doc in corpus.items()
            if (doc.get("source") == name or Path(str(doc.get("source", ""))).name == name)
            and (
                not page
                or (doc.get("page") is not None and doc["page"] <= int(page) <= (doc.get("page_end") or doc["page"]))
            )
            and (not span or _covers(doc, span))
        ]
        if hits:
            rels.update({doc_id: 1 for doc_id in hits})
        else:
            unknown.append(item)
    return rels, unknown


def _covers(doc: dict, span: tuple[int, int]) -> bool:
    if doc.get("char_start") is None:
        return False
    shared = min(doc["char_end"], span[1]) - max(doc["char_start"], span[0])
    return shared > 0 and shared >= 0.5 * min(doc["char_end"] - doc["char_start"], span[1] - span[0])


def read_questions(path: str | Path, corpus: dict[str, dict] | None = None) -> Questions:
    """The questions of a CSV, JSONL or XLSX file; `relevant` needs the corpus to become qrels."""
    path = Path(path)
    if not path.exists():
        raise DataError(str(path), "questions file not found", fix="Give the path of a CSV, JSONL or XLSX file")
    table, first_row = read_table(path)
    if table.empty:
        raise DataError(str(path), "the file has no questions", fix="Add rows with a 'question' column")
    table.columns = [str(c).strip().lower() for c in table.columns]
    if "question" not in table.columns:
        raise DataError(
            str(path),
            f"no 'question' column (columns: {[c for c in table.columns if c != '_line']})",
            field_name="question",
            fix="Name the column of questions 'question'",
        )
    asked, sources = Questions({}), sorted({str(d.get("source")) for d in (corpus or {}).values() if d.get("source")})
    for i, row in enumerate(table.to_dict("records")):
        where = f"line {row['_line']}" if "_line" in row else f"row {i + first_row}"
        question = _cell(row.get("question"))
        if not question:
            raise DataError(
                str(path), "empty question", record=where, field_name="question", fix="Fill it in or delete the row"
            )
        if len(question) > MAX_QUESTION_CHARS:
            raise DataError(
                str(path),
                f"question of {len(question):,} characters (at most {MAX_QUESTION_CHARS:,})",
                record=where,
                field_name="question",
                fix="Shorten it; a question is a sentence or a paragraph",
            )
        qid = _cell(row.get("id")) or f"q{i + 1}"
        if qid in asked.queries:
            raise DataError(str(path), f"duplicate id {qid!r}", record=where, field_name="id", fix="Ids must be unique")
        asked.queries[qid] = question
        answerable = _cell(row.get("answerable")).lower()
        if answerable not in NOT_ANSWERABLE | ANSWERABLE:
            raise DataError(
                str(path),
                f"answerable is {answerable!r}",
                record=where,
                field_name="answerable",
                fix="Write true or false (or leave it empty: answerable)",
            )
        if answerable in NOT_ANSWERABLE or _cell(row.get("kind")).lower() == "unanswerable":
            asked.unanswerable.append(qid)
        if reference := _cell(row.get("reference")):
            asked.answers[qid] = reference
        if spec := _cell(row.get("relevant")):
            if corpus is None:
                raise DataError(
                    str(path), "'relevant' needs the documents to resolve", record=where, field_name="relevant"
                )
            rels, unknown = relevant_doc_ids(spec, corpus)
            if unknown:
                raise DataError(
                    str(path),
                    f"{unknown[0]!r} names no ingested file (or page)",
                    record=where,
                    field_name="relevant",
                    fix=f"Use a file name or 'file#page' of the folder; files: {', '.join(sources[:8])}",
                )
            asked.qrels[qid] = rels
            if any(item not in corpus and "@" not in item for item in spec_items(spec)):
                asked.by_file.append(qid)
    return asked
