"""The one format of a person's labels of answers: a CSV that the labelling panel writes into a run
(`results/RUN/labels.csv`, helpers.experiment.run_labels), that the shipped sheets follow
(`benchmarks/labels/obstetrics-*.csv`, helpers.experiment.label_sheets), and that `judge-eval
--labels`, `estimate --labels` and the reports read, all through `read_answer_labels`.

One row per labelled answer and annotator:

| column | what | values |
|---|---|---|
| `model` | the LLM that answered, as its run names it (the panel: the config's llm name; a sheet: the model) | text |
| `architecture`, `qid` | which architecture answered which question | text |
| `supported` | is every claim backed by the answer's own contexts? | yes / partly / no |
| `answers` | does it answer the question? | yes / no |
| `correct` | does it agree with the reference answer (where the question has one)? | yes / partly / no |
| `reference_in_contexts` | do the answer's contexts hold the reference's fact (where it has one)? `diagnose` fits its cuts on it | yes / partly / no |
| `annotator`, `labelled_at`, `note` | who, when (ISO 8601, UTC), and why | text |
| `answer`, `context_ids`, `context_pages` | what was labelled (the sheets keep them; the panel reads them from the run) | text |

An empty label cell is "not labelled". A file written before this format named `model` `llm` (the
panel's labels.csv until issue 47): it is read as `model`. Scores of a label: yes 1, partly 0.5, no 0.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from helpers.errors import UserError

LABELS = ("yes", "partly", "no")
LABEL_SCORE = {"yes": 1.0, "partly": 0.5, "no": 0.0}
KEY_COLUMNS = ("model", "architecture", "qid")
CHOICES = {"supported": LABELS, "answers": ("yes", "no"), "correct": LABELS, "reference_in_contexts": LABELS}
LABEL_COLUMNS = tuple(CHOICES)
PROVENANCE_COLUMNS = ("annotator", "labelled_at", "note")
COLUMNS = (*KEY_COLUMNS, *LABEL_COLUMNS, *PROVENANCE_COLUMNS)
# the same column under its earlier name (read, never written)
ALIASES = {"llm": "model"}


def read_answer_labels(
    path: str | Path, *, required: tuple[str, ...] = (), filled: tuple[str, ...] = ()
) -> pd.DataFrame:
    """The labels in `path`, checked: the key columns and the `required` label columns present,
    every label cell empty or one of its column's values (stripped, lower-cased), and no cell of
    the `filled` columns empty. Columns of the format the file lacks are added empty; others are
    kept. Errors name the file, the row (as a spreadsheet numbers it) and the column."""
    path = Path(path)
    if not path.is_file():
        raise UserError(f"{path}: labels file not found")
    frame = pd.read_csv(path, dtype=str, keep_default_na=False)
    frame = frame.rename(columns={old: new for old, new in ALIASES.items() if new not in frame.columns})
    missing = [c for c in (*KEY_COLUMNS, *required) if c not in frame.columns]
    if missing:
        raise UserError(
            f"{path}: missing column(s) {missing}; a labels file has {list(COLUMNS)} "
            "(helpers.experiment.label_format; the panel and answers_sheet() write them)"
        )
    for column in COLUMNS:
        if column not in frame.columns:
            frame[column] = ""
    for column, choices in CHOICES.items():
        frame[column] = frame[column].str.strip().str.lower()
        empty = frame[column] == ""
        bad = frame.index[~frame[column].isin(choices) & (~empty | (column in filled))]
        if len(bad):
            row = int(bad[0])
            raise UserError(
                f"{path}: row {row + 2}, column '{column}': {frame.at[row, column]!r} is not one of "
                f"{list(choices)} ({len(bad)} such row(s))"
            )
    return frame
