import numpy as np
import pandas as pd
import pytest

from helpers.stats import bootstrap_ci, compare_to_baseline, holm, paired_permutation_test, summarize


def _long(values_by_arch):
    return pd.DataFrame([{"architecture": a, "metric": "faithfulness", "qid": f"q{i}", "value": v}
                         for a, values in values_by_arch.items() for i, v in enumerate(values)])


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
