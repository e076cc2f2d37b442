"""Why 10 questions cannot separate most architectures: a paired permutation test computed
exactly on five questions, then the smallest difference a paired test can detect at a given
variance and how many questions a difference needs (notebook 06)."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd

from helpers.experiment.analysis import quality_scores
from helpers.inference.classical import detectable_differences, minimum_detectable_difference, questions_needed
from helpers.teaching.exercises import exercise

TOY_DIFFS = [0.10, 0.20, -0.05, 0.15, 0.10]  # architecture A minus B on five questions


def exact_sign_flip_p(diffs=TOY_DIFFS) -> float:
    """Two-sided p-value of mean difference 0, by every one of the 2^n sign flips: under the null,
    A and B are exchangeable on each question, so each difference is as likely to be negated."""
    diffs = np.asarray(diffs, dtype=float)
    observed = abs(diffs.mean())
    flips = [abs((diffs * np.array(signs)).mean()) for signs in itertools.product((1, -1), repeat=len(diffs))]
    return float(np.mean([f >= observed - 1e-12 for f in flips]))


def detectable_table(
    sd_values=(0.1, 0.2, 0.3), ns=(10, 30, 100, 300), *, alpha: float = 0.05, power: float = 0.8
) -> pd.DataFrame:
    """Minimum detectable difference for each SD of the paired differences and number of questions."""
    return pd.DataFrame(
        [
            {
                "sd of differences": sd,
                "questions": n,
                "minimum detectable difference": minimum_detectable_difference(sd, n, alpha=alpha, power=power),
            }
            for sd in sd_values
            for n in ns
        ]
    )


def questions_needed_figure(
    sd: float,
    differences=(0.02, 0.03, 0.05, 0.075, 0.1, 0.15, 0.2),
    *,
    alpha: float = 0.05,
    power: float = 0.8,
    observed_n: int | None = None,
):
    """Questions needed to detect each difference at this SD (log scale), with the questions a run
    has drawn as a line."""
    import seaborn as sns

    from helpers.figures import plt  # matplotlib: loaded only when this runs

    frame = pd.DataFrame(
        {
            "difference": list(differences),
            "questions needed": [questions_needed(d, sd, alpha=alpha, power=power) for d in differences],
        }
    )
    fig, ax = plt.subplots(figsize=(5.5, 3.6))
    sns.lineplot(data=frame, x="difference", y="questions needed", marker="o", ax=ax)
    ax.set_yscale("log")
    if observed_n:
        ax.axhline(observed_n, color="grey", ls="--", lw=1)
        ax.text(max(differences), observed_n, f" {observed_n} questions", va="bottom", ha="right", fontsize=8)
    ax.set_title(f"Questions a paired test needs (SD of differences {sd:.3f}, α {alpha}, power {power})", fontsize=9)
    ax.set_xlabel("true mean difference between two architectures")
    fig.tight_layout()
    return fig


def detectability(scores: pd.DataFrame, baseline: str, *, alpha: float = 0.05, power: float = 0.8):
    """(table, figure) for a run's quality scores: per metric and architecture the observed
    difference with the baseline, the minimum detectable difference at this run's questions, and
    the questions the observed difference would need; the figure at the median SD (None when no
    difference varies)."""
    table = detectable_differences(quality_scores(scores), baseline, alpha=alpha, power=power)
    spread = table["sd_diff"][table["sd_diff"] > 0] if len(table) else pd.Series(dtype=float)
    figure = (
        questions_needed_figure(float(spread.median()), alpha=alpha, power=power, observed_n=int(table["n"].max()))
        if len(spread)
        else None
    )
    return table, figure


TOPIC = "06-compare-architectures"
exercise(
    "sign-flip-p",
    TOPIC,
    "Exact two-sided sign-flip p-value of the five toy differences?",
    lambda: exact_sign_flip_p(),
    "of the 32 sign patterns, count those whose |mean| is at least the observed 0.10",
)
exercise(
    "mdd-10",
    TOPIC,
    "Minimum detectable difference with 10 questions when the paired differences have SD 0.2 (α 0.05, power 0.8)?",
    lambda: minimum_detectable_difference(0.2, 10),
    "about (t_0.975,9 + t_0.8,9) × 0.2 / √10",
    tolerance=0.005,
)
exercise(
    "questions-for-005",
    TOPIC,
    "How many questions to detect a difference of 0.05 at SD 0.2?",
    lambda: questions_needed(0.05, 0.2),
    "about ((1.96 + 0.84) × 0.2 / 0.05)² plus a little for the t",
    tolerance=0.5,
)
