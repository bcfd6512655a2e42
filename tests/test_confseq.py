"""Anytime-valid confidence sequences: coverage at every look, unlike a bootstrap interval checked every batch."""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pytest

from analysis.stats.confseq import (
    METHODS,
    BettingConfidenceSequence,
    ConfidenceSequence,
    confidence_sequence,
    make_sequence,
)
from bench.bench_coverage import percentile_bootstrap as bootstrap_ci

RUNS = 1000
LENGTH = 100
BATCH = 10
LOW, HIGH = 0.0, 10.0
TRUE_MEAN = HIGH * 2 / 7  # Beta(2, 5) scaled to [0, 10]


def _payoffs(seed: int) -> np.ndarray:
    return np.random.default_rng(seed).beta(2, 5, size=LENGTH) * HIGH


def test_sequences_cover_at_every_look_where_a_rechecked_bootstrap_does_not() -> None:
    cs_misses = dict.fromkeys(METHODS, 0)
    bootstrap_misses = 0
    for seed in range(RUNS):
        values = _payoffs(seed)
        for method in METHODS:
            intervals = confidence_sequence(values, LOW, HIGH, method=method)
            cs_misses[method] += any(not iv.low <= TRUE_MEAN <= iv.high for iv in intervals)  # every value is a look
        for n in range(BATCH, LENGTH + 1, BATCH):  # the old rule: a fixed-sample interval re-checked each batch
            low, high = bootstrap_ci(values[:n], samples=200, seed=seed)
            if not low <= TRUE_MEAN <= high:
                bootstrap_misses += 1
                break
    assert all(misses / RUNS <= 0.05 for misses in cs_misses.values()), cs_misses
    assert bootstrap_misses / RUNS > 0.10  # optional stopping: far above the nominal 5%
    assert bootstrap_misses > 5 * max(*cs_misses.values(), 1)


@pytest.mark.parametrize("method", METHODS)
def test_sequence_shrinks_is_nested_and_streams(method: str) -> None:
    values = _payoffs(7)
    intervals = confidence_sequence(values, LOW, HIGH, method=method)
    assert intervals[-1].half_width < intervals[9].half_width < HIGH / 2
    assert all(b.low >= a.low and b.high <= a.high for a, b in itertools.pairwise(intervals))
    streamed = make_sequence(method, LOW, HIGH)
    for value in values[:50]:
        streamed.update(value)
    assert streamed.extend(values[50:]) == intervals[-1]
    assert intervals[-1].mean == pytest.approx(values.mean())
    assert intervals[-1].n == LENGTH


@pytest.mark.parametrize("method", METHODS)
def test_noisier_data_gives_wider_intervals(method: str) -> None:
    rng = np.random.default_rng(0)
    calm = confidence_sequence(5 + rng.uniform(-0.5, 0.5, 200), LOW, HIGH, method=method)[-1]
    noisy = confidence_sequence(5 + rng.uniform(-5, 5, 200), LOW, HIGH, method=method)[-1]
    assert calm.half_width < noisy.half_width


def test_betting_is_narrower_when_payoffs_vary_little_against_the_range() -> None:
    values = np.clip(50 + 3 * np.random.default_rng(1).standard_normal(100), 0, 80)
    betting = confidence_sequence(values, 0, 80, method="betting")[-1]
    bernstein = confidence_sequence(values, 0, 80, method="bernstein")[-1]
    assert betting.low <= 50 <= betting.high and betting.half_width < bernstein.half_width / 2


def test_bad_input_is_refused_clearly() -> None:
    with pytest.raises(ValueError, match="low < high"):
        ConfidenceSequence(1.0, 1.0)
    with pytest.raises(ValueError, match="alpha"):
        ConfidenceSequence(0.0, 1.0, alpha=1.5)
    with pytest.raises(ValueError, match="outside the declared range"):
        ConfidenceSequence(0.0, 1.0).update(2.0)
    with pytest.raises(ValueError, match="unknown confidence sequence"):
        make_sequence("normal", 0.0, 1.0)
    with pytest.raises(ValueError, match="outside the declared range"):
        BettingConfidenceSequence(0.0, 1.0).update(-0.1)
    empty = ConfidenceSequence(0.0, 4.0).interval()
    assert (empty.low, empty.high, empty.n) == (0.0, 4.0, 0)


def test_every_reported_mean_gets_an_anytime_interval_per_role_and_variant(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from analysis.stats.confseq import anytime_scores
    from deepeval_games.app.commands.cli import main
    from deepeval_games.app.storage.store import Store
    from deepeval_games.core.records import MatchRecord

    pgg = "deepeval_public_goods(alpha=1.6,endowment=10,goal=most,mode=1,players=2,rounds=1)"  # payoffs in [0, 18]
    records = [
        MatchRecord(match_id=f"m{i}", game=pgg, seats=["a", "b"], returns=[14.0 + i % 2, 6.0], turns=[], repeat=i)
        for i in range(40)
    ]
    scores = anytime_scores(records)
    assert [(s.player, s.role, s.interval.n) for s in scores] == [("a", "player", 40), ("b", "player", 40)]
    a, b = (s.interval for s in scores)
    assert a.low <= 14.5 <= a.high and b.low <= 6.0 <= b.high and a.low > b.high and a.high - a.low < 9
    run = tmp_path / "run"
    with Store(run, spec_hash="x", spec_text="{}") as store:
        for record in records:
            store.commit(record)
    assert main(["report", str(run)]) == 0  # a run of a fixed size: the fixed-n interval, and no other beside it
    fixed = capsys.readouterr().out
    assert "for the number of matches fixed in advance" in fixed and "looked at its results" not in fixed
    assert main(["report", str(run), "--interval", "anytime"]) == 0  # the other kind, on request, in its place
    anytime = capsys.readouterr().out
    assert "valid although the run looked at its results to decide when to stop" in anytime
    assert "fixed in advance;" not in anytime


@pytest.mark.parametrize("anytime", [False, True])
def test_the_banded_search_gives_the_interval_of_testing_every_candidate(anytime: bool) -> None:
    """``unit_mean_intervals`` tests every candidate only near the interval (K+ falls and K- rises with the mean);
    its bounds are those of the whole grid to the last bit, on continuous, three-valued, constant and 0/1 samples
    of many sizes and levels."""
    from analysis.stats.confseq import _grid, _HedgedCapital, unit_mean_intervals

    rng = np.random.default_rng(7)
    for trial in range(60):
        n, rows = int(rng.choice([1, 3, 10, 30, 200])), int(rng.integers(1, 5))
        x = [
            rng.random((rows, n)) ** rng.uniform(0.2, 5.0),
            rng.integers(0, 3, (rows, n)) / 2.0,
            np.full((rows, n), rng.random()),
            (rng.random((rows, n)) < rng.random()).astype(float),
        ][trial % 4]
        alpha = float(rng.choice([0.01, 0.05, 0.2]))
        whole = _HedgedCapital(rows, _grid(1000), alpha=alpha, horizon=None if anytime else n)
        whole.advance(x)
        expected = whole.bounds()
        got = unit_mean_intervals(x, alpha=alpha, anytime=anytime)
        assert np.array_equal(got[0], expected[0]) and np.array_equal(got[1], expected[1]), (trial, n, alpha)


def _reference_bounds(x: np.ndarray, alpha: float, horizon: int | None, size: int = 1000) -> tuple[float, float]:
    """The hedged-capital interval of one stream, written out a step and a candidate list at a time from the module
    docstring (the check that the vectorised capital computes the same thing)."""
    grid = (np.arange(size) + 0.5) / size
    up, down, excluded = np.zeros(size), np.zeros(size), np.zeros(size, dtype=bool)
    total, var_sum, threshold = 0.0, 0.25, np.log(2.0 / alpha)
    for t, value in enumerate(x, start=1):
        scale = (var_sum / t) * (horizon if horizon is not None else t * np.log1p(t))
        bet = np.sqrt(2.0 * np.log(2.0 / alpha) / scale)
        up += np.log1p(np.minimum(bet, np.minimum(0.75 / grid, 1e6)) * (value - grid))
        down += np.log1p(-np.minimum(bet, np.minimum(0.75 / (1.0 - grid), 1e6)) * (value - grid))
        if horizon is None or t >= horizon:
            excluded |= np.logaddexp(up, down) >= threshold
        total += value
        var_sum += (value - (0.5 + total) / (t + 1)) ** 2
    kept = np.flatnonzero(~excluded)
    assert kept.size, "every candidate excluded: pick another sample"
    return max(grid[kept[0]] - 0.5 / size, 0.0), min(grid[kept[-1]] + 0.5 / size, 1.0)


@pytest.mark.parametrize("anytime", [False, True])
def test_the_capital_is_the_written_out_one(anytime: bool) -> None:
    from analysis.stats.confseq import unit_mean_intervals

    rng = np.random.default_rng(3)
    for n in (1, 7, 40, 150):
        x = rng.random(n) ** 2
        lo, hi = unit_mean_intervals(x[None, :], anytime=anytime)
        assert (lo[0], hi[0]) == pytest.approx(_reference_bounds(x, 0.05, None if anytime else n), abs=1e-12)
