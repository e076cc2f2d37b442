import math

import numpy as np
import pandas as pd
import pytest

from helpers.inference.classical import (
    auroc,
    bootstrap_ci,
    compare_to_baseline,
    holm,
    paired_permutation_test,
    summarize,
)


def _long(values_by_arch):
    return pd.DataFrame(
        [
            {"architecture": a, "metric": "faithfulness", "qid": f"q{i}", "value": v}
            for a, values in values_by_arch.items()
            for i, v in enumerate(values)
        ]
    )


def test_identical_columns_no_difference():
    rng = np.random.default_rng(1)
    x = rng.uniform(0, 1, 10)
    table = compare_to_baseline(_long({"bm25": x, "dense": x.copy()}), "bm25")
    assert table.loc[0, "mean_diff"] == 0 and table.loc[0, "p_value"] == 1.0 and not table.loc[0, "significant"]


def test_constant_shift_is_significant():
    rng = np.random.default_rng(2)
    x = rng.uniform(0, 0.5, 10)
    table = compare_to_baseline(_long({"bm25": x, "hybrid": x + 0.3, "dense": x + rng.normal(0, 0.01, 10)}), "bm25")
    hybrid = table.set_index("architecture").loc["hybrid"]
    assert hybrid["mean_diff"] == pytest.approx(0.3) and hybrid["p_holm"] < 0.01 and hybrid["significant"]
    assert not table.set_index("architecture").loc["dense", "significant"]


def test_bootstrap_interval_contains_mean_and_shrinks():
    rng = np.random.default_rng(3)
    small = bootstrap_ci(rng.normal(0.5, 0.2, 10))
    large = bootstrap_ci(rng.normal(0.5, 0.2, 1000))
    assert small[1] < small[0] < small[2] and large[1] < large[0] < large[2]
    assert (large[2] - large[1]) < (small[2] - small[1])
    assert bootstrap_ci([np.nan, 0.4, np.nan]) == (0.4, 0.4, 0.4)
    assert np.isnan(bootstrap_ci([np.nan])[0])


def test_holm_known_values():
    # Holm 1979: sorted p (0.01, 0.04, 0.03) -> 3*0.01, max(0.03, 2*0.03), max(0.06, 1*0.04)
    assert holm([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])
    assert holm([0.5, 0.9]) == pytest.approx([1.0, 1.0])


def test_summarize_counts_nans():
    frame = _long({"bm25": [0.2, np.nan, 0.4]})
    row = summarize(frame).iloc[0]
    assert row["n"] == 2 and row["nan"] == 1 and row["mean"] == pytest.approx(0.3)


def test_permutation_p_value_range_and_errors():
    assert 0 < paired_permutation_test([1, 2, 3, 4], [0, 1, 2, 3.5]) <= 1
    with pytest.raises(ValueError, match="baseline architecture 'nope'"):
        compare_to_baseline(_long({"bm25": [0.1, 0.2]}), "nope")


# ---- auroc


def test_auroc_known_values():
    assert auroc([0, 0, 1, 1], [0.1, 0.2, 0.8, 0.9]) == 1.0  # perfect
    assert auroc([0, 0, 1, 1], [0.9, 0.8, 0.2, 0.1]) == 0.0  # inverted
    # positives 0.8, 0.4 vs negatives 0.6, 0.2: 3 of the 4 pairs ordered -> 0.75
    assert auroc([True, False, True, False], [0.8, 0.6, 0.4, 0.2]) == 0.75
    assert auroc([1, 0, 1, 0], [0.5, 0.5, 0.5, 0.5]) == 0.5  # all tied
    assert auroc([1, 0, 1, 0], [0.7, 0.7, 0.9, 0.1]) == 0.875  # one tied pair counts 1/2
    assert math.isnan(auroc([1, 1, 1], [0.1, 0.5, 0.9]))  # one class
    assert math.isnan(auroc([], []))
    # NaN pairs dropped: same as without the row
    assert auroc([1, 0, 1, 0], [0.8, np.nan, 0.4, 0.2]) == auroc([1, 1, 0], [0.8, 0.4, 0.2]) == 1.0


def test_auroc_inverted_score_and_sklearn_agreement():
    from sklearn.metrics import roc_auc_score

    rng = np.random.default_rng(4)
    y = rng.random(300) < 0.2
    s = np.round(rng.random(300) + 0.3 * y, 1)  # rounded: many ties
    value = auroc(y, s)
    assert value == pytest.approx(roc_auc_score(y, s), abs=1e-12)
    assert auroc(y, -s) == pytest.approx(1 - value, abs=1e-12)
    assert auroc(~y, s) == pytest.approx(1 - value, abs=1e-12)
    batch = auroc(np.vstack([y, y, np.ones(300)]), np.vstack([s, -s, s]))  # one AUROC per row
    assert batch[:2] == pytest.approx([value, 1 - value]) and math.isnan(batch[2])


def test_auroc_rejects_non_binary_labels_and_shape_mismatch():
    with pytest.raises(ValueError, match="labels must be 0/1"):
        auroc([0, 1, 2], [0.1, 0.2, 0.3])
    with pytest.raises(ValueError, match="differ in shape"):
        auroc([0, 1], [0.1, 0.2, 0.3])


# ---- bootstrap_ci


def test_bootstrap_mean_matches_normal_theory():
    # n = 400 draws of N(0, 1): the 95% interval of the mean is close to mean +- 1.96 sd / sqrt(n)
    x = np.random.default_rng(5).normal(0, 1, 400)
    mean, low, high = bootstrap_ci(x, n_resamples=4000)
    half = 1.96 * x.std(ddof=1) / np.sqrt(len(x))
    assert mean == pytest.approx(x.mean())
    assert low == pytest.approx(mean - half, abs=0.15 * half) and high == pytest.approx(mean + half, abs=0.15 * half)
    _, low90, high90 = bootstrap_ci(x, confidence=0.90, n_resamples=4000)
    assert low < low90 < mean < high90 < high  # a lower level, a narrower interval
    assert bootstrap_ci(x, n_resamples=500, seed=7) == bootstrap_ci(x, n_resamples=500, seed=7)


def test_bootstrap_degenerate_inputs():
    estimate, low, high = bootstrap_ci([0.3, 0.3, 0.3])  # constant: no spread
    assert low == estimate == high == pytest.approx(0.3)
    assert all(math.isnan(v) for v in bootstrap_ci([]))
    assert all(math.isnan(v) for v in bootstrap_ci([1, 1, 1], [0.2, 0.5, 0.9], statistic=auroc))  # one class
    with pytest.raises(ValueError, match="one length"):
        bootstrap_ci([1, 0], [0.1, 0.2, 0.3], statistic=auroc)
    with pytest.raises(ValueError, match="confidence"):
        bootstrap_ci([0.1, 0.2], confidence=95)


def test_bootstrap_auroc_is_paired_and_skips_one_class_resamples():
    assert bootstrap_ci([0, 0, 1, 1], [0.1, 0.2, 0.8, 0.9], statistic=auroc) == (1.0, 1.0, 1.0)
    # 2 positives in 12 rows: (10/12)^12, about 1 resample in 9, holds no positive (AUROC undefined);
    # positive 0.9 outranks all 10 negatives, positive 0.3 three of them: 13/20
    y = np.array([1, 1] + [0] * 10)
    s = np.array([0.9, 0.3] + list(np.linspace(0.1, 0.8, 10)))
    estimate, low, high = bootstrap_ci(y, s, statistic=auroc, n_resamples=2000)
    assert estimate == auroc(y, s) == pytest.approx(0.65)
    assert 0 <= low < estimate < high <= 1
    # a statistic of paired differences: resampling keeps the pairs, so a constant shift is exact
    a = np.random.default_rng(6).random(30)
    assert bootstrap_ci(a + 0.25, a, statistic=lambda u, v, axis: np.mean(u - v, axis=axis)) == pytest.approx(
        (0.25, 0.25, 0.25)
    )


# ---- the run's confidence level reaches the report and the figure


def test_analysis_uses_the_configured_confidence(tmp_path):
    import yaml

    from helpers.experiment import analysis, figures_run, run_summary

    rng = np.random.default_rng(8)
    scores = pd.DataFrame(
        [
            {"architecture": a, "qid": f"q{i}", "judge": "ragas", "metric": "faithfulness", "value": float(v)}
            for a in ("bm25", "dense")
            for i, v in enumerate(rng.random(12))
        ]
    )
    (tmp_path / "run").mkdir()
    scores.to_parquet(tmp_path / "run" / "scores.parquet")
    config = {"statistics": {"confidence": 0.9, "n_resamples": 500}}
    (tmp_path / "run" / "config.yaml").write_text(yaml.safe_dump(config))
    text = run_summary.report("run", results_dir=tmp_path)
    assert "mean [90% CI]" in text and "95%" not in text
    config = analysis.run_config("run", results_dir=tmp_path)  # typed: the defaults fill the rest
    assert config.statistics.confidence == 0.9 and config.statistics.alpha == 0.05
    table = analysis.summary(scores, config)
    bm25 = scores[scores.architecture == "bm25"]["value"]
    assert tuple(table.iloc[0][["mean", "ci_low", "ci_high"]]) == bootstrap_ci(bm25, confidence=0.9, n_resamples=500)
    figure = figures_run.metric_bars(table, confidence=analysis.statistics_settings(config).confidence)
    assert figure._suptitle.get_text() == "Mean per architecture with 90% bootstrap intervals"
    assert analysis.statistics_settings(None).confidence == 0.95  # StatisticsConfig's default


def test_compare_to_baseline_leaves_out_a_metric_the_baseline_lacks():
    import pandas as pd

    from helpers.inference.classical import compare_to_baseline

    rows = [("bm25", "m1", q, 0.1 * i) for i, q in enumerate("abcd")]
    rows += [("hybrid", "m1", q, 0.1 * i + 0.2) for i, q in enumerate("abcd")]
    rows += [("hybrid", "m2", q, 0.5) for q in "abcd"]  # m2: the baseline was never scored
    scores = pd.DataFrame(rows, columns=["architecture", "metric", "qid", "value"])
    table = compare_to_baseline(scores, "bm25", n_resamples=200)
    assert list(table["metric"]) == ["m1"] and table["mean_diff"].iloc[0] == pytest.approx(0.2)
    with pytest.raises(ValueError, match="baseline architecture 'dense' has no scores"):
        compare_to_baseline(scores, "dense", n_resamples=200)


def test_questions_needed_matches_cohens_table_and_power_inverts():
    from helpers.inference.classical import minimum_detectable_difference, paired_power, questions_needed

    assert questions_needed(0.5, 1.0) == 34  # Cohen 1988, d = 0.5, two-sided 0.05, power 0.8
    assert questions_needed(0.8, 1.0) == 15
    mdd = minimum_detectable_difference(0.2, 10)
    assert paired_power(mdd, 0.2, 10) == pytest.approx(0.8, abs=1e-6)
    assert minimum_detectable_difference(0.2, 40) < mdd / 1.9  # about 1/sqrt(n)
    tiny = minimum_detectable_difference(0.1, 2)  # two questions: scipy's nct is NaN there
    assert paired_power(tiny, 0.1, 2) == pytest.approx(0.8, abs=1e-4) and tiny > 1.0  # beyond any [0, 1] score
    with pytest.raises(ValueError, match="at least 2 pairs"):
        paired_power(0.1, 0.2, 1)
    with pytest.raises(ValueError, match="difference of 0"):
        questions_needed(0.0, 0.2)


def test_minimum_detectable_difference_has_its_power_in_simulation():
    from scipy.stats import ttest_rel

    from helpers.inference.classical import minimum_detectable_difference

    rng = np.random.default_rng(0)
    n, sd = 10, 0.15
    mdd = minimum_detectable_difference(sd, n)
    hits = 0
    for _ in range(3000):
        baseline = rng.uniform(0, 1, n)
        other = baseline + mdd + rng.normal(0, sd, n)
        hits += ttest_rel(other, baseline).pvalue < 0.05
    assert hits / 3000 == pytest.approx(0.8, abs=0.025)


def test_detectable_differences_per_metric():
    from helpers.inference.classical import detectable_differences

    base = np.linspace(0.3, 0.7, 10)
    diff = 0.05 + 0.15 * np.array([1, -1] * 5)  # mean 0.05, SD 0.158
    rows = [
        {"architecture": arch, "qid": f"q{i}", "metric": "m", "value": value}
        for i in range(10)
        for arch, value in (("bm25", base[i]), ("rerank", base[i] + diff[i]))
    ]
    row = detectable_differences(pd.DataFrame(rows), "bm25").iloc[0]
    assert row["architecture"] == "rerank" and row["n"] == 10
    assert row["mean_diff"] == pytest.approx(0.05) and row["sd_diff"] == pytest.approx(0.1581, abs=1e-3)
    assert row["mdd"] == pytest.approx(0.1575, abs=2e-3)  # 10 questions cannot separate 0.05 here
    assert 70 <= row["questions_needed"] <= 85
