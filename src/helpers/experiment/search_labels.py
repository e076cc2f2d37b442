"""People's labels in the search's answer stage (issue 62): the judge's score corrected where a person
labelled the answer, so that a judge biased for one cell and against another cannot choose the cell.

With `--label-rate R`, each question is drawn for labelling with probability R, by a draw seeded by
the search's seed and the question's id alone (independent of the answers, the judge and the order:
Bernoulli sampling at a known rate). Every answer the racing cells give to a drawn question needs a
person's label (the column the metric is validated by: `correct` for correctness), in the one labels
format (helpers.experiment.label_format) in that cell's run folder, `results/RUN/labels.csv`, which
the labelling panel (notebook 09) and a spreadsheet both write. A look that needs labels nobody gave
yet stops the search (`LabelsNeeded`: exit 3) after writing the rows to label into those files; the
same command, rerun once they are filled, goes on from there (answers and scores are kept).

A question's value is then helpers.sequential.audited(judge, label, R): unbiased for the labels'
mean whatever the judge's bias (the inverse-probability-weighted correction of active statistical
inference, Zrnic & Candès, ICML 2024, with a constant rate), raced on its wider range (`audit_scale`).
"""

from __future__ import annotations

import random
from pathlib import Path

import pandas as pd

from helpers.errors import UserError
from helpers.experiment.label_format import COLUMNS, LABEL_SCORE, read_answer_labels
from helpers.experiment.run_labels import LABELS_FILE
from helpers.sequential import audit_scale, audited


class LabelsNeeded(Exception):
    """A look of the search needs people's labels that are not there yet: `files` {labels.csv: rows
    written to label}."""

    def __init__(self, files: dict[Path, int]):
        self.files = files
        listed = "; ".join(f"{path} ({n} answers)" for path, n in files.items())
        super().__init__(
            f"search: {sum(files.values())} answers drawn for labelling need a person's label: {listed}. "
            "Fill their label column (the labelling panel, notebook 09, or the CSV), then rerun the same command"
        )


class SearchLabels:
    """Which questions are drawn, the labels given, and the audited values (module docstring)."""

    def __init__(self, rate: float, column: str, seed: int = 0):
        if not 0 < rate <= 1:
            raise UserError(f"search: --label-rate {rate} must be in (0, 1]")
        self.rate, self.column, self.seed = rate, column, seed
        self.scale = audit_scale(rate)
        self.pending: dict[Path, list[dict]] = {}
        # each run's labels, read once: within a search they change only by `check`, which then stops it
        self._read: dict[Path, dict[tuple, str]] = {}
        self.used: dict[str, int] = {"drawn": 0, "labelled": 0}

    def drawn(self, qid: str) -> bool:
        return random.Random(f"search-labels:{self.seed}:{qid}").random() < self.rate

    def values(self, run_dir: Path, answers: list[dict], judged: dict[str, float]) -> dict[str, float]:
        """The audited values of one cell's `answers` (records) from the judge's `judged` {qid: score};
        a drawn answer without a label is left out and queued for labelling."""
        labels = self._labels(run_dir)
        out = {}
        for answer in answers:
            qid = answer["qid"]
            if qid not in judged:
                continue
            if not self.drawn(qid):
                out[qid] = judged[qid]
                continue
            self.used["drawn"] += 1
            label = labels.get((answer["llm"], answer["architecture"], qid))
            if label is None:
                self.pending.setdefault(run_dir, []).append(answer)
                continue
            self.used["labelled"] += 1
            out[qid] = audited(judged[qid], LABEL_SCORE[label], self.rate)
        return out

    def _labels(self, run_dir: Path) -> dict[tuple, str]:
        if run_dir not in self._read:
            path = run_dir / LABELS_FILE
            frame = read_answer_labels(path) if path.exists() else pd.DataFrame(columns=list(COLUMNS))
            filled = frame[frame[self.column] != ""]
            self._read[run_dir] = {
                (r.model, r.architecture, r.qid): getattr(r, self.column) for r in filled.itertuples()
            }
        return self._read[run_dir]

    def check(self) -> None:
        """After a look: write the answers waiting for a label into their runs' labels.csv and stop
        (LabelsNeeded), or go on."""
        if not self.pending:
            return
        written = {}
        for run_dir, answers in self.pending.items():
            path = run_dir / LABELS_FILE
            frame = read_answer_labels(path) if path.exists() else pd.DataFrame(columns=list(COLUMNS))
            have = set(zip(frame["model"], frame["architecture"], frame["qid"]))
            rows = [
                {"model": a["llm"], "architecture": a["architecture"], "qid": a["qid"], "answer": a.get("answer", "")}
                for a in answers
                if (a["llm"], a["architecture"], a["qid"]) not in have
            ]
            frame = pd.concat([frame, pd.DataFrame(rows)], ignore_index=True).fillna("")
            frame.to_csv(path, index=False)
            written[path] = len(answers)
        self.pending = {}
        raise LabelsNeeded(written)
