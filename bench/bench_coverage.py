"""Bench: how often each interval the report prints covers the true mean, at the paper's sample sizes.

    python bench/bench_coverage.py [--runs 10000] [--sizes 6 10 30] [--seed 0]

For every distribution of :data:`DISTRIBUTIONS` (a bounded normal, a Beta(0.5, 4), a Bernoulli(0.1) and a
win/draw/loss game, each on the payoff range ``[LOW, HIGH]``) and every sample size, ``runs`` seeded samples are
drawn and every interval of :data:`INTERVALS` that applies (the exact ones only where the game declares the
payoffs' support) is computed on each; an interval *covers* when it contains the true value. A type passes when its
coverage is at least 94%, or when the 95% Clopper–Pearson upper bound of its observed coverage reaches 95% (a
coverage that sampling noise cannot tell from 95%). The old percentile bootstrap (:func:`percentile_bootstrap`, the
report's interval before the betting intervals replaced it) is measured beside them and is expected to fail.

``tests/test_coverage.py`` runs the same measurement with 1,000 runs; this script runs it with more (default 10,000)
and prints a table. Exit status 1 when an interval the report prints fails, or the old bootstrap does not.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from analysis.stats.confseq import mean_intervals, ratio_intervals  # noqa: E402
from analysis.stats.intervals import mean_intervals as named_intervals  # noqa: E402
from analysis.stats.intervals import win_loss_ratio_interval  # noqa: E402

LOW, HIGH = -2.0, 6.0
"""The payoff range of the measurement (zero inside, so a match can be won, drawn or lost)."""
SIZES = (6, 10, 30)
"""The sample sizes: the paper's 6 and 10 repeats, and 30."""
LEVEL = 0.95

Sampler = Callable[[np.random.Generator, int, int], np.ndarray]


def _bounded_normal(rng: np.random.Generator, runs: int, n: int) -> np.ndarray:
    """A normal around 30% of the range with a sd of 20% of it, clipped to the range."""
    span = HIGH - LOW
    return np.clip(rng.normal(LOW + 0.3 * span, 0.2 * span, (runs, n)), LOW, HIGH)


def _beta(rng: np.random.Generator, runs: int, n: int) -> np.ndarray:
    """Beta(0.5, 4) scaled to the range: most values near the bottom, a long thin tail up."""
    return LOW + (HIGH - LOW) * rng.beta(0.5, 4.0, (runs, n))


def _bernoulli(rng: np.random.Generator, runs: int, n: int) -> np.ndarray:
    """The top of the range with probability 0.1, else the bottom."""
    return np.where(rng.random((runs, n)) < 0.1, HIGH, LOW)


MIDDLE = (LOW + HIGH) / 2
OUTCOMES = {LOW: 0.25, MIDDLE: 0.6, HIGH: 0.15}
"""A win/draw/loss game on the range: a loss, a draw (the middle) or a win, with these probabilities."""


def _outcomes(rng: np.random.Generator, runs: int, n: int) -> np.ndarray:
    """A loss, a draw or a win (:data:`OUTCOMES`)."""
    return rng.choice(np.array(list(OUTCOMES)), p=np.array(list(OUTCOMES.values())), size=(runs, n))


DISTRIBUTIONS: dict[str, Sampler] = {
    "bounded normal": _bounded_normal,
    "Beta(0.5,4)": _beta,
    "Bernoulli(0.1)": _bernoulli,
    "win/draw/loss": _outcomes,
}
"""The distributions of the measurement, each on ``[LOW, HIGH]``."""


def true_values(name: str) -> tuple[float, float]:
    """(mean, NRA) of a distribution, by numerical integration: the mean of a payoff ``x``, and GTBench's NRA of a
    seat paid ``x`` against one paid ``-x`` (zero-sum), ``E[x] / E[|x|]``."""
    from scipy import stats

    span = HIGH - LOW

    def expect(f: Callable[[float], float]) -> float:
        if name == "Bernoulli(0.1)":
            return 0.1 * f(HIGH) + 0.9 * f(LOW)
        if name == "win/draw/loss":
            return sum(p * f(v) for v, p in OUTCOMES.items())
        if name == "Beta(0.5,4)":
            return float(stats.beta(0.5, 4.0).expect(lambda u: f(LOW + span * u)))
        normal = stats.norm(LOW + 0.3 * span, 0.2 * span)  # clipped: the tails sit on the ends
        inside = normal.expect(f, lb=LOW, ub=HIGH)
        return float(inside + f(LOW) * normal.cdf(LOW) + f(HIGH) * normal.sf(HIGH))

    mean = expect(lambda v: v)
    return mean, mean / expect(abs)


def percentile_bootstrap(values: np.ndarray, samples: int = 2000, seed: int = 0) -> tuple[float, float]:
    """The report's interval before this measurement: a percentile bootstrap of the mean (seeded, the values sorted,
    2,000 resamples, a point when all values are equal), as ``analysis.tables.scores.bootstrap_ci`` computed it."""
    data = np.sort(np.asarray(values, dtype=float))
    if data.size == 1 or np.all(data == data[0]):
        return float(data[0]), float(data[0])
    means = np.random.default_rng(seed).choice(data, size=(samples, data.size), replace=True).mean(axis=1)
    return float(np.quantile(means, 0.025)), float(np.quantile(means, 0.975))


def _bootstrap_rows(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    bounds = np.array([percentile_bootstrap(row, samples=1000) for row in x])
    return bounds[:, 0], bounds[:, 1]


def _clopper_pearson(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The win-rate interval: Clopper–Pearson of the share of values at the top of the range, mapped onto it."""
    from scipy.stats import beta

    k, n = (x == HIGH).sum(axis=1), x.shape[1]
    low = np.where(k > 0, beta.ppf(0.025, k, n - k + 1), 0.0)
    high = np.where(k < n, beta.ppf(0.975, k + 1, n - k), 1.0)
    return LOW + (HIGH - LOW) * low, LOW + (HIGH - LOW) * high


@dataclass(frozen=True)
class IntervalType:
    """One kind of interval: what it estimates (``mean``, ``difference`` of two paired draws, ``nra``, ``win-loss``:
    the NRA of a win/draw/loss game) and how."""

    name: str
    target: str
    compute: Callable[[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]
    """(first sample, second sample) -> (low, high) per run."""
    printed: bool = True
    """Whether the report prints it (the old bootstrap is measured to show that it fails)."""
    only: tuple[str, ...] = ()
    """The distributions it applies to (the payoffs' support known in advance); empty: every one."""


def _nra(x: np.ndarray, _: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    # a seat paid x against a seat paid -x, GTBench's scores: the sum difference over the sum of sizes
    return ratio_intervals(2.0 * x, 2.0 * np.abs(x), 2.0 * max(abs(LOW), abs(HIGH)))


def _exact(
    support: tuple[float, ...], method: str = "exact-discrete/1"
) -> Callable[[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]:
    """``method`` (an exact method) on the support the game declares (before any payoff is seen)."""
    return lambda x, _: named_intervals(x, LOW, HIGH, method=method, support=support)


def _win_loss_ratio(x: np.ndarray, _: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``exact-conditional/1``: GTBench's NRA of a win/draw/loss game (wins and losses counted, draws scored 0)."""
    bounds = np.array([win_loss_ratio_interval(int(w), int(v)) for w, v in zip(*_wins_losses(x), strict=True)])
    return bounds[:, 0], bounds[:, 1]


def _wins_losses(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return (x == HIGH).sum(axis=1), (x == LOW).sum(axis=1)


INTERVALS: tuple[IntervalType, ...] = (
    IntervalType(
        "fixed-n betting (Eq. 1/2, table cells, mean payoff, judge audit)",
        "mean",
        lambda x, _: mean_intervals(x, LOW, HIGH),
    ),
    IntervalType(
        "paired difference (table cells resolved or not)",
        "difference",
        lambda x, y: mean_intervals(x - y, -(HIGH - LOW), HIGH - LOW),
    ),
    IntervalType("anytime-valid sequence at n", "mean", lambda x, _: mean_intervals(x, LOW, HIGH, anytime=True)),
    IntervalType("NRA (test inversion)", "nra", _nra),
    IntervalType(
        "Clopper-Pearson (win/draw/loss rates)", "mean", lambda x, _: _clopper_pearson(x), only=("Bernoulli(0.1)",)
    ),
    IntervalType("exact-discrete/1, two-point support", "mean", _exact((LOW, HIGH)), only=("Bernoulli(0.1)",)),
    IntervalType("exact-discrete/1, three-point support", "mean", _exact((LOW, MIDDLE, HIGH)), only=("win/draw/loss",)),
    IntervalType(
        "exact-discrete/2, three-point support",
        "mean",
        _exact((LOW, MIDDLE, HIGH), "exact-discrete/2"),
        only=("win/draw/loss",),
    ),
    IntervalType("exact-conditional/1 (NRA, win/loss)", "win-loss", _win_loss_ratio, only=("win/draw/loss",)),
    IntervalType("percentile bootstrap (old)", "mean", lambda x, _: _bootstrap_rows(x), printed=False),
)
"""Every interval type the report prints, and the old bootstrap."""


@dataclass(frozen=True)
class Coverage:
    """The coverage of one interval type on one distribution at one sample size."""

    interval: str
    distribution: str
    n: int
    runs: int
    covered: int
    mean_width: float
    printed: bool

    @property
    def rate(self) -> float:
        """The share of runs whose interval covered."""
        return self.covered / self.runs

    @property
    def upper(self) -> float:
        """The 95% Clopper–Pearson upper bound of the coverage."""
        from scipy.stats import beta

        return 1.0 if self.covered == self.runs else float(beta.ppf(0.975, self.covered + 1, self.runs - self.covered))

    @property
    def passes(self) -> bool:
        """At least 94%, or not distinguishable from 95% (its upper bound reaches 95%)."""
        return self.rate >= 0.94 or self.upper >= LEVEL


def measure(
    runs: int, sizes: Sequence[int] = SIZES, seed: int = 0, kinds: Sequence[IntervalType] = INTERVALS
) -> list[Coverage]:
    """The coverage of every interval type on every distribution at every size, ``runs`` seeded samples each."""
    out = []
    for d_index, (name, sampler) in enumerate(DISTRIBUTIONS.items()):
        mean, nra = true_values(name)
        for n in sizes:
            rng = np.random.default_rng([seed, d_index, n])
            x, y = sampler(rng, runs, n), sampler(rng, runs, n)
            for kind in kinds:
                if kind.only and name not in kind.only:
                    continue
                wins, losses = OUTCOMES[HIGH], OUTCOMES[LOW]
                truth = {"mean": mean, "difference": 0.0, "nra": nra, "win-loss": (wins - losses) / (wins + losses)}[
                    kind.target
                ]
                low, high = kind.compute(x, y)
                covered = int(np.sum((low <= truth) & (truth <= high)))
                out.append(Coverage(kind.name, name, n, runs, covered, float(np.mean(high - low)), kind.printed))
    return out


def format_table(results: Sequence[Coverage]) -> str:
    """The results as a fixed-width table."""
    lines = [f"{'interval':<66} {'distribution':<15} {'n':>3} {'coverage':>9} {'CP upper':>9} {'width':>7}  verdict"]
    for r in results:
        verdict = ("pass" if r.passes else "FAIL") if r.printed else ("fails (expected)" if not r.passes else "covers")
        lines.append(
            f"{r.interval:<66} {r.distribution:<15} {r.n:>3} {r.rate:>9.3f} {r.upper:>9.3f} {r.mean_width:>7.2f}  "
            f"{verdict}"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Measure, print, and exit 1 when a printed interval fails or the old bootstrap does not."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=10_000)
    parser.add_argument("--sizes", type=int, nargs="+", default=list(SIZES))
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    start = time.perf_counter()
    results = measure(args.runs, args.sizes, args.seed)
    print(f"payoff range [{LOW}, {HIGH}], {args.runs} runs per cell, level {LEVEL}")
    print(format_table(results))
    print(f"({time.perf_counter() - start:.0f} s)")
    printed_fail = [r for r in results if r.printed and not r.passes]
    old_fails = any(not r.passes for r in results if not r.printed)
    return 1 if printed_fail or not old_fails else 0


if __name__ == "__main__":
    sys.exit(main())
