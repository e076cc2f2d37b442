"""helpers.inference.ppi against ppi-python (the authors' library) and against hand-computed values."""

import math

import numpy as np
import ppi_py
import pytest
from scipy import stats

from helpers.inference.ppi import labels_only, paired_difference, power_tuning, prediction_powered, three_estimates

Y = np.array([1, 0, 1, 1], dtype=float)
Y6 = np.array([1, 0, 1, 1, 0, 1], dtype=float)
F = np.array([0.9, 0.2, 0.6, 0.8])
FU = np.array([0.7, 0.1, 0.5, 0.9, 0.3])


def _example(seed=0, n=30, big_n=300):
    rng = np.random.default_rng(seed)
    y_all = (rng.random(n + big_n) < 0.4).astype(float)
    f_all = 0.15 + 0.4 + 0.8 * (y_all - 0.4) + 0.3 * rng.standard_normal(n + big_n)
    return y_all[:n], f_all[:n], f_all[n:]


def test_original_ppi_by_hand():
    # PPI with λ = 1 (Angelopoulos et al. 2023, Algorithm 1): mean(f~) + mean(Y - f)
    estimate = prediction_powered(Y, F, FU, lam=1, small_sample=False)
    assert estimate.estimate == pytest.approx(0.5 + 0.125)
    se = math.sqrt(np.var(FU) / 5 + np.var(Y - F) / 4)  # ppi_py's ddof 0
    z = stats.norm.ppf(0.975)
    assert (estimate.low, estimate.high) == pytest.approx((0.625 - z * se, 0.625 + z * se))
    assert (estimate.n_labels, estimate.n_unlabelled) == (4, 5)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_clt_interval_is_ppi_py_with_its_own_power_tuning(seed):
    y, f, fu = _example(seed)
    ours = prediction_powered(y, f, fu, confidence=0.9, small_sample=False)
    low, high = ppi_py.ppi_mean_ci(y, f, fu, alpha=0.1)  # λ tuned by the library itself
    point = ppi_py.ppi_mean_pointestimate(y, f, fu)
    assert (ours.low, ours.high) == pytest.approx((float(low[0]), float(high[0])), abs=1e-12)
    assert ours.estimate == pytest.approx(float(np.ravel(point)[0]), abs=1e-12)


def test_power_tuning_is_ppi_py_lambda():
    y, f, fu = _example(3)
    lam = power_tuning(y, f, fu)
    # the library's point estimate with λ = None equals ours with our λ: θ(λ) is linear in λ
    assert ppi_py.ppi_mean_pointestimate(y, f, fu, lam=lam) == pytest.approx(ppi_py.ppi_mean_pointestimate(y, f, fu))
    assert 0 < lam < 1


def test_small_sample_interval_is_welch_t():
    y, f, fu = _example(4, n=12, big_n=40)
    lam = power_tuning(y, f, fu)
    estimate = prediction_powered(y, f, fu)
    # the tuned λ costs the rectifier one degree of freedom: n - 2
    a, b = lam**2 * np.var(fu, ddof=1) / 40, max(np.var(y - lam * f, ddof=2), 1 / 13) / 12
    df = (a + b) ** 2 / (a**2 / 39 + b**2 / 10)
    half = stats.t.ppf(0.975, df) * math.sqrt(a + b)
    assert estimate.estimate == pytest.approx(lam * fu.mean() + (y - lam * f).mean())
    assert estimate.high - estimate.estimate == pytest.approx(half)
    # wider than the CLT interval it corrects
    assert estimate.width > prediction_powered(y, f, fu, small_sample=False).width


def test_labels_only_is_students_t_and_ppi_py_clt():
    low, high = stats.t.interval(0.95, 5, loc=Y6.mean(), scale=stats.sem(Y6))
    assert (labels_only(Y6).low, labels_only(Y6).high) == pytest.approx((low, high))
    clt = ppi_py.classical_mean_ci(Y6, alpha=0.05)
    assert (labels_only(Y6, small_sample=False).low, labels_only(Y6, small_sample=False).high) == pytest.approx(clt)


def test_few_or_agreeing_labels():
    # under 5 labels: a point, no interval
    four = labels_only(Y)
    assert four.estimate == 0.75 and np.isnan(four.low) and np.isnan(prediction_powered(Y, F, FU).high)
    # 5 agreeing labels: the variance floor 1 / (n + 1), not a zero-width interval
    zeros = labels_only(np.zeros(5))
    assert zeros.high == pytest.approx(stats.t.ppf(0.975, 4) * np.sqrt(1 / 6 / 5))
    assert zeros.high == pytest.approx(0.507, abs=1e-3)  # Clopper-Pearson's upper bound for 0 of 5: 0.522


def test_useless_judge_falls_back_to_labels():
    constant = prediction_powered(Y6, np.full(6, 0.3), np.full(5, 0.3))
    assert (constant.estimate, constant.low, constant.high) == pytest.approx(
        (labels_only(Y6).estimate, labels_only(Y6).low, labels_only(Y6).high)
    )


def test_three_estimates_leave_out_unscored_items():
    labels = np.array([1, 0, np.nan, 1, np.nan, np.nan, 1])
    scores = np.array([0.9, 0.2, 0.4, np.nan, 0.8, 0.1, 0.7])
    by_method = {e.method: e for e in three_estimates(labels, scores)}
    assert by_method["labels"].estimate == pytest.approx(2 / 3)  # the unscored label is left out
    assert by_method["judge"].estimate == pytest.approx(np.nanmean(scores))
    assert (by_method["ppi"].n_labels, by_method["ppi"].n_unlabelled) == (3, 3)
    assert not by_method["judge"].valid and by_method["ppi"].valid


def test_paired_difference_counts_a_question_labelled_when_both_answers_are():
    la = np.array([1, 1, np.nan, 0, 1])
    lb = np.array([0, np.nan, np.nan, 0, 0])
    sa = np.array([0.9, 0.8, 0.7, 0.3, 0.6])
    sb = np.array([0.2, 0.5, 0.4, 0.3, 0.1])
    labels, judge, ppi = paired_difference(la, sa, lb, sb)
    assert labels.estimate == pytest.approx(2 / 3) and labels.n_labels == 3
    assert judge.estimate == pytest.approx(np.mean(sa - sb))
    assert ppi.n_unlabelled == 2


def test_too_few_labels_is_an_error():
    with pytest.raises(ValueError, match="at least 2 labelled items"):
        three_estimates([1, np.nan, np.nan], [0.5, 0.4, 0.3])
