"""Bench: ``exact-discrete/2`` on win/draw/loss payoffs (issue 52, item 3): its width against the t-interval and
``exact-discrete/1`` on held-out shapes, its time per interval cold and warm, its coverage by Monte Carlo and exactly
(summed over every sample of a size), and how much its maximum over the draw shares moves with more shares.

    python bench/bench_trinomial.py [--runs 100] [--sizes 30 100 300 1000] [--coverage-runs 10000] [--seed 0]

Exit status 0 (a measurement, not a gate); ``bench/width_results.md`` keeps the numbers.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from analysis.stats import trinomial  # noqa: E402
from analysis.stats.exact import binomial_intervals  # noqa: E402
from analysis.stats.intervals import mean_intervals  # noqa: E402
from bench.bench_width import t_intervals  # noqa: E402

SUPPORT = (0.0, 0.5, 1.0)
HELD_OUT = (
    ("loss .5 draw .2 win .3", (0.5, 0.2, 0.3)),
    ("loss .1 draw .1 win .8", (0.1, 0.1, 0.8)),
    ("uniform .33/.34/.33", (0.33, 0.34, 0.33)),
    ("mostly draws .05/.9/.05", (0.05, 0.9, 0.05)),
)
"""Win/draw/loss shapes (loss, draw, win shares) not used to choose the method."""


def widths(runs: int, sizes: list[int], seed: int) -> None:
    """Mean width over the t-interval's (and ``exact-discrete/1``'s where it is still exact, n <= 40) per shape and
    n, with the coverage of the runs."""
    print(f"widths: {runs} runs a cell, ratio to the t-interval (coverage of the runs)")
    print(f"{'shape':26s}" + "".join(f"{'n=' + str(n):>22s}" for n in sizes))
    for name, weights in HELD_OUT:
        cells = []
        for n in sizes:
            x = np.random.default_rng([seed, n]).choice(SUPPORT, p=weights, size=(runs, n))
            low, high = mean_intervals(x, 0.0, 1.0, method="exact-discrete/2", support=SUPPORT)
            t_low, t_high = t_intervals(x)
            ratio = np.mean(high - low) / np.mean(t_high - t_low)
            truth = float(np.dot(SUPPORT, weights))
            covered = np.mean((low <= truth) & (truth <= high))
            old_low, old_high = mean_intervals(x, 0.0, 1.0, method="exact-discrete/1", support=SUPPORT)
            old = np.mean(old_high - old_low) / np.mean(t_high - t_low)
            cells.append(f"{ratio:.3f}x {covered:6.1%} (v1 {old:.2f}x)")
        print(f"{name:26s}" + "".join(f"{c:>22s}" for c in cells), flush=True)


def timing(n: int = 2000) -> None:
    """Seconds for one interval at ``n`` with nothing cached but the imports (cold: a new sample), and again (warm:
    the same sample, from the process's cache)."""
    rng = np.random.default_rng(1)
    mean_intervals(rng.choice(SUPPORT, size=(1, 20)), 0.0, 1.0, method="exact-discrete/2", support=SUPPORT)
    for name, weights in HELD_OUT:
        x = rng.choice(SUPPORT, p=weights, size=(1, n))
        start = time.perf_counter()
        mean_intervals(x, 0.0, 1.0, method="exact-discrete/2", support=SUPPORT)
        cold = time.perf_counter() - start
        start = time.perf_counter()
        mean_intervals(x, 0.0, 1.0, method="exact-discrete/2", support=SUPPORT)
        warm = time.perf_counter() - start
        print(f"time at n = {n}, {name:26s} new sample {cold:.3f} s, again {warm * 1000:.3f} ms", flush=True)


def coverage(runs: int, seed: int) -> None:
    """Monte Carlo coverage (``runs`` a cell) and exact coverage (summed over every sample) at n = 10 and 30, and the
    lowest exact coverage over a grid of 231 trinomials at n = 10."""
    from scipy.stats import multinomial

    for n in (10, 30):
        for name, weights in HELD_OUT:
            truth = float(np.dot(SUPPORT, weights))
            x = np.random.default_rng([seed, n, 7]).choice(SUPPORT, p=weights, size=(runs, n))
            low, high = mean_intervals(x, 0.0, 1.0, method="exact-discrete/2", support=SUPPORT)
            monte_carlo = np.mean((low <= truth) & (truth <= high))
            print(
                f"coverage n = {n:2d} {name:26s} {runs} runs {monte_carlo:.4f}, "
                f"exact {_exact_coverage(n, weights, multinomial):.4f}",
                flush=True,
            )
    grid = [(a / 20, b / 20, 1 - a / 20 - b / 20) for a in range(21) for b in range(21 - a)]
    worst = min((_exact_coverage(10, w, multinomial), w) for w in grid)
    print(f"lowest exact coverage at n = 10 over {len(grid)} trinomials: {worst[0]:.4f} at {worst[1]}", flush=True)


def _exact_coverage(n: int, weights: tuple[float, ...], multinomial: object) -> float:
    truth = float(np.dot(SUPPORT, weights))
    total = 0.0
    for k1 in range(n + 1):
        for kc in range(n + 1 - k1):
            low, high = trinomial.mean_bounds(n, kc, k1, 0.5, 0.05)
            if low <= truth <= high:
                total += float(multinomial.pmf([n - kc - k1, kc, k1], n, weights))  # type: ignore[attr-defined]
    return total


def shares_check(seed: int) -> None:
    """How far the p-values move when the largest tail over the draw shares is taken over 200 shares instead of
    :data:`analysis.stats.trinomial.SHARES`: the largest change over samples and candidate means near the ends."""
    rng = np.random.default_rng(seed)
    worst = 0.0
    for n, weights in ((100, (0.3, 0.4, 0.3)), (300, (0.05, 0.9, 0.05)), (1000, (0.5, 0.2, 0.3))):
        for _ in range(5):
            _, kc, k1 = (int(v) for v in rng.multinomial(n, weights))
            low, high = trinomial.mean_bounds(n, kc, k1, 0.5, 0.05)
            share_low, share_high = binomial_intervals(np.array([kc]), n, 0.001)
            shares = (float(share_low[0]), float(share_high[0]))
            for m in (low, high, low + 0.002, high - 0.002):
                few = trinomial.p_values(n, kc, k1, 0.5, m, 0.05, shares)
                saved, trinomial.SHARES = trinomial.SHARES, 200
                try:
                    many = trinomial.p_values(n, kc, k1, 0.5, m, 0.05, shares)
                finally:
                    trinomial.SHARES = saved
                worst = max(worst, abs(few[0] - many[0]), abs(few[1] - many[1]))
    print(f"largest p-value change, {trinomial.SHARES} shares -> 200, near the ends (60 tests): {worst:.2e}")


def main(argv: list[str] | None = None) -> int:
    """Run the bench."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--sizes", type=int, nargs="+", default=[30, 100, 300, 1000])
    parser.add_argument("--coverage-runs", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    start = time.perf_counter()
    timing()
    shares_check(args.seed)
    coverage(args.coverage_runs, args.seed)
    widths(args.runs, args.sizes, args.seed)
    print(f"({math.ceil(time.perf_counter() - start)} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
