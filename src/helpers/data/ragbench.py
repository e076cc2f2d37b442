"""RAGBench (Friel et al. 2024, arXiv:2407.11005): examples with TRACe gold labels.

Any directory laid out as `<subset>/<split>-*.parquet` works, e.g. a download of the HF dataset
rungalileo/ragbench. The default, data/raw/ragbench/, holds what `make data` fetched; any other of
the twelve published subsets (covidqa, cuad, delucionqa, emanual, expertqa, finqa, hagrid, hotpotqa,
msmarco, pubmedqa, tatqa, techqa) and their splits is fetched when first loaded (`fetch_split`), or by
`python -m helpers prepare-data ragbench/SUBSET`.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from helpers import paths
from helpers.data.contracts import DataError, Dataset
from helpers.data.fetch import DataSourceError, load_sources, raw_path

REQUIRED_COLUMNS = (
    "id",
    "question",
    "documents",
    "response",
    "documents_sentences",
    "response_sentences",
    "all_relevant_sentence_keys",
    "all_utilized_sentence_keys",
    "unsupported_response_sentence_keys",
    "adherence_score",
    "relevance_score",
    "utilization_score",
    "completeness_score",
)
# The paper's baseline judges, shipped as columns (NaN where the paper did not run them)
BASELINE_COLUMNS = (
    "ragas_faithfulness",
    "ragas_context_relevance",
    "trulens_groundedness",
    "trulens_context_relevance",
    "gpt3_adherence",
    "gpt3_context_relevance",
    "gpt35_utilization",
)


def default_dir() -> Path:
    return paths.RAW_DIR / "ragbench"


def list_splits(ragbench_dir: str | Path | None = None) -> dict[str, list[str]]:
    """{subset: [split, ...]} found under the directory."""
    root = Path(ragbench_dir) if ragbench_dir else default_dir()
    if not root.is_dir():
        raise DataError(str(root), "directory not found", fix="Run `make data` or pass --ragbench-dir")
    found: dict[str, set[str]] = {}
    for file in root.glob("*/*.parquet"):
        found.setdefault(file.parent.name, set()).add(file.name.split("-")[0])
    return {subset: sorted(splits) for subset, splits in sorted(found.items())}


def _as_list(value) -> list:
    if value is None:
        return []
    if hasattr(value, "tolist"):
        value = value.tolist()
    return [_as_list(v) if hasattr(v, "tolist") or isinstance(v, list) else v for v in value]


def published() -> dict[str, list[str]]:
    """{subset: [split, ...]} of RAGBench's published files (sources.yaml: the twelve subsets,
    those not fetched by `make data` marked on demand)."""
    found: dict[str, set[str]] = {}
    for src in load_sources()["ragbench"]:
        _, subset, name = src.relpath.split("/")
        found.setdefault(subset, set()).add(name.split("-")[0])
    return {subset: sorted(splits) for subset, splits in sorted(found.items())}


def fetch_split(subset: str, split: str) -> None:
    """Fetch a published subset/split not yet in data/raw/ (helpers.data.fetch.raw_path: verified
    by its git blob id, with a progress bar); offline, one line naming the command that fetches it."""
    splits = published()
    if split not in splits.get(subset, []):
        raise DataError(
            f"ragbench {subset}/{split}",
            "no such published subset and split",
            fix=f"RAGBench's subsets and splits: {splits}",
        )
    try:
        raw_path(f"ragbench/{subset}/{split}-00000-of-00001.parquet")
    except DataSourceError as exc:
        reason = str(exc).split(" failed (", 1)[-1].split(")", 1)[0] if " failed (" in str(exc) else str(exc)
        raise DataError(
            f"ragbench {subset}/{split}",
            f"not downloaded, and fetching it failed ({reason})",
            fix=f"fetch it where the internet is reachable: `python -m helpers prepare-data ragbench/{subset}`",
        ) from None


def load_ragbench(subset: str, split: str, ragbench_dir: str | Path | None = None) -> pd.DataFrame:
    """One subset/split as a DataFrame with plain Python lists; columns checked. From data/raw/
    (default), a published split not there yet is fetched first (`fetch_split`)."""
    root = Path(ragbench_dir) if ragbench_dir else default_dir()
    if ragbench_dir is None and not list((root / subset).glob(f"{split}-*.parquet")):
        fetch_split(subset, split)
    files = sorted((root / subset).glob(f"{split}-*.parquet"))
    if not files:
        available = list_splits(root) if root.is_dir() else {}
        raise DataError(
            str(root / subset), f"no '{split}-*.parquet' file", fix=f"Available subsets and splits: {available}"
        )
    frames = []
    for file in files:
        frame = pd.read_parquet(file)
        missing = [c for c in REQUIRED_COLUMNS if c not in frame.columns]
        if missing:
            raise DataError(
                str(file),
                f"columns missing: {missing}",
                fix="Use RAGBench's published parquet files (rungalileo/ragbench)",
            )
        frames.append(frame)
    frame = pd.concat(frames, ignore_index=True)
    for column in (
        "documents",
        "documents_sentences",
        "response_sentences",
        "all_relevant_sentence_keys",
        "all_utilized_sentence_keys",
        "unsupported_response_sentence_keys",
    ):
        frame[column] = frame[column].map(_as_list)
    for column in BASELINE_COLUMNS:
        if column not in frame.columns:
            frame[column] = float("nan")
    frame["subset"], frame["split"] = subset, split
    return frame


def load_ragbench_dataset(
    subset: str = "covidqa",
    split: str = "test",
    n: int | None = 50,
    seed: int = 0,
    ragbench_dir: str | Path | None = None,
) -> Dataset:
    """RAGBench as an experiment dataset (the seed capstone's workflow): `n` examples of
    `subset`/`split` sampled with `seed` (None: all); the documents of the sampled examples,
    deduplicated by text, are one corpus; each question's own documents are its qrels, so
    retrieval quality is measured too; the labelled response is the reference answer."""
    frame = load_ragbench(subset, split, ragbench_dir)
    # a repeated id with the same question is the same example answered by another generator
    # (emanual's train split has each of its 527 questions twice): one sample per question here
    repeated = frame[frame["id"].duplicated(keep=False)]
    conflicting = repeated.groupby("id")["question"].nunique()
    if (conflicting > 1).any():
        raise DataError(
            f"ragbench {subset}/{split}",
            "duplicate example id with different questions",
            record=str(conflicting[conflicting > 1].index[0]),
        )
    frame = frame.drop_duplicates("id", keep="first")
    if n is not None:
        if n <= 0:
            raise DataError(
                f"ragbench {subset}/{split}", f"n must be positive, got {n}", fix="Use n: null for all rows"
            )
        frame = frame.sample(n=min(n, len(frame)), random_state=seed).sort_index()
    corpus: dict = {}
    queries: dict = {}
    qrels: dict = {}
    answers: dict = {}
    seen: dict = {}
    for row in frame.itertuples():
        qid = str(row.id)
        if qid in queries:
            raise DataError(f"ragbench {subset}/{split}", "duplicate example id", record=qid)
        queries[qid], answers[qid], qrels[qid] = row.question, row.response, {}
        for index, text in enumerate(row.documents):
            key = " ".join(str(text).split())
            if not key:
                continue
            doc_id = seen.setdefault(key, f"{qid}/{index}")
            corpus.setdefault(doc_id, {"title": "", "text": str(text)})
            qrels[qid][doc_id] = 1
    return Dataset(
        f"ragbench-{subset}",
        "en",
        corpus,
        queries,
        qrels,
        answers,
        source=str(Path(ragbench_dir or default_dir()) / subset / f"{split}-*.parquet"),
    )


def training_frame(ragbench_dir=None, subsets: list[str] | None = None, limit: int | None = None) -> pd.DataFrame:
    """Every non-test split of RAGBench under `ragbench_dir` (validation + train); never test."""
    frames = []
    for subset, splits in list_splits(ragbench_dir).items():
        if subsets and subset not in subsets:
            continue
        for split in splits:
            if split != "test":
                frame = load_ragbench(subset, split, ragbench_dir)
                frames.append(frame.head(limit) if limit else frame)
    if not frames:
        raise DataError(
            str(ragbench_dir or default_dir()),
            f"no non-test RAGBench split (subsets={subsets})",
            fix="Run `make data`, or name subsets that have a train or validation split",
        )
    return pd.concat(frames, ignore_index=True)
