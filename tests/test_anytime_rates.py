"""Rates and points shares of an adaptively collected run get anytime-valid intervals: Robbins' beta-binomial
mixture sequence for a rate (:func:`analysis.stats.exact.mixture_rate_interval`), the run's betting sequence on
[0, 1] for a points share; a run of a fixed number of matches keeps Clopper–Pearson and the exact points interval."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from analysis.stats.confseq import make_sequence
from analysis.stats.exact import (
    binomial_intervals,
    clopper_pearson_interval,
    mixture_log_wealth,
    mixture_rate_interval,
)
from analysis.stats.intervals import (
    MIXTURE_RATE_METHOD,
    RATE_METHOD,
    IntervalPolicy,
)
from analysis.stats.ratings import points_share
from analysis.tables.two_player import format_two_player, two_player_summary
from deepeval_games.core.records import MatchRecord, TurnRecord

ADAPTIVE = IntervalPolicy("2", sequence="betting", alpha=0.05)
"""The interval policy of a run stopped by the adaptive rule (betting sequences at 95%)."""
FIXED = IntervalPolicy("2")


# -- the mixture interval -----------------------------------------------------------------------------------------


def test_the_mixture_interval_contains_the_share_and_shrinks_with_n() -> None:
    widths = []
    for n in (10, 30, 100, 300, 1000):
        k = round(0.3 * n)
        low, high = mixture_rate_interval(k, n)
        assert 0.0 < low < k / n < high < 1.0
        widths.append(high - low)
    assert all(later < earlier for earlier, later in itertools.pairwise(widths))
    for n in (1, 5, 40):  # no success: the lower end is 0; every one: the upper end is 1
        assert mixture_rate_interval(0, n)[0] == 0.0 and mixture_rate_interval(n, n)[1] == 1.0
        assert mixture_rate_interval(0, n)[1] == pytest.approx(1.0 - mixture_rate_interval(n, n)[0], abs=1e-12)
    assert mixture_rate_interval(0, 0) == (0.0, 1.0)
    with pytest.raises(ValueError, match="successes <= trials"):
        mixture_rate_interval(4, 3)


@pytest.mark.parametrize("n", [5, 10, 30, 100])
def test_the_mixture_interval_is_wider_than_clopper_pearson_at_the_same_counts(n: int) -> None:
    for k in range(n + 1):
        low, high = mixture_rate_interval(k, n)
        cp_low, cp_high = clopper_pearson_interval(k, n)
        assert high - low > cp_high - cp_low
        assert low <= cp_low + 1e-12 and high >= cp_high - 1e-12  # and contains it, at every count measured


@pytest.mark.parametrize(("k", "n"), [(0, 10), (3, 10), (10, 10), (7, 30), (50, 100), (270, 300), (1, 1000)])
def test_the_mixture_interval_is_the_set_where_the_mixture_stays_below_one_over_alpha(k: int, n: int) -> None:
    grid = np.linspace(0.0, 1.0, 2_000_001)  # a step of 5e-7
    inside = np.flatnonzero(mixture_log_wealth(k, n, grid) < math.log(1 / 0.05))
    assert inside.size and np.all(np.diff(inside) == 1)  # one interval
    low, high = mixture_rate_interval(k, n, 0.05)
    assert abs(low - grid[inside[0]]) <= 1e-6 and abs(high - grid[inside[-1]]) <= 1e-6
    assert grid[inside[0]] >= low and grid[inside[-1]] <= high  # the grid's points inside lie inside


def test_the_mixture_sequence_covers_at_every_n_at_once_and_clopper_pearson_does_not() -> None:
    alpha, p, streams, length = 0.05, 0.3, 2000, 200
    rng = np.random.default_rng(20261207)
    successes = np.cumsum(rng.random((streams, length)) < p, axis=1)
    trials = np.broadcast_to(np.arange(1, length + 1), successes.shape)
    seen: dict[tuple[int, int], tuple[float, float]] = {}
    for key in set(zip(successes.ravel().tolist(), trials.ravel().tolist(), strict=True)):
        seen[key] = mixture_rate_interval(*key, alpha)
    low = np.vectorize(lambda k, n: seen[(k, n)][0])(successes, trials)
    high = np.vectorize(lambda k, n: seen[(k, n)][1])(successes, trials)
    ever_missed = ((low >= p) | (high <= p)).any(axis=1).mean()
    assert ever_missed <= alpha + 0.015  # Ville: at most alpha, at every n at once (sd of the estimate: 0.005)
    cp_low, cp_high = binomial_intervals(successes, trials, alpha)  # a fixed-n interval, looked at after each match
    assert ((cp_low > p) | (cp_high < p)).any(axis=1).mean() > 2 * alpha


# -- the policy routes each kind of run to its interval ------------------------------------------------------------


def test_the_policy_gives_clopper_pearson_fixed_and_the_mixture_anytime() -> None:
    fixed, anytime = FIXED, ADAPTIVE
    assert (fixed.rate, anytime.rate) == (RATE_METHOD, MIXTURE_RATE_METHOD)
    assert (RATE_METHOD, MIXTURE_RATE_METHOD) == ("clopper-pearson/1", "beta-binomial-mixture/1")
    assert IntervalPolicy("1", sequence="bernstein", alpha=0.1).rate == MIXTURE_RATE_METHOD
    rate = fixed.rate_interval(7, 20)
    assert (rate.low, rate.high) == clopper_pearson_interval(7, 20) and rate.mean == 0.35 and rate.n == 20
    rate = anytime.rate_interval(7, 20)
    assert (rate.low, rate.high) == mixture_rate_interval(7, 20, 0.05) and rate.mean == 0.35
    looser = IntervalPolicy("2", sequence="betting", alpha=0.2).rate_interval(7, 20)
    assert looser.high - looser.low < rate.high - rate.low  # at the run's own level
    assert math.isnan(anytime.rate_interval(0, 0).mean) and math.isnan(fixed.rate_interval(0, 0).low)


def test_the_policy_gives_a_points_share_the_runs_sequence_anytime() -> None:
    values = [1.0, 0.5, 0.0, 1.0, 1.0, 0.5, 1.0, 0.0, 1.0, 1.0]
    fixed, anytime = FIXED, ADAPTIVE
    assert (fixed.points, anytime.points) == ("exact-discrete/1", "betting/1")
    share = anytime.points_interval(values)
    expected = make_sequence("betting", 0.0, 1.0, alpha=0.05).extend(values)
    assert (share.low, share.high, share.mean, share.n) == (expected.low, expected.high, 0.7, 10)
    exact = fixed.points_interval(values)
    assert share.high - share.low > exact.high - exact.low  # the price of looking
    assert IntervalPolicy("2", sequence="bernstein", alpha=0.05).points_interval(values).low == pytest.approx(
        make_sequence("bernstein", 0.0, 1.0).extend(values).low
    )
    assert math.isnan(anytime.points_interval([]).mean)


def test_the_note_names_the_rate_and_points_methods_of_each_kind() -> None:
    fixed, anytime = FIXED.note(), ADAPTIVE.note()
    assert "rates clopper-pearson/1" in fixed and "points shares exact-discrete/1" in fixed
    assert "rates anytime-valid beta-binomial-mixture/1" in anytime
    assert "points shares anytime-valid betting/1" in anytime
    assert "clopper" not in anytime and "exact-discrete" not in anytime


# -- the two-player summary and the ratings of an adaptive run -----------------------------------------------------


def _match(index: int, seats: tuple[str, str], returns: tuple[float, float], invalid: bool) -> MatchRecord:
    turns = [
        TurnRecord(
            index=i, round=i + 1, seat=i % 2, action=i, action_string=str(i),
            outcome="invalid" if invalid and i == 0 else "ok",
        )
        for i in range(5)
    ]  # fmt: skip
    return MatchRecord(
        match_id=f"m{index:03d}", game="tic_tac_toe()", seats=list(seats), roles=["player", "player"], turns=turns,
        returns=list(returns), status="complete", repeat=index // 2,
    )  # fmt: skip


def _records() -> list[MatchRecord]:
    """A beats b 9 times, draws 3, loses 2, seats alternating; b's first move is invalid in 4 matches."""
    outcomes = [(1.0, -1.0)] * 9 + [(0.0, 0.0)] * 3 + [(-1.0, 1.0)] * 2
    records = []
    for i, (mine, theirs) in enumerate(outcomes):
        seats, returns = (("a", "b"), (mine, theirs)) if i % 2 == 0 else (("b", "a"), (theirs, mine))
        records.append(_match(i, seats, returns, invalid=i % 2 == 1 and i < 8))
    return records


def test_an_adaptive_runs_two_player_summary_prints_anytime_rates() -> None:
    records = _records()
    fixed, anytime = two_player_summary(records, policy=FIXED), two_player_summary(records, policy=ADAPTIVE)
    assert anytime.policy.anytime and not fixed.policy.anytime
    (pair,), (fixed_pair,) = anytime.pairs, fixed.pairs
    assert (pair.wins, pair.draws, pair.losses) == (9, 3, 2)
    for rate, count, n in ((pair.win_rate, 9, 14), (pair.draw_rate, 3, 14), (pair.loss_rate, 2, 14)):
        assert (rate.value, rate.low, rate.high) == (count / n, *mixture_rate_interval(count, n, 0.05))
    for rate, count, n in ((fixed_pair.win_rate, 9, 14), (fixed_pair.draw_rate, 3, 14)):
        assert (rate.low, rate.high) == clopper_pearson_interval(count, n)
    assert (pair.first.low, pair.first.high) == mixture_rate_interval(5, 7, 0.05)  # a won 5 of 7 as seat 0
    illegal = anytime.illegal_rate["b"]  # b: 4 invalid of its 2 turns a match (seat 1) or 3 (seat 0)
    assert (illegal.low, illegal.high) == mixture_rate_interval(4, 35, 0.05)
    seat0 = anytime.seat_wins[0]
    assert (seat0.low, seat0.high) == mixture_rate_interval(round(seat0.value * 14), 14, 0.05)
    text = format_two_player(records, summary=anytime)
    assert "rates and a player's mean payoff against that opponent valid although the run looked" in text
    low, high = mixture_rate_interval(9, 14, 0.05)
    assert f"64% [{100 * low:.0f}, {100 * high:.0f}]" in text
    assert f"[{100 * low:.0f}, {100 * high:.0f}]" not in format_two_player(records, policy=FIXED)
    assert "rates exact" in format_two_player(records, policy=FIXED)


def test_an_adaptive_runs_points_shares_are_the_sequence() -> None:
    records = _records()
    shares = points_share(records, policy=ADAPTIVE)
    fixed = points_share(records, policy=FIXED)
    assert shares["a"].mean == fixed["a"].mean == pytest.approx(10.5 / 14)
    in_order = [1.0] * 9 + [0.5] * 3 + [0.0] * 2  # a's points in the order of repetition (match ids in order)
    expected = make_sequence("betting", 0.0, 1.0, alpha=0.05).extend(in_order)
    assert (shares["a"].low, shares["a"].high) == (expected.low, expected.high)
    against = make_sequence("betting", 0.0, 1.0, alpha=0.05).extend([1.0 - v for v in in_order])
    assert (shares["b"].low, shares["b"].high) == (against.low, against.high)
    assert (fixed["a"].low, fixed["a"].high) != (expected.low, expected.high)  # the fixed run's: exact-discrete/1
