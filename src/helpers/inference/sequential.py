"""Anytime-valid confidence sequences for paired differences, and when a comparison is settled.

A confidence sequence (CS) is an interval for each t = 1, 2, ... that holds the true mean at *every*
t at once with probability >= 1 - α (Howard, Ramdas, McAuliffe & Sekhon, "Time-uniform,
nonparametric, nonasymptotic confidence sequences", Ann. Statist. 49, 2021): a run may look after
every question and stop when it likes, and a difference it declares is still wrong with
probability <= α. A fixed-n interval checked after every question is not: peeking inflates its
error (benchmarks/sequential_decisions.py measures both).

    from helpers.inference.sequential import confidence_sequence, settle
    low, high = confidence_sequence(differences, alpha=0.05)      # arrays: the CS after each question
    settle(values, order, alpha=0.05)                             # every pair against the leader

The CS is the betting one of Waudby-Smith & Ramdas ("Estimating means of bounded random variables by
betting", JRSS-B 86, 2024): for a candidate mean m of D in [-1, 1], the capital of constant bets
K_t(m) = (1/2J) Σ_j [Π_i (1 + λ_j⁺(m)(D_i - m)) + Π_i (1 - λ_j⁻(m)(D_i - m))], with
λ_j⁺(m) = u_j / (1 + m) and λ_j⁻(m) = u_j / (1 - m) (so no factor can go negative), is a nonnegative
martingale when E[D] = m; by Ville's inequality it ever reaches 1/α with probability <= α. The CS
at t is the m whose capital has never reached 1/α (the running intersection). Averaging constant
bets is their "diversified Kelly" (dKelly, §5.6); `adaptive` adds their predictable plug-in bet
(aGRAPA), which adapts to the differences' spread (a mean of test martingales is one). The default,
the plug-in bet and one constant bet of u = 0.5, decided fastest among the mixtures tried: 0.93 of
the fixed design's questions on a 0/1 metric with a difference of 0.3, where the constant bet
is best (benchmarks/sequential_decisions.py), and on nDCG differences, where the plug-in bet is
(rerank against bm25 on MaternaQA-es's test half: decided at 111 questions, not within 154 with
the constant bet alone).
"""

from __future__ import annotations

import itertools
from dataclasses import asdict, dataclass

import numpy as np

GRID = np.linspace(-0.995, 0.995, 399)  # candidate means of a difference in [-1, 1], step 0.005
DECIDED, EQUIVALENT, OPEN = "decided", "practically equal", "not decided"


def _adaptive_log_capital(d: np.ndarray, grid: np.ndarray, c: float = 0.75, side: str = "both") -> np.ndarray:
    """log capital of the predictable plug-in bet of Waudby-Smith & Ramdas (2024, aGRAPA, §B.2):
    λ_t(m) = (μ̂ - m) / (σ̂² + (μ̂ - m)²), from the differences before t, truncated to
    [-c / (1 - m), c / (1 + m)]; μ̂ and σ̂² shrunk towards 0 and 1/4 by one pseudo-observation. It
    adapts to the differences' spread, where constant bets suit a 0/1 metric's. side "up" bets only
    that the mean lies above m (λ >= 0), "down" only below (λ <= 0): the one-sided tests."""
    t = np.arange(1, len(d) + 1)
    mean = np.concatenate([[0.0], np.cumsum(d) / (t + 1)])[:-1]  # μ̂ before each difference
    centred = np.cumsum((d - mean) ** 2)
    var = np.concatenate([[0.25], (0.25 + centred) / (t + 1)])[:-1]
    gap = mean[:, None] - grid[None, :]
    lowest = np.zeros_like(grid) if side == "up" else -c / (1 - grid)
    highest = np.zeros_like(grid) if side == "down" else c / (1 + grid)
    lam = np.clip(gap / (var[:, None] + gap**2), lowest[None, :], highest[None, :])
    return np.cumsum(np.log1p(lam * (d[:, None] - grid[None, :])), axis=0)


def _log_capital(d: np.ndarray, grid: np.ndarray, bets, adaptive: bool = True, side: str = "both") -> np.ndarray:
    """log K_t(m): (t, len(grid)) for differences d (t,) in [-1, 1]: the mean of the capitals of
    each constant bet up and down and, with `adaptive`, of the plug-in bet (a mean of test
    martingales is one). side "up" or "down": that side's bets alone (a one-sided test of m)."""
    x = d[:, None] - grid[None, :]  # D_i - m
    terms = [_adaptive_log_capital(d, grid, side=side)] if adaptive else []
    for u in bets:
        if side != "down":
            terms.append(np.cumsum(np.log1p(u / (1 + grid)[None, :] * x), axis=0))
        if side != "up":
            terms.append(np.cumsum(np.log1p(-u / (1 - grid)[None, :] * x), axis=0))
    stacked = np.stack(terms)
    top = stacked.max(axis=0)
    return top + np.log(np.exp(stacked - top).mean(axis=0))


def confidence_sequence(
    differences,
    *,
    alpha: float = 0.05,
    bets=(0.5,),
    adaptive: bool = True,
    grid: np.ndarray = GRID,
    one_sided: bool = False,
):
    """(low, high): arrays of length t, the (1 - α) betting CS for the mean of paired differences
    in [-1, 1] after each of them (module docstring). NaN differences are not allowed: a question a
    pair has no score for is left out before.

    one_sided: `low` is the (1 - α) lower confidence sequence alone (the bets that the mean lies
    above m: all the capital on one side, θ = 1 in Waudby-Smith & Ramdas's hedged capital
    θK⁺ + (1 - θ)K⁻, `theta` in their confseq library; the two-sided CS takes θ = 1/2) and `high`
    the (1 - α) upper one; each end holds with probability >= 1 - α, the two together >= 1 - 2α.
    For a claim that needs one end only (`eliminate`)."""
    d = np.asarray(differences, dtype=float)
    if d.ndim != 1 or np.isnan(d).any():
        raise ValueError("differences must be a 1-D array without NaN")
    if ((d < -1) | (d > 1)).any():
        raise ValueError(f"differences must lie in [-1, 1] (a metric in [0, 1]); got {d.min()}..{d.max()}")
    if not 0 < alpha < 1 or not all(0 < u < 1 for u in bets):
        raise ValueError(f"alpha and every bet must be in (0, 1); got {alpha}, {list(bets)}")
    if len(d) == 0:
        return np.array([]), np.array([])

    def kept(side: str) -> np.ndarray:  # the candidates m never rejected so far (running intersection)
        return ~np.maximum.accumulate(_log_capital(d, grid, bets, adaptive, side) >= np.log(1 / alpha), axis=0)

    below, above = (kept("up"), kept("down")) if one_sided else (kept("both"),) * 2
    low = np.where(below.any(1), grid[np.argmax(below, axis=1)], np.nan)
    high = np.where(above.any(1), grid[len(grid) - 1 - np.argmax(above[:, ::-1], axis=1)], np.nan)
    # every candidate rejected (a CS is empty only with probability <= α): the last point estimate
    empty = np.isnan(low) | np.isnan(high)
    if empty.any():
        running = np.cumsum(d) / np.arange(1, len(d) + 1)
        low[empty] = high[empty] = running[empty]
    return low, high


def first_rejection(differences, *, alpha: float = 0.05, bets=(0.5,), adaptive: bool = True, m: float = 0.0):
    """The first t (1-based) at which the confidence sequence leaves out m (0: "the two differ"),
    None if it never does: the capital at m alone, which is what deciding needs (the whole sequence
    costs a grid of candidates)."""
    d = np.asarray(differences, dtype=float)
    hits = np.flatnonzero(_log_capital(d, np.array([m]), bets, adaptive)[:, 0] >= np.log(1 / alpha))
    return int(hits[0]) + 1 if len(hits) else None


@dataclass(frozen=True)
class Pair:
    better: str  # the leader: the architecture with the higher mean so far
    other: str
    n: int  # questions both have a value for
    mean_diff: float  # better - other
    low: float  # the CS of better - other at n
    high: float
    status: str  # DECIDED, EQUIVALENT or OPEN

    def as_dict(self) -> dict:
        return asdict(self)


def settle(
    values: dict[str, dict[str, float]],
    order: list[str],
    *,
    alpha: float = 0.05,
    margin: float = 0.0,
    bets=(0.5,),
    adaptive: bool = True,
) -> list[Pair]:
    """Every architecture against the leader, on the questions of `order` (the run's question
    order) that both have a value for. values: {architecture: {qid: value in [0, 1]}}.

    α is split over all K(K-1)/2 pairs (Bonferroni), so that the leader may be chosen from the data
    at any time: every pair's CS holds at once, at all times, with probability >= 1 - α.
    A pair is DECIDED when its CS excludes 0, EQUIVALENT when it lies inside ±margin (margin > 0),
    else OPEN."""
    architectures = list(values)
    if len(architectures) < 2:
        raise ValueError(f"a decision needs at least 2 architectures, got {architectures}")
    per_pair = alpha / (len(architectures) * (len(architectures) - 1) / 2)
    leader, _, others = _against_leader(values, architectures, order, per_pair, bets, adaptive)
    pairs = []
    for other, n, mean_diff, lo, hi in others:
        if n == 0:
            status = OPEN
        elif lo > 0 or hi < 0:
            status = DECIDED
        elif margin > 0 and -margin <= lo and hi <= margin:
            status = EQUIVALENT
        else:
            status = OPEN
        pairs.append(Pair(leader, other, n, mean_diff, lo, hi, status))
    return pairs


def _against_leader(
    values, names: list[str], order, alpha: float, bets, adaptive: bool, scale: float = 1.0, one_sided: bool = False
):
    """(leader, means, [(other, n, mean of leader - other, CS low, CS high)]): the name of highest
    mean (ties: the first) and each other's CS at `alpha` on the questions of `order` both have (none:
    n 0, the whole range). Differences lie in [-scale, scale]: the CS is of difference / scale.
    one_sided: each end its own one-sided CS at `alpha` (confidence_sequence)."""
    means = {
        a: float(np.mean([values[a][q] for q in order if q in values[a]])) if values[a] else -np.inf for a in names
    }
    leader = max(names, key=lambda a: (means[a], -names.index(a)))
    others = []
    for other in (a for a in names if a != leader):
        shared = [q for q in order if q in values[leader] and q in values[other]]
        d = np.array([values[leader][q] - values[other][q] for q in shared], dtype=float)
        if len(d) == 0:
            others.append((other, 0, np.nan, -scale, scale))
            continue
        low, high = confidence_sequence(d / scale, alpha=alpha, bets=bets, adaptive=adaptive, one_sided=one_sided)
        others.append((other, len(d), float(d.mean()), float(low[-1]) * scale, float(high[-1]) * scale))
    return leader, means, others


def all_settled(pairs: list[Pair]) -> bool:
    return all(p.status != OPEN for p in pairs)


def pairs_of(architectures) -> list[tuple[str, str]]:
    return list(itertools.combinations(architectures, 2))


@dataclass(frozen=True)
class Arm:
    """One arm of a search after the questions so far: its mean, and the CS of the leader minus it."""

    name: str
    n: int  # questions it was evaluated on
    mean: float
    low: float  # the CS of leader - this arm (the leader's own: 0, 0)
    high: float
    status: str  # "leader", "eliminated", "open"


def eliminate(
    values: dict[str, dict[str, float]],
    alive: list[str],
    *,
    delta: float = 0.05,
    epsilon: float = 0.0,
    bets=(0.5,),
    adaptive: bool = True,
    scale: float = 1.0,
) -> tuple[list[Arm], bool]:
    """One round of successive elimination with anytime-valid confidence sequences (Even-Dar,
    Mannor & Mansour, JMLR 7, 2006, with the betting CS of this module in place of Hoeffding's
    bounds): the arms still `alive`, their values {arm: {qid: value in [0, 1]}} so far (paired
    by question). The leader is the alive arm of highest mean; an arm whose CS of leader - arm lies
    above 0 is eliminated (it is worse than the leader); the search is done when one arm is left or
    every other alive arm's CS lies above -epsilon (the leader is within epsilon of each).

    δ is split over the K - 1 pairs (best arm, other arm) of the K arms ever alive (Bonferroni), not
    over all K(K-1)/2 pairs: the guarantee needs only those, and of each only one end: the lower
    one-sided CS of other - best (`confidence_sequence(one_sided=True)`, all of δ / (K - 1) on that
    side, where a two-sided CS gives it half). Let E be the event that each of these K - 1 lower
    bounds holds at every look (P(E) >= 1 - δ). On E the best arm is never eliminated: that takes a
    leader whose lower bound of leader - best lies above 0, and leader - best <= 0. On E a declared
    tie holds: the best arm is alive, so either it is the leader or the lower bound of leader - best
    lies above -epsilon and holds. Pairs without the best arm may fail; they can drop a worse arm or
    keep one alive, neither of which breaks the claim. An arm's `high` (shown, never used to decide)
    is the upper one-sided CS at the same level. Who the best arm is need not be known, only fixed. With
    probability >= 1 - δ the best arm is never eliminated and the chosen one is within epsilon of
    it (simulated: benchmarks/search_guarantee.py). `scale`: paired differences lie in [-scale,
    scale] (1 for values in [0, 1]; `audit_scale(rate)` for `audited` values). Returns (arms, done)."""
    k = len(values)
    per_pair = delta / max(1, k - 1)
    order = list(dict.fromkeys(q for a in alive for q in values[a]))  # the questions, as they came
    leader, means, others = _against_leader(values, alive, order, per_pair, bets, adaptive, scale, one_sided=True)
    arms = [Arm(leader, len(values[leader]), means[leader], 0.0, 0.0, "leader")]
    done = True
    for other, n, _, lo, hi in others:
        status = "eliminated" if n and lo > 0 else "open"
        done = done and (status == "eliminated" or (n > 0 and lo >= -epsilon))
        arms.append(Arm(other, len(values[other]), means[other], lo, hi, status))
    return arms, done


def audited(judge: float, label: float | None, rate: float) -> float:
    """A question's value from a judge's score in [0, 1] and, on the questions a person labels, the
    label: judge + (label - judge) / rate. When each question is labelled with probability `rate`,
    drawn independently of everything else (Bernoulli sampling, known rate), its mean is the
    labels' mean whatever the judge's bias: the inverse-probability-weighted (Horvitz-Thompson)
    correction of active statistical inference (Zrnic & Candès, ICML 2024, with a constant rate; PPI,
    Angelopoulos et al., Science 2023, is the same correction with the labelled set fixed). Each
    value is one bounded observation, so the betting confidence sequences apply, on the wider range
    [1 - 1/rate, 1/rate] (`audit_scale`): valid with any judge, narrower the better it tracks people."""
    if not 0 < rate <= 1:
        raise ValueError(f"rate must be in (0, 1]; got {rate}")
    return judge if label is None else judge + (label - judge) / rate


def audit_scale(rate: float) -> float:
    """The half-width of the range of a difference of two `audited` values: 2 / rate - 1."""
    return 2 / rate - 1


def active_rate(judge: float, rate: float, floor: float) -> float:
    """The probability of asking a person to label an answer the judge scored `judge` in [0, 1]:
    `rate` where the judge is least sure (0.5), down to `floor` where it is sure (0 or 1), in
    proportion to sqrt(judge (1 - judge)) in between. For a calibrated judge that is the standard
    deviation of label - judge, and labelling in proportion to it is the variance-optimal rule of
    active statistical inference (Zrnic & Candès, ICML 2024, their optimal sampling rule
    pi(x) ~ sqrt(E[(Y - f(X))^2 | X])); the floor keeps every answer's chance of a label at least
    `floor`, so the audited values stay within `audit_scale(floor)` and unbiased whatever the
    judge (the rate depends on the judge's score only, never on the label)."""
    if not 0 < floor <= rate <= 1:
        raise ValueError(f"need 0 < floor <= rate <= 1; got floor {floor}, rate {rate}")
    return floor + (rate - floor) * 2 * float(np.sqrt(max(0.0, judge * (1 - judge))))
