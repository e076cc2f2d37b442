"""Data layer: raw data preparation and loaders returning BEIR contracts.

    from helpers.data import load_dataset
    ds = load_dataset("scifact")          # ds.corpus, ds.queries, ds.qrels, ds.answers
"""
from __future__ import annotations

from typing import Callable

from helpers.data.benchmarks import load_scifact, load_xquad
from helpers.data.contracts import DataError, Dataset
from helpers.data.fetch import DataSourceError, prepare_data
from helpers.data.obstetrics import load_maternaqa, load_obstetrics, load_obstetrics_es
from helpers.data.ragbench import list_splits, load_ragbench

DATASETS: dict[str, Callable[..., Dataset]] = {
    "obstetrics": load_obstetrics,
    "maternaqa": load_maternaqa,
    "obstetrics-es": load_obstetrics_es,
    "scifact": load_scifact,
    "xquad-es": lambda **kw: load_xquad("es", **kw),
    "xquad-en": lambda **kw: load_xquad("en", **kw),
}


def load_dataset(name: str, **options) -> Dataset:
    """Load a dataset by name; options go to its loader (e.g. chunk_size for obstetrics)."""
    if name not in DATASETS:
        raise ValueError(f"unknown dataset {name!r}; valid names: {sorted(DATASETS)} "
                         "(RAGBench: helpers.data.load_ragbench(subset, split))")
    return DATASETS[name](**options)


def summarize_all() -> tuple[list[dict], list[dict]]:
    """(one summary row per dataset, one row per RAGBench subset/split with its example count)."""
    rows = [load_dataset(name).summary() for name in DATASETS]
    ragbench_rows = [
        {"subset": subset, "split": split, "examples": len(load_ragbench(subset, split))}
        for subset, splits in list_splits().items() for split in splits
    ]
    return rows, ragbench_rows


__all__ = ["DATASETS", "DataError", "DataSourceError", "Dataset", "list_splits", "load_dataset",
           "load_ragbench", "prepare_data", "summarize_all"]
