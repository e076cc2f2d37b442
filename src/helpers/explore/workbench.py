"""The logic behind the query panel, without widgets: one warm workbench per corpus that runs a
question through several architectures and returns one column of hits per architecture.

    bench = Workbench("obstetrics", options={"pages": "124-143"})
    comparison = bench.search("¿Cuándo se recomienda la primera visita?", ["bm25", "dense"], k=5)
    comparison.columns["bm25"].hits[0].doc_id

Indexes are built once per corpus and architecture (the `shared` dict of the registry) and
reused by every later question; the LLM and its cache are kept too.
"""

from __future__ import annotations

import html
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from helpers import paths
from helpers.errors import UserError
from helpers.experiment.config import load_config
from helpers.inputs import MAX_QUESTION_CHARS, load_yaml
from helpers.llm import LLM
from helpers.llm.llm_errors import LLMError, MissingKeyError
from helpers.retrieval.architectures.retriever_base import top_k
from helpers.retrieval.evaluation.metrics import evaluate_run
from helpers.retrieval.registry import ARCHITECTURES as REGISTRY
from helpers.retrieval.registry import build_retriever, needs_llm
from helpers.text import WORD, Tokenizer, fold_accents

if TYPE_CHECKING:
    from helpers.data.contracts import Dataset

ARCHITECTURES = tuple(REGISTRY)  # the panels' choices: every registered architecture


class ExploreError(UserError):
    """What the panels show in place of a traceback: the problem and what to do."""


def default_settings(config_path: str | Path | None = None) -> dict:
    """The default benchmark's retrieval sections, k and LLMs (configs/default.yaml), read as a
    run reads them (the typed config: same defaults, same checks), so that the panels show what
    `make run` measures."""
    config = load_config(config_path or paths.CONFIGS_DIR / "default.yaml")
    return {
        "retrieval": config.retrieval.model_dump(mode="json", exclude={"k"}),
        "k": config.retrieval.k,
        "llms": [llm.model_dump(mode="json") for llm in config.llms],
    }


def known_llms(configs_dir: str | Path | None = None) -> dict[str, dict]:
    """Every LLM named in configs/*.yaml, by name (the first definition of a name wins; another
    model under a name already taken is offered by its model's name), the bundled local model first."""
    found: dict[str, dict] = {"local": {"provider": "local", "model": "smollm2"}}
    for path in sorted(Path(configs_dir or paths.CONFIGS_DIR).glob("*.yaml")):
        raw = load_yaml(path) or {}
        for llm in raw.get("llms") or []:
            settings = {k: v for k, v in llm.items() if k != "name"}
            name, model = llm.get("name", "local"), settings.get("model")
            if name in found and found[name].get("model") != model and model and model not in found:
                # a name the configs define twice with another model (the default config's `local`
                # is Qwen 1.5B, the bundled `local` SmolLM2): offered by its model's name too
                found[model] = settings
            found.setdefault(name, settings)
    return found


class Highlighter:
    """Marks the words of a text whose stem is one of the query's (BM25's tokeniser: accents
    folded, stop words dropped, Snowball stems), and cuts the snippet around most of them."""

    def __init__(self, query: str, language: str = "en"):
        self._fold = fold_accents
        self.tokenizer = Tokenizer(language)  # any language's stemmer and stop words (helpers.languages)
        stemmer = self.tokenizer._stemmer
        self._stem = stemmer.stemWord if stemmer is not None else (lambda word: word)
        stopwords = set(self.tokenizer.stopwords)
        self.terms = {
            self._stem(w)
            for w in (self._fold(t.lower()) for t in WORD.findall(query))
            if w not in stopwords and len(w) > 1
        }

    def matches(self, text: str) -> list[tuple[int, int]]:
        return [m.span() for m in WORD.finditer(text) if self._stem(self._fold(m.group().lower())) in self.terms]

    def snippet(self, text: str, width: int = 260) -> tuple[str, int]:
        """HTML of the `width` characters with the most query terms, terms in <mark>; and how
        many terms it marked."""
        text = " ".join(str(text).split())
        spans = self.matches(text)
        start = 0
        if spans and len(text) > width:  # the window that holds the most matches
            best = max(range(len(spans)), key=lambda i: sum(1 for s, _ in spans[i:] if s < spans[i][0] + width))
            start = max(0, spans[best][0] - 40)
            start = text.rfind(" ", 0, start) + 1 if start else 0
        end = min(len(text), start + width)
        window = [(s - start, e - start) for s, e in spans if s >= start and e <= end]
        out, cursor = [], 0
        piece = text[start:end]
        for s, e in window:
            out.append(html.escape(piece[cursor:s]) + f"<mark>{html.escape(piece[s:e])}</mark>")
            cursor = e
        out.append(html.escape(piece[cursor:]))
        prefix = "… " if start else ""
        suffix = " …" if end < len(text) else ""
        return prefix + "".join(out) + suffix, len(window)


@dataclass
class Hit:
    rank: int
    doc_id: str
    score: float
    page: int | str | None
    section: str
    snippet: str  # HTML, query terms in <mark>
    found_by: list[str] = field(default_factory=list)  # architectures whose top k holds it
    first_stage_rank: int | None = None  # rerank only: its rank before the reranker (None: not in it)
    relevant: bool | None = None  # None: the question has no qrels

    @property
    def rank_change(self) -> int | None:
        """Places moved up by the reranker (negative: down)."""
        return None if self.first_stage_rank is None else self.first_stage_rank - self.rank


@dataclass
class Column:
    architecture: str
    hits: list[Hit] = field(default_factory=list)
    seconds: float = 0.0
    metrics: dict[str, float] = field(default_factory=dict)  # nDCG@10, recall@k where qrels exist
    rewrites: list[str] = field(default_factory=list)  # multi-query's rewrites
    passage: str | None = None  # HyDE's generated passage
    note: str = ""  # a fallback, said next to the column
    error: str = ""


@dataclass
class Comparison:
    question: str
    qid: str | None
    k: int
    columns: dict[str, Column]
    contexts: dict[str, list[dict]] = field(default_factory=dict)  # architecture -> top k with texts


class Workbench:
    """A corpus, its indexes and an LLM, kept warm between questions.

    dataset: a name of helpers.data.DATASETS ('obstetrics' default); options: its loader's
    options (e.g. {"pages": "124-143"}); retrieval: per-architecture sections (default: those of
    configs/default.yaml); llm: the name of the LLM for HyDE and multi-query ('local', the
    bundled model, by default), one of configs/*.yaml or of `llms` ({name: LLM settings}, more
    LLMs than the configs name)."""

    def __init__(
        self,
        dataset: str = "obstetrics",
        options: dict | None = None,
        *,
        retrieval: dict | None = None,
        llm: str = "local",
        llms: dict[str, dict] | None = None,
    ):
        self.dataset, self.options = dataset, dict(options or {})
        defaults = default_settings()
        self.retrieval = retrieval if retrieval is not None else defaults["retrieval"]
        self.k = defaults["k"]  # the panels' default top k: the config's, as a run uses it
        self.llm_name, self.extra_llms = llm, dict(llms or {})
        self.data: Dataset | None = None
        self._shared: dict = {}
        self._retrievers: dict = {}
        self._llms: dict = {}
        self.last: Comparison | None = None

    @classmethod
    def from_dataset(cls, data, **settings) -> "Workbench":
        """A workbench on a Dataset already in memory (your own corpus, in BEIR's contracts)."""
        bench = cls(data.name, **settings)
        bench.data = data
        return bench

    # ------------------------------------------------------------------ loading
    def load(self, dataset: str | None = None, options: dict | None = None) -> "Workbench":
        """Load (or switch to) a dataset; indexes of the previous one are dropped."""
        from helpers.data import load_dataset  # pandas: loaded only when this runs

        if dataset is not None and (dataset, options or {}) != (self.dataset, self.options):
            self.dataset, self.options, self.data = dataset, dict(options or {}), None
        if self.data is None:
            self._shared, self._retrievers, self.last = {}, {}, None
            self.data = load_dataset(self.dataset, **self.options)
        return self

    def llm(self, name: str | None = None):
        name = name or self.llm_name
        if name not in self._llms:  # configs/*.yaml are read only for an LLM not built yet
            llms = self.llm_choices()
            if name not in llms:
                raise ExploreError(f"no LLM named {name!r} in configs/*.yaml; names: {sorted(llms)}")
            self._llms[name] = LLM(llms[name])
        return self._llms[name]

    def llm_choices(self) -> dict[str, dict]:
        """The LLMs this workbench can use, by name."""
        return {**known_llms(), **self.extra_llms}

    def loaded(self) -> Dataset:
        """The dataset loaded; ExploreError before any."""
        if self.data is None:
            raise ExploreError("no corpus loaded yet: press Load (or call Workbench.load()) first")
        return self.data

    def retriever(self, architecture: str):
        """The architecture over this corpus, indexed once."""
        data = self.loaded()
        if architecture not in self._retrievers:
            llm = self.llm() if needs_llm(architecture, self.retrieval) else None
            retriever = build_retriever(
                architecture, language=data.language, llm=llm, options=self.retrieval, shared=self._shared
            )
            self._retrievers[architecture] = retriever.index(data.corpus)
        return self._retrievers[architecture]

    def qid_of(self, question: str) -> str | None:
        """The dataset's qid of this exact question (whitespace aside), so its qrels apply."""
        wanted = " ".join(question.split()).lower()
        for qid, text in (self.data.queries if self.data else {}).items():
            if " ".join(text.split()).lower() == wanted:
                return qid
        return None

    # ------------------------------------------------------------------ searching
    def search(self, question: str, architectures=ARCHITECTURES, k: int | None = None, on_step=None) -> Comparison:
        """One column per architecture, its top `k` (default: the config's k). `on_step(architecture,
        i, n)` is called before each (the panel's progress bar). An architecture that fails gets its
        error in its column."""
        if not question or not question.strip():
            raise ExploreError("the question is empty: type a question, or pick one of the dataset's")
        if len(question) > MAX_QUESTION_CHARS:
            raise ExploreError(
                f"the question has {len(question):,} characters; at most {MAX_QUESTION_CHARS:,}: shorten it"
            )
        if not architectures:
            raise ExploreError("no architecture selected: tick at least one")
        k = k or self.k
        data = self.load().loaded()  # load() loads only when nothing is loaded yet
        qid = self.qid_of(question)
        key = qid or "typed"
        highlighter = Highlighter(question, data.language)
        columns, runs = {}, {}
        for i, architecture in enumerate(architectures):
            if on_step:
                on_step(architecture, i, len(architectures))
            column = columns[architecture] = Column(architecture)
            start = time.perf_counter()
            try:
                retriever = self.retriever(architecture)
                runs[architecture] = top_k(retriever.retrieve({key: question}, k).get(key, {}), k)
            except Exception as exc:  # shown in its column; the other columns still come
                column.error = explain(exc)
                continue
            column.seconds = time.perf_counter() - start
            column.rewrites = list(getattr(retriever, "rewrites", {}).get(key, []))
            column.passage = retriever.generated.pop(key, None) if architecture == "hyde" else None
            column.note = getattr(retriever, "fallbacks", {}).pop(key, "")
            if qid and data.qrels.get(qid):
                scores = evaluate_run(
                    {qid: data.qrels[qid]}, {qid: runs[architecture]}, metrics=("ndcg@10", f"recall@{k}")
                )
                column.metrics = {name: round(value, 3) for name, value in scores.items()}
        found_by: dict[str, list[str]] = {}
        for architecture, run in runs.items():
            for doc_id in run:
                found_by.setdefault(doc_id, []).append(architecture)
        relevant = data.qrels.get(qid, {}) if qid else {}
        comparison = Comparison(question, qid, k, columns)
        for architecture, run in runs.items():
            first = getattr(self._retrievers[architecture], "first_stage", {}).pop(key, None)
            for rank, (doc_id, score) in enumerate(run.items(), 1):
                doc = data.corpus[doc_id]
                snippet, _ = highlighter.snippet(doc["text"])
                columns[architecture].hits.append(
                    Hit(
                        rank,
                        doc_id,
                        float(score),
                        doc.get("page") or doc.get("pages"),
                        str(doc.get("section") or doc.get("title") or ""),
                        snippet,
                        found_by[doc_id],
                        (first.index(doc_id) + 1 if first and doc_id in first else None),
                        (relevant.get(doc_id, 0) > 0) if relevant else None,
                    )
                )
            comparison.contexts[architecture] = [
                {"rank": h.rank, "doc_id": h.doc_id, "score": h.score, "text": data.corpus[h.doc_id]["text"]}
                for h in columns[architecture].hits
            ]
        self.last = comparison
        return comparison


def explain(exc: Exception) -> str:
    """One line a person can act on, for errors of the kinds the panels meet."""
    text = str(exc) or type(exc).__name__
    if isinstance(exc, MissingKeyError):
        return f"{text} (put it in the environment or in .env, then press the button again)"
    if isinstance(exc, LLMError):
        return f"the LLM did not answer: {text} (is its server running? see configs/openai-compatible.yaml)"
    if isinstance(exc, UserError):
        return text
    return f"{type(exc).__name__}: {text}"
