"""helpers.inference.sequential: the betting confidence sequence on known inputs, and when pairs are settled;
the --until-decided budget."""

import numpy as np
import pytest

from helpers.errors import UserError
from helpers.experiment.until_decided import Budget, metric_values, question_order
from helpers.inference.sequential import DECIDED, EQUIVALENT, OPEN, confidence_sequence, first_rejection, settle


def test_zero_leaves_the_sequence_when_the_capital_reaches_one_over_alpha():
    # all differences +1, one bet u = 0.5, m = 0: K_t = (1.5^t + 0.5^t) / 2, first >= 20 at t = 10
    low, high = confidence_sequence(np.ones(12), alpha=0.05, adaptive=False)
    assert low[8] <= 0 < low[9]
    assert (high == 0.995).all()  # nothing above the mean can be rejected


def test_the_sequence_is_nested_and_holds_no_difference():
    d = np.tile([1.0, -1.0, 0.0], 20)
    low, high = confidence_sequence(d, alpha=0.05)
    assert (np.diff(low) >= 0).all() and (np.diff(high) <= 0).all()  # running intersection
    assert (low[-1], high[-1]) == pytest.approx((-0.295, 0.32))  # the grid's step is 0.005


def test_first_rejection_is_where_the_sequence_leaves_out_zero():
    rng = np.random.default_rng(3)
    d = (rng.random(120) < 0.7).astype(float) - (rng.random(120) < 0.3).astype(float)
    low, high = confidence_sequence(d, alpha=0.05)
    first = next(t for t in range(120) if low[t] > 0 or high[t] < 0) + 1
    assert first_rejection(d, alpha=0.05) == first
    assert first_rejection(np.zeros(50), alpha=0.05) is None


def test_a_one_sided_bound_puts_all_the_capital_on_its_side():
    # 20 differences of 0.5, one bet u = 0.5, no plug-in bet. One-sided, the capital at m is
    # (1 + u (0.5 - m) / (1 + m))^20 alone; it stays below 1/α = 20 from m = (r - 1 - u/2) / (1 - u - r),
    # r = 20^(1/20): 0.1336, so the lower bound is the grid's next point, 0.135. Two-sided, that capital
    # is averaged with the down bet's (about 0 there), so it must reach 40: the bound is lower, 0.07.
    d = np.full(20, 0.5)
    r = 20 ** (1 / 20)
    assert (r - 1 - 0.25) / (1 - 0.5 - r) == pytest.approx(0.13363, abs=1e-5)
    low, high = confidence_sequence(d, alpha=0.05, adaptive=False, one_sided=True)
    assert low[-1] == pytest.approx(0.135)
    two_low, two_high = confidence_sequence(d, alpha=0.05, adaptive=False)
    assert two_low[-1] == pytest.approx(0.07)
    # the upper end mirrors it: differences of -0.5 give -0.135
    assert confidence_sequence(-d, alpha=0.05, adaptive=False, one_sided=True)[1][-1] == pytest.approx(-0.135)


def test_more_bets_average_their_capital():
    # with bets 0.25 and 0.75 the first exclusion of 0 comes at the mixture's crossing, not either bet's own
    d = np.ones(20)
    capital = [(1.25**t + 0.75**t + 1.75**t + 0.25**t) / 4 for t in range(1, 21)]
    first = next(t for t, k in enumerate(capital, 1) if k >= 20)
    low, _ = confidence_sequence(d, alpha=0.05, bets=(0.25, 0.75), adaptive=False)
    assert low[first - 2] <= 0 < low[first - 1]


def test_out_of_range_differences_are_an_error():
    with pytest.raises(ValueError, match=r"differences must lie in \[-1, 1\]"):
        confidence_sequence([0.5, 2.0])


def test_settle_splits_alpha_over_all_pairs_and_names_the_leader():
    order = [f"q{i}" for i in range(40)]
    values = {
        "good": {q: 1.0 for q in order},
        "bad": {q: 0.0 for q in order},
        "same": {q: 1.0 for q in order},
    }
    pairs = {p.other: p for p in settle(values, order, alpha=0.05, adaptive=False)}
    assert {p.better for p in pairs.values()} == {"good"}  # ties go to the first architecture
    assert pairs["bad"].status == DECIDED and pairs["bad"].mean_diff == 1.0
    assert pairs["same"].status == OPEN
    # alpha / 3 per pair: (1.5^t + 0.5^t) / 2 >= 60 first at t = 12 (43.2 at 11, 64.9 at 12)
    assert settle(values, order[:11], alpha=0.05, adaptive=False)[0].status == OPEN
    assert settle(values, order[:12], alpha=0.05, adaptive=False)[0].status == DECIDED


def test_a_pair_inside_the_margin_is_practically_equal():
    order = [f"q{i}" for i in range(400)]
    values = {"a": {q: 0.5 for q in order}, "b": {q: 0.5 for q in order}}
    (pair,) = settle(values, order, alpha=0.05, margin=0.1)
    assert pair.status == EQUIVALENT and -0.1 <= pair.low < 0 < pair.high <= 0.1


@pytest.mark.parametrize(
    "text, kind, amount",
    [("30m", "minutes", 30), ("90s", "minutes", 1.5), ("2h", "minutes", 120), ("50k tokens", "tokens", 50_000),
     ("1200 tokens", "tokens", 1200), ("$2", "dollars", 2), ("0.5 usd", "dollars", 0.5)],
)  # fmt: skip
def test_budgets(text, kind, amount):
    assert Budget.parse(text) == Budget(kind, amount)


def test_a_budget_without_unit_is_an_error():
    with pytest.raises(UserError, match="say its unit"):
        Budget.parse("30")
    with pytest.raises(UserError, match="give minutes"):
        Budget.parse("lots")


def test_budget_spent_counts_answers_tokens_and_dollars():
    answers = [{"input_tokens": 100, "output_tokens": 20, "cost_usd": 0.01}, {"input_tokens": 50, "output_tokens": 5}]
    assert Budget("tokens", 1).spent(answers, 0) == 175
    assert Budget("dollars", 1).spent(answers, 0) == pytest.approx(0.01)
    assert Budget("minutes", 1).spent(answers, 90) == 1.5


def test_question_order_is_seeded():
    queries = {f"q{i}": "" for i in range(10)}
    assert question_order(queries, 0) == question_order(dict(reversed(queries.items())), 0)
    assert question_order(queries, 0) != question_order(queries, 1)


def test_a_decision_metric_outside_zero_one_is_an_error():
    import pandas as pd

    scores = pd.DataFrame(
        {"judge": ["system"] * 2, "metric": ["latency_s"] * 2, "architecture": ["a", "b"], "qid": ["q1", "q1"],
         "value": [3.2, 1.0]}
    )  # fmt: skip
    with pytest.raises(UserError, match=r"decisions.metric system/latency_s: values outside \[0, 1\]"):
        metric_values(scores, "system/latency_s", ["a", "b"])


def _correctness(values: dict):
    import pandas as pd

    return pd.DataFrame(
        [
            {"architecture": a, "llm": "local", "judge": "correctness", "qid": f"q{i}", "metric": "correctness"}
            | {"value": v}
            for a, row in values.items()
            for i, v in enumerate(row)
        ]
    )


def test_the_headline_says_per_pair_decided_or_how_many_questions_a_margin_needs():
    from helpers.experiment.analysis import decided_lines
    from helpers.experiment.config import ExperimentConfig
    from helpers.inference.classical import bootstrap_ci, questions_needed

    values = {"good": [1.0] * 12, "bad": [0.0] * 12, "close": [1.0, 1.0, 1.0, 0.0] * 3}
    lines = decided_lines(_correctness(values), ExperimentConfig(architectures=["bm25", "dense"]))
    assert lines[0] == (
        "decision on correctness/correctness (alpha 0.05, Holm; a difference within ±0.05 does not matter: "
        "decisions.margin; 95% bootstrap interval of each difference):"
    )
    assert lines[1] == "  no best: good has the highest mean (1.000), not yet told apart from close"
    assert lines[2].startswith("  bad -1.000 [-1.000, -1.000] against good over 12 questions: decided (p = ")
    diff = [0.0, 0.0, 0.0, -1.0] * 3
    _, low, high = bootstrap_ci(diff, n_resamples=10_000)
    # the questions to tell the margin (0.05) apart, not the difference seen now (-0.25)
    needed = questions_needed(0.05, float(np.std(diff, ddof=1)))
    assert lines[3] == (
        f"  close -0.250 [{low:+.3f}, {high:+.3f}] against good over 12 questions: not decided (p = 0.25): "
        f"about {needed} questions needed to tell a difference of 0.05"
    )


def test_no_best_on_an_exact_or_a_settled_tie():
    from helpers.experiment.analysis import decided_lines
    from helpers.experiment.config import ExperimentConfig
    from helpers.inference.classical import settle

    same = [1.0, 0.0, 1.0, 1.0, 0.0, 1.0, 1.0]
    lines = decided_lines(_correctness({"bm25": same, "rerank": same}), ExperimentConfig(architectures=["bm25"]))
    assert lines[1:] == [
        "  no best: bm25 (0.714) tied with rerank (0.714)",
        "  rerank +0.000 [+0.000, +0.000] against bm25 over 7 questions: tied (the interval lies within ±0.05)",
    ]
    decided = decided_lines(_correctness({"good": [1.0] * 12, "bad": [0.0] * 12}), ExperimentConfig())
    assert decided[1] == "  best: good (1.000), decided against every other"
    # a difference of 0.01 on every question: significant, and still within the margin, so tied
    tiny = settle(np.full(40, -0.01), 0.0001, margin=0.05)
    assert (tiny["status"], tiny["needed"]) == ("tied", None)
    assert settle(np.full(40, -0.01), 0.0001, margin=0.0)["status"] == "decided"
    # margin 0: only an exact tie is one, and no number of questions is asked for
    open_ = settle([0.1, -0.1, 0.2, 0.0], 0.9, margin=0.0)
    assert (open_["status"], open_["needed"]) == ("not decided", None)
