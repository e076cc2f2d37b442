"""Held-out query splits for datasets that ship one labelled split (obstetrics-es, maternaqa,
xquad): whatever is tuned or trained on `dev` (fusion weights, rerankers) is reported on `test`.

    dev = load_dataset("obstetrics-es", query_split="dev")     # same corpus, half the questions

Queries are split by *group*, not one by one: questions that share a gold passage (or, on
XQuAD, an article) fall on the same side, so a model trained on dev never sees a test question's
passage labelled as relevant. Groups go to dev by a hash of (seed, group), so the split is the
same on every machine and does not depend on the order of the file.
"""

from __future__ import annotations

import hashlib
from dataclasses import replace

from helpers.data.contracts import DataError, Dataset

QUERY_SPLITS = ("all", "dev", "test")
DEV_SHARE = 0.5


def query_group(dataset: Dataset, qid: str) -> str:
    """The group a query is split with: its article on XQuAD (doc ids 'article-paragraph'),
    else its first gold document (a query without qrels is its own group)."""
    gold = sorted(dataset.qrels.get(qid, {}))
    if not gold:
        return f"query:{qid}"
    if dataset.name.startswith("xquad"):
        return "article:" + gold[0].split("-")[0]
    return "doc:" + gold[0]


def in_dev(group: str, *, seed: int = 0, dev_share: float = DEV_SHARE) -> bool:
    digest = hashlib.sha256(f"{seed}/{group}".encode()).hexdigest()
    return int(digest[:8], 16) / 0xFFFFFFFF < dev_share


def split_queries(dataset: Dataset, part: str, *, seed: int = 0, dev_share: float = DEV_SHARE) -> Dataset:
    """The dataset with only the queries (and their qrels and answers) of `part`: 'dev', 'test'
    or 'all' (unchanged). The corpus is kept whole: retrieval still searches every document."""
    if part not in QUERY_SPLITS:
        raise DataError(f"dataset {dataset.name!r}", f"query_split must be one of {list(QUERY_SPLITS)}, got {part!r}")
    if part == "all":
        return dataset
    keep = {
        qid
        for qid in dataset.queries
        if in_dev(query_group(dataset, qid), seed=seed, dev_share=dev_share) == (part == "dev")
    }
    return replace(
        dataset,
        name=f"{dataset.name}:{part}",
        queries={q: t for q, t in dataset.queries.items() if q in keep},
        qrels={q: r for q, r in dataset.qrels.items() if q in keep},
        answers={q: a for q, a in dataset.answers.items() if q in keep},
    )
