"""Tables and plots of retrieval results for the notebooks."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd


def side_by_side(retrievers: dict, queries: dict[str, str], *, k: int = 3, snippet: int = 160) -> pd.DataFrame:
    """One row per (architecture, question, rank): doc id, page, score and the passage start."""
    rows = []
    for name, retriever in retrievers.items():
        run = retriever.retrieve(queries, k)
        for qid in queries:
            for rank, (doc_id, score) in enumerate(run.get(qid, {}).items(), 1):
                doc = retriever.corpus[doc_id]
                rows.append(
                    {
                        "architecture": name,
                        "qid": qid,
                        "rank": rank,
                        "doc_id": doc_id,
                        "page": doc.get("page"),
                        "score": round(score, 4),
                        "passage": " ".join(doc["text"].split())[:snippet],
                    }
                )
    return pd.DataFrame(rows)


def load_reports(paths: list[str | Path]) -> pd.DataFrame:
    """Long table (dataset, architecture, metric, value) from retrieval-eval JSON reports; the
    dataset column is the report's file name, so a sampled report stays apart from a full one."""
    rows = []
    for path in paths:
        report = json.loads(Path(path).read_text(encoding="utf-8"))
        for architecture, entry in report["results"].items():
            for metric, value in entry.items():
                rows.append(
                    {
                        "dataset": Path(path).stem,
                        "architecture": architecture,
                        "metric": metric,
                        "value": value,
                        "queries": entry["queries"],
                    }
                )
    return pd.DataFrame(rows)


def quality_plot(table: pd.DataFrame, metric: str = "ndcg@10"):
    """Grouped bars: metric per architecture, one group per dataset."""
    import matplotlib.pyplot as plt

    pivot = table[table.metric == metric].pivot(index="dataset", columns="architecture", values="value")
    fig, ax = plt.subplots(figsize=(8, 4))
    pivot.plot.bar(ax=ax, rot=0, width=0.8)
    ax.set_ylabel(metric)
    ax.set_ylim(0, 1)
    ax.legend(ncol=3, fontsize=8, loc="lower right")
    ax.set_title(f"Retrieval quality ({metric})")
    fig.tight_layout()
    return fig
