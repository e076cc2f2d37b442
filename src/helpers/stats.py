"""Statistics for comparing architectures on few questions: bootstrap intervals of means, and
paired tests against a baseline with Holm's correction."""
from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import stats


def bootstrap_ci(values, *, confidence: float = 0.95, n_resamples: int = 10_000, seed: int = 0) -> tuple[float, float, float]:
    """(mean, low, high): percentile bootstrap of the mean (scipy.stats.bootstrap); NaNs dropped.
    One value: the interval is that value; none: NaNs."""
    x = np.asarray(values, dtype=float)
    x = x[~np.isnan(x)]
    if len(x) == 0:
        return (np.nan, np.nan, np.nan)
    if len(x) == 1 or np.all(x == x[0]):
        return (float(x.mean()), float(x.mean()), float(x.mean()))
    res = stats.bootstrap((x,), np.mean, confidence_level=confidence, n_resamples=n_resamples,
                          method="percentile", random_state=np.random.default_rng(seed))
    return (float(x.mean()), float(res.confidence_interval.low), float(res.confidence_interval.high))


def paired_permutation_test(a, b, *, n_resamples: int = 10_000, seed: int = 0) -> float:
    """Two-sided p-value of mean(a - b) = 0 on paired samples, by sign-flipping the differences
    (scipy.stats.permutation_test, permutation_type='samples'). Pairs with a NaN are dropped."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    keep = ~(np.isnan(a) | np.isnan(b))
    a, b = a[keep], b[keep]
    if len(a) < 2 or np.allclose(a, b):
        return 1.0
    res = stats.permutation_test((a, b), lambda x, y: np.mean(x - y), permutation_type="samples",
                                 n_resamples=n_resamples, alternative="two-sided",
                                 random_state=np.random.default_rng(seed))
    return float(res.pvalue)


def holm(pvalues) -> np.ndarray:
    """Holm-Bonferroni adjusted p-values (Holm 1979), monotone; written here because scipy only
    ships Benjamini-Hochberg and statsmodels is not a dependency."""
    p = np.asarray(pvalues, dtype=float)
    m = len(p)
    order = np.argsort(p)
    adjusted = np.empty(m)
    running = 0.0
    for rank, idx in enumerate(order):
        running = max(running, (m - rank) * p[idx])
        adjusted[idx] = min(1.0, running)
    return adjusted


def summarize(scores: pd.DataFrame, *, by=("architecture", "metric"), confidence: float = 0.95,
              n_resamples: int = 10_000, seed: int = 0) -> pd.DataFrame:
    """Mean and bootstrap interval per group of a long table with a `value` column."""
    rows = []
    for key, group in scores.groupby(list(by), sort=True):
        mean, low, high = bootstrap_ci(group["value"], confidence=confidence, n_resamples=n_resamples, seed=seed)
        rows.append({**dict(zip(by, key)), "mean": mean, "ci_low": low, "ci_high": high,
                     "n": int(group["value"].notna().sum()), "nan": int(group["value"].isna().sum())})
    return pd.DataFrame(rows)


def compare_to_baseline(scores: pd.DataFrame, baseline: str, *, alpha: float = 0.05,
                        n_resamples: int = 10_000, seed: int = 0) -> pd.DataFrame:
    """Paired comparison of every architecture with `baseline` on each metric, over the
    questions both answered; p-values Holm-corrected across all comparisons of the table."""
    rows = []
    for metric, by_metric in scores.groupby("metric"):
        wide = by_metric.pivot_table(index="qid", columns="architecture", values="value", aggfunc="mean")
        if baseline not in wide:
            raise ValueError(f"baseline architecture {baseline!r} has no scores; present: {sorted(wide.columns)}")
        for architecture in wide.columns:
            if architecture == baseline:
                continue
            a, b = wide[architecture].to_numpy(), wide[baseline].to_numpy()
            diff = a - b
            rows.append({"metric": metric, "architecture": architecture, "baseline": baseline,
                         "mean_diff": float(np.nanmean(diff)) if np.isfinite(diff).any() else np.nan,
                         "n_pairs": int(np.isfinite(diff).sum()),
                         "p_value": paired_permutation_test(a, b, n_resamples=n_resamples, seed=seed)})
    table = pd.DataFrame(rows)
    if table.empty:
        return table
    table["p_holm"] = holm(table["p_value"])
    table["significant"] = table["p_holm"] < alpha
    return table
