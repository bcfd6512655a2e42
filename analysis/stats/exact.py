"""Exact intervals for payoffs on a known finite support: two points (a rate, a win/loss game) or three (win, draw,
loss; a points share of 1, 1/2, 0).

Where the game itself says a payoff takes only these values, the distribution of a sample is a binomial or a
trinomial, and a test of a candidate mean can be computed exactly instead of bounded by a betting inequality:

* **two points** ``{low, high}``: the Clopper–Pearson interval of the share of ``high`` payoffs (the exact binomial
  interval of scipy's ``binomtest``), mapped onto the range. It covers with probability at least ``1 - alpha`` at
  every n and every share.
* **three points** ``{low, mid, high}``: the two one-sided exact tests of each candidate mean ``m`` (a grid of
  ``grid`` candidates on the range), each at ``alpha / 2``, inverted. Rescaled to ``{0, c, 1}``, a sample is the
  counts ``(k0, kc, k1)``; the test orders the samples by the signed root of the empirical-likelihood ratio of the
  mean ``m`` on the three points (Owen 1988): ``T = sign(xbar - m) sqrt(2 sum_j k_j log(1 + l (v_j - m)))`` with
  ``v = (0, c, 1)`` and ``l`` solving ``sum_j k_j (v_j - m) / (1 + l (v_j - m)) = 0`` (by bisection), which orders
  samples with many draws far better than a studentized mean; its p-value is the probability, under the
  trinomial with mean ``m``, of a ``T`` at least as extreme as the one observed. Any fixed ordering gives a valid
  test; this one gives the narrowest intervals of those measured (``bench/width_results.md``). The mean
  leaves one parameter free, the share ``pc`` of middle payoffs; the p-value is the largest over the shares in a
  ``1 - gamma`` Clopper–Pearson interval of ``kc / n``, plus ``gamma`` (Berger and Boos, "P values maximised over a
  confidence set for the nuisance parameter", JASA 1994), with ``gamma = alpha / 50``: valid at every n whatever the
  true shares, and never much wider than the largest over every share. The largest is taken over
  :data:`NUISANCE_POINTS` shares spread evenly over those the mean ``m`` allows, the ones inside that interval or
  within one step of it (so never none): a grid, as the candidate means are. A candidate is kept when both p-values
  exceed ``alpha / 2``, and the interval spans the kept candidates, widened by half a grid step each side.

The three-point intervals of a sample size are computed once for every possible sample (a table of
``(n + 1) (n + 2) / 2`` intervals, cached per process: half a second of CPU at n = 30, four at n = 100, growing
with the table's size, so about ten times that at n = 300).

A rate of a run stopped by a rule that looked at its results needs an interval valid at a stopping time, which no
fixed-n interval is. :func:`mixture_rate_interval` is the anytime-valid confidence sequence of a Bernoulli share
from Robbins' beta-binomial mixture martingale (Robbins, "Statistical methods related to the law of the iterated
logarithm", Ann. Math. Stat. 1970; Howard, Ramdas, McAuliffe and Sekhon, "Time-uniform, nonparametric,
nonasymptotic confidence sequences", Ann. Stat. 2021, section 3.2): after ``n`` trials with ``S`` successes,

    ``M_n(p) = [B(a + S, b + n - S) / B(a, b)] / [p^S (1 - p)^(n - S)]``,

the likelihood of the data under a Beta(a, b) mixture of shares over their likelihood under ``p``. Under the true
share it is a nonnegative martingale starting at 1, so by Ville's inequality it reaches ``1 / alpha`` at some ``n``
with probability at most ``alpha``, and ``{p : M_n(p) < 1 / alpha}`` covers the share at every ``n`` at once (so at
any stopping time). It depends on the counts only, never on their order. ``-log M_n`` is concave in ``p`` with its
maximum at ``S / n``, where ``M_n <= 1``, so the set is an interval around ``S / n``; its ends are the roots of
``log M_n(p) = log(1 / alpha)``, found by Brent's method (0 when ``S = 0``, 1 when ``S = n``). The prior is
Jeffreys' Beta(1/2, 1/2) (:data:`MIXTURE_PRIOR`, the Krichevsky–Trofimov mixture), which keeps mass near 0 and 1:
its expected width is 1.22x Clopper–Pearson's at n = 10, 1.39–1.41x at 30, 1.54–1.59x at 100 and 1.65–1.73x at 300
whatever the share (0, 0.02, 0.1, 0.3, 0.5, 0.9), where the uniform prior's is 4% narrower at a share of 0.5 but
1.35x, 1.67x, 2.02x and 2.34x at a share of 0, the illegal-move rate of a player that never errs
(``bench/width_results.md``).
"""

from __future__ import annotations

import functools
import math

import numpy as np

__all__ = [
    "MIXTURE_PRIOR",
    "NUISANCE_POINTS",
    "binomial_intervals",
    "clopper_pearson_interval",
    "conditional_ratio_intervals",
    "mixture_log_wealth",
    "mixture_rate_interval",
    "support_counts",
    "trinomial_intervals",
    "trinomial_table",
]

NUISANCE_POINTS = 24
"""Shares of middle payoffs at which each three-point p-value is maximised."""


def binomial_intervals(successes: np.ndarray, trials: np.ndarray | int, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """The Clopper–Pearson interval of ``successes / trials`` (arrays of equal shape; ``[0, 1]`` where there are no
    trials): the beta quantiles behind scipy's exact ``binomtest`` interval."""
    from scipy.special import betaincinv  # beta.ppf itself (the same function), without importing scipy.stats

    k = np.asarray(successes, dtype=float)
    n = np.broadcast_to(np.asarray(trials, dtype=float), k.shape)
    with np.errstate(invalid="ignore"):
        low = np.where(k > 0, betaincinv(k, n - k + 1, alpha / 2), 0.0)
        high = np.where(k < n, betaincinv(k + 1, n - k, 1 - alpha / 2), 1.0)
    return np.nan_to_num(low, nan=0.0), np.nan_to_num(high, nan=1.0)


def clopper_pearson_interval(successes: int, trials: int, alpha: float = 0.05) -> tuple[float, float]:
    """The Clopper–Pearson interval of ``successes / trials`` at level ``1 - alpha`` (scipy's exact ``binomtest``
    interval, the one rates were printed with before methods had names: :func:`binomial_intervals` agrees with it to
    a part in 10^12); ``(0, 1)`` for no trials.

    Raises:
        ValueError: counts outside ``0 <= successes <= trials``.
    """
    _check_counts(successes, trials)
    if trials == 0:
        return 0.0, 1.0
    from scipy.stats import binomtest

    ci = binomtest(successes, trials).proportion_ci(confidence_level=1.0 - alpha, method="exact")
    return float(ci.low), float(ci.high)


MIXTURE_PRIOR = (0.5, 0.5)
"""The Beta(a, b) prior of :func:`mixture_rate_interval`'s mixture: Jeffreys' (module docstring)."""


def mixture_log_wealth(
    successes: np.ndarray | int,
    trials: np.ndarray | int,
    share: np.ndarray | float,
    prior: tuple[float, float] = MIXTURE_PRIOR,
) -> np.ndarray:
    """``log M_n(p)`` of the beta-binomial mixture (module docstring) for ``S = successes`` of ``n = trials`` at the
    share ``p = share`` (arrays broadcast together); ``+inf`` where the share cannot have made the counts (``p = 0``
    with a success, ``p = 1`` with a failure)."""
    from scipy.special import betaln, xlog1py, xlogy

    a, b = prior
    k = np.asarray(successes, dtype=float)
    n = np.asarray(trials, dtype=float)
    p = np.asarray(share, dtype=float)
    with np.errstate(divide="ignore"):
        likelihood = xlogy(k, p) + xlog1py(n - k, -p)
    return np.asarray(betaln(a + k, b + n - k) - betaln(a, b) - likelihood)


_SMALLEST_SHARE = 1e-300
"""The lower end of the bracket of a root: ``log M_n`` there exceeds any ``log(1 / alpha)`` in use."""


def _mixture_lower(successes: int, trials: int, alpha: float, prior: tuple[float, float]) -> float:
    """The lower end of the mixture interval: the root of ``log M_n(p) = log(1 / alpha)`` below ``S / n``."""
    if successes == 0:
        return 0.0
    from scipy.optimize import brentq
    from scipy.special import betaln

    a, b = prior
    failures = trials - successes
    constant = float(betaln(a + successes, b + failures) - betaln(a, b)) - math.log(1.0 / alpha)

    def excess(p: float) -> float:  # mixture_log_wealth - log(1 / alpha), in scalars (a root takes ~40 of them)
        return constant - successes * math.log(p) - (failures * math.log1p(-p) if failures else 0.0)

    centre = successes / trials
    if excess(_SMALLEST_SHARE) <= 0.0:  # not for any count a run can reach
        return 0.0
    return float(brentq(excess, _SMALLEST_SHARE, centre, xtol=1e-15, rtol=4 * np.finfo(float).eps, maxiter=200))


def mixture_rate_interval(
    successes: int, trials: int, alpha: float = 0.05, *, prior: tuple[float, float] = MIXTURE_PRIOR
) -> tuple[float, float]:
    """``beta-binomial-mixture/1``: the anytime-valid interval of a share after ``successes`` of ``trials``,
    ``{p : M_n(p) < 1 / alpha}`` of Robbins' beta-binomial mixture (module docstring): it covers the share at every
    number of trials at once with probability at least ``1 - alpha``, so it holds where a rule looking at the results
    decided when to stop. ``(0, 1)`` for no trials.

    Raises:
        ValueError: counts outside ``0 <= successes <= trials``, or ``alpha`` outside (0, 1).
    """
    _check_counts(successes, trials)
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    if trials == 0:
        return 0.0, 1.0
    low = _mixture_lower(successes, trials, alpha, prior)
    high = 1.0 - _mixture_lower(trials - successes, trials, alpha, (prior[1], prior[0]))  # M_n(p) of the failures
    return low, high


def _check_counts(successes: int, trials: int) -> None:
    if not 0 <= successes <= trials:
        raise ValueError(f"counts must satisfy 0 <= successes <= trials, got {successes} of {trials}")


def support_counts(x: np.ndarray, support: tuple[float, ...]) -> list[np.ndarray]:
    """Per row of ``x`` (values rescaled to ``[0, 1]``), how many values sit on each point of ``support`` (rescaled,
    ascending).

    Raises:
        ValueError: a value lies on no point of the support.
    """
    hits = [np.isclose(x, point, rtol=0.0, atol=1e-9) for point in support]
    if not np.all(np.logical_or.reduce(hits)):
        raise ValueError(f"a value lies off the declared support {support}")
    return [hit.sum(axis=1) for hit in hits]


def trinomial_intervals(
    x: np.ndarray, middle: float, alpha: float, *, grid: int = 500
) -> tuple[np.ndarray, np.ndarray]:
    """The exact three-point interval (module docstring) of every row of ``x`` (values rescaled to ``[0, 1]``, each
    0, ``middle`` or 1).

    Raises:
        ValueError: a value off the support, or ``middle`` not inside (0, 1).
    """
    if not 0.0 < middle < 1.0:
        raise ValueError(f"the middle point must lie inside the range, got {middle}")
    _, kc, k1 = support_counts(x, (0.0, middle, 1.0))
    low, high = trinomial_table(x.shape[1], round(float(middle), 12), float(alpha), grid)
    return low[k1, kc], high[k1, kc]


@functools.lru_cache(maxsize=16)
def trinomial_table(n: int, middle: float, alpha: float, grid: int) -> tuple[np.ndarray, np.ndarray]:
    """The three-point interval (module docstring) of every sample ``(k1, kc)`` of size ``n`` on ``{0, middle, 1}``:
    ``(low, high)`` arrays indexed ``[k1, kc]`` (unused where ``k1 + kc > n``), cached per process."""
    from scipy.special import gammaln

    k1, kc = (a.ravel().astype(float) for a in np.meshgrid(np.arange(n + 1), np.arange(n + 1), indexing="ij"))
    possible = k1 + kc <= n
    k1, kc = k1[possible], kc[possible]
    k0 = n - k1 - kc
    log_ways = gammaln(n + 1) - gammaln(k0 + 1) - gammaln(kc + 1) - gammaln(k1 + 1)
    mean = (middle * kc + k1) / n
    gamma = alpha / 50
    share_low, share_high = binomial_intervals(kc, n, gamma)
    candidates = (np.arange(grid) + 0.5) / grid
    kept = np.zeros((grid, k1.size), dtype=bool)
    for index, m in enumerate(candidates):
        statistic = _likelihood_root(np.stack([k0, kc, k1]), np.array([0.0, middle, 1.0]) - m, mean - m)
        below, above = _tails(statistic, (k0, kc, k1), log_ways, m, middle, (share_low, share_high))
        kept[index] = (below + gamma > alpha / 2) & (above + gamma > alpha / 2)
    full_low, full_high = np.zeros((n + 1, n + 1)), np.ones((n + 1, n + 1))
    some = kept.any(axis=0)
    first = np.argmax(kept, axis=0)
    last = grid - 1 - np.argmax(kept[::-1], axis=0)
    nearest = np.argmin(np.abs(candidates[:, None] - mean[None, :]), axis=0)  # a sample no candidate survives
    first, last = np.where(some, first, nearest), np.where(some, last, nearest)
    rows, cols = k1.astype(int), kc.astype(int)
    full_low[rows, cols] = np.clip(candidates[first] - 0.5 / grid, 0.0, 1.0)
    full_high[rows, cols] = np.clip(candidates[last] + 0.5 / grid, 0.0, 1.0)
    return full_low, full_high


def _likelihood_root(counts: np.ndarray, offsets: np.ndarray, sign: np.ndarray) -> np.ndarray:
    """The signed root of the empirical-likelihood ratio statistic of every sample (``counts``: 3 x samples) for the
    mean whose offsets from the three points are ``offsets``; ``sign``: the sample mean minus that mean."""
    lowest = -1.0 / offsets.max() if offsets.max() > 0 else -1e9  # 1 + l v stays positive on every point
    highest = -1.0 / offsets.min() if offsets.min() < 0 else 1e9
    below = np.full(counts.shape[1], lowest * (1 - 1e-12))
    above = np.full(counts.shape[1], highest * (1 - 1e-12))
    for _ in range(_BISECTIONS):
        middle = (below + above) / 2
        slope = (counts * offsets[:, None] / (1 + middle * offsets[:, None])).sum(axis=0)
        below = np.where(slope > 0, middle, below)
        above = np.where(slope > 0, above, middle)
    factors = np.maximum(1 + (below + above)[None, :] / 2 * offsets[:, None], 1e-300)
    ratio = 2.0 * (counts * np.log(factors)).sum(axis=0)
    return np.sign(sign) * np.sqrt(np.maximum(ratio, 0.0))


_BISECTIONS = 40
"""Bisection steps of the likelihood's multiplier (a part in 10^12 of its range: far finer than the ordering needs)."""


def _tails(
    statistic: np.ndarray,
    counts: tuple[np.ndarray, np.ndarray, np.ndarray],
    log_ways: np.ndarray,
    m: float,
    middle: float,
    share_bounds: tuple[np.ndarray, np.ndarray],
) -> tuple[np.ndarray, np.ndarray]:
    """For every sample, the largest probability, over the shares of middle payoffs near its confidence interval
    that a mean ``m`` allows, of a statistic at most (``below``) and at least (``above``) its own."""
    k0, kc, k1 = counts
    largest = min(m / middle, (1 - m) / (1 - middle))  # the share of middles a mean m allows
    shares = np.linspace(0.0, largest, NUISANCE_POINTS)
    ones = np.clip(m - middle * shares, 0.0, 1.0)
    zeros = np.clip(1.0 - shares - ones, 0.0, 1.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        log_p = log_ways[None, :] + _xlogy(k0, zeros) + _xlogy(kc, shares) + _xlogy(k1, ones)
    pmf = np.exp(log_p)  # shares x samples
    order = np.argsort(statistic, kind="stable")
    ranked = statistic[order]
    cumulative = np.cumsum(pmf[:, order], axis=1)
    total = cumulative[:, -1:]
    last_tie = np.searchsorted(ranked, ranked, side="right") - 1
    first_tie = np.searchsorted(ranked, ranked, side="left")
    below_sorted = cumulative[:, last_tie]
    above_sorted = total - np.where(first_tie > 0, cumulative[:, np.maximum(first_tie - 1, 0)], 0.0)
    step = largest / (NUISANCE_POINTS - 1) if largest > 0 else 0.0
    low, high = share_bounds
    near = (shares[:, None] >= low[None, :] - step) & (shares[:, None] <= high[None, :] + step)  # shares x samples
    below, above = np.empty(statistic.size), np.empty(statistic.size)
    below[order] = np.where(near[:, order], below_sorted, 0.0).max(axis=0)
    above[order] = np.where(near[:, order], above_sorted, 0.0).max(axis=0)
    return below, above


def _xlogy(k: np.ndarray, p: np.ndarray) -> np.ndarray:
    """``k log p`` for every share of ``p`` (rows) and count of ``k`` (columns), 0 where ``k`` is 0."""
    logs = np.log(p)[:, None]
    return np.where(k[None, :] > 0, k[None, :] * logs, 0.0)


def conditional_ratio_intervals(wins: np.ndarray, losses: np.ndarray, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """The exact interval of ``(p_win - p_loss) / (p_win + p_loss)`` (GTBench's NRA of a game paid ``+c / -c``,
    draws scored 0) from the counts of wins and losses: given the decisive matches ``d = wins + losses``, the wins
    are binomial with share ``q = p_win / (p_win + p_loss)`` and the ratio is ``2 q - 1``, so the Clopper–Pearson
    interval of ``q`` covers at level ``1 - alpha`` whatever ``d`` (and so over all ``d``). No decisive match:
    ``[-1, 1]``."""
    low, high = binomial_intervals(wins, np.asarray(wins) + np.asarray(losses), alpha)
    return 2.0 * low - 1.0, 2.0 * high - 1.0
