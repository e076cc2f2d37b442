"""Statistics, defined once for the whole workbench: AUROC, a bootstrap interval of any statistic
(a mean, or a statistic of paired arrays such as an AUROC), a paired permutation test against a
baseline with Holm's correction, and the per-architecture tables built from them.

    from helpers.inference.classical import auroc, bootstrap_ci
    auroc([1, 0, 1], [0.9, 0.2, 0.4])                         # 1.0
    bootstrap_ci(values)                                      # (mean, low, high)
    bootstrap_ci(labels, scores, statistic=auroc)             # (AUROC, low, high), rows resampled together
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from scipy import stats

# Resampled rows held in memory at once by bootstrap_ci (resamples x rows), about 16 MB of floats.
_BATCH_CELLS = 2_000_000
# Below this many samples a summary gives no interval: a bootstrap of 1-4 values has (nearly) zero
# width and would read as certainty; such a value is shown as a point with its n (issue 26)
MIN_INTERVAL_N = 5


def rmse(predicted, gold, axis: int = -1):
    """Root mean squared error, sqrt(mean((predicted - gold)²)), in the scores' own units. 1-D
    inputs: pairs with a NaN are dropped (RAGBench's evaluation.py: "Ignore Nulls in predictions"),
    NaN when none is left. N-D inputs (used by bootstrap_ci): one RMSE per slice along `axis`."""
    p, g = np.asarray(predicted, dtype=float), np.asarray(gold, dtype=float)
    if p.ndim == 1:
        keep = ~(np.isnan(p) | np.isnan(g))
        return float(np.sqrt(np.mean((p[keep] - g[keep]) ** 2))) if keep.any() else math.nan
    return np.sqrt(np.mean((p - g) ** 2, axis=axis))


def auroc(labels, scores, *, axis: int = -1):
    """Area under the ROC curve: the probability that a random positive scores above a random
    negative, ties counting 1/2 (the Mann-Whitney U statistic over n_pos n_neg; Hanley & McNeil
    1982), equal to sklearn.metrics.roc_auc_score.

    labels: 1 / True is the positive class, 0 / False the negative one (anything else raises);
    scores: higher means more positive (pass -score or 1 - score for the other direction).
    1-D inputs: pairs with a NaN are dropped and a float is returned; NaN when a class is missing.
    N-D inputs (used by bootstrap_ci): one AUROC per slice along `axis`, NaN for a slice with one
    class or a NaN."""
    y = np.asarray(labels, dtype=float)
    s = np.asarray(scores, dtype=float)
    if y.shape != s.shape:
        raise ValueError(f"labels and scores differ in shape: {y.shape} vs {s.shape}")
    if y.ndim == 1:
        keep = ~(np.isnan(y) | np.isnan(s))
        y, s = y[keep], s[keep]
    finite = y[~np.isnan(y)]
    if not np.isin(finite, (0.0, 1.0)).all():
        raise ValueError(f"labels must be 0/1 or False/True; got {sorted(set(finite.tolist()))[:5]}")
    y, s = np.moveaxis(y, axis, -1), np.moveaxis(s, axis, -1)
    positive = y == 1
    n_pos = positive.sum(axis=-1)
    n_neg = (y == 0).sum(axis=-1)
    ranks = stats.rankdata(s, axis=-1, nan_policy="propagate")  # mid-ranks for ties
    u = np.where(positive, ranks, 0.0).sum(axis=-1) - n_pos * (n_pos + 1) / 2
    with np.errstate(divide="ignore", invalid="ignore"):
        area = np.where((n_pos > 0) & (n_neg > 0) & ~np.isnan(y).any(axis=-1), u / (n_pos * n_neg), np.nan)
    return float(area) if area.ndim == 0 else area


def cohen_kappa(a, b, axis: int = -1):
    """Cohen's kappa of two 0/1 label arrays (sklearn.metrics.cohen_kappa_score for binary labels),
    vectorised over `axis` so that bootstrap_ci can resample it."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    observed = (a == b).mean(axis=axis)
    pa, pb = a.mean(axis=axis), b.mean(axis=axis)
    expected = pa * pb + (1 - pa) * (1 - pb)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(expected < 1, (observed - expected) / (1 - expected), np.nan)


def bootstrap_ci(
    *arrays, statistic=np.mean, confidence: float = 0.95, n_resamples: int = 10_000, seed: int = 0
) -> tuple[float, float, float]:
    """(estimate, low, high): `statistic` of the arrays and its percentile-bootstrap interval
    (Efron & Tibshirani 1993, ch. 13), resampling rows; several arrays are paired (row i of each is
    resampled together, as labels and scores for an AUROC).

    statistic: called as statistic(*arrays, axis=-1) on 1-D arrays for the estimate and on
        (resamples, rows) arrays for the resamples (np.mean, np.median and auroc work as they are).
    Rows with a NaN in any array are dropped. No rows, or an undefined estimate (an AUROC with one
    class): (nan, nan, nan). One row or constant values: the interval is the estimate.
    Written with numpy rather than scipy.stats.bootstrap so that resamples on which the statistic
    is undefined (an AUROC resample holding one class) can be dropped instead of making the whole
    interval NaN; the interval is then conditional on both classes being present."""
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    if not arrays:
        raise ValueError("bootstrap_ci needs at least one array")
    data = [np.asarray(a, dtype=float) for a in arrays]
    if any(d.ndim != 1 for d in data) or len({len(d) for d in data}) > 1:
        raise ValueError(f"arrays must be 1-D and of one length; shapes: {[d.shape for d in data]}")
    keep = ~np.any([np.isnan(d) for d in data], axis=0)
    data = [d[keep] for d in data]
    n = len(data[0])
    if n == 0:
        return (math.nan, math.nan, math.nan)
    estimate = float(statistic(*data, axis=-1))
    if math.isnan(estimate):
        return (math.nan, math.nan, math.nan)
    rng = np.random.default_rng(seed)
    batch = max(1, _BATCH_CELLS // n)
    resampled = []
    for start in range(0, n_resamples, batch):
        rows = rng.integers(0, n, size=(min(batch, n_resamples - start), n))
        resampled.append(np.asarray(statistic(*(d[rows] for d in data), axis=-1), dtype=float))
    values = np.concatenate(resampled)
    values = values[~np.isnan(values)]
    if values.size == 0:
        return (estimate, math.nan, math.nan)
    alpha = (1 - confidence) / 2
    low, high = np.quantile(values, [alpha, 1 - alpha])
    return (estimate, float(low), float(high))


def paired_permutation_test(a, b, *, n_resamples: int = 10_000, seed: int = 0) -> float:
    """Two-sided p-value of mean(a - b) = 0 on paired samples, by sign-flipping the differences
    (scipy.stats.permutation_test, permutation_type='samples'). Pairs with a NaN are dropped."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    keep = ~(np.isnan(a) | np.isnan(b))
    a, b = a[keep], b[keep]
    if len(a) < 2 or np.allclose(a, b):
        return 1.0
    res = stats.permutation_test(
        (a, b),
        lambda x, y, axis: np.mean(x - y, axis=axis),
        permutation_type="samples",
        n_resamples=n_resamples,
        alternative="two-sided",
        random_state=np.random.default_rng(seed),
        vectorized=True,  # the same permutations and p-value, 5-7 times faster (one call per batch)
    )
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


def summarize(
    scores: pd.DataFrame,
    *,
    by=("architecture", "metric"),
    confidence: float = 0.95,
    n_resamples: int = 10_000,
    seed: int = 0,
) -> pd.DataFrame:
    """Mean and bootstrap interval per group of a long table with a `value` column; `n` scored
    samples (NaN interval when n < MIN_INTERVAL_N), `nan` unscored ones."""
    rows = []
    for key, group in scores.groupby(list(by), sort=True):
        mean, low, high = bootstrap_ci(group["value"], confidence=confidence, n_resamples=n_resamples, seed=seed)
        if group["value"].notna().sum() < MIN_INTERVAL_N:
            low = high = math.nan
        rows.append(
            {
                **dict(zip(by, key)),
                "mean": mean,
                "ci_low": low,
                "ci_high": high,
                "n": int(group["value"].notna().sum()),
                "nan": int(group["value"].isna().sum()),
            }
        )
    return pd.DataFrame(rows)


def compare_to_baseline(
    scores: pd.DataFrame, baseline: str, *, alpha: float = 0.05, n_resamples: int = 10_000, seed: int = 0
) -> pd.DataFrame:
    """Paired comparison of every architecture with `baseline` on each metric, over the
    questions both answered; p-values Holm-corrected across all comparisons of the table. A
    metric the baseline has no score for (e.g. a judge that scored other architectures only, or
    whose every baseline score is NaN) is left out; no score of the baseline at all is an error."""
    present = set(scores.dropna(subset=["value"])["architecture"])
    if baseline not in present:
        raise ValueError(f"baseline architecture {baseline!r} has no scores; present: {sorted(present)}")
    rows = []
    for metric, by_metric in scores.groupby("metric"):
        wide = by_metric.pivot_table(index="qid", columns="architecture", values="value", aggfunc="mean")
        if baseline not in wide:
            continue
        for architecture in wide.columns:
            if architecture == baseline:
                continue
            a, b = wide[architecture].to_numpy(), wide[baseline].to_numpy()
            diff = a - b
            rows.append(
                {
                    "metric": metric,
                    "architecture": architecture,
                    "baseline": baseline,
                    "mean_diff": float(np.nanmean(diff)) if np.isfinite(diff).any() else np.nan,
                    "n_pairs": int(np.isfinite(diff).sum()),
                    "p_value": paired_permutation_test(a, b, n_resamples=n_resamples, seed=seed),
                }
            )
    table = pd.DataFrame(rows)
    if table.empty:
        return table
    table["p_holm"] = holm(table["p_value"])
    table["significant"] = table["p_holm"] < alpha
    return table


def paired_power(difference: float, sd_diff: float, n: int, *, alpha: float = 0.05) -> float:
    """Power of the two-sided paired t-test at level `alpha` to detect a true mean difference
    `difference` with n pairs whose differences have standard deviation `sd_diff`: P(|T| > t_crit)
    with T noncentral t, df n - 1, noncentrality difference·√n / sd (Cohen 1988, ch. 2)."""
    if n < 2:
        raise ValueError(f"a paired test needs at least 2 pairs, got n={n}")
    if sd_diff <= 0:
        return 1.0 if difference != 0 else alpha
    df, nc = n - 1, abs(difference) * math.sqrt(n) / sd_diff
    critical = stats.t.ppf(1 - alpha / 2, df)
    power = float(stats.nct.sf(critical, df, nc) + stats.nct.cdf(-critical, df, nc))
    if math.isnan(power):  # scipy's nct is NaN in parts of its range (e.g. df 1): T = (Z + nc) / √(V/df), V ~ χ²_df
        from scipy.integrate import quad

        def given_v(v):
            scale = critical * math.sqrt(v / df)
            return (stats.norm.cdf(nc - scale) + stats.norm.cdf(-scale - nc)) * stats.chi2.pdf(v, df)

        power = float(quad(given_v, 0, np.inf, limit=200)[0])
    return power


def minimum_detectable_difference(sd_diff: float, n: int, *, alpha: float = 0.05, power: float = 0.8) -> float:
    """The smallest true mean paired difference that a two-sided paired t-test at level `alpha`
    detects with probability `power`, given n pairs (questions) whose differences have standard
    deviation `sd_diff` (the observed one, e.g.). Solved exactly on the noncentral t; close to
    (t_{1-α/2} + t_{power}) · sd / √n."""
    if not 0 < power < 1 or not 0 < alpha < 1:
        raise ValueError(f"alpha and power must be in (0, 1), got {alpha}, {power}")
    if sd_diff <= 0:
        return 0.0
    from scipy.optimize import brentq

    df = n - 1  # bracket: twice the usual approximation, where the noncentral t is well behaved
    high = 2 * (stats.t.ppf(1 - alpha / 2, df) + stats.t.ppf(power, df)) * sd_diff / math.sqrt(n)
    while paired_power(high, sd_diff, n, alpha=alpha) < power:
        high *= 2
    return float(brentq(lambda d: paired_power(d, sd_diff, n, alpha=alpha) - power, 0.0, high, xtol=1e-9))


def questions_needed(
    difference: float, sd_diff: float, *, alpha: float = 0.05, power: float = 0.8, max_n: int = 1_000_000
) -> int:
    """The fewest pairs (questions) for which the paired t-test detects `difference` with
    probability `power` (power grows with n, so a bisection over n)."""
    if difference == 0:
        raise ValueError("a difference of 0 cannot be detected by any number of questions")
    if sd_diff <= 0:
        return 2
    low, high = 2, 2
    while paired_power(difference, sd_diff, high, alpha=alpha) < power:
        low, high = high, high * 2
        if high > max_n:
            raise ValueError(f"more than {max_n} questions needed for a difference of {difference}")
    while low < high:
        middle = (low + high) // 2
        if paired_power(difference, sd_diff, middle, alpha=alpha) >= power:
            high = middle
        else:
            low = middle + 1
    return high


def settle(
    diff,
    p_holm: float,
    *,
    alpha: float = 0.05,
    margin: float,
    confidence: float = 0.95,
    n_resamples: int = 10_000,
    seed: int = 0,
    power: float = 0.8,
) -> dict:
    """One pair's decision at a fixed number of questions, from its paired differences `diff`
    (one architecture minus the other, per question) and the Holm-corrected p-value of their
    permutation test; `margin` the smallest difference that matters (a config's decisions.margin):

        tied         the `confidence` bootstrap interval of the mean difference lies within
                     [-margin, margin] (both ends): no difference that matters is left (an
                     equivalence reading, as TOST's with the interval in place of its two tests);
                     with margin 0, only an exact tie (every difference 0)
        decided      otherwise, p_holm < alpha
        not decided  otherwise; `needed`: the questions a paired t-test of `power` needs to detect
                     a difference of `margin` at the differences' spread (questions_needed), the
                     smallest difference that matters, not the one seen by chance now

    Returns {status, mean, low, high, n, needed} (needed None unless not decided, or when margin
    is 0)."""
    diff = np.asarray(diff, dtype=float)
    diff = diff[~np.isnan(diff)]
    mean, low, high = bootstrap_ci(diff, confidence=confidence, n_resamples=n_resamples, seed=seed)
    result = {"mean": mean, "low": low, "high": high, "n": len(diff), "needed": None}
    if len(diff) and -margin <= low and high <= margin:
        return result | {"status": "tied"}
    if p_holm < alpha:
        return result | {"status": "decided"}
    sd = float(np.std(diff, ddof=1)) if len(diff) > 1 else math.nan
    if margin > 0 and sd == sd:
        try:
            result["needed"] = questions_needed(margin, sd, alpha=alpha, power=power)
        except ValueError:
            pass
    return result | {"status": "not decided"}


def detectable_differences(
    scores: pd.DataFrame, baseline: str, *, alpha: float = 0.05, power: float = 0.8
) -> pd.DataFrame:
    """Per metric and architecture against `baseline`, on the questions both have: the observed
    mean paired difference, the SD of the differences, the minimum detectable difference at these
    n questions, and how many questions the observed difference would need."""
    rows = []
    for metric, by_metric in scores.dropna(subset=["value"]).groupby("metric"):
        wide = by_metric.pivot_table(index="qid", columns="architecture", values="value", aggfunc="mean")
        if baseline not in wide:
            continue
        for architecture in (c for c in wide.columns if c != baseline):
            diff = (wide[architecture] - wide[baseline]).dropna().to_numpy()
            if len(diff) < 2:
                continue
            sd, mean = float(np.std(diff, ddof=1)), float(np.mean(diff))
            try:
                needed = questions_needed(mean, sd, alpha=alpha, power=power) if mean else None
            except ValueError:
                needed = None
            rows.append(
                {
                    "metric": metric,
                    "architecture": architecture,
                    "baseline": baseline,
                    "n": len(diff),
                    "mean_diff": mean,
                    "sd_diff": sd,
                    "mdd": minimum_detectable_difference(sd, len(diff), alpha=alpha, power=power),
                    "questions_needed": needed,
                }
            )
    return pd.DataFrame(rows)


def mean_text(mean: float, low: float, high: float, n: int | None = None, digits: int = 3) -> str:
    """'0.850 [0.800, 0.900]'; without an interval (n < MIN_INTERVAL_N) '0.500 (n = 1)'; 'NaN'."""
    if mean is None or (isinstance(mean, float) and math.isnan(mean)):
        return "NaN"
    if low is None or high is None or math.isnan(low) or math.isnan(high):
        return f"{mean:.{digits}f}" + (f" (n = {n})" if n is not None else "")
    return f"{mean:.{digits}f} [{low:.{digits}f}, {high:.{digits}f}]"
