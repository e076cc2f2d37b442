"""Each dataset's options, typed: one pydantic model per loader, whose fields are the loader's
keywords with their defaults (helpers.data.DATASETS holds each beside its loader; tests check the
fields against the loaders' signatures). A config's `dataset.options` is validated against it before
a loader runs: an unknown option or a value of the wrong type is named on one line."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict

from helpers.data.documents import MAX_FILE_MB


class _Options(BaseModel):
    model_config = ConfigDict(extra="forbid")


class GuidelineChunking(_Options):
    """How the guideline PDF is chunked (helpers.data.obstetrics.guideline_chunks)."""

    pdf_path: str | Path | None = None
    pages: str | None = None
    chunk_size: int = 500
    chunk_overlap: int = 100
    boundary: str = "sentence"
    use_cache: bool = True
    chunks: str = "ours"


class ObstetricsOptions(GuidelineChunking):
    extra_questions: str | Path | None = None


class ObstetricsEsOptions(GuidelineChunking):
    qa_file: str | Path | None = None


class FileOptions(_Options):
    """A dataset read from one prepared file: `path` replaces it."""

    path: str | Path | None = None


class ScifactOptions(FileOptions):
    split: str = "test"


class RagbenchOptions(_Options):
    subset: str = "covidqa"
    split: str = "test"
    n: int | None = 50
    seed: int = 0
    ragbench_dir: str | Path | None = None


class DocumentsOptions(_Options):
    path: str | Path | None = None
    questions: str | Path | None = None
    language: str = "auto"
    chunk_size: int = 500
    chunk_overlap: int = 100
    boundary: str = "sentence"
    splitter: str = "workbench"
    max_file_mb: float = MAX_FILE_MB
