"""Data layer: raw data preparation and loaders returning BEIR contracts.

from helpers.data import load_dataset
ds = load_dataset("scifact")          # ds.corpus, ds.queries, ds.qrels, ds.answers
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from pydantic import BaseModel, TypeAdapter, ValidationError
from pydantic.fields import FieldInfo

from helpers.data.benchmarks import load_scifact, load_xquad
from helpers.data.contracts import DataError, Dataset
from helpers.data.dataset_options import (
    DocumentsOptions,
    FileOptions,
    ObstetricsEsOptions,
    ObstetricsOptions,
    RagbenchOptions,
    ScifactOptions,
)
from helpers.data.documents import load_documents
from helpers.data.fetch import DataSourceError, prepare_data
from helpers.data.obstetrics import load_maternaqa, load_obstetrics, load_obstetrics_es
from helpers.data.ragbench import list_splits, load_ragbench, load_ragbench_dataset, published, training_frame
from helpers.data.splits import QUERY_SPLITS, split_queries


def load_xquad_es(path: str | Path | None = None) -> Dataset:
    """XQuAD's Spanish side (`path`: the SQuAD-format JSON; default the prepared raw file)."""
    return load_xquad("es", path=path)


def load_xquad_en(path: str | Path | None = None) -> Dataset:
    """XQuAD's English side (`path`: the SQuAD-format JSON; default the prepared raw file)."""
    return load_xquad("en", path=path)


@dataclass(frozen=True)
class DatasetEntry:
    """One dataset: its loader, its options typed (a pydantic model whose fields are the loader's
    keywords: helpers.data.dataset_options), and, for a dataset `summarize_all` does not load with
    its defaults, why not."""

    loader: Callable[..., Dataset]
    Options: type[BaseModel]
    summarized_apart: str | None = None


DATASETS: dict[str, DatasetEntry] = {
    "obstetrics": DatasetEntry(load_obstetrics, ObstetricsOptions),
    "maternaqa": DatasetEntry(load_maternaqa, FileOptions),
    "obstetrics-es": DatasetEntry(load_obstetrics_es, ObstetricsEsOptions),
    "scifact": DatasetEntry(load_scifact, ScifactOptions),
    "xquad-es": DatasetEntry(load_xquad_es, FileOptions),
    "xquad-en": DatasetEntry(load_xquad_en, FileOptions),
    "ragbench": DatasetEntry(load_ragbench_dataset, RagbenchOptions, "one row per subset and split, below"),
    # a user's own folder of documents (+ a questions file)
    "documents": DatasetEntry(load_documents, DocumentsOptions, "a user's own folder"),
}


def dataset_options(name: str) -> list[str]:
    """The options the loader of dataset `name` accepts, sorted (every dataset also takes
    `query_split`: 'all', 'dev' or 'test', helpers.data.splits)."""
    check_dataset_name(name)
    return sorted([*DATASETS[name].Options.model_fields, "query_split"])


def check_dataset_name(name: str) -> None:
    if name not in DATASETS:
        raise DataError(
            f"dataset {name!r}",
            f"unknown dataset; valid names: {sorted(DATASETS)}",
            fix="RAGBench: name 'ragbench' with options subset, split, n, seed",
        )


def check_dataset_options(name: str, options: dict) -> None:
    """DataError naming the first unknown option of dataset `name` and the valid ones, or the
    first option whose value is not of the type its Options declares (a config is data from
    elsewhere: a list where a number belongs fails here, not deep inside a loader)."""
    valid = dataset_options(name)
    unknown = sorted(set(options) - set(valid))
    if unknown:
        raise DataError(f"dataset {name!r}", f"unknown option {unknown[0]!r}; valid: {', '.join(valid) or 'none'}")
    fields = DATASETS[name].Options.model_fields | {"query_split": FieldInfo(annotation=str)}
    for option, value in options.items():
        annotation = fields[option].annotation
        assert annotation is not None  # pydantic gives every model field one
        try:
            TypeAdapter(annotation).validate_python(value)
        except ValidationError:
            expected = getattr(annotation, "__name__", None) or str(annotation).replace("typing.", "")
            raise DataError(
                f"dataset {name!r}",
                f"option {option!r} must be {expected}, got {type(value).__name__} {str(value)[:60]!r}",
            ) from None


def load_dataset(name: str, *, query_split: str = "all", **options) -> Dataset:
    """Load a dataset by name; options go to its loader (e.g. chunk_size for obstetrics).
    `query_split`: 'all' (default), or the 'dev' / 'test' half of the queries, split by gold
    passage or article so that what is tuned on dev is measured on unseen questions."""
    check_dataset_options(name, options)
    if query_split not in QUERY_SPLITS:
        raise DataError(f"dataset {name!r}", f"query_split must be one of {list(QUERY_SPLITS)}, got {query_split!r}")
    return split_queries(DATASETS[name].loader(**options), query_split)


def summarize_all() -> tuple[list[dict], list[dict]]:
    """(one summary row per dataset, one row per published RAGBench subset/split: its example count
    where downloaded, else how to fetch it; nothing is fetched here)."""
    rows = [load_dataset(name).summary() for name, entry in DATASETS.items() if not entry.summarized_apart]
    present = list_splits()
    ragbench_rows = [
        {"subset": subset, "split": split, "examples": len(load_ragbench(subset, split)), "status": "present"}
        if split in present.get(subset, [])
        else {"subset": subset, "split": split, "examples": None}
        | {"status": f"not downloaded: python -m helpers prepare-data ragbench/{subset}"}
        for subset, splits in published().items()
        for split in splits
    ]
    return rows, ragbench_rows


__all__ = [
    "DATASETS",
    "DatasetEntry",
    "DataError",
    "DataSourceError",
    "Dataset",
    "check_dataset_options",
    "dataset_options",
    "list_splits",
    "load_dataset",
    "split_queries",
    "load_ragbench",
    "prepare_data",
    "summarize_all",
    "training_frame",
]
