"""RAGBench examples featurised for the offline TRACe judge (`trace_trees`): each example's
document- and response-sentence feature matrices (`trace_features`), the sentence keys their rows
follow and, for training, the gold labels read from a RAGBench row.

    example = featurise(question, ["doc text", ...], "response text")   # example.doc_x, .resp_x
    examples = featurise_frame(training_frame())                        # labelled, for fit_judge
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from helpers.judges.models.trace_features import example_features
from helpers.trace.sentence_keys import as_documents_sentences, as_response_sentences, normalize_key


@dataclass
class Example:
    """One featurised example and, for training, its gold labels."""

    doc_x: np.ndarray
    resp_x: np.ndarray
    doc_keys: list[str]
    resp_keys: list[str]
    y_relevant: np.ndarray | None = None
    y_utilized: np.ndarray | None = None
    y_supported: np.ndarray | None = None
    targets: tuple | None = None  # (relevance, utilization, completeness, adherence)


def featurise(question: str, documents, response, row=None) -> Example:
    """One example's features; with `row` (a RAGBench row) its gold labels too."""
    docs, resp = as_documents_sentences(documents), as_response_sentences(response)
    doc_x, resp_x = example_features(question, docs, resp)
    doc_keys = [k for doc in docs for k, _ in doc]
    resp_keys = [k for k, _ in resp]
    example = Example(doc_x, resp_x, doc_keys, resp_keys)
    if row is not None:
        relevant = {normalize_key(k) for k in row["all_relevant_sentence_keys"]}
        utilized = {normalize_key(k) for k in row["all_utilized_sentence_keys"]}
        unsupported = {normalize_key(k) for k in row["unsupported_response_sentence_keys"]}
        example.y_relevant = np.array([k in relevant for k in doc_keys])
        example.y_utilized = np.array([k in utilized for k in doc_keys])
        example.y_supported = np.array([k not in unsupported for k in resp_keys])
        example.targets = (
            row["relevance_score"],
            row["utilization_score"],
            row["completeness_score"],
            float(bool(row["adherence_score"])),
        )
    return example


def featurise_frame(frame: pd.DataFrame, with_labels: bool = True) -> list[Example]:
    """Every row of a RAGBench frame featurised, in order (`with_labels`: its gold labels)."""
    return [
        featurise(r["question"], r["documents_sentences"], r["response_sentences"], r if with_labels else None)
        for _, r in frame.iterrows()
    ]
