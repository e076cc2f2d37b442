"""One registry maps architecture names in configs to builders.

    retriever = build_retriever("rerank", language="es", llm=llm,
                                options={"hybrid": {"candidates": 100}, "rerank": {"candidates": 50}})
    retriever.index(corpus).retrieve(queries, k=10)

Each entry declares its typed options, a `Section` model (helpers.retrieval.architectures.options):
`RetrievalOptions` holds one section per entry that has one, read from this registry when it
validates, so an architecture with options is one entry and its model, no list to edit. A composed
architecture builds its parts with the parts' own sections (rerank's hybrid first stage uses the
`hybrid` section, every dense part the `dense` section). Architectures built together through
one `shared` dict reuse their parts (one dense index, one BM25 index per corpus).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Callable, TypeVar, cast

from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model, model_validator

from helpers.retrieval.architectures.composed import Hybrid, HyDE, MultiQuery, Rerank
from helpers.retrieval.architectures.dense import Dense
from helpers.retrieval.architectures.options import (
    BM25Options,
    DenseOptions,
    HybridOptions,
    HyDEOptions,
    MultiQueryOptions,
    RerankOptions,
    Section,
    format_errors,
)
from helpers.retrieval.architectures.retriever_base import RetrievalError, Retriever
from helpers.retrieval.architectures.sparse import BM25
from helpers.retrieval.learned.scorers import build_scorer


def _dense(language: str, llm, options: RetrievalOptions, shared: dict) -> Retriever:
    section = options.of(DenseOptions)
    key = ("dense", language, section)
    if key not in shared:
        chroma = section.chroma.model_dump() if section.chroma else None
        shared[key] = Dense(
            section.embedder, language=language, chroma=chroma, embed_on_ray=section.embed_on_ray, search=section.search
        )
    return shared[key]


def _bm25(language: str, llm, options: RetrievalOptions, shared: dict) -> Retriever:
    section = options.of(BM25Options)
    key = ("bm25", language, section)
    if key not in shared:
        shared[key] = BM25(language, k1=section.k1, b=section.b)
    return shared[key]


def _hybrid(language: str, llm, options: RetrievalOptions, shared: dict) -> Retriever:
    section = options.of(HybridOptions)
    # the parts' sections are in the key too: another dense model is another hybrid
    key = ("hybrid", language, options.of(DenseOptions), options.of(BM25Options), section)
    if key not in shared:
        shared[key] = Hybrid(
            _dense(language, llm, options, shared),
            _bm25(language, llm, options, shared),
            method=section.method,
            candidates=section.candidates,
            rrf_k=section.rrf_k,
            alpha=section.alpha,
        )
    return shared[key]


def _needs_llm(name: str, llm) -> None:
    if llm is None:
        raise RetrievalError(f"architecture '{name}' needs an LLM: pass llm=LLM(...)")


def _hyde(language: str, llm, options: RetrievalOptions, shared: dict) -> Retriever:
    _needs_llm("hyde", llm)
    section = options.of(HyDEOptions)
    return HyDE(
        _dense(language, llm, options, shared),
        llm,
        language=language,
        include_query=section.include_query,
        max_tokens=section.max_tokens,
    )


def _multi_query(language: str, llm, options: RetrievalOptions, shared: dict) -> Retriever:
    _needs_llm("multi_query", llm)
    section = options.of(MultiQueryOptions)
    base = BUILDERS[section.base](language, llm, options, shared)
    return MultiQuery(
        base, llm, n=section.n, language=language, candidates=section.candidates, max_tokens=section.max_tokens
    )


def _rerank(language: str, llm, options: RetrievalOptions, shared: dict) -> Retriever:
    section = options.of(RerankOptions)
    key = ("scorer", section.scorer, section.scorer_path, section.batch_size)
    if key not in shared:  # a trained scorer takes seconds to load: once per run
        shared[key] = build_scorer(section.scorer, scorer_path=section.scorer_path, batch_size=section.batch_size)
    scorer = shared[key]
    base = BUILDERS[section.base](language, llm, options, shared)
    return Rerank(base, scorer, candidates=section.candidates)


@dataclass(frozen=True)
class Architecture:
    """A registry entry: how to build it, and what it is made of and needs.

    options: its typed options, a `Section` model: the `retrieval:` section of that name in
    configs (None: it has none);
    needs_llm: it calls the LLM at query time (HyDE writes a passage, multi-query rewrites);
    language_dependent: its results change with the corpus language (embedder, stemmer, prompts);
    parts: the architectures it is composed of (`first_stage`: the part an option chooses)."""

    name: str
    build: Callable[..., Retriever]
    options: type[Section] | None = None
    needs_llm: bool = False
    language_dependent: bool = True
    parts: tuple[str, ...] = ()
    first_stage: str | None = None  # the options section whose `base` names a part
    description: str = ""


ARCHITECTURES: dict[str, Architecture] = {
    a.name: a
    for a in (
        Architecture("dense", _dense, DenseOptions, description="embeddings, cosine (Chroma)"),
        Architecture("bm25", _bm25, BM25Options, description="BM25 (bm25s), stemmed in the corpus language"),
        Architecture(
            "hybrid",
            _hybrid,
            HybridOptions,
            parts=("dense", "bm25"),
            description="dense and BM25 fused (RRF or scores)",
        ),
        Architecture(
            "hyde",
            _hyde,
            HyDEOptions,
            needs_llm=True,
            parts=("dense",),
            description="dense over an LLM-written passage",
        ),
        Architecture(
            "multi_query",
            _multi_query,
            MultiQueryOptions,
            needs_llm=True,
            first_stage="multi_query",
            description="LLM rewrites of the question, each retrieved, fused",
        ),
        Architecture(
            "rerank", _rerank, RerankOptions, first_stage="rerank", description="a first stage reranked by a scorer"
        ),
    )
}
LANGCHAIN = "langchain:"  # architectures: ["langchain:MODULE:FACTORY"]: a LangChain app's retriever
# name -> builder: what build_retriever calls
BUILDERS: dict[str, Callable[..., Retriever]] = {name: a.build for name, a in ARCHITECTURES.items()}
SectionT = TypeVar("SectionT", bound=Section)


@functools.cache
def _sections_model(sections: tuple[tuple[str, type[Section]], ...]) -> type[BaseModel]:
    """A model with one field per section, each its architecture's `Section` with its defaults: what
    validates them, so an error's place reads `hybrid.candidates` as for any nested field."""
    fields: dict = {name: (model, Field(default_factory=model)) for name, model in sections}
    return create_model("Sections", __config__=ConfigDict(extra="forbid"), **fields)


def _sections() -> tuple[tuple[str, type[Section]], ...]:
    """(name, Section model) of every registered architecture that has options, read now."""
    return tuple((name, entry.options) for name, entry in ARCHITECTURES.items() if entry.options is not None)


class RetrievalOptions(BaseModel):
    """Every architecture's options: one section per registry entry that declares an `options`
    model (`options.hybrid.candidates`; typed: `options.of(HybridOptions)`), each with its defaults
    where not given. The sections are read from ARCHITECTURES when a value is validated, so a new
    entry's section is valid with no list to edit."""

    model_config = ConfigDict(extra="allow")

    @model_validator(mode="before")
    @classmethod
    def _known_sections(cls, data):
        if isinstance(data, RetrievalOptions):
            data = {**(data.model_extra or {}), **{name: getattr(data, name) for name in type(data).model_fields}}
        if not isinstance(data, dict):
            return data  # pydantic says what it expected
        sections = _sections()
        names = {name for name, _ in sections}
        # options go per architecture ({"hybrid": {"candidates": 100}}), never flat
        unknown = sorted(str(key) for key in data if key not in cls.model_fields and key not in names)
        if unknown:
            valid = ", ".join(sorted([*cls.model_fields, *names]))
            raise ValueError(
                f"unknown retrieval section {unknown[0]!r} (options go in their architecture's section); valid: {valid}"
            )
        parsed = _sections_model(sections).model_validate({k: v for k, v in data.items() if k in names})
        return {**{k: v for k, v in data.items() if k in cls.model_fields}, **dict(parsed)}

    def of(self, kind: type[SectionT]) -> SectionT:
        """The section of `kind`'s architecture, typed as `kind`."""
        return cast(SectionT, getattr(self, kind.architecture))

    def sections(self) -> RetrievalOptions:
        """Only the architecture sections (a subclass, the experiment config, adds `k`)."""
        return RetrievalOptions(**(self.model_extra or {}))


def parse_options(options: RetrievalOptions | dict | None = None) -> RetrievalOptions:
    """Typed options from a dict of sections (or None: every default). RetrievalError names a
    misspelt option or an unknown section with the valid names."""
    if options is None:
        return RetrievalOptions()
    if isinstance(options, RetrievalOptions):
        return options.sections()
    if not isinstance(options, dict):
        valid = [name for name, _ in _sections()]
        raise RetrievalError(f"retrieval options must be a dict of sections {valid}, got {type(options).__name__}")
    try:
        return RetrievalOptions.model_validate(options)
    except ValidationError as exc:
        raise RetrievalError(f"retrieval options: {format_errors(exc)}") from None


def _langchain(target: str, language: str, llm, options: RetrievalOptions, shared: dict) -> Retriever:
    from helpers.retrieval.architectures.langchain_retriever import LangChain

    return LangChain(target)


def architecture(name: str) -> Architecture:
    """The registry entry of `name`; `langchain:MODULE:FACTORY` names a LangChain app's retriever
    (helpers.retrieval.architectures.langchain_retriever). An unknown name is an error listing the valid ones."""
    if name in ARCHITECTURES:
        return ARCHITECTURES[name]
    if name.startswith(LANGCHAIN):
        target = name[len(LANGCHAIN) :]
        if target.count(":") != 1 or not all(target.split(":")):
            raise RetrievalError(f"architecture {name!r}: write it as {LANGCHAIN}MODULE:FACTORY")
        return Architecture(
            name,
            functools.partial(_langchain, target),
            language_dependent=False,
            description="a LangChain app's retriever, built by its factory",
        )
    raise RetrievalError(
        f"unknown architecture {name!r}; valid names: {sorted(ARCHITECTURES)} or {LANGCHAIN}MODULE:FACTORY"
    )


def needs_llm(name: str, options: RetrievalOptions | dict | None = None) -> bool:
    """Whether architecture `name`, with these options, calls the LLM (through any of its parts:
    rerank over hyde does)."""
    entry = architecture(name)
    if entry.needs_llm:
        return True
    parts = list(entry.parts)
    if entry.first_stage:
        parts.append(getattr(parse_options(options), entry.first_stage).base)
    return any(needs_llm(part, options) for part in parts)


def build_retriever(
    name: str,
    *,
    language: str = "en",
    llm=None,
    options: RetrievalOptions | dict | None = None,
    shared: dict | None = None,
) -> Retriever:
    """Build the architecture `name` (errors list the valid names).

    language: the corpus language ('en' default; picks the embedder and the BM25 stemmer).
    llm: an LLM, needed by hyde and multi_query (default None).
    options: RetrievalOptions, or a dict of sections {architecture: {option: value}}; None: defaults.
    shared: a dict kept across calls so that architectures reuse one dense and one BM25 index.
    """
    build = BUILDERS.get(name) or architecture(name).build
    return build(language, llm, parse_options(options), shared if shared is not None else {})
