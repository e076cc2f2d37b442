"""The query, answer and chat panels of notebooks/08-explore.ipynb (the run and results panels
are in run_panels.py), as ipywidgets on top of the package. Each panel displays itself
(`QueryPanel(bench)` as a cell's last line). Errors show as a message in the panel that says
what to do, never as a traceback in the page."""

from __future__ import annotations

import functools
import html

import ipywidgets as w

from helpers.data import DATASETS
from helpers.explore.answer import answer_and_judge
from helpers.explore.chat import Chat
from helpers.explore.views import STYLE, comparison_html, message_html
from helpers.explore.workbench import ARCHITECTURES, Workbench, explain
from helpers.retrieval.registry import needs_llm

KEEP = "(as in the config)"


def guarded(method):
    """Run a button's handler; any exception becomes the panel's error message."""

    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        try:
            return method(self, *args, **kwargs)
        except Exception as exc:  # shown to the person, who can act on it
            self.status.value = message_html(explain(exc))
            if hasattr(self, "progress"):
                self.progress.bar_style = "danger"

    return wrapper


class Panel:
    widget: w.Widget

    def _repr_mimebundle_(self, **kwargs):
        return self.widget._repr_mimebundle_(**kwargs)


class QueryPanel(Panel):
    """Question in, one column per architecture out. bench: the Workbench (corpus, indexes)."""

    def __init__(self, bench: Workbench, *, k: int | None = None, architectures=ARCHITECTURES):
        self.bench = bench
        self.dataset = w.Dropdown(options=sorted(DATASETS), value=bench.dataset, description="corpus")
        self.load_button = w.Button(description="Load", tooltip="load the corpus (indexes are built on first search)")
        self.question = w.Combobox(
            placeholder="type a question, or pick one of the dataset's",
            layout=w.Layout(width="70%"),
            ensure_option=False,
        )
        self.question.add_class("hx-question")
        self.k = w.BoundedIntText(value=k or bench.k, min=1, max=50, description="k", layout=w.Layout(width="140px"))
        self.ticks = {
            a: w.Checkbox(value=a in architectures, description=a, indent=False, layout=w.Layout(width="110px"))
            for a in ARCHITECTURES
        }
        self.search_button = w.Button(description="Search", button_style="primary")
        self.search_button.add_class("hx-search")
        self.progress = w.IntProgress(value=0, min=0, max=1, layout=w.Layout(width="200px"))
        self.status = w.HTML()
        self.results = w.HTML()
        self.results.add_class("hx-results")
        self.load_button.on_click(lambda _: self.load())
        self.search_button.on_click(lambda _: self.search())
        self.widget = w.VBox(
            [
                w.HBox([self.dataset, self.load_button]),
                w.HBox([self.question, self.k]),
                w.HBox(list(self.ticks.values())),
                w.HBox([self.search_button, self.progress]),
                self.status,
                self.results,
            ]
        )
        if bench.data is not None:
            self._fill_questions()

    def _fill_questions(self):
        self.question.options = list(self.bench.data.queries.values())[:200]

    @guarded
    def load(self):
        options = self.bench.options if self.dataset.value == self.bench.dataset else {}
        self.status.value = message_html(f"loading {self.dataset.value} …", "info")
        self.bench.load(self.dataset.value, options)
        self._fill_questions()
        data = self.bench.data
        self.status.value = message_html(
            f"{data.name}: {len(data.corpus)} documents, {len(data.queries)} questions"
            f"{', qrels' if data.qrels else ''}",
            "info",
        )

    @guarded
    def search(self, question: str | None = None):
        """Search (the button); `question` fills the box first (for scripts and tests)."""
        if question is not None:
            self.question.value = question
        chosen = [a for a, tick in self.ticks.items() if tick.value]
        self.progress.bar_style, self.progress.max, self.progress.value = "info", max(len(chosen), 1), 0

        def step(architecture, i, n):
            self.progress.value = i
            waiting = " (the LLM writes)" if needs_llm(architecture, self.bench.retrieval) else ""
            self.status.value = message_html(f"{architecture}{waiting} … {i}/{n}", "info")

        comparison = self.bench.search(self.question.value, chosen, self.k.value, on_step=step)
        self.progress.value, self.progress.bar_style = self.progress.max, "success"
        label = f"qid {comparison.qid}" if comparison.qid else "a typed question (no qrels)"
        self.status.value = message_html(f"{len(chosen)} architectures, top {comparison.k}, {label}", "info")
        self.results.value = comparison_html(comparison)
        return comparison


RAGAS_OFF = "off"


def ragas_choice(bench: Workbench) -> "w.Dropdown":
    """The LLM that judges RAGAS per answer, or off (the default: each metric is LLM calls)."""
    return w.Dropdown(options=[RAGAS_OFF, *bench.llm_choices()], value=RAGAS_OFF, description="RAGAS by")


def ragas_llm(choice) -> str | None:
    return None if choice.value == RAGAS_OFF else choice.value


class AnswerPanel(Panel):
    """Answer the last searched question from one column's contexts, then judge it (TRACe; RAGAS
    too when an LLM is chosen to judge it)."""

    def __init__(self, bench: Workbench, *, max_tokens: int | None = None):
        self.bench, self.max_tokens = bench, max_tokens
        self.architecture = w.Dropdown(options=list(ARCHITECTURES), value="rerank", description="contexts of")
        self.llm = w.Dropdown(options=list(bench.llm_choices()), value=bench.llm_name, description="LLM")
        self.ragas = ragas_choice(bench)
        self.button = w.Button(description="Answer and judge", button_style="primary")
        self.button.add_class("hx-answer")
        self.status = w.HTML()
        self.sentences = w.HTML()
        self.sentences.add_class("hx-sentences")
        self.cards = w.HTML()
        self.cards.add_class("hx-trace-cards")
        self.ragas_cards = w.HTML()
        self.ragas_cards.add_class("hx-ragas-cards")
        self.button.on_click(lambda _: self.answer())
        self.widget = w.VBox(
            [
                w.HBox([self.architecture, self.llm, self.ragas, self.button]),
                self.status,
                self.sentences,
                self.cards,
                self.ragas_cards,
            ]
        )

    @guarded
    def answer(self):
        self.status.value = message_html(
            f"{self.llm.value} answers from {self.architecture.value}'s contexts …", "info"
        )
        self.sentences.value = self.cards.value = self.ragas_cards.value = ""
        view = answer_and_judge(
            self.bench,
            self.architecture.value,
            self.llm.value,
            max_tokens=self.max_tokens,
            ragas_llm=ragas_llm(self.ragas),
        )
        if view.error:
            self.status.value = message_html(view.error)
        else:
            self.status.value = message_html(f"answered and judged in {view.seconds:.1f} s", "info")
        self.sentences.value = view.sentences_html or (html.escape(view.answer) if view.answer else "")
        self.cards.value = view.cards_html
        self.ragas_cards.value = view.ragas_cards_html
        return view


class ChatPanel(Panel):
    """A conversation over one architecture and LLM (helpers.explore.chat): follow-ups rewritten
    into standalone questions, each turn with its contexts as citations and its TRACe cards."""

    def __init__(self, bench: Workbench, *, condense_llm: str | None = None, max_tokens: int | None = None):
        self.bench, self.max_tokens = bench, max_tokens
        self.architecture = w.Dropdown(options=list(ARCHITECTURES), value="hybrid", description="architecture")
        self.llm = w.Dropdown(options=list(bench.llm_choices()), value=bench.llm_name, description="LLM")
        self.condense_llm = w.Dropdown(
            options=list(bench.llm_choices()), value=condense_llm or bench.llm_name, description="rewrites by"
        )
        self.ragas = ragas_choice(bench)
        self.question = w.Text(
            placeholder="ask; a follow-up may refer to the conversation", layout=w.Layout(width="60%")
        )
        self.question.add_class("hx-chat-question")
        self.send = w.Button(description="Send", button_style="primary")
        self.send.add_class("hx-chat-send")
        self.new = w.Button(description="New conversation")
        self.status = w.HTML()
        self.transcript = w.HTML()
        self.transcript.add_class("hx-chat")
        self.chat = self._chat()
        self.send.on_click(lambda _: self.ask())
        self.new.on_click(lambda _: self.reset())
        for choice in (
            self.architecture,
            self.llm,
            self.condense_llm,
            self.ragas,
        ):  # another setting: a new conversation
            choice.observe(lambda _: self.reset(), names="value")
        self.widget = w.VBox(
            [
                w.HBox([self.architecture, self.llm, self.condense_llm, self.ragas]),
                w.HBox([self.question, self.send, self.new]),
                self.status,
                self.transcript,
            ]
        )

    def _chat(self) -> Chat:
        return Chat(
            self.bench,
            self.architecture.value,
            self.llm.value,
            condense_llm=self.condense_llm.value,
            max_tokens=self.max_tokens,
            ragas_llm=ragas_llm(self.ragas),
        )

    def reset(self):
        self.chat, self.transcript.value, self.status.value = self._chat(), "", ""

    @guarded
    def ask(self):
        question, self.question.value = self.question.value, ""
        self.status.value = message_html("searching and answering …", "info")
        turn = self.chat.ask(question)
        self.status.value = message_html(
            turn.view.error or turn.note or f"answered in {turn.view.seconds:.1f} s", "info"
        )
        self.transcript.value = STYLE + self.chat.html()
        return turn
