"""A person's labels of one run's answers, kept in the run folder (`labels.csv`), and every judge of
that run measured against them: the judges judged on the user's own data.

    store = RunLabels("documents-mydocs-1a2b3c4d", annotator="ana")
    item = store.next_item()                       # the next answer nobody labelled yet (resumable)
    store.save(item, supported="partly", answers="yes", correct="no", note="dose wrong")
    store.judges_revealed(item)                    # the judges' verdicts: shown only once labelled
    judge_agreement("documents-mydocs-1a2b3c4d")   # AUROC (supported vs not), kappa, n, intervals

Labels: `supported` (is every claim backed by the answer's own contexts? yes / partly / no),
`answers` (does it answer the question? yes / no), `correct` (against the reference answer, where
the question has one: yes / partly / no; empty otherwise). Each row keeps the annotator and the
time; a second annotator's labels of the same answer are rows of their own.
"""

from __future__ import annotations

import csv
import os
import random
from datetime import datetime, timezone
from pathlib import Path

import pandas as pd

from helpers.data import load_dataset
from helpers.errors import UserError
from helpers.experiment.analysis import load_scores, run_dir
from helpers.experiment.label_sheets import KEY_COLUMNS, LABELS, judges_vs_labels
from helpers.experiment.store import RunStore
from helpers.inputs import load_yaml

LABELS_FILE = "labels.csv"
COLUMNS = ("architecture", "llm", "qid", "supported", "answers", "correct", "annotator", "labelled_at", "note")
CHOICES = {"supported": LABELS, "answers": ("yes", "no"), "correct": LABELS}


class RunLabels:
    def __init__(self, run_id: str, *, annotator: str = "", results_dir: Path | None = None, seed: int = 0):
        self.directory = run_dir(run_id, results_dir)
        if not (self.directory / "records.jsonl").exists():
            raise UserError(f"run {run_id}: no answers in {self.directory}/records.jsonl; run it first")
        self.run_id, self.annotator, self.path = run_id, annotator.strip(), self.directory / LABELS_FILE
        store = RunStore(self.directory)
        self.items = [r for r in store.of_kind("answer") if r.get("answer")]
        # a fixed shuffled order: the architectures come mixed, so that a labeller does not judge one
        # architecture's answers in a row (and is not told which one answered)
        random.Random(seed).shuffle(self.items)
        self.references = self._references()
        self.labels = self._load()

    def _references(self) -> dict[str, str]:
        config = load_yaml(self.directory / "config.yaml")
        try:
            return load_dataset(config["dataset"]["name"], **config["dataset"].get("options", {})).answers
        except Exception:  # a dataset no longer at hand: labelling goes on without references
            return {}

    def _load(self) -> pd.DataFrame:
        if not self.path.exists():
            return pd.DataFrame(columns=list(COLUMNS))
        frame = pd.read_csv(self.path, dtype=str, keep_default_na=False)
        missing = [c for c in COLUMNS if c not in frame.columns]
        if missing:
            raise UserError(f"{self.path}: missing column(s) {missing}; it is written by RunLabels.save")
        return frame

    def key(self, item: dict) -> tuple[str, str, str]:
        return item["architecture"], item["llm"], item["qid"]

    def labelled(self, item: dict, annotator: str | None = None) -> dict | None:
        annotator = self.annotator if annotator is None else annotator
        rows = self.labels[
            (self.labels["architecture"] == item["architecture"])
            & (self.labels["llm"] == item["llm"])
            & (self.labels["qid"] == item["qid"])
            & (self.labels["annotator"] == annotator)
        ]
        return rows.iloc[-1].to_dict() if len(rows) else None

    def next_item(self) -> dict | None:
        """The first answer, in the shuffled order, this annotator has not labelled (None: all done)."""
        return next((item for item in self.items if self.labelled(item) is None), None)

    def progress(self) -> tuple[int, int]:
        return sum(self.labelled(item) is not None for item in self.items), len(self.items)

    def save(self, item: dict, *, supported: str, answers: str, correct: str = "", note: str = "") -> dict:
        """Record (or replace) this annotator's labels of `item`; the file is rewritten atomically."""
        values = {"supported": supported, "answers": answers, "correct": correct}
        for name, value in values.items():
            if name == "correct" and not value:
                continue
            if value not in CHOICES[name]:
                raise UserError(f"label '{name}' must be one of {list(CHOICES[name])}, got {value!r}")
        if correct and item["qid"] not in self.references:
            raise UserError(f"question {item['qid']} has no reference answer: leave 'correct' empty")
        row = dict(
            zip(("architecture", "llm", "qid"), self.key(item)),
            **values,
            annotator=self.annotator,
            labelled_at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
            note=" ".join(note.split()),
        )
        keep = ~(
            (self.labels["architecture"] == row["architecture"])
            & (self.labels["llm"] == row["llm"])
            & (self.labels["qid"] == row["qid"])
            & (self.labels["annotator"] == self.annotator)
        )
        self.labels = pd.concat([self.labels[keep], pd.DataFrame([row])], ignore_index=True)
        tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
        self.labels.to_csv(tmp, index=False, quoting=csv.QUOTE_MINIMAL)
        tmp.replace(self.path)
        return row

    def judges_revealed(self, item: dict) -> dict[str, float]:
        """The run's judge scores of `item` ('judge/metric' -> value), only once it is labelled:
        shown before, they would anchor the person's labels."""
        if self.labelled(item) is None:
            raise UserError("label the answer first: the judges' verdicts are shown only afterwards")
        path = self.directory / "scores.parquet"
        if not path.exists():
            return {}
        scores = pd.read_parquet(path)
        picked = scores[
            (scores["architecture"] == item["architecture"])
            & (scores["llm"] == item["llm"])
            & (scores["qid"] == item["qid"])
            & (scores["judge"] != "system")
        ]
        return {f"{r.judge}/{r.metric}": r.value for r in picked.itertuples()}


def labels_frame(run_id: str, results_dir: Path | None = None) -> pd.DataFrame:
    """The run's labels.csv in the shape judges_vs_labels takes (model = the answering LLM's name)."""
    path = run_dir(run_id, results_dir) / LABELS_FILE
    if not path.exists():
        raise UserError(
            f"{path}: no labels yet; label the answers in notebook 09's labelling panel "
            "(helpers.explore.label_panels.LabelPanel) first"
        )
    frame = pd.read_csv(path, dtype=str, keep_default_na=False)
    return frame.rename(columns={"llm": "model"})


def judge_agreement(
    run_id: str,
    *,
    results_dir: Path | None = None,
    annotator: str | None = None,
    confidence: float = 0.95,
    seed: int = 0,
) -> pd.DataFrame:
    """Every judge of the run against the person's `supported` labels: n, labelled 'no', AUROC for
    detecting them, accuracy and Cohen's kappa of the judge's verdict, with bootstrap intervals;
    for "not fully supported" (no or partly) too. One annotator's labels (default: all, a later
    label of the same answer by the same annotator replacing the earlier)."""
    labels = labels_frame(run_id, results_dir)
    if annotator is not None:
        labels = labels[labels["annotator"] == annotator]
    labels = labels.drop_duplicates([*KEY_COLUMNS, "annotator"], keep="last")
    if labels["annotator"].nunique() > 1:  # one vote per answer: the majority, ties to the worse label
        order = {label: i for i, label in enumerate(LABELS)}
        labels = (
            labels.assign(rank=labels["supported"].map(order))
            .groupby(list(KEY_COLUMNS), as_index=False)["rank"]
            .agg(lambda r: r.mode().max())
            .assign(supported=lambda f: f["rank"].map(dict(enumerate(LABELS))))
            .drop(columns="rank")
        )
    scores = load_scores(run_id, results_dir).rename(columns={"llm": "model"})
    tables = [
        judges_vs_labels(labels, scores, positive=positive, confidence=confidence, seed=seed)
        for positive in (("no",), ("no", "partly"))
    ]
    return pd.concat(tables, ignore_index=True)
