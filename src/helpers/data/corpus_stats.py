"""Descriptive statistics of corpora (used by the summary command and notebook 00)."""

from __future__ import annotations

import numpy as np


def chunk_statistics(corpus: dict[str, dict]) -> dict:
    lengths = np.array([len(doc["text"]) for doc in corpus.values()])
    pages = {doc.get("page") for doc in corpus.values() if doc.get("page") is not None}
    return {
        "chunks": int(len(lengths)),
        "pages_covered": len(pages),
        "chars_mean": round(float(lengths.mean()), 1),
        "chars_median": float(np.median(lengths)),
        "chars_p5": float(np.percentile(lengths, 5)),
        "chars_p95": float(np.percentile(lengths, 95)),
        "chars_min": int(lengths.min()),
        "chars_max": int(lengths.max()),
    }
