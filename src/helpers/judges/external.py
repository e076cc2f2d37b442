"""Judging answers that came from elsewhere (a user's own RAG system), with any registered judge
that needs no run:

    python -m helpers judge answers.csv [--judges correctness,context_recall] [--out scores.csv]

The file (CSV in any encoding, separated by commas, semicolons or tabs; XLSX; JSONL) has one answer
per row: `question`, `answer`, `contexts` (a JSON list of strings: the passages the answer was
written from), optionally `id` (row1, row2, ... when missing) and `reference` (the answer a person
expects; correctness and context recall need it); ragas's column names work too. It is read as the
questions reader reads a file (helpers.data.questions.read_table) and scored by helpers.evaluate
(helpers.judges.evaluate). A malformed row is an error naming the row and the column, never a
silent drop. Scores come back long (`id, judge, metric, value, reason`); a judge that fails on one
answer leaves NaN with the error as its reason and goes on.
"""

from __future__ import annotations

from pathlib import Path

from helpers.errors import UserError
from helpers.judges.evaluate import answers_from_frame

__all__ = ["read_answers"]


def read_answers(path: str | Path) -> list[dict]:
    """The rows of an answers file (CSV, XLSX or JSONL), checked (answers_from_frame). Rows are
    numbered as a spreadsheet shows them (the header is row 1) or by line for JSONL."""
    from helpers.data.questions import read_table

    path = Path(path)
    if not path.is_file():
        raise UserError(
            f"{path}: answers file not found (CSV, XLSX or JSONL with columns question, answer, contexts "
            "[, reference, id])"
        )
    frame, first_row = read_table(path, what="answers")
    row_word = "line" if path.suffix.lower() == ".jsonl" else "row"
    return answers_from_frame(frame, source=str(path), first_row=first_row, row_word=row_word)
