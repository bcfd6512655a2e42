"""``exact-discrete/2``: the exact win/draw/loss interval at every n is near the t-interval's width where the old
method fell back to betting, covers on a small Monte Carlo and exactly, and leaves the old versions as they were."""

from __future__ import annotations

import numpy as np
from scipy.stats import multinomial

from analysis.stats import trinomial
from analysis.stats.exact import _likelihood_root
from analysis.stats.intervals import IntervalPolicy, mean_intervals
from bench.bench_width import t_intervals

SUPPORT = (-1.0, 0.0, 1.0)


def test_within_1_15x_of_the_t_interval_at_n_300() -> None:
    x = np.random.default_rng(0).choice(SUPPORT, p=(0.5, 0.2, 0.3), size=(8, 300))
    low, high = mean_intervals(x, -1.0, 1.0, method="exact-discrete/2", support=SUPPORT)
    t_low, t_high = t_intervals(x)
    assert 0.95 <= np.mean(high - low) / np.mean(t_high - t_low) <= 1.15
    old_low, old_high = mean_intervals(x, -1.0, 1.0, method="exact-discrete/1", support=SUPPORT)
    assert np.mean(old_high - old_low) / np.mean(t_high - t_low) > 1.3  # version 1 falls back to betting above 40


def test_covers_on_a_small_monte_carlo_and_exactly() -> None:
    weights = (0.05, 0.9, 0.05)  # mostly draws: the nuisance share matters most
    x = np.random.default_rng(1).choice(SUPPORT, p=(0.3, 0.3, 0.4), size=(2000, 8))  # 45 samples, each cached
    low, high = mean_intervals(x, -1.0, 1.0, method="exact-discrete/2", support=SUPPORT)
    assert np.mean((low <= 0.1) & (high >= 0.1)) >= 0.95
    n, truth, covered = 8, 0.5, 0.0  # on [0, 1]: 0.5 for the mostly-draws shape
    for k1 in range(n + 1):
        for kc in range(n + 1 - k1):
            lo, hi = trinomial.mean_bounds(n, kc, k1, 0.5, 0.05)
            if lo <= truth <= hi:
                covered += float(multinomial.pmf([n - kc - k1, kc, k1], n, weights))
    assert covered >= 0.95


def test_the_statistic_is_the_profile_likelihood_root_and_never_falls_as_wins_replace_losses() -> None:
    n, m = 40, 0.55
    k1, kc = (a.ravel().astype(float) for a in np.meshgrid(np.arange(n + 1), np.arange(n + 1), indexing="ij"))
    keep = k1 + kc <= n
    k1, kc = k1[keep], kc[keep]
    k0 = n - k1 - kc
    ours = trinomial._root(k0, kc, k1, 0.5, m)
    old = _likelihood_root(np.stack([k0, kc, k1]), np.array([0.0, 0.5, 1.0]) - m, (0.5 * kc + k1) / n - m)
    np.testing.assert_allclose(np.sign(ours) * np.sqrt(np.abs(ours)), old, atol=1e-6)
    table = np.full((n + 1, n + 1), np.nan)
    table[k1.astype(int), kc.astype(int)] = ours
    steps = np.diff(table, axis=0)
    assert np.all(steps[~np.isnan(steps)] >= -1e-9)


def test_versions_choose_their_methods_and_ends_are_clamped() -> None:
    assert IntervalPolicy("2", (-1.0, 0.0, 1.0)).mean == "exact-discrete/1"
    assert IntervalPolicy("3", (-1.0, 0.0, 1.0)).points == "exact-discrete/2"
    assert IntervalPolicy.parse("3+anytime:betting:0.05").with_support((-1.0, 0.0, 1.0)).mean == "betting/1"
    all_wins = np.ones((1, 50))
    low, high = mean_intervals(all_wins, -1.0, 1.0, method="exact-discrete/2", support=SUPPORT)
    assert high[0] == 1.0 and 0.8 < low[0] < 1.0
