"""Prediction-powered inference (PPI): a judge's scores of every answer, made unbiased by a person's
labels of a few, give an estimate with a valid confidence interval, narrower than the labels alone
give whenever the judge tracks the labels.

    from helpers.inference.ppi import three_estimates
    three_estimates(labels, scores)        # labels: NaN where nobody labelled; scores: the judge's, every item
    # [Estimate(method='labels', ...), Estimate(method='judge', ...), Estimate(method='ppi', ...)]

The estimators (each an `Estimate`: the point, its interval, how many labelled and unlabelled items):
- "labels": the mean of the n labels with the classical CLT interval (ppi_py.classical_mean_ci);
- "judge": the mean of the judge's scores of all items with the same CLT interval. It estimates what
  the judge says, not what people say, so its interval is *biased: not valid* for the labels' mean;
- "ppi": the judge's mean over the N unlabelled items, corrected by the labelled items' mean
  residual (label - judge): θ = λ·mean(f(X̃)) + mean(Y - λ·f(X)), with interval
  θ ± z_{1-α/2} · sqrt(λ²·σ²_f / N + σ²_{Y-λf} / n) (Angelopoulos, Bates, Fannjiang, Jordan & Zrnic,
  "Prediction-powered inference", Science 382, 2023, Algorithm 1 (λ = 1); the power-tuned λ of PPI++,
  Angelopoulos, Duchi & Zrnic, arXiv:2311.01453, 2023, eq. (5), clipped to [0, 1], so that a judge
  that does not track the labels falls back to the labels' own interval). Computed by ppi-python
  (`ppi_py.ppi_mean_ci`, `ppi_mean_pointestimate`), the authors' library.

A paired difference between two architectures is the same estimators on per-question differences
(`paired_difference`): a question is labelled when both its answers are, which is why the labelling
panel proposes a question's answers together (helpers.experiment.estimates.next_to_label).

Validity assumes the labelled items are a uniform random sample of the items (PPI's i.i.d. premise):
labels chosen by the judge's own scores would need inverse-probability weights (active statistical
inference, Zrnic & Candès, ICML 2024), which a person who may stop at any point cannot supply.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np
from scipy import stats

from helpers.inference.classical import MIN_INTERVAL_N

METHODS = ("labels", "judge", "ppi")
METHOD_TEXT = {
    "labels": "labels only",
    "judge": "judge only (biased: not valid)",
    "ppi": "prediction-powered",
}
MIN_LABELS = 2  # a CLT interval needs a standard deviation: one label has none
# Below this many labels an estimate is a point without an interval: a t interval of 2-4 labels
# is either huge or, when they agree, of zero width, and would read as certainty (helpers.inference.classical)
MIN_INTERVAL_LABELS = MIN_INTERVAL_N


def variance_floor(n: int) -> float:
    """The smallest label variance a small-sample interval uses: the sample variance (ddof 1) that
    n equal labels would have with one more label a unit away, 1 / (n + 1). Without it n labels
    that agree give an interval of zero width; with it 5 agreeing 0/1 labels give [0, 0.51] around
    0 (t, 95 %), close to the exact binomial bound 0.52 (Clopper & Pearson 1934)."""
    return 1.0 / (n + 1)


@dataclass(frozen=True)
class Estimate:
    method: str  # one of METHODS
    estimate: float
    low: float
    high: float
    n_labels: int
    n_unlabelled: int

    @property
    def valid(self) -> bool:
        """Whether the interval is valid for the mean of people's labels (the judge's alone is not)."""
        return self.method != "judge"

    @property
    def width(self) -> float:
        """high - low; NaN for a point without an interval (fewer than MIN_INTERVAL_LABELS labels)."""
        return self.high - self.low

    def as_dict(self) -> dict:
        return asdict(self)


def _ppi():
    import ppi_py  # numba, statsmodels, scikit-learn: about 2 s, loaded only when an estimate is computed

    return ppi_py


def _alpha(confidence: float) -> float:
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    return 1 - confidence


def labels_only(labels, *, confidence: float = 0.95, n_unlabelled: int = 0, small_sample: bool = True) -> Estimate:
    """The labels' mean and its interval: Student's t, mean ± t_{n-1}·s/√n with s the sample SD
    (small_sample, the default), or the CLT interval mean ± z·sd/√n of ppi_py.classical_mean_ci."""
    y = np.asarray(labels, dtype=float)
    if len(y) < MIN_LABELS:
        raise ValueError(f"labels-only needs at least {MIN_LABELS} labels, got {len(y)}")
    alpha = _alpha(confidence)
    if small_sample:
        if len(y) < MIN_INTERVAL_LABELS:
            return Estimate("labels", float(y.mean()), math.nan, math.nan, len(y), n_unlabelled)
        variance = max(y.var(ddof=1), variance_floor(len(y)))
        half = stats.t.ppf(1 - alpha / 2, len(y) - 1) * math.sqrt(variance / len(y))
        low, high = y.mean() - half, y.mean() + half
    else:
        low, high = _ppi().classical_mean_ci(y, alpha=alpha)
    return Estimate("labels", float(y.mean()), float(low), float(high), len(y), n_unlabelled)


def judge_only(scores, *, confidence: float = 0.95, n_labels: int = 0) -> Estimate:
    """The judge's mean over every item and its t interval: an interval for the judge's mean, not
    for the labels' (biased: not valid). n_unlabelled counts the items nobody labelled."""
    s = np.asarray(scores, dtype=float)
    if len(s) < 2:
        raise ValueError(f"judge-only needs at least 2 scores, got {len(s)}")
    alpha = _alpha(confidence)
    half = stats.t.ppf(1 - alpha / 2, len(s) - 1) * s.std(ddof=1) / math.sqrt(len(s))
    return Estimate(
        "judge", float(s.mean()), float(s.mean() - half), float(s.mean() + half), n_labels, len(s) - n_labels
    )


def power_tuning(labels, scores_labelled, scores_unlabelled) -> float:
    """PPI++'s λ for a mean (Angelopoulos, Duchi & Zrnic 2023, eq. (5) with the identity Hessian):
    Cov(Y, f) / ((1 + n/N)·Var(f)), the covariance over the n labelled items (ddof 0, as ppi_py's
    _calc_lam_glm), the variance over all n + N scores (ddof 1), clipped to [0, 1]. Constant scores: 0."""
    y, f, fu = (np.asarray(x, dtype=float) for x in (labels, scores_labelled, scores_unlabelled))
    n, big_n = len(y), len(fu)
    var_f = np.var(np.concatenate([f, fu]), ddof=1)
    if var_f == 0:
        return 0.0
    cov = np.mean((y - y.mean()) * (f - f.mean()))
    return float(np.clip(cov / ((1 + n / big_n) * var_f), 0.0, 1.0))


def prediction_powered(
    labels,
    scores_labelled,
    scores_unlabelled,
    *,
    confidence: float = 0.95,
    lam: float | None = None,
    small_sample: bool = True,
) -> Estimate:
    """The prediction-powered mean and interval (module docstring): `labels` and `scores_labelled`
    are the n labelled items' label and judge score, `scores_unlabelled` the judge's scores of the N
    others. lam: None tunes it (PPI++, `power_tuning`); 1 is the original PPI; 0 the labels alone.

    small_sample (default): each variance with ddof 1 (the rectifier's 2 when λ is tuned: a fitted
    coefficient) and a Student t quantile with the
    Welch-Satterthwaite degrees of freedom of the two terms (Welch 1947), because with n = 20 labels
    the CLT interval undercovers (benchmarks/ppi_coverage.py: 0.91 at 95 %, labels-only 0.92); the
    rectifier's variance at least variance_floor(n); no interval under MIN_INTERVAL_LABELS labels.
    small_sample=False: ppi_py.ppi_mean_ci exactly (CLT, ddof 0). No unlabelled item: the labels'
    own estimate (nothing to impute)."""
    y = np.asarray(labels, dtype=float)
    f = np.asarray(scores_labelled, dtype=float)
    fu = np.asarray(scores_unlabelled, dtype=float)
    if len(y) != len(f):
        raise ValueError(f"labels and their scores differ in length: {len(y)} vs {len(f)}")
    if len(y) < MIN_LABELS:
        raise ValueError(f"prediction-powered inference needs at least {MIN_LABELS} labels, got {len(y)}")
    if len(fu) == 0:
        own = labels_only(y, confidence=confidence, small_sample=small_sample)
        return Estimate("ppi", own.estimate, own.low, own.high, own.n_labels, 0)
    alpha = _alpha(confidence)
    tuned = lam is None
    lam = power_tuning(y, f, fu) if lam is None else float(lam)
    if not small_sample:
        ppi_py = _ppi()
        low, high = ppi_py.ppi_mean_ci(y, f, fu, alpha=alpha, lam=lam)
        estimate = ppi_py.ppi_mean_pointestimate(y, f, fu, lam=lam)
        point, low, high = (float(np.asarray(v).ravel()[0]) for v in (estimate, low, high))
        return Estimate("ppi", point, low, high, len(y), len(fu))
    n, big_n = len(y), len(fu)
    estimate = lam * fu.mean() + (y - lam * f).mean()
    if n < MIN_INTERVAL_LABELS:
        return Estimate("ppi", float(estimate), math.nan, math.nan, n, big_n)
    imputed = lam**2 * fu.var(ddof=1) / big_n if big_n > 1 else 0.0
    # a tuned λ is a regression coefficient fitted on the same labels (PPI++ is a control-variate
    # estimator): its residuals keep n - 2 degrees of freedom, as a simple regression's do
    kept = n - 2 if tuned and lam > 0 else n - 1
    rectifier = max(np.sum(((y - lam * f) - (y - lam * f).mean()) ** 2) / kept, variance_floor(n)) / n
    total = imputed + rectifier
    if total == 0:
        return Estimate("ppi", float(estimate), float(estimate), float(estimate), n, big_n)
    df = total**2 / ((imputed**2 / (big_n - 1) if big_n > 1 else 0.0) + rectifier**2 / kept)
    half = stats.t.ppf(1 - alpha / 2, df) * math.sqrt(total)
    return Estimate("ppi", float(estimate), float(estimate - half), float(estimate + half), n, big_n)


def three_estimates(labels, scores, *, confidence: float = 0.95, lam: float | None = None) -> list[Estimate]:
    """Labels only, judge only and prediction-powered, side by side, for items whose judge score is
    `scores[i]` and whose label is `labels[i]` (NaN: not labelled). Items the judge did not score
    (NaN) are left out of all three, so that the three estimate the mean over the same items."""
    y, s = np.asarray(labels, dtype=float), np.asarray(scores, dtype=float)
    if y.shape != s.shape or y.ndim != 1:
        raise ValueError(f"labels and scores must be 1-D of one length; shapes {y.shape} and {s.shape}")
    scored = ~np.isnan(s)
    y, s = y[scored], s[scored]
    labelled = ~np.isnan(y)
    n = int(labelled.sum())
    if n < MIN_LABELS:
        raise ValueError(f"at least {MIN_LABELS} labelled items with a judge score are needed, got {n}")
    return [
        labels_only(y[labelled], confidence=confidence, n_unlabelled=int((~labelled).sum())),
        judge_only(s, confidence=confidence, n_labels=n),
        prediction_powered(y[labelled], s[labelled], s[~labelled], confidence=confidence, lam=lam),
    ]


def paired_difference(
    labels_a, scores_a, labels_b, scores_b, *, confidence: float = 0.95, lam: float | None = None
) -> list[Estimate]:
    """The three estimates of mean(a - b) over questions (row i of each array is question i): a
    question is labelled when both its answers are, scored when both are."""
    la, sa, lb, sb = (np.asarray(x, dtype=float) for x in (labels_a, scores_a, labels_b, scores_b))
    if not la.shape == sa.shape == lb.shape == sb.shape:
        raise ValueError("the four arrays of a paired difference must be of one length (one row per question)")
    return three_estimates(la - lb, sa - sb, confidence=confidence, lam=lam)
