"""Every interval the report prints covers at its level at the paper's sample sizes; the old bootstrap does not.

The measurement is :mod:`bench.bench_coverage` (1,000 seeded runs here, more there): at n = 6, 10 and 30, on a
bounded normal, a Beta(0.5, 4) scaled to the payoff range and a Bernoulli(0.1), each interval type must cover the
true value in at least 94% of runs, or its coverage must not be distinguishable from 95% (the Clopper–Pearson upper
bound reaches 0.95).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from analysis.stats.confseq import mean_interval, ratio_interval
from bench import bench_coverage

RUNS = 1000


@pytest.fixture(scope="module")
def coverage() -> list[bench_coverage.Coverage]:
    return bench_coverage.measure(RUNS)


def test_every_printed_interval_covers_at_small_n(coverage: list[bench_coverage.Coverage]) -> None:
    printed = [r for r in coverage if r.printed]
    kinds = {r.interval for r in printed}
    assert len(kinds) == 9 and {r.n for r in printed} == {6, 10, 30}
    assert {r.distribution for r in printed} == set(bench_coverage.DISTRIBUTIONS)
    failing = [(r.interval, r.distribution, r.n, r.rate) for r in printed if not r.passes]
    assert not failing, failing


def test_the_old_percentile_bootstrap_under_covers(coverage: list[bench_coverage.Coverage]) -> None:
    old = {(r.distribution, r.n): r for r in coverage if not r.printed}
    for distribution in bench_coverage.DISTRIBUTIONS:
        for n in (6, 10):  # the paper's sizes: every distribution, well below 95% and not by chance
            assert not old[(distribution, n)].passes, (distribution, n, old[(distribution, n)].rate)
    assert old[("Bernoulli(0.1)", 6)].rate < 0.5  # all six values equal in half the runs: a point, which misses


def test_intervals_are_never_points_and_say_nothing_without_data() -> None:
    same = mean_interval([3.0] * 10, 0.0, 10.0)
    assert same.low < 3.0 < same.high and same.mean == 3.0 and same.n == 10
    assert mean_interval([0.0] * 6, 0.0, 1.0).high > 0.1  # six losses do not rule out a 10% win rate
    assert math.isnan(mean_interval([], 0.0, 1.0).low)
    wins = ratio_interval([2.0] * 10, [2.0] * 10, 2.0)
    assert wins.mean == 1.0 and wins.low < 1.0 == wins.high
    with pytest.raises(ValueError, match="outside the declared range"):
        mean_interval([11.0], 0.0, 10.0)


def test_the_fixed_n_interval_narrows_with_n_and_holds_its_mean() -> None:
    rng = np.random.default_rng(3)
    widths = []
    for n in (6, 30, 300):
        values = rng.beta(2, 5, n) * 10
        interval = mean_interval(values, 0.0, 10.0)
        assert interval.low <= values.mean() <= interval.high
        widths.append(interval.high - interval.low)
    assert widths[0] > widths[1] > widths[2] and widths[0] > 5  # honest at n = 6: most of the range
