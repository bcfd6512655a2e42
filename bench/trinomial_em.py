"""Bench (measured, not kept): Lloyd's estimation-and-maximisation (E+M) p-values for the win/draw/loss mean, against
``exact-discrete/2`` (issue 52, item 3; ``bench/width_results.md``, "E+M on mostly draws").

    python bench/trinomial_em.py [--runs 100] [--sizes 30 100] [--shapes 0 1 2 3] [--oracle] [--coverage]

The same two one-sided tests at ``alpha / 2`` as :mod:`analysis.stats.trinomial`, inverted the same way (its
``_Search``: bisection, then checks outward), with another p-value (C. J. Lloyd, "Exact p-values for discrete models
obtained by estimation and maximization", Aust. N. Z. J. Stat. 50, 2008):

* **E step**: every sample ``x`` of size n (all ``(n + 1)(n + 2) / 2`` enumerated) gets ``e(x)``, the tail of the
  signed-root statistic ``T`` (``T >= T(x)`` for the upper test) under the null mean ``m`` at its own constrained
  maximum-likelihood draw share (the best of :data:`E_SHARES` shares evenly over ``[0, pc_max(m)]``: any function of
  the sample is a valid ordering, so the rounding costs width, not validity);
* **M step**: the p-value of the observed sample is the largest over the draw share of ``P(e(X) <= e(x_obs))``
  (:data:`M_SHARES` shares over the whole null space, then :data:`REFINE` around the largest), or with
  ``berger_boos`` over the 99.9% Clopper–Pearson interval of the draw share plus ``alpha / 50``, as version 2.

``--oracle`` adds the same tests with the draw share fixed at the truth (not a valid interval: a bound on what any
handling of the nuisance could give with that ordering). Exit status 0.
"""

from __future__ import annotations

import argparse
import functools
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from analysis.stats import trinomial  # noqa: E402
from analysis.stats.exact import binomial_intervals  # noqa: E402
from bench.bench_trinomial import HELD_OUT, SUPPORT  # noqa: E402
from bench.bench_width import t_intervals  # noqa: E402

E_SHARES = 101
"""Draw shares, evenly over the null space, among which each sample's constrained MLE is taken (the E step)."""
M_SHARES = 41
"""Draw shares, evenly over the null space (or Berger–Boos's interval), over which the M step maximises."""
REFINE = 9
"""More shares between the neighbours of the M step's largest."""
TIES = 1e-9
"""Relative tolerance within which two statistics (or two E-step tails) count as tied, in the tail."""
MIDDLE = 0.5
ALPHA = 0.05
Variant = tuple[str, float | None]


@functools.lru_cache(maxsize=8)
def _space(n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict[tuple[int, int], int]]:
    """Every sample of size ``n``: its counts (losses, draws, wins), log multinomial coefficient and index."""
    from scipy.special import gammaln

    pairs = [(kc, k1) for k1 in range(n + 1) for kc in range(n + 1 - k1)]
    kc = np.array([p[0] for p in pairs], dtype=float)
    k1 = np.array([p[1] for p in pairs], dtype=float)
    k0 = n - kc - k1
    coefficient = gammaln(n + 1) - gammaln(k0 + 1) - gammaln(kc + 1) - gammaln(k1 + 1)
    return k0, kc, k1, coefficient, {p: i for i, p in enumerate(pairs)}


def _pmf(n: int, m: float, shares: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The log likelihood (without the coefficient) and the probability of every sample, under mean ``m`` and each
    draw share (shares x samples)."""
    from scipy.special import xlogy

    k0, kc, k1, coefficient, _ = _space(n)
    pc = np.asarray(shares, dtype=float)[:, None]
    p1 = np.clip(m - MIDDLE * pc, 0.0, 1.0)
    p0 = np.clip(1.0 - pc - p1, 0.0, 1.0)
    with np.errstate(divide="ignore"):
        log_likelihood = xlogy(k0, p0) + xlogy(kc, pc) + xlogy(k1, p1)
    return log_likelihood, np.exp(log_likelihood + coefficient)


def _largest_share(m: float) -> float:
    return min(m / MIDDLE, (1.0 - m) / (1.0 - MIDDLE))


def _statistic(n: int, m: float, base: str) -> np.ndarray:
    """Every sample's signed-root statistic (``base`` "root", version 2's) or its mean minus ``m`` ("mean")."""
    k0, kc, k1, _, _ = _space(n)
    return (MIDDLE * kc + k1) / n - m if base == "mean" else trinomial._root(k0, kc, k1, MIDDLE, m)


@functools.lru_cache(maxsize=4096)
def e_values(n: int, m: float, base: str = "root") -> tuple[np.ndarray, np.ndarray]:
    """The E step: every sample's tail of the ``base`` statistic under mean ``m`` at its own constrained MLE of the
    draw share (upper, ``T >= T(x)``; lower, ``T <= T(x)``), ties counted in."""
    log_likelihood, probability = _pmf(n, m, np.linspace(0.0, _largest_share(m), E_SHARES))
    best = np.argmax(log_likelihood, axis=0)
    statistic = _statistic(n, m, base)
    order = np.argsort(statistic, kind="stable")
    ordered = statistic[order]
    cumulative = np.cumsum(probability[:, order], axis=1)
    slack = TIES * (1.0 + np.abs(statistic))
    first = np.searchsorted(ordered, statistic - slack, "left")
    last = np.searchsorted(ordered, statistic + slack, "right")
    below = np.where(first > 0, cumulative[best, np.maximum(first - 1, 0)], 0.0)
    return cumulative[best, -1] - below, cumulative[best, last - 1]


def _m_step(n: int, m: float, e: np.ndarray, observed: int, shares: tuple[float, float]) -> float:
    """The largest probability of ``e(X) <= e(x_obs)`` over the draw shares in ``shares`` that ``m`` allows."""
    low, high = max(shares[0], 0.0), min(shares[1], _largest_share(m))
    if high < low:
        return 0.0
    tail = e <= e[observed] + TIES * (1.0 + abs(e[observed]))
    grid = np.linspace(low, high, M_SHARES) if high > low else np.array([low])
    sums = _pmf(n, m, grid)[1][:, tail].sum(axis=1)
    best = int(np.argmax(sums))
    near = np.linspace(grid[max(best - 1, 0)], grid[min(best + 1, grid.size - 1)], REFINE)
    return max(float(sums.max()), float(_pmf(n, m, near)[1][:, tail].sum(axis=1).max()))


def p_values(
    n: int, kc: int, k1: int, m: float, berger_boos: bool, only: bool | None = None, variant: Variant = ("root", None)
) -> tuple[float, float]:
    """E+M p-values (lower tail, upper tail) of the sample against the mean ``m``; ``only`` as
    :func:`analysis.stats.trinomial.p_values`; ``variant``: the E step's statistic ("root" or "mean") and, for the
    oracle, the draw share fixed at the truth (the ordering then the E tail, or with "root!" or "mean!" the
    statistic itself)."""
    base, truth = variant
    observed = _space(n)[4][(kc, k1)]
    if not 0.0 < m < 1.0:
        mean = (MIDDLE * kc + k1) / n
        return (1.0, 1.0) if (m <= 0.0 and mean <= 0.0) or (m >= 1.0 and mean >= 1.0) else (0.0, 0.0)
    gamma, shares = 0.0, (0.0, 1.0)
    if truth is not None:
        shares = (min(truth, _largest_share(m)),) * 2
    elif berger_boos:
        gamma = ALPHA / trinomial.NUISANCE_SHARE
        low, high = binomial_intervals(np.array([kc]), n, gamma)
        shares = (float(low[0]), float(high[0]))
        if min(shares[1], _largest_share(m)) < shares[0]:
            return gamma, gamma
    if base.endswith("!"):
        statistic = _statistic(n, m, base[:-1])
        upper, lower = -statistic, statistic  # smaller is further out, as the E tails
    else:
        upper, lower = e_values(n, m, base)
    result = [1.0, 1.0]
    for column, e in ((0, lower), (1, upper)):
        if only is None or only == (column == 0):
            result[column] = min(_m_step(n, m, e, observed, shares) + gamma, 1.0)
    return result[0], result[1]


class _Search(trinomial._Search):
    def __init__(self, n: int, kc: int, k1: int, berger_boos: bool, variant: Variant) -> None:
        super().__init__(n, kc, k1, MIDDLE, ALPHA, (0.0, 1.0))
        self.berger_boos, self.variant = berger_boos, variant

    def kept(self, m: float, lower: bool) -> bool:
        below, above = p_values(self.n, self.kc, self.k1, m, self.berger_boos, only=not lower, variant=self.variant)
        return (above if lower else below) > ALPHA / 2


@functools.lru_cache(maxsize=65536)
def mean_bounds(
    n: int, kc: int, k1: int, berger_boos: bool = False, variant: Variant = ("root", None)
) -> tuple[float, float]:
    """The E+M interval of the mean of the sample (``variant``: as :func:`p_values`)."""
    mean = (MIDDLE * kc + k1) / n
    search = _Search(n, kc, k1, berger_boos, variant)
    return search.end(mean, lower=True), search.end(mean, lower=False)


def _methods(truth: float | None) -> dict[str, object]:
    methods: dict[str, object] = {
        "v2": lambda n, c, w: trinomial.mean_bounds(n, c, w, MIDDLE, ALPHA),
        "E+M": lambda n, c, w: mean_bounds(n, c, w),
        "E+M BB": lambda n, c, w: mean_bounds(n, c, w, True),
    }
    if truth is not None:
        methods["E+M on the mean"] = lambda n, c, w: mean_bounds(n, c, w, False, ("mean", None))
        for label, base in (("oracle T", "root!"), ("oracle mean", "mean!"), ("oracle E+M", "root")):
            methods[label] = functools.partial(lambda n, c, w, b: mean_bounds(n, c, w, False, (b, truth)), b=base)
    return methods


def widths(runs: int, sizes: list[int], shapes: list[int], oracle: bool) -> None:
    """Mean width over the t-interval's, the bench's samples (``bench_trinomial.widths``'s seeds), and the mean
    seconds per distinct sample (cold)."""
    for index in shapes:
        name, weights = HELD_OUT[index]
        for n in sizes:
            x = np.random.default_rng([0, n]).choice(SUPPORT, p=weights, size=(runs, n))
            t_low, t_high = t_intervals(x)
            draws, wins = (x == MIDDLE).sum(axis=1), (x == 1.0).sum(axis=1)
            distinct = len(set(zip(draws.tolist(), wins.tolist(), strict=True)))
            cells = []
            for label, method in _methods(weights[1] if oracle else None).items():
                start = time.perf_counter()
                bounds = np.array([method(n, int(c), int(w)) for c, w in zip(draws, wins, strict=True)])  # type: ignore[operator]
                seconds = (time.perf_counter() - start) / distinct
                ratio = np.mean(bounds[:, 1] - bounds[:, 0]) / np.mean(t_high - t_low)
                cells.append(f"{label} {ratio:.3f}x ({seconds:.3f} s)")
            print(f"{name:26s} n = {n:4d}: " + ", ".join(cells), flush=True)


def _covered(n: int, table: dict[tuple[int, int], tuple[float, float]], weights: tuple[float, ...]) -> float:
    """The probability, summed over every sample of size ``n``, that its interval in ``table`` holds the mean."""
    from scipy.stats import multinomial

    truth = float(np.dot(SUPPORT, weights))
    return sum(
        float(multinomial.pmf([n - c - w, c, w], n, weights))
        for (c, w), (low, high) in table.items()
        if low <= truth <= high
    )


def coverage() -> None:
    """Exact coverage of E+M (summed over every sample) at n = 10 and 30 on the held-out shapes, and the lowest over
    a grid of 231 trinomials at n = 10."""
    for n in (10, 30):
        table = {(c, w): mean_bounds(n, c, w) for w in range(n + 1) for c in range(n + 1 - w)}
        for name, weights in HELD_OUT:
            print(f"E+M exact coverage n = {n:2d} {name:26s} {_covered(n, table, weights):.4f}", flush=True)
        if n == 10:
            grid = [(a / 20, b / 20, 1 - a / 20 - b / 20) for a in range(21) for b in range(21 - a)]
            worst = min((_covered(n, table, w), w) for w in grid)
            print(f"lowest exact coverage at n = 10 over {len(grid)} trinomials: {worst[0]:.4f} at {worst[1]}")


def main(argv: list[str] | None = None) -> int:
    """Run the bench."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--sizes", type=int, nargs="+", default=[30, 100])
    parser.add_argument("--shapes", type=int, nargs="+", default=[0, 1, 2, 3])
    parser.add_argument("--oracle", action="store_true")
    parser.add_argument("--coverage", action="store_true")
    args = parser.parse_args(argv)
    if args.coverage:
        coverage()
    widths(args.runs, args.sizes, args.shapes, args.oracle)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
