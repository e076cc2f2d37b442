"""Reproducing a paper's judge table, on a toy case first: six hand-made responses with a gold
hallucination label and gold relevance, one judge's adherence and relevance scores, and the two
metrics RAGBench prints (arXiv:2407.11005, §4.3): hallucination AUROC with the detector's score
= 1 - adherence (as rungalileo/ragbench's calculate_metrics.py turns adherence into a hallucination
score), and the RMSE of the relevance. Notebook 07 shows it; the exercises check the numbers."""

from __future__ import annotations

import pandas as pd

from helpers.data import load_ragbench
from helpers.inference.classical import auroc, rmse
from helpers.reproduce.ragbench_paper import judge_metrics
from helpers.teaching.exercises import exercise

TOPIC = "07-reproduce-figures"
TOY = pd.DataFrame(
    {
        "response": ["r1", "r2", "r3", "r4", "r5", "r6"],
        "hallucinated": [1, 0, 0, 1, 0, 0],  # gold: not adherent
        "judge_adherence": [0.2, 0.9, 0.6, 0.7, 0.8, 0.3],  # the judge's P(adherent)
        "gold_relevance": [0.2, 0.5, 0.1, 0.4, 0.3, 0.0],
        "judge_relevance": [0.3, 0.4, 0.1, 0.8, 0.3, 0.2],
    }
)


def toy_case() -> pd.DataFrame:
    """The toy table with the detector's score (1 - adherence) and each squared relevance error."""
    toy = TOY.copy()
    toy["hallucination_score"] = 1 - toy["judge_adherence"]
    toy["squared_error"] = (toy["judge_relevance"] - toy["gold_relevance"]) ** 2
    return toy.round(4)


def toy_pairs() -> pd.DataFrame:
    """Every (hallucinated, adherent) pair and whether the detector ranks the hallucinated one
    higher (ties count 1/2): AUROC is the mean of `right` (Mann-Whitney)."""
    toy = toy_case()
    positives, negatives = toy[toy.hallucinated == 1], toy[toy.hallucinated == 0]
    rows = [
        {
            "hallucinated": p.response,
            "adherent": n.response,
            "right": 1.0
            if p.hallucination_score > n.hallucination_score
            else 0.5
            if p.hallucination_score == n.hallucination_score
            else 0.0,
        }
        for p in positives.itertuples()
        for n in negatives.itertuples()
    ]
    return pd.DataFrame(rows)


def toy_metrics() -> dict:
    """The toy's AUROC (helpers.inference.classical.auroc) and RMSE, as the package computes them on RAGBench."""
    toy = toy_case()
    return {
        "auroc": auroc(toy["hallucinated"], toy["hallucination_score"]),
        "auroc_by_pairs": float(toy_pairs()["right"].mean()),
        "rmse": float(rmse(toy["judge_relevance"], toy["gold_relevance"])),
    }


def best_judge(subset: str = "delucionqa", split: str = "test") -> str:
    """The shipped judge with the highest hallucination AUROC on one RAGBench subset and split."""
    rows = [
        r for r in judge_metrics(load_ragbench(subset, split), n_resamples=100) if r["metric"] == "hallucination_auroc"
    ]
    return max(rows, key=lambda r: r["ours"])["judge"]


exercise(
    "repro-toy-auroc",
    TOPIC,
    "The toy judge's hallucination AUROC (2 hallucinated x 4 adherent "
    "responses: what share of the 8 pairs does 1 - adherence order correctly)?",
    lambda: toy_metrics()["auroc"],
    "r1 (score 0.8) beats all four adherent ones; r4 (0.3) beats only r2 (0.1) and r5 (0.2)",
)
exercise(
    "repro-best-judge",
    TOPIC,
    "Which shipped judge ('gpt3.5', 'ragas' or 'trulens') detects "
    "hallucinations best (highest AUROC) on delucionqa's test split?",
    best_judge,
    "look at the hallucination_auroc rows of delucionqa / test in the side-by-side table",
)
