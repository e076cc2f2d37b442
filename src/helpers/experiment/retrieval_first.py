"""The retrieval table a run prints before its first answer: nDCG@k, recall@k and MRR@k of every
architecture that needs no LLM, on the questions with qrels, each with its bootstrap interval over
questions (ranx's definitions for the metrics; helpers.inference.classical for the intervals). Answers take minutes on a local
model; whether retrieval finds the passages is known in seconds. HyDE and multi-query call the LLM
to retrieve: their retrieval scores come with their answers (the `retrieval` judge). One k for every
retrieval table of a run (this one, the headline's, the reports'): `retrieval.k`, the contexts the
generator is given (issue 60: nDCG@10 here and nDCG@5 in the headline were two numbers for one run)."""

from __future__ import annotations

import pandas as pd

from helpers.inference.classical import MIN_INTERVAL_N, bootstrap_ci, mean_text
from helpers.retrieval.evaluation.metrics import per_query
from helpers.retrieval.registry import build_retriever, needs_llm


def retrieval_table(config, data, queries: dict[str, str], shared: dict) -> pd.DataFrame:
    """architecture, metric, mean, ci_low, ci_high, n: the run's architectures that need no LLM on
    `queries` that have qrels. `shared` is the run's dict of built indexes (reused by the answers)."""
    judged = {qid: text for qid, text in queries.items() if data.qrels.get(qid)}
    columns = ["architecture", "metric", "mean", "ci_low", "ci_high", "n"]
    if not judged:
        return pd.DataFrame(columns=columns)
    k = config.retrieval.k
    metrics = [f"ndcg@{k}", f"recall@{k}", f"mrr@{k}"]  # the `retrieval` judge's, at the run's one k
    stats = config.statistics
    rows = []
    for architecture in config.architectures:
        if needs_llm(architecture, config.retrieval.options):
            continue
        retriever = build_retriever(
            architecture, language=data.language, options=config.retrieval.options, shared=shared
        )
        retriever.index(data.corpus)
        run = retriever.retrieve(judged, k)
        values = per_query({q: data.qrels[q] for q in judged}, run, metrics)
        for metric in metrics:
            column = [values[q][metric] for q in judged if q in values]
            mean, low, high = bootstrap_ci(
                column, confidence=stats.confidence, n_resamples=stats.n_resamples, seed=stats.seed
            )
            if len(column) < MIN_INTERVAL_N:
                low = high = float("nan")
            rows.append(
                dict(architecture=architecture, metric=metric, mean=mean, ci_low=low, ci_high=high, n=len(column))
            )
    return pd.DataFrame(rows, columns=columns)


def format_table(table: pd.DataFrame, skipped: list[str]) -> str:
    """The table as the run prints it, with what it leaves out and why."""
    if table.empty:
        return "Retrieval: no question of this run has qrels (relevance labels): no retrieval table before the answers."
    cells = table.assign(cell=[mean_text(r.mean, r.ci_low, r.ci_high, r.n) for r in table.itertuples()])
    wide = cells.pivot(index="architecture", columns="metric", values="cell").reindex(table["architecture"].unique())
    n = int(table["n"].max())
    lines = [
        f"Retrieval against the qrels, before any answer ({n} questions; 95 % bootstrap intervals; "
        f"k = {str(table['metric'].iloc[0]).split('@')[-1]}, the contexts the generator is given):",
        wide.to_string(),
    ]
    if skipped:
        lines.append(f"({', '.join(skipped)}: retrieve with the LLM; scored with their answers)")
    return "\n".join(lines)
