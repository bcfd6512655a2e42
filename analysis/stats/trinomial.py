"""``exact-discrete/2`` on three values: the exact interval of a win/draw/loss mean at every n, one sample at a time.

Rescaled to ``{0, c, 1}`` (loss, draw, win; a points share has ``c = 1/2``), a sample of n payoffs is the counts
``(k0, kc, k1)``, a trinomial with shares ``(p0, pc, p1)`` and mean ``m = c pc + p1``. The interval is the set of
candidate means ``m`` that two one-sided exact tests, each at ``alpha / 2``, keep:

* **the statistic** orders the samples by the signed root of the profile likelihood ratio of the mean ``m``
  (Owen's empirical likelihood on the three points, the same ordering as ``exact-discrete/1``):
  ``T = sign(xbar - m) sqrt(2 sum_j k_j log(1 + l v_j))`` with ``v = (0, c, 1) - m`` and ``l`` the root of
  ``sum_j k_j v_j / (1 + l v_j) = 0`` where ``1 + l v_j >= 0`` on every point, observed or not: a quadratic in
  ``l`` (a linear equation with two values observed; closed form, no bisection), clamped to that range (where ``m``
  lies outside the values observed, at its end: the profile likelihood then puts mass on an unobserved value). Its
  tail depends little on the draw share at n >= 100 unless nearly every match is a draw (width_results.md).
* **the nuisance** (the draw share ``pc``, free once ``m`` is fixed) is handled as Berger and Boos (JASA 1994): the
  p-value is the largest tail probability over the shares in a ``1 - gamma`` Clopper–Pearson interval ``C`` of
  ``kc / n`` that the mean ``m`` allows, plus ``gamma`` (``gamma = alpha /`` :data:`NUISANCE_SHARE`); no allowed
  share in ``C``: the p-value is ``gamma``. The largest is taken over :data:`SHARES` shares spread evenly over ``C``
  (its ends included), then over :data:`REFINE` more between the neighbours of the largest.
* **the tail probability** of each share is summed exactly, without enumerating the samples: the statistic never
  falls as a win replaces a loss (``T^2 / 2 = max_l sum_j k_j log(1 + l v_j)``, the maximum over ``l >= 0`` when
  ``xbar > m`` and over ``l <= 0`` when ``xbar < m``, and the replacement adds ``log(1 + l (1 - m)) - log(1 - l m)``,
  positive for ``l > 0`` and negative for ``l < 0``), so for each count of draws ``kc`` the tail ``T >= t_obs`` is
  ``k1 >= k1*(kc)``, found by bisection, and its probability is ``sum_kc Bin(kc; n, pc) P(Bin(n - kc, r) >= k1*)``
  with ``r = p1 / (1 - pc)``; counts of draws beyond the :data:`NEGLIGIBLE` quantiles of the shares add their whole
  mass. Statistics within :data:`TIES` of the observed one count as ties, in both tails.

**Coverage.** Let the truth be ``(m*, pc*)``. The upper test rejects ``m*`` when its p-value is at most
``alpha / 2``; that needs either ``pc* not in C`` (probability at most ``gamma``) or, with ``pc*`` in ``C``,
``P_{m*, pc*}(T >= t_obs) <= alpha / 2 - gamma`` (probability at most ``alpha / 2 - gamma``: the tail of a fixed
statistic under the true distribution is a valid p-value, and the computed tail is never smaller), so at most
``alpha / 2`` in all; the lower test the same, and the interval misses ``m*`` with probability at most ``alpha``, at
every n and every trinomial. Two steps are numerical, and measured rather than proven: the largest tail over ``C``
is a maximum over finitely many of its points (``bench/width_results.md``: within 8e-5 of 200 shares), and the ends
of the interval are found by bisection on ``m`` to :data:`TOLERANCE` and moved outward by it, then checked outward
over :data:`CHECKS` quarter standard errors (a discrete test's p-value need not be monotone in ``m``; a kept candidate
beyond the end found moves the end there).

**Cost.** One sample's interval evaluates the tails at about 30 candidate means, each a bisection over the wins of
every likely count of draws and two binomial tails per count and share: about a tenth of a second at n = 100 and
half a second at n = 2,000 on one core, cached per process by sample.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import Any

import numpy as np

from analysis.stats.exact import binomial_intervals

__all__ = [
    "CHECKS",
    "NEGLIGIBLE",
    "NUISANCE_SHARE",
    "REFINE",
    "SHARES",
    "TIES",
    "TOLERANCE",
    "mean_bounds",
    "p_values",
    "trinomial_intervals",
]

NUISANCE_SHARE = 50
"""``gamma = alpha / NUISANCE_SHARE``: the error spent on the draw share's interval (Berger–Boos)."""
SHARES = 12
"""Draw shares, evenly over the Berger–Boos interval, at which each tail probability is maximised."""
TOLERANCE = 1e-5
"""How finely (on ``[0, 1]``) the ends of the interval are found by bisection; each end is moved outward by it."""
REFINE = 9
"""Shares, evenly between the neighbours of the largest tail's share, at which each tail is looked at again."""
CHECKS = 4
"""Candidates checked beyond each end found by bisection, a quarter of a standard error apart."""
NEGLIGIBLE = 1e-15
"""The counts of draws summed one by one run from this quantile of the smallest share's binomial to the same upper
quantile of the largest's; the mass outside them (exact binomial tails) is added to each tail whole (an upper bound)."""
TIES = 1e-9
"""Statistics within this share of the observed one count as ties (in both tails): rounding never shrinks a tail."""


def trinomial_intervals(x: np.ndarray, middle: float, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """The interval (module docstring) of the mean of every row of ``x`` (values rescaled to ``[0, 1]``, each 0,
    ``middle`` or 1).

    Raises:
        ValueError: a value off the support, or ``middle`` not inside (0, 1).
    """
    from analysis.stats.exact import support_counts

    if not 0.0 < middle < 1.0:
        raise ValueError(f"the middle point must lie inside the range, got {middle}")
    _, kc, k1 = support_counts(x, (0.0, middle, 1.0))
    n = x.shape[1]
    bounds = [
        mean_bounds(n, int(c), int(w), round(float(middle), 12), float(alpha)) for c, w in zip(kc, k1, strict=True)
    ]
    return np.array([b[0] for b in bounds]), np.array([b[1] for b in bounds])


@functools.lru_cache(maxsize=65536)
def mean_bounds(n: int, kc: int, k1: int, middle: float, alpha: float) -> tuple[float, float]:
    """The interval of the mean of the sample of ``n`` payoffs with ``kc`` at ``middle`` and ``k1`` at 1 (the rest
    at 0), at level ``1 - alpha``; cached per process."""
    if n == 0:
        return 0.0, 1.0
    mean = (middle * kc + k1) / n
    share_low, share_high = (float(v[0]) for v in binomial_intervals(np.array([kc]), n, alpha / NUISANCE_SHARE))
    search = _Search(n, kc, k1, middle, alpha, (share_low, share_high))
    return search.end(mean, lower=True), search.end(mean, lower=False)


class _Search:
    """The two one-sided tests of one sample, as functions of the candidate mean."""

    def __init__(self, n: int, kc: int, k1: int, middle: float, alpha: float, shares: tuple[float, float]) -> None:
        self.n, self.kc, self.k1, self.middle, self.alpha, self.shares = n, kc, k1, middle, alpha, shares
        mean = (middle * kc + k1) / n
        second = (middle**2 * kc + k1) / n
        self.step = max(math.sqrt(max(second - mean**2, 0.25 / n) / n), 1.0 / n)  # about one standard error

    def kept(self, m: float, lower: bool) -> bool:
        """Whether the candidate mean ``m`` survives the test that bounds that side (the upper-tail test for the
        lower end)."""
        below, above = p_values(self.n, self.kc, self.k1, self.middle, m, self.alpha, self.shares, only=not lower)
        return (above if lower else below) > self.alpha / 2

    def end(self, mean: float, lower: bool) -> float:
        """The lower (or upper) end: a kept candidate and a rejected one further out (from about 1.9 and 2.1
        standard errors out), bisection between them to :data:`TOLERANCE`, then a check of :data:`CHECKS` steps of
        a quarter of a standard error beyond (a kept one there restarts the search from it)."""
        sign, edge = (-1.0, 0.0) if lower else (1.0, 1.0)
        inside = mean
        guess = min(max(mean + sign * 1.9 * self.step, 0.0), 1.0)
        if self.kept(guess, lower):
            inside = guess
        while True:
            outside, width = inside, 0.2 * self.step
            while True:  # a rejected candidate further out, or the range's end
                outside = min(max(inside + sign * width, 0.0), 1.0)
                if not self.kept(outside, lower):
                    break
                inside = outside
                if outside == edge:
                    return edge
                width *= 2.0
            while abs(outside - inside) > TOLERANCE:
                probe = (inside + outside) / 2
                if self.kept(probe, lower):
                    inside = probe
                else:
                    outside = probe
            beyond = [inside + sign * self.step * j / 4 for j in range(1, CHECKS + 1)]
            again = [m for m in beyond if 0.0 <= m <= 1.0 and self.kept(m, lower)]
            if not again:
                return min(max(inside + sign * TOLERANCE, 0.0), 1.0)
            inside = again[-1]


def p_values(
    n: int,
    kc: int,
    k1: int,
    middle: float,
    m: float,
    alpha: float,
    shares: tuple[float, float],
    *,
    only: bool | None = None,
) -> tuple[float, float]:
    """The Berger–Boos p-values (module docstring) of the sample ``(kc, k1)`` of size ``n`` against the mean ``m``:
    (lower tail, ``T <= t_obs``; upper tail, ``T >= t_obs``), each the largest tail over the allowed shares of
    ``shares`` (the ``1 - alpha / 50`` interval of ``kc / n``) plus ``alpha / 50``; ``only`` True: the lower tail only
    (the upper given as 1), False: the upper only, None: both."""
    gamma = alpha / NUISANCE_SHARE
    largest = min(m / middle, (1 - m) / (1 - middle))  # the largest draw share a mean m allows
    low, high = max(shares[0], 0.0), min(shares[1], largest)
    if high < low or not 0.0 < m < 1.0:
        observed = (middle * kc + k1) / n
        edge = (m <= 0.0 and observed <= 0.0) or (m >= 1.0 and observed >= 1.0)  # the only sample a pure mean gives
        return (1.0, 1.0) if edge else (gamma, gamma)
    pc = np.linspace(low, high, SHARES)
    likely = _quantile(NEGLIGIBLE, n, low), _upper_quantile(NEGLIGIBLE, n, high)  # the counts of draws summed singly
    every = np.arange(max(int(likely[0]) - 1, 0), min(int(likely[1]) + 1, n) + 1, dtype=float)
    observed = float(_root(np.array([float(n - kc - k1)]), np.array([float(kc)]), np.array([float(k1)]), middle, m)[0])
    slack = TIES * (1.0 + abs(observed))
    first = _first_win_count(n, every, middle, m, lambda t: t >= observed - slack)  # T >= t_obs from here on
    beyond = _first_win_count(n, every, middle, m, lambda t: t > observed + slack)  # T <= t_obs up to here
    result = [1.0, 1.0]
    for column, upper in ((0, False), (1, True)):
        if only is not None and only == upper:
            continue
        tail = _tail(n, middle, m, pc, every, first if upper else beyond, upper)
        best = int(np.argmax(tail))  # a finer look around the largest
        near = np.linspace(pc[max(best - 1, 0)], pc[min(best + 1, SHARES - 1)], REFINE)
        largest_tail = max(
            float(tail.max()), float(_tail(n, middle, m, near, every, first if upper else beyond, upper).max())
        )
        result[column] = min(largest_tail + gamma, 1.0)
    return result[0], result[1]


def _pmf(k: Any, n: Any, p: Any) -> np.ndarray:
    """The binomial pmf at whole counts ``k`` (0 outside ``0..n``), from ``scipy.special`` (``scipy.stats`` takes
    half a second to import, most of a cached rerun's summary): within a few parts in 10^12 of ``binom.pmf``."""
    from scipy.special import gammaln, xlog1py, xlogy

    k, n, p = np.asarray(k, dtype=float), np.asarray(n, dtype=float), np.asarray(p, dtype=float)
    inside = (k >= 0) & (k <= n)
    j = np.clip(k, 0, n)
    with np.errstate(invalid="ignore", divide="ignore"):
        log = gammaln(n + 1) - gammaln(j + 1) - gammaln(n - j + 1) + xlogy(j, p) + xlog1py(n - j, -p)
    return np.where(inside, np.exp(log), 0.0)


def _cdf(k: Any, n: Any, p: Any) -> np.ndarray:
    """``P(X <= k)`` of a binomial (0 below 0, 1 from ``n`` on): ``scipy.special.bdtr``."""
    from scipy.special import bdtr

    k, n = np.floor(np.asarray(k, dtype=float)), np.asarray(n, dtype=float)
    j, m = np.clip(k, 0, n).astype(np.int64), np.broadcast_to(n, np.broadcast(k, n).shape).astype(np.int64)
    return np.where(k < 0, 0.0, np.where(k >= n, 1.0, bdtr(j, m, p)))


def _sf(k: Any, n: Any, p: Any) -> np.ndarray:
    """``P(X > k)`` of a binomial (1 below 0, 0 from ``n`` on): ``scipy.special.bdtrc``."""
    from scipy.special import bdtrc

    k, n = np.floor(np.asarray(k, dtype=float)), np.asarray(n, dtype=float)
    j, m = np.clip(k, 0, n).astype(np.int64), np.broadcast_to(n, np.broadcast(k, n).shape).astype(np.int64)
    return np.where(k < 0, 1.0, np.where(k >= n, 0.0, bdtrc(j, m, p)))


def _quantile(q: float, n: int, p: float) -> int:
    """``binom.ppf``: the fewest ``k`` with ``P(X <= k) >= q``."""
    return int(np.argmax(_cdf(np.arange(n + 1), n, p) >= q)) if q > 0 else 0


def _upper_quantile(q: float, n: int, p: float) -> int:
    """``binom.isf``: the fewest ``k`` with ``P(X > k) <= q``."""
    return int(np.argmax(_sf(np.arange(n + 1), n, p) <= q))


def _tail(
    n: int, middle: float, m: float, pc: np.ndarray, draws: np.ndarray, wins: np.ndarray, upper: bool
) -> np.ndarray:
    """The probability of ``T >= t_obs`` (``upper``; ``wins``: where it begins, by count of ``draws``) or of
    ``T <= t_obs`` (``wins``: one past where it ends) under each draw share of ``pc`` (mean ``m``); the mass of the
    counts of draws outside ``draws`` (consecutive) joins the tail whole."""
    shares = pc[:, None]
    p1 = np.clip(m - middle * shares, 0.0, 1.0)
    rest = 1.0 - shares
    ratio = np.clip(np.divide(p1, rest, out=np.zeros_like(p1), where=rest > 0), 0.0, 1.0)  # P(win | not a draw)
    weight = _pmf(draws[None, :], n, shares)  # shares x draws
    dropped = _cdf(draws[0] - 1, n, pc) + _sf(draws[-1], n, pc)
    others = n - draws[None, :]
    inside = _sf(wins[None, :] - 1, others, ratio) if upper else _cdf(wins[None, :] - 1, others, ratio)
    return np.asarray((weight * inside).sum(axis=1) + dropped)


def _first_win_count(
    n: int, draws: np.ndarray, middle: float, m: float, holds: Callable[[np.ndarray], np.ndarray]
) -> np.ndarray:
    """For every count of draws, the fewest wins at which ``holds`` (a test of the statistic, true from some count
    of wins on: the statistic never falls as wins replace losses) is true; ``n - draws + 1`` where it never is. A
    bisection over the wins of all counts of draws at once."""
    low = np.zeros(draws.size)
    high = n - draws + 1.0
    while np.any(low < high):
        middle_count = np.floor((low + high) / 2)
        wins = np.minimum(middle_count, n - draws)
        true = holds(_root(n - draws - wins, draws, wins, middle, m)) & (middle_count <= n - draws)
        searching = low < high
        high = np.where(searching & true, middle_count, high)
        low = np.where(searching & ~true, middle_count + 1, low)
    return low


def _root(k0: np.ndarray, kc: np.ndarray, k1: np.ndarray, middle: float, m: float) -> np.ndarray:
    """``sign(T) T^2`` (module docstring: an order-preserving form of the signed root of the profile likelihood ratio
    of the mean ``m``) of every sample of the arrays of counts (all of one size, at least one payoff)."""
    v0, vc, v1 = -m, middle - m, 1.0 - m
    n = k0 + kc + k1
    shift = k0 * v0 + kc * vc + k1 * v1  # n (xbar - m)
    some0, somec, some1 = k0 > 0, kc > 0, k1 > 0
    below = some0 | (somec & (vc < 0))  # an observed value on each side of m: the root is inside the range
    above = some1 | (somec & (vc > 0))
    three = some0 & somec & some1
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        # all three observed: sum_j k_j v_j prod_{i != j} (1 + l v_i) = 0, a quadratic in l
        product = v0 * vc * v1
        a = n * product
        b = k0 * v0 * (vc + v1) + kc * vc * (v0 + v1) + k1 * v1 * (v0 + vc)
        disc = np.sqrt(np.maximum(b * b - 4.0 * a * shift, 0.0))
        if product != 0.0:
            first, second = (-b - disc) / (2.0 * a), (-b + disc) / (2.0 * a)
        else:
            first = second = -shift / b
        left, right = -1.0 / v1, -1.0 / v0
        quadratic = np.where((first > left) & (first < right), first, second)
        # two observed: linear; pair: the product of their offsets
        pair = np.where(~some0, vc * v1, np.where(~somec, v0 * v1, v0 * vc))
        linear = -shift / (n * pair)
        root = np.where(three, quadratic, linear)
        root = np.where(below & above, root, np.where(shift > 0, right, left))
        root = np.clip(np.nan_to_num(root, nan=0.0), left, right)
        tiny = 1e-300
        ratio = 2.0 * (
            k0 * np.log(np.maximum(1.0 + root * v0, tiny))
            + kc * np.log(np.maximum(1.0 + root * vc, tiny))
            + k1 * np.log(np.maximum(1.0 + root * v1, tiny))
        )
    return np.sign(shift) * np.maximum(ratio, 0.0)
