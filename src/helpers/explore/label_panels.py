"""People in the loop (notebook 09, JupyterLab and Voila): a panel to label a run's answers, and one
to review a generated test set. Both save to plain files as they go, so closing the page loses
nothing and reopening resumes.

    LabelPanel("documents-mydocs-1a2b3c4d", annotator="ana")   # -> results/<run>/labels.csv
    ReviewPanel("data/testsets/mydocs-1a2b3c4d.jsonl")          # -> <name>.reviewed.jsonl

Keyboard: the `keys` box takes the labels as letters and Enter saves and moves on: `y`/`p`/`n` for
supported, then `y`/`n` for answers-the-question, then `y`/`p`/`n` for correct (only where there is a
reference), e.g. `yyp` + Enter, and optionally a fourth, `y`/`p`/`n`, for "the contexts hold the
reference's fact" (`yynp`: wrong although the fact was retrieved; `helpers diagnose` fits its cuts on it). Buttons do the same for the mouse. The judges' verdicts of an answer
are shown only after it is labelled (no anchoring). The next answer proposed is the next of a random
order of whole questions, balanced over architectures, the judge's least sure first
(RunLabels.next_item); after each label the labels-only, judge-only and prediction-powered
intervals are drawn again (helpers.inference.ppi), with what that label changed.
"""

from __future__ import annotations

import base64
import html
import json
from pathlib import Path

import ipywidgets as w
import matplotlib.pyplot as plt

from helpers.errors import UserError
from helpers.experiment.estimates_figure import estimates_figure
from helpers.experiment.label_format import CHOICES
from helpers.experiment.run_labels import RunLabels
from helpers.experiment.search_labels import SearchQueue
from helpers.explore.panels import Panel, guarded
from helpers.explore.views import STYLE, message_html
from helpers.figures import png_bytes
from helpers.inference.ppi import MIN_INTERVAL_LABELS

_LETTER = {"y": "yes", "p": "partly", "n": "no"}


def parse_keys(keys: str, has_reference: bool) -> dict:
    """'yyp' -> {'supported': 'yes', 'answers': 'yes', 'correct': 'partly'}, 'yynp' adds
    'reference_in_contexts': 'partly'; UserError on bad keys."""
    letters = [c for c in keys.lower() if not c.isspace()]
    names = ["supported", "answers"] + (["correct", "reference_in_contexts"] if has_reference else [])
    if len(letters) not in ({len(names), len(names) - 1} if has_reference else {len(names)}):
        expected = f"3 or 4 letters ({', '.join(names)})" if has_reference else f"2 letters ({', '.join(names)})"
        raise UserError(f"type {expected}, e.g. {'yyp' if has_reference else 'yy'}; got {keys!r}")
    values = {}
    for name, letter in zip(names, letters):
        value = _LETTER.get(letter)
        if value not in CHOICES[name]:
            raise UserError(f"{name}: {letter!r} is not one of {'/'.join(v[0] for v in CHOICES[name])}")
        values[name] = value
    return values


def item_html(item: dict, reference: str | None) -> str:
    """The question, its reference (if any), the contexts with their sources, and the answer; not
    which architecture answered (blind labelling)."""
    sources = item.get("sources") or [f"p. {p}" for p in item.get("pages") or []]
    contexts = "".join(
        f"<li><span class='hx-meta'>{html.escape(str(sources[i]) if i < len(sources) else '')}</span><br>"
        f"{html.escape(c.get('text', ''))}</li>"
        for i, c in enumerate(item.get("contexts") or [])
    )
    ref = (
        f"<p><b>Reference:</b> {html.escape(reference)}</p>"
        if reference
        else "<p class='hx-meta'>no reference answer</p>"
    )
    return (
        f"{STYLE}<div class='hx-column'><p><b>Question</b> ({html.escape(item['qid'])}): {html.escape(item['question'])}</p>"
        f"{ref}<p><b>Answer:</b> {html.escape(item.get('answer') or '')}</p>"
        f"<details open><summary>contexts</summary><ol>{contexts}</ol></details></div>"
    )


class LabelPanel(Panel):
    def __init__(self, run_id: str | None, *, annotator: str = "", results_dir: Path | None = None, store=None):
        """Label run `run_id`'s answers, or those of `store` (a RunLabels-like queue: for_search)."""
        self.status = w.HTML()
        self.annotator = w.Text(value=annotator, description="annotator", placeholder="your name or initials")
        self.supported = w.ToggleButtons(options=list(CHOICES["supported"]), value=None, description="supported")
        self.answers = w.ToggleButtons(options=list(CHOICES["answers"]), value=None, description="answers it")
        self.correct = w.ToggleButtons(options=list(CHOICES["correct"]), value=None, description="correct")
        self.in_contexts = w.ToggleButtons(
            options=list(CHOICES["reference_in_contexts"]), value=None, description="fact in contexts"
        )
        self.note = w.Text(description="note", layout=w.Layout(width="60%"))
        # continuous_update=False: the value arrives when Enter is pressed (or the box is left), as
        # ipywidgets 8 recommends in place of the deprecated on_submit
        self.keys = w.Text(
            description="keys",
            placeholder="e.g. yyp then Enter",
            continuous_update=False,
            layout=w.Layout(width="220px"),
        )
        self.keys.add_class("hx-keys")
        self.save_button = w.Button(description="Save and next", button_style="primary")
        self.save_button.add_class("hx-save")
        self.item_box, self.revealed, self.counter, self.estimate_box = w.HTML(), w.HTML(), w.HTML(), w.HTML()
        self.save_button.on_click(lambda _: self.save())
        self.keys.observe(lambda change: change["new"] and self.save_keys(), names="value")  # "": cleared
        self.annotator.observe(lambda _: self.show(), names="value")
        self.widget = w.VBox(
            [
                self.annotator,
                self.counter,
                self.item_box,
                self.supported,
                self.answers,
                self.correct,
                self.in_contexts,
                self.note,
                w.HBox([self.keys, self.save_button]),
                self.status,
                self.revealed,
                self.estimate_box,
            ]
        )
        if store is None:
            if run_id is None:
                raise UserError("name the run whose answers to label (run_id), or give a store")
            store = RunLabels(run_id, annotator=annotator, results_dir=results_dir)
        self.store = store
        self.item: dict | None = None
        self.widths: dict[str, tuple] = {}  # architecture: (PPI interval width, labels) after the last label
        self.show()
        self.draw_estimates()

    @classmethod
    def for_search(cls, name: str, *, annotator: str = "", results_dir: Path | None = None) -> LabelPanel:
        """The answers a search stopped for (exit 3 of `helpers search --label-rate`), across its
        cells' runs, question by question, the cells nearest the top first
        (helpers.experiment.search_labels.SearchQueue); rerun the search once they are labelled."""
        queue = SearchQueue(name, annotator=annotator, results_dir=results_dir)
        return cls(None, annotator=annotator, results_dir=results_dir, store=queue)

    def draw_estimates(self) -> str:
        """The three intervals per architecture from the labels so far, and what the last label
        changed in the prediction-powered interval's width; returns the text shown."""
        result = self.store.estimates()
        if result is None or result[1].empty:
            target = self.store.estimate_target()
            self.estimate_box.value = message_html(
                "label at least 2 answers of an architecture to see its prediction-powered interval"
                if target
                else "no judge of this run to sharpen with labels (correctness, or a grounding judge)",
                "info",
            )
            return self.estimate_box.value
        metric, table = result
        ppi = table[(table["method"] == "ppi") & table["baseline"].isna()]
        widths = {r.architecture: (r.high - r.low, r.n_labels) for r in ppi.itertuples()}
        changes = [
            _width_change(a, self.widths.get(a, (None, 0))[0], width, n)
            for a, (width, n) in widths.items()
            if self.widths.get(a) != (width, n)
        ]
        self.widths = widths
        fig = estimates_figure(metric, table)
        image = base64.b64encode(png_bytes(fig, dpi=80)).decode()
        plt.close(fig)
        text = f"prediction-powered interval width after this label: {'; '.join(changes) or 'unchanged'}"
        self.estimate_box.value = f"<div class='hx-meta'>{html.escape(text)}</div><img src='data:image/png;base64,{image}' style='max-width:100%'>"
        return text

    def show(self) -> None:
        self.store.annotator = self.annotator.value.strip()
        self.item = self.store.next_item()
        done, total = self.store.progress()
        self.counter.value = f"<span class='hx-meta'>{done} of {total} answers labelled by {html.escape(self.store.annotator or '(no name)')}</span>"
        for toggle in (self.supported, self.answers, self.correct, self.in_contexts):
            toggle.value = None
        self.note.value = ""
        if self.item is None:
            self.item_box.value = message_html(self.store.done_message(), "info")
            return
        reference = self.store.references.get(self.item["qid"])
        self.correct.layout.display = self.in_contexts.layout.display = None if reference else "none"
        self.item_box.value = item_html(self.item, reference)

    @guarded
    def save_keys(self) -> None:
        values = parse_keys(self.keys.value, self.item is not None and self.item["qid"] in self.store.references)
        self.supported.value, self.answers.value = values["supported"], values["answers"]
        self.correct.value = values.get("correct")
        self.in_contexts.value = values.get("reference_in_contexts")
        self.keys.value = ""
        self.save()

    @guarded
    def save(self) -> None:
        if not self.store.annotator:
            raise UserError("write your name in 'annotator' first: every label keeps who gave it")
        if self.item is None:
            return
        if self.supported.value is None or self.answers.value is None:
            raise UserError("choose 'supported' and 'answers it' (or type the keys) before saving")
        item = self.item
        self.store.save(
            item,
            supported=self.supported.value,
            answers=self.answers.value,
            correct=self.correct.value or "",
            reference_in_contexts=self.in_contexts.value or "",
            note=self.note.value,
        )
        verdicts = self.store.judges_revealed(item)
        rows = "".join(
            f"<tr><td>{html.escape(k)}</td><td>{'' if v is None else f'{v:.3f}'}</td></tr>"
            for k, v in sorted(verdicts.items())
        )
        self.revealed.value = (
            f"<div class='hx-meta'>previous answer ({html.escape(item['architecture'])}, "
            f"{html.escape(item['qid'])}): the judges said</div>"
            f"<table class='hx-table'>{rows or '<tr><td>no judge scored it</td></tr>'}</table>"
        )
        self.status.value = ""
        self.show()
        self.draw_estimates()


def _width_change(architecture: str, before: float | None, width: float, n: int) -> str:
    if width != width:  # NaN: fewer labels than an interval needs
        return f"{architecture}: {n} label(s), an interval from {MIN_INTERVAL_LABELS}"
    if before is None or before != before:
        return f"{architecture}: {width:.3f} (first interval)"
    return f"{architecture}: {before:.3f} → {width:.3f}"


class ReviewPanel(Panel):
    """Keep, edit or drop each generated question; every change is saved to `<name>.reviewed.jsonl`
    (kept questions only, the questions-file format) at once."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        if not self.path.exists():
            raise UserError(f"{self.path}: test set not found; write one with `python -m helpers testset DIR`")
        self.out = self.path.with_suffix(".reviewed.jsonl")
        self.items = [json.loads(line) for line in self.path.read_text(encoding="utf-8").splitlines() if line.strip()]
        decisions = {}
        if self.out.with_suffix(".decisions.json").exists():
            decisions = json.loads(self.out.with_suffix(".decisions.json").read_text(encoding="utf-8"))
        self.decisions: dict[str, dict] = decisions
        self.index = 0
        self.status, self.header, self.source = w.HTML(), w.HTML(), w.HTML()
        self.question = w.Textarea(layout=w.Layout(width="90%", height="60px"), description="question")
        self.reference = w.Textarea(layout=w.Layout(width="90%", height="60px"), description="reference")
        buttons = {
            name: w.Button(description=name, button_style=style)
            for name, style in (("keep", "success"), ("drop", "danger"), ("back", ""))
        }
        buttons["keep"].on_click(lambda _: self.decide("keep"))
        buttons["drop"].on_click(lambda _: self.decide("drop"))
        buttons["back"].on_click(lambda _: self.move(-1))
        self.widget = w.VBox(
            [self.header, self.question, self.reference, self.source, w.HBox(list(buttons.values())), self.status]
        )
        self.move(0)

    def move(self, step: int) -> None:
        self.index = max(0, min(len(self.items), self.index + step))
        kept = sum(d["decision"] == "keep" for d in self.decisions.values())
        if self.index >= len(self.items):
            self.header.value = message_html(f"reviewed: {kept} kept of {len(self.items)}; {self.out}", "info")
            return
        item = self.items[self.index]
        decided = self.decisions.get(item["id"], {})
        self.header.value = (
            f"<b>{self.index + 1} / {len(self.items)}</b> <span class='hx-meta'>{item.get('kind', '')}"
            f"{' — decided: ' + decided['decision'] if decided else ''}; {kept} kept so far</span>"
        )
        self.question.value = decided.get("question", item["question"])
        self.reference.value = decided.get("reference", item.get("reference", ""))
        self.source.value = (
            f"<span class='hx-meta'>source: {html.escape(item.get('relevant') or 'none (unanswerable)')}</span>"
        )

    @guarded
    def decide(self, decision: str) -> None:
        if self.index >= len(self.items):
            return
        item = self.items[self.index]
        if decision == "keep" and (not self.question.value.strip() or "?" not in self.question.value):
            raise UserError("a kept question must be a question (with its '?'); edit it or drop it")
        self.decisions[item["id"]] = {
            "decision": decision,
            "question": self.question.value.strip(),
            "reference": self.reference.value.strip(),
        }
        self.save()
        self.move(1)

    def save(self) -> Path:
        kept = [
            dict(
                item,
                question=self.decisions[item["id"]]["question"],
                reference=self.decisions[item["id"]]["reference"],
                reviewed=True,
            )
            for item in self.items
            if self.decisions.get(item["id"], {}).get("decision") == "keep"
        ]
        self.out.write_text("".join(json.dumps(k, ensure_ascii=False) + "\n" for k in kept), encoding="utf-8")
        self.out.with_suffix(".decisions.json").write_text(
            json.dumps(self.decisions, ensure_ascii=False, indent=1), encoding="utf-8"
        )
        return self.out
