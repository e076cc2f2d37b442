"""The seed benchmark's RAGAS numbers beside ours (the seed: ../shared/seeds/ragas-evaluation-framework.md).

The seed prints two kinds of RAGAS numbers:
- its results for the hybrid architecture on the obstetrics questions ('Evaluation Pipeline':
  faithfulness 0.85, answer relevancy 0.78, context precision 0.92, context recall 0.76), which
  notebook 03 sets beside our RAGAS scores of hybrid's answers, with a 95% bootstrap interval
  over questions (helpers.inference.classical.bootstrap_ci) and how many of them the judge could score;
- worked examples of each formula, which helpers.teaching.ragas_steps recomputes.
The seed does not say which LLM answered or judged, how many questions were scored or how many
scores failed, so a difference says how far apart the numbers are, not why.
"""

from __future__ import annotations

import pandas as pd

from helpers.inference.classical import bootstrap_ci

SEED_FILE = "seeds/ragas-evaluation-framework.md"
SEED_HYBRID = {"faithfulness": 0.85, "answer_relevancy": 0.78, "context_precision": 0.92, "context_recall": 0.76}
SEED_HYBRID_SOURCE = (
    f"{SEED_FILE}, section 'Evaluation Pipeline': the results of RAGASEvaluator(rag_type='hybrid'), "
    "printed as comments (faithfulness 0.85, answer_relevancy 0.78, context_precision 0.92, context_recall 0.76)"
)
WORKED_EXAMPLES_SOURCE = (
    f"{SEED_FILE}: each metric's worked example ('Calculation Example' of faithfulness, answer "
    "relevancy, context precision and context recall)"
)


def hybrid_comparison(rows: pd.DataFrame, *, n_resamples: int = 2000, seed: int = 0) -> pd.DataFrame:
    """The seed's hybrid results beside ours. `rows`: RAGAS scores of hybrid's answers, long
    (qid, metric, value; a NaN value is a score the judge could not give). One row per metric:
    published, ours (mean of the scored), its 95% interval, scored / questions, difference."""
    out = []
    for metric, published in SEED_HYBRID.items():
        values = rows.loc[rows["metric"] == metric, "value"].astype(float)
        scored = values.dropna()
        ours, low, high = bootstrap_ci(scored.to_numpy(), n_resamples=n_resamples, seed=seed)
        out.append(
            {
                "metric": metric,
                "published": published,
                "ours": ours,
                "ci95_low": low,
                "ci95_high": high,
                "scored": f"{len(scored)} of {len(values)}",
                "difference": ours - published,
            }
        )
    return pd.DataFrame(out)


def save_hybrid_comparison(rows: pd.DataFrame, *, how: str, validity: str, results_dir=None, **options) -> pd.DataFrame:
    """`hybrid_comparison(rows)` saved for the book (helpers.reproduce.published); `how` says how
    ours were made (answering model, k, questions, judge), `validity` how far the judge can be
    trusted (printed with the numbers: a score without its judge's agreement invites trust)."""
    from helpers.reproduce.published import save_comparison

    table = hybrid_comparison(rows, **options)
    save_comparison(
        "seed-ragas-hybrid",
        table,
        title="The seed benchmark's RAGAS results for hybrid, and ours",
        published_source=SEED_HYBRID_SOURCE,
        data_source=how,
        notes=f"Our judge: {validity}. The seed does not say which model answered or judged, nor how many "
        "scores failed; ours count the questions the judge could score ('scored').",
        results_dir=results_dir,
    )
    return table


def save_worked_examples(worked: pd.DataFrame, *, results_dir=None) -> pd.DataFrame:
    """The seed's worked examples (helpers.teaching.ragas_steps.worked_examples: metric, seed,
    formula, how) saved for the book as published vs ours."""
    from helpers.reproduce.published import save_comparison

    table = pd.DataFrame(
        {
            "metric": worked["metric"],
            "published": worked["seed"],
            "ours": worked["formula"],
            "difference": worked["formula"] - worked["seed"],
            "how": worked["how"],
        }
    )
    save_comparison(
        "seed-ragas-worked-examples",
        table,
        title="The seed's worked RAGAS examples, recomputed with ragas's formulas",
        published_source=WORKED_EXAMPLES_SOURCE,
        data_source="the examples' own inputs as the seed prints them (helpers.teaching.ragas_steps)",
        results_dir=results_dir,
    )
    return table
