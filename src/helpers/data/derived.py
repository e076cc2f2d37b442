"""Raw files made by code from another raw file (the sources manifest's `derive: {from, by}`), so
that a machine without ../shared builds the same bytes from the public source and verifies them
against the manifest's sha256.

    obstetrics_questions   obstetrics/questions.json from the seed repository's preguntas.xlsx:
                           its 10 rows as JSON (ids 1-10, cells stripped of the spaces some
                           questions end with), the ground truths of questions 5 and 6 swapped back
                           (the spreadsheet gives each the other's; ../shared/data/README.md),
                           written as json.dumps(indent=2, ensure_ascii=False) writes it
"""

from __future__ import annotations

import json
from pathlib import Path

QUESTIONS_METADATA = {
    "total_questions": 10,
    "source": "preguntas.xlsx",
    "description": "Ground truth dataset for RAG and MCP evaluation",
    "note": "ground truths of questions 5 and 6 swapped back to match their questions (the copy this came from had them crossed)",
}
CROSSED = (5, 6)  # the questions whose ground truths preguntas.xlsx gives the other way round


def obstetrics_questions(xlsx: Path) -> bytes:
    """questions.json's bytes from preguntas.xlsx (columns question, ground_truth)."""
    from openpyxl import load_workbook  # openpyxl: loaded only when this runs

    rows = list(load_workbook(xlsx, read_only=True).active.iter_rows(values_only=True))
    header, body = [str(c).strip() for c in rows[0]], [r for r in rows[1:] if any(r)]
    at = {name: header.index(name) for name in ("question", "ground_truth")}
    questions = [
        {"id": i, "question": str(r[at["question"]]).strip(), "ground_truth": str(r[at["ground_truth"]]).strip()}
        for i, r in enumerate(body, 1)
    ]
    a, b = (questions[i - 1] for i in CROSSED)
    a["ground_truth"], b["ground_truth"] = b["ground_truth"], a["ground_truth"]
    return json.dumps({"metadata": QUESTIONS_METADATA, "questions": questions}, ensure_ascii=False, indent=2).encode()


DERIVERS = {"obstetrics_questions": obstetrics_questions}
