"""One registry maps architecture names in configs to builders.

    retriever = build_retriever("rerank", language="es", llm=llm,
                                options={"hybrid": {"candidates": 100}, "rerank": {"candidates": 50}})
    retriever.index(corpus).retrieve(queries, k=10)

Options come in one section per architecture (helpers.retrieval.architectures.options); a composed
architecture builds its parts with the parts' own sections (rerank's hybrid first stage uses the
`hybrid` section, every dense part the `dense` section). Architectures built together through
one `shared` dict reuse their parts (one dense index, one BM25 index per corpus).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Callable

from helpers.retrieval.architectures.composed import Hybrid, HyDE, MultiQuery, Rerank
from helpers.retrieval.architectures.dense import Dense
from helpers.retrieval.architectures.options import RetrievalOptions, parse_options
from helpers.retrieval.architectures.retriever_base import RetrievalError, Retriever
from helpers.retrieval.architectures.sparse import BM25
from helpers.retrieval.learned.scorers import build_scorer


def _dense(language: str, llm, options: RetrievalOptions, shared: dict) -> Retriever:
    key = ("dense", language, options.dense)
    if key not in shared:
        chroma = options.dense.chroma.model_dump() if options.dense.chroma else None
        shared[key] = Dense(
            options.dense.embedder,
            language=language,
            chroma=chroma,
            embed_on_ray=options.dense.embed_on_ray,
            search=options.dense.search,
        )
    return shared[key]


def _bm25(language: str, llm, options: RetrievalOptions, shared: dict) -> Retriever:
    key = ("bm25", language, options.bm25)
    if key not in shared:
        shared[key] = BM25(language, k1=options.bm25.k1, b=options.bm25.b)
    return shared[key]


def _hybrid(language: str, llm, options: RetrievalOptions, shared: dict) -> Retriever:
    # the parts' sections are in the key too: another dense model is another hybrid
    key = ("hybrid", language, options.dense, options.bm25, options.hybrid)
    if key not in shared:
        section = options.hybrid
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
    return HyDE(
        _dense(language, llm, options, shared),
        llm,
        language=language,
        include_query=options.hyde.include_query,
        max_tokens=options.hyde.max_tokens,
    )


def _multi_query(language: str, llm, options: RetrievalOptions, shared: dict) -> Retriever:
    _needs_llm("multi_query", llm)
    section = options.multi_query
    base = BUILDERS[section.base](language, llm, options, shared)
    return MultiQuery(
        base, llm, n=section.n, language=language, candidates=section.candidates, max_tokens=section.max_tokens
    )


def _rerank(language: str, llm, options: RetrievalOptions, shared: dict) -> Retriever:
    section = options.rerank
    key = ("scorer", section.scorer, section.scorer_path, section.batch_size)
    if key not in shared:  # a trained scorer takes seconds to load: once per run
        shared[key] = build_scorer(section.scorer, scorer_path=section.scorer_path, batch_size=section.batch_size)
    scorer = shared[key]
    base = BUILDERS[section.base](language, llm, options, shared)
    return Rerank(base, scorer, candidates=section.candidates)


@dataclass(frozen=True)
class Architecture:
    """A registry entry: how to build it, and what it is made of and needs.

    needs_llm: it calls the LLM at query time (HyDE writes a passage, multi-query rewrites);
    language_dependent: its results change with the corpus language (embedder, stemmer, prompts);
    parts: the architectures it is composed of (`first_stage`: the part an option chooses)."""

    name: str
    build: Callable[..., Retriever]
    needs_llm: bool = False
    language_dependent: bool = True
    parts: tuple[str, ...] = ()
    first_stage: str | None = None  # the options section whose `base` names a part
    description: str = ""


ARCHITECTURES: dict[str, Architecture] = {
    a.name: a
    for a in (
        Architecture("dense", _dense, description="embeddings, cosine (Chroma)"),
        Architecture("bm25", _bm25, description="BM25 (bm25s), stemmed in the corpus language"),
        Architecture("hybrid", _hybrid, parts=("dense", "bm25"), description="dense and BM25 fused (RRF or scores)"),
        Architecture("hyde", _hyde, needs_llm=True, parts=("dense",), description="dense over an LLM-written passage"),
        Architecture(
            "multi_query",
            _multi_query,
            needs_llm=True,
            first_stage="multi_query",
            description="LLM rewrites of the question, each retrieved, fused",
        ),
        Architecture("rerank", _rerank, first_stage="rerank", description="a first stage reranked by a scorer"),
    )
}
LANGCHAIN = "langchain:"  # architectures: ["langchain:MODULE:FACTORY"]: a LangChain app's retriever
# name -> builder: what build_retriever calls
BUILDERS: dict[str, Callable[..., Retriever]] = {name: a.build for name, a in ARCHITECTURES.items()}


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
