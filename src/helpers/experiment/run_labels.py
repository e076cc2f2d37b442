"""A person's labels of one run's answers, kept in the run folder (`labels.csv`), and every judge of
that run measured against them: the judges judged on the user's own data.

    store = RunLabels("documents-mydocs-1a2b3c4d", annotator="ana")
    item = store.next_item()                       # the next answer nobody labelled yet (resumable)
    store.save(item, supported="partly", answers="yes", correct="no", note="dose wrong")
    store.judges_revealed(item)                    # the judges' verdicts: shown only once labelled
    judge_agreement("documents-mydocs-1a2b3c4d")   # AUROC (supported vs not), kappa, n, intervals

Labels, in the one labels format (helpers.experiment.label_format): `supported` (is every claim
backed by the answer's own contexts? yes / partly / no), `answers` (does it answer the question?
yes / no), `correct` (against the reference answer, where the question has one: yes / partly / no;
empty otherwise). Each row keeps the annotator and the time; a second annotator's labels of the
same answer are rows of their own.
"""

from __future__ import annotations

import csv
import logging
import os
import random
from datetime import datetime, timezone
from pathlib import Path

import pandas as pd

from helpers.data import load_dataset
from helpers.errors import UserError
from helpers.experiment.analysis import load_scores, run_dir
from helpers.experiment.estimates import DEFAULT_METRIC, estimate_table, read_labels, read_scores
from helpers.experiment.label_format import CHOICES, COLUMNS, KEY_COLUMNS, LABELS, read_answer_labels
from helpers.experiment.label_sheets import judges_vs_labels
from helpers.experiment.store import RunStore
from helpers.inputs import load_yaml
from helpers.judges import grounding_metrics

LABELS_FILE = "labels.csv"  # in the one labels format (helpers.experiment.label_format)


class RunLabels:
    def __init__(self, run_id: str, *, annotator: str = "", results_dir: Path | None = None, seed: int = 0):
        self.directory = run_dir(run_id, results_dir)
        if not (self.directory / "records.jsonl").exists():
            raise UserError(f"run {run_id}: no answers in {self.directory}/records.jsonl; run it first")
        self.run_id, self.annotator, self.path = run_id, annotator.strip(), self.directory / LABELS_FILE
        store = RunStore(self.directory)
        self.items = [r for r in store.of_kind("answer") if r.get("answer")]
        # questions in a seeded random order, each question's answers together: every prefix of whole
        # questions is a random sample of questions, which prediction-powered inference needs
        # (helpers.inference.ppi), and each question labelled adds one label to every architecture (balanced)
        # and one labelled pair to every paired difference. Within a question the architectures come
        # mixed, and the labeller is not told which one answered.
        qids = sorted({r["qid"] for r in self.items})
        random.Random(seed).shuffle(qids)
        rank = {q: i for i, q in enumerate(qids)}
        random.Random(seed).shuffle(self.items)
        self.items.sort(key=lambda r: rank[r["qid"]])
        self.references = self._references()
        self.labels = self._load()
        self._uncertainty = self._judge_uncertainty()

    def _references(self) -> dict[str, str]:
        config = load_yaml(self.directory / "config.yaml")
        try:
            return load_dataset(config["dataset"]["name"], **config["dataset"].get("options", {})).answers
        except Exception as exc:  # noqa: BLE001 - a dataset no longer at hand: labelling goes on, and says why
            logging.getLogger(__name__).warning(
                "labelling %s without references: its dataset could not be loaded (%s: %s)",
                self.directory.name,
                type(exc).__name__,
                exc,
            )
            return {}

    def _load(self) -> pd.DataFrame:
        if not self.path.exists():
            return pd.DataFrame(columns=list(COLUMNS))
        return read_answer_labels(self.path)

    def key(self, item: dict) -> tuple[str, str, str]:
        return item["architecture"], item["llm"], item["qid"]

    def labelled(self, item: dict, annotator: str | None = None) -> dict | None:
        annotator = self.annotator if annotator is None else annotator
        rows = self.labels[
            (self.labels["architecture"] == item["architecture"])
            & (self.labels["model"] == item["llm"])
            & (self.labels["qid"] == item["qid"])
            & (self.labels["annotator"] == annotator)
        ]
        return rows.iloc[-1].to_dict() if len(rows) else None

    def _judge_uncertainty(self) -> dict:
        """{(architecture, llm, qid): |score - 0.5|} of the judge whose estimate the labels sharpen
        (estimate_target); empty without one."""
        target = self.estimate_target()
        if target is None:
            return {}
        judge, metric = target[0].split("/", 1)
        scores = pd.read_parquet(self.directory / "scores.parquet")
        part = scores[(scores["judge"] == judge) & (scores["metric"] == metric)].dropna(subset=["value"])
        return {(r.architecture, r.llm, r.qid): abs(r.value - 0.5) for r in part.itertuples()}

    def next_item(self) -> dict | None:
        """The answer to label next (None: all done): the first question, in the seeded order, with
        answers this annotator has not labelled; of its answers, the one whose architecture has the
        fewest of this annotator's labels (balanced over architectures), then the one the judge is
        least sure of (its score nearest 0.5). Labelling whole questions in a random order keeps the
        labels a random sample (helpers.inference.ppi's premise); the judge's doubt only orders the answers of
        a question, all of which are labelled before the next question."""
        todo = [item for item in self.items if self.labelled(item) is None]
        if not todo:
            return None
        question = [item for item in todo if item["qid"] == todo[0]["qid"]]
        mine = self.labels[self.labels["annotator"] == self.annotator]
        counts = mine["architecture"].value_counts()
        return min(
            question,
            key=lambda item: (counts.get(item["architecture"], 0), self._uncertainty.get(self.key(item), 1.0)),
        )

    def estimate_target(self) -> tuple[str, str] | None:
        """(judge/metric, label column) the labels sharpen: correctness against the `correct` labels
        where the run has it, else the first grounding judge against `supported`; None without either."""
        path = self.directory / "scores.parquet"
        if not path.exists():
            return None
        scores = pd.read_parquet(path, columns=["judge", "metric"]).drop_duplicates()
        produced = {f"{j}/{m}" for j, m in zip(scores["judge"], scores["metric"])}
        if DEFAULT_METRIC in produced and self.references:
            return DEFAULT_METRIC, "correct"
        grounding = [f"{j}/{m}" for j, m, _ in grounding_metrics() if f"{j}/{m}" in produced]
        return (grounding[0], "supported") if grounding else None

    def estimates(self, *, confidence: float | None = None) -> tuple[str, pd.DataFrame] | None:
        """The three estimates (labels, judge, prediction-powered) of estimate_target from the labels
        so far (helpers.experiment.estimates); architectures with fewer than 2 labels are left out.
        None without a target or any label."""
        target = self.estimate_target()
        if target is None or not self.path.exists():
            return None
        metric, column = target
        try:
            labels, _ = read_labels(self.path, column=column)
            return estimate_table(
                read_scores(self.run_id, results_dir=self.directory.parent),
                labels,
                metric=metric,
                confidence=confidence,
                labels_name=str(self.path),
                strict=False,
            )
        except UserError:  # no label matches yet
            return None

    def progress(self) -> tuple[int, int]:
        return sum(self.labelled(item) is not None for item in self.items), len(self.items)

    def done_message(self) -> str:
        return f"every answer of this run is labelled: python -m helpers judge-eval --labels {self.run_id}"

    def save(
        self,
        item: dict,
        *,
        supported: str,
        answers: str,
        correct: str = "",
        reference_in_contexts: str = "",
        note: str = "",
    ) -> dict:
        """Record (or replace) this annotator's labels of `item`; the file is rewritten atomically.
        `correct` and `reference_in_contexts` only where the question has a reference (may stay empty)."""
        values = {"supported": supported, "answers": answers, "correct": correct}
        values["reference_in_contexts"] = reference_in_contexts
        for name, value in values.items():
            if name in ("correct", "reference_in_contexts") and not value:
                continue
            if value not in CHOICES[name]:
                raise UserError(f"label '{name}' must be one of {list(CHOICES[name])}, got {value!r}")
            if name in ("correct", "reference_in_contexts") and item["qid"] not in self.references:
                raise UserError(f"question {item['qid']} has no reference answer: leave '{name}' empty")
        row = dict(
            model=item["llm"],
            architecture=item["architecture"],
            qid=item["qid"],
            **values,
            annotator=self.annotator,
            labelled_at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
            note=" ".join(note.split()),
        )
        keep = ~(
            (self.labels["architecture"] == row["architecture"])
            & (self.labels["model"] == row["model"])
            & (self.labels["qid"] == row["qid"])
            & (self.labels["annotator"] == self.annotator)
        )
        self.labels = pd.concat([self.labels[keep], pd.DataFrame([row])], ignore_index=True)
        tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
        extra = [c for c in self.labels.columns if c not in COLUMNS]
        self.labels[[*COLUMNS, *extra]].to_csv(tmp, index=False, quoting=csv.QUOTE_MINIMAL)
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
    """The run's labels.csv (helpers.experiment.label_format), as judges_vs_labels takes it."""
    path = run_dir(run_id, results_dir) / LABELS_FILE
    if not path.exists():
        raise UserError(
            f"{path}: no labels yet; label the answers in notebook 09's labelling panel "
            "(helpers.explore.label_panels.LabelPanel) first"
        )
    return read_answer_labels(path)


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


def run_estimates(run_id: str, results_dir: Path | None = None) -> tuple[str, pd.DataFrame] | None:
    """The three estimates (RunLabels.estimates) of a run with a labels.csv; None without labels
    or without enough of them (2 of an architecture)."""
    directory = run_dir(run_id, results_dir)
    if not (directory / LABELS_FILE).exists() or not (directory / "records.jsonl").exists():
        return None
    result = RunLabels(run_id, results_dir=directory.parent).estimates()
    return result if result is not None and len(result[1]) else None
