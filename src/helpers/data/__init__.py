"""Data layer: raw data preparation and loaders returning BEIR contracts.

from helpers.data import load_dataset
ds = load_dataset("scifact")          # ds.corpus, ds.queries, ds.qrels, ds.answers
"""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Callable

from pydantic import TypeAdapter, ValidationError

from helpers.data.benchmarks import load_scifact, load_xquad
from helpers.data.contracts import DataError, Dataset
from helpers.data.documents import load_documents
from helpers.data.fetch import DataSourceError, prepare_data
from helpers.data.obstetrics import guideline_chunks, load_maternaqa, load_obstetrics, load_obstetrics_es
from helpers.data.ragbench import list_splits, load_ragbench, load_ragbench_dataset, published, training_frame
from helpers.data.splits import QUERY_SPLITS, split_queries


def load_xquad_es(path: str | Path | None = None) -> Dataset:
    """XQuAD's Spanish side (`path`: the SQuAD-format JSON; default the prepared raw file)."""
    return load_xquad("es", path=path)


def load_xquad_en(path: str | Path | None = None) -> Dataset:
    """XQuAD's English side (`path`: the SQuAD-format JSON; default the prepared raw file)."""
    return load_xquad("en", path=path)


DATASETS: dict[str, Callable[..., Dataset]] = {
    "obstetrics": load_obstetrics,
    "maternaqa": load_maternaqa,
    "obstetrics-es": load_obstetrics_es,
    "scifact": load_scifact,
    "xquad-es": load_xquad_es,
    "xquad-en": load_xquad_en,
    "ragbench": load_ragbench_dataset,
    "documents": load_documents,  # a user's own folder of documents (+ a questions file)
}
# loaders that take **options hand them on to this function: its keywords are valid options too
_FORWARDED = {load_obstetrics: guideline_chunks, load_obstetrics_es: guideline_chunks}
# datasets `summarize_all` does not load with their defaults, and why; every other one it does
SUMMARIZED_APART = {"ragbench": "one row per subset and split, below", "documents": "a user's own folder"}


def _keywords(function: Callable) -> set[str]:
    """Keyword parameters of `function`, following **options to where they are forwarded."""
    names = set()
    for parameter in inspect.signature(function).parameters.values():
        if parameter.kind in (parameter.POSITIONAL_OR_KEYWORD, parameter.KEYWORD_ONLY):
            names.add(parameter.name)
        elif parameter.kind is parameter.VAR_KEYWORD and function in _FORWARDED:
            names |= _keywords(_FORWARDED[function])
    return names


def dataset_options(name: str) -> list[str]:
    """The options the loader of dataset `name` accepts, sorted (every dataset also takes
    `query_split`: 'all', 'dev' or 'test', helpers.data.splits)."""
    check_dataset_name(name)
    return sorted(_keywords(DATASETS[name]) | {"query_split"})


def check_dataset_name(name: str) -> None:
    if name not in DATASETS:
        raise DataError(
            f"dataset {name!r}",
            f"unknown dataset; valid names: {sorted(DATASETS)}",
            fix="RAGBench: name 'ragbench' with options subset, split, n, seed",
        )


def _option_types(function: Callable) -> dict[str, object]:
    """{keyword: annotation} of `function`, following **options like `_keywords`."""
    hints = {}
    if function in _FORWARDED:
        hints |= _option_types(_FORWARDED[function])
    for parameter in inspect.signature(function).parameters.values():
        annotation = parameter.annotation  # a string under `from __future__ import annotations`
        if parameter.kind is parameter.VAR_KEYWORD or annotation is parameter.empty:
            continue
        hints[parameter.name] = eval(annotation, function.__globals__) if isinstance(annotation, str) else annotation  # noqa: S307 - our own source
    return hints


def check_dataset_options(name: str, options: dict) -> None:
    """DataError naming the first unknown option of dataset `name` and the valid ones, or the
    first option whose value is not of the type the loader declares (a config is data from
    elsewhere: a list where a number belongs fails here, not deep inside a loader)."""
    valid = dataset_options(name)
    unknown = sorted(set(options) - set(valid))
    if unknown:
        raise DataError(f"dataset {name!r}", f"unknown option {unknown[0]!r}; valid: {', '.join(valid) or 'none'}")
    types = _option_types(DATASETS[name]) | {"query_split": str}
    for option, value in options.items():
        if option in types:
            try:
                TypeAdapter(types[option]).validate_python(value)
            except ValidationError:
                expected = getattr(types[option], "__name__", None) or str(types[option]).replace("typing.", "")
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
    return split_queries(DATASETS[name](**options), query_split)


def summarize_all() -> tuple[list[dict], list[dict]]:
    """(one summary row per dataset, one row per published RAGBench subset/split: its example count
    where downloaded, else how to fetch it; nothing is fetched here)."""
    rows = [load_dataset(name).summary() for name in DATASETS if name not in SUMMARIZED_APART]
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
