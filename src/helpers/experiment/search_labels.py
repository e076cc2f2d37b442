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

A question's value is then helpers.inference.sequential.audited(judge, label, R): unbiased for the labels'
mean whatever the judge's bias (the inverse-probability-weighted correction of active statistical
inference, Zrnic & Candès, ICML 2024, with a constant rate), raced on its wider range (`audit_scale`).

With `--label-floor F` (active labelling), an answer's rate is its own: R where the judge is least
sure of it (a score of 0.5), down to F where it is sure (helpers.inference.sequential.active_rate), so people
label the answers whose labels move the estimates most. One uniform draw per question, compared
with each answer's rate, decides which answers of that question are labelled: an answer is labelled
with exactly its rate (what keeps each cell's values unbiased), and the answers two cells gave to
a question are labelled together as often as their rates allow (what keeps their difference's
correction paired). The values race on the range the floor sets (`audit_scale(F)`).
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import pandas as pd

from helpers.errors import UserError
from helpers.experiment.label_format import COLUMNS, LABEL_SCORE, read_answer_labels
from helpers.experiment.run_labels import LABELS_FILE, RunLabels
from helpers.experiment.search_report import search_dir
from helpers.inference.sequential import active_rate, audit_scale, audited

NEEDED_FILE = "labels-needed.json"  # in results/search/NAME/: the answers a stopped search waits on


class LabelsNeeded(Exception):
    """A look of the search needs people's labels that are not there yet: `files` {labels.csv: rows
    written to label}; `rows` [{run, model, architecture, qid, judge}], the answers waiting;
    `standing` the racers in the order of the last look (the leader first; empty at the first)."""

    def __init__(self, files: dict[Path, int], rows: list[dict] | None = None):
        self.files, self.rows = files, rows or []
        self.standing: list[str] = []
        self.racer_of_run: dict[str, str] = {}  # run -> the racer it answers for (set by the search)
        listed = "; ".join(f"{path} ({n} answers)" for path, n in files.items())
        super().__init__(
            f"search: {sum(files.values())} answers drawn for labelling need a person's label: {listed}. "
            "Fill their label column (the labelling panel, notebook 09, or the CSV), then rerun the same command"
        )


class SearchLabels:
    """Which questions are drawn, the labels given, and the audited values (module docstring)."""

    def __init__(self, rate: float, column: str, seed: int = 0, floor: float | None = None):
        if not 0 < rate <= 1:
            raise UserError(f"search: --label-rate {rate} must be in (0, 1]")
        if floor is not None and not 0 < floor <= rate:
            raise UserError(f"search: --label-floor {floor} must be in (0, --label-rate {rate}]")
        self.rate, self.column, self.seed, self.floor = rate, column, seed, floor
        self.scale = audit_scale(rate if floor is None else floor)
        self.pending: dict[Path, list[dict]] = {}
        # each run's labels, read once: within a search they change only by `check`, which then stops it
        self._read: dict[Path, dict[tuple, str]] = {}
        self.used: dict[str, float] = {"drawn": 0, "labelled": 0, "expected": 0.0}

    def rate_of(self, judged: float) -> float:
        """The chance an answer the judge scored `judged` is labelled (module docstring)."""
        return self.rate if self.floor is None else active_rate(judged, self.rate, self.floor)

    def drawn(self, qid: str, rate: float | None = None) -> bool:
        """Is an answer to `qid` labelled at `rate` (default the search's)? One seeded uniform draw
        per question, the same for every cell."""
        return random.Random(f"search-labels:{self.seed}:{qid}").random() < (self.rate if rate is None else rate)

    def values(self, run_dir: Path, answers: list[dict], judged: dict[str, float]) -> dict[str, float]:
        """The audited values of one cell's `answers` (records) from the judge's `judged` {qid: score};
        a drawn answer without a label is left out and queued for labelling."""
        labels = self._labels(run_dir)
        out = {}
        for answer in answers:
            qid = answer["qid"]
            if qid not in judged:
                continue
            rate = self.rate_of(judged[qid])
            self.used["expected"] += rate
            if not self.drawn(qid, rate):
                out[qid] = judged[qid]
                continue
            self.used["drawn"] += 1
            label = labels.get((answer["llm"], answer["architecture"], qid))
            if label is None:
                self.pending.setdefault(run_dir, []).append(answer | {"judge": judged[qid]})
                continue
            self.used["labelled"] += 1
            out[qid] = audited(judged[qid], LABEL_SCORE[label], rate)
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
        written, waiting = {}, []
        for run_dir, answers in self.pending.items():
            waiting += [
                {"run": run_dir.name, "model": a["llm"], "architecture": a["architecture"], "qid": a["qid"]}
                | {"judge": a["judge"]}
                for a in answers
            ]
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
        raise LabelsNeeded(written, waiting)


def write_needed(directory: Path, needed: LabelsNeeded) -> Path:
    """`directory/labels-needed.json`: the answers the stopped search waits on, in the order the
    labelling panel proposes them (helpers.explore.label_panels.LabelPanel.for_search): question by
    question in the race's order (the answers two cells gave to one question, labelled together, keep
    their difference paired), within a question the cells nearest the top at the last look first,
    then the answer the judge is least sure of."""
    rank: dict[str | None, int] = {racer: i for i, racer in enumerate(needed.standing)}  # None: a run of no racer
    first: dict = {}  # qid -> the first position it was asked at
    for i, row in enumerate(needed.rows):
        first.setdefault(row["qid"], i)
    rows = sorted(
        needed.rows,
        key=lambda r: (first[r["qid"]], rank.get(needed.racer_of_run.get(r["run"]), len(rank)), abs(r["judge"] - 0.5)),
    )
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / NEEDED_FILE
    path.write_text(json.dumps({"rows": rows}, indent=1))
    return path


class SearchQueue:
    """The answers a stopped search waits on, across its runs, as one labelling queue with the
    interface of helpers.experiment.run_labels.RunLabels (what LabelPanel reads): the order
    write_needed chose, each label saved into its own run's labels.csv, which the search reads when
    rerun. `LabelPanel.for_search(NAME)` shows it."""

    def __init__(self, name: str, *, annotator: str = "", results_dir: Path | None = None):
        path = search_dir(name, results_dir) / NEEDED_FILE
        if not path.exists():
            raise UserError(
                f"search {name}: no answers wait for labels ({path} is missing); a search run with --label-rate "
                "writes it when it stops for labels (exit 3)"
            )
        rows = json.loads(path.read_text())["rows"]
        self.run_id = f"search {name}"
        self.stores = {r["run"]: RunLabels(r["run"], annotator=annotator, results_dir=results_dir) for r in rows}
        found = {(run, *store.key(i)): i for run, store in self.stores.items() for i in store.items}
        self.items = [found[key] | {"run": key[0]} for key in self._keys(rows) if key in found]
        self.references = {q: a for store in self.stores.values() for q, a in store.references.items()}
        self.annotator, self.last = annotator.strip(), None

    @staticmethod
    def _keys(rows: list[dict]) -> list[tuple]:
        return [(r["run"], r["architecture"], r["model"], r["qid"]) for r in rows]

    def _store(self, item: dict):
        store = self.stores[item["run"]]
        store.annotator = self.annotator
        return store

    def labelled(self, item: dict) -> dict | None:
        return self._store(item).labelled(item)

    def next_item(self) -> dict | None:
        """The first answer in the queue's order this annotator has not labelled (None: all done)."""
        return next((item for item in self.items if self.labelled(item) is None), None)

    def progress(self) -> tuple[int, int]:
        return sum(self.labelled(item) is not None for item in self.items), len(self.items)

    def save(self, item: dict, **labels) -> dict:
        self.last = item["run"]
        return self._store(item).save(item, **labels)

    def judges_revealed(self, item: dict) -> dict[str, float]:
        return self._store(item).judges_revealed(item)

    def estimate_target(self):
        return self.stores[self.last].estimate_target() if self.last else None

    def estimates(self, **options):
        """The estimates of the run of the answer labelled last (one cell of the search)."""
        return self.stores[self.last].estimates(**options) if self.last else None

    def done_message(self) -> str:
        return (
            f"every answer this {self.run_id} waits on is labelled: rerun the same `python -m helpers search` command"
        )
