"""Judging the judges on a toy case: AUROC as the share of (positive, negative) pairs a judge
orders correctly, and RMSE as the typical error of a predicted score (notebook 05)."""

from __future__ import annotations

import itertools

import pandas as pd

from helpers.inference import classical as stats
from helpers.inference.classical import auroc
from helpers.teaching.exercises import exercise

# 1 = the response is hallucinated (RAGBench's positive class for hallucination detection);
# the judge's score: its probability of hallucination.
TOY_LABELS = [1, 1, 0, 0, 1, 0]
TOY_SCORES = [0.9, 0.4, 0.35, 0.8, 0.7, 0.1]
TOY_GOLD = [0.10, 0.40, 0.25, 0.00, 0.60]  # e.g. gold relevance of five examples
TOY_PREDICTED = [0.20, 0.30, 0.25, 0.20, 0.30]  # a judge's predicted relevance


def auroc_pairs(labels=TOY_LABELS, scores=TOY_SCORES) -> pd.DataFrame:
    """Every (positive, negative) pair and whether the judge scores the positive higher (ties 1/2):
    AUROC is the mean of `credit` (Hanley & McNeil 1982)."""
    positives = [i for i, y in enumerate(labels) if y == 1]
    negatives = [i for i, y in enumerate(labels) if y == 0]
    rows = []
    for p, n in itertools.product(positives, negatives):
        credit = 1.0 if scores[p] > scores[n] else 0.5 if scores[p] == scores[n] else 0.0
        rows.append({"positive": p, "negative": n, "score +": scores[p], "score -": scores[n], "credit": credit})
    return pd.DataFrame(rows)


def auroc_by_hand(labels=TOY_LABELS, scores=TOY_SCORES) -> float:
    return float(auroc_pairs(labels, scores)["credit"].mean())


def rmse(gold=TOY_GOLD, predicted=TOY_PREDICTED) -> float:
    """Root mean squared error: sqrt(mean((predicted - gold)²)), in the scores' own units
    (helpers.inference.classical.rmse, the one every judge table uses)."""
    return stats.rmse(predicted, gold)


def constant_rmse(gold=TOY_GOLD) -> float:
    """RMSE of always predicting the mean: the floor any useful judge must beat (the 'trivial'
    row of notebook 05's table)."""
    mean = sum(gold) / len(gold)
    return rmse(gold, [mean] * len(gold))


TOPIC = "05-judging-the-judges"
exercise(
    "auroc-toy",
    TOPIC,
    "AUROC of the toy judge (count the pairs it orders correctly, out of 9)?",
    lambda: auroc(TOY_LABELS, TOY_SCORES),
    "3 positives × 3 negatives = 9 pairs; the negative at 0.8 beats two positives",
)
exercise(
    "auroc-flipped",
    TOPIC,
    "AUROC of a judge that outputs 1 - score for the same examples?",
    lambda: auroc(TOY_LABELS, [1 - s for s in TOY_SCORES]),
    "every pair's order is reversed",
)
exercise(
    "rmse-toy",
    TOPIC,
    "RMSE of the predicted relevance against the gold one?",
    lambda: rmse(),
    "errors 0.1, -0.1, 0, 0.2, -0.3: square, average, square root",
)
