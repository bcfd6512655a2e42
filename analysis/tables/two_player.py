"""Metrics of two-player games, from match records: who beats whom, by how much, and what moving first is worth.

Per pair of players (each pair once, from the view of the first name in sorted order):

* win / draw / loss rates, each with its Clopper–Pearson (exact binomial) 95% interval (a win: a higher payoff than
  the opponent), or, in a run stopped by a rule that looked at its results, the anytime-valid beta-binomial mixture
  interval at the stopping time (:meth:`analysis.stats.intervals.IntervalPolicy.rate_interval`; so are every rate
  below);
* the mean payoff with the fixed-n betting 95% interval on the game's payoff range
  (:func:`analysis.stats.confseq.mean_interval`);
* the normalized relative advantage (NRA) as GTBench defines it, over the pair's matches:
  ``(sum s_me - sum s_opp) / (sum |s_me| + sum |s_opp|)``, in [-1, 1] (0 when every score is 0). The score of a
  match is GTBench's: the game's payoffs (OpenSpiel's returns) for the winner and the loser, and 0 for both sides of a
  draw (GTBench records no score for a draw). So on a game paid +1/-1 a pair's NRA is ``(W - L) / (W + L)``, draws
  left out (6 wins, 3 draws, 1 loss: 5/7 = 0.714), and on a zero-sum game paid in chips it has the sign of the chips
  won. Its 95% interval inverts betting tests of each candidate value ``r`` (the matches' ``s_me - s_opp - r
  (|s_me| + |s_opp|)`` have mean 0 at the true NRA; :func:`analysis.stats.confseq.ratio_interval`), so it holds at any
  number of matches;
* the first-mover split: the win rate of the player when it sat in seat 0 and when it sat in seat 1.

Per player: the illegal-move rate (turns that gave no valid move, so the task's penalty or a seeded random legal
move was played, over all its turns). Per game: the mean game length in player turns, and the seat-0 / seat-1 /
draw rates over every match (the first-mover advantage of the game itself).

The payoff intervals read the matches in the order of repetition (repeat, game, match id) and treat them as
independent draws of the pair's schedule; a game with no finite payoff range gets no payoff or NRA interval
(``n/a``). All intervals are honest at small samples, so at 6-10 matches they are wide.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from analysis import views
from analysis.stats.confseq import ratio_interval, records_bounds
from analysis.stats.intervals import (
    OLD_POLICY,
    RATIO_METHODS,
    IntervalPolicy,
    win_loss_ratio_interval,
)
from analysis.tables.outcomes import turn_outcomes
from analysis.tables.scores import Table, in_repetition_order
from deepeval_games.core.records import MatchRecord

__all__ = [
    "TITLE",
    "Interval",
    "PairResult",
    "TwoPlayerSummary",
    "clopper_pearson",
    "format_two_player",
    "normalized_relative_advantage",
    "two_player_summary",
    "two_player_tables",
]


@dataclass(frozen=True)
class Interval:
    """A point estimate with its 95% interval."""

    value: float
    low: float
    high: float

    def describe(self, percent: bool = False) -> str:
        """``0.62 [0.55, 0.69]`` (or ``62% [55, 69]`` with ``percent``); ``n/a`` when nothing was measured (a pair
        that never played one of the seatings); the value and ``[n/a]`` when no interval can be given (no payoff
        range)."""
        if math.isnan(self.value):
            return "n/a"
        if math.isinf(self.low) or math.isinf(self.high):
            return f"{self.value:+.2f} [n/a]"
        if percent:
            return f"{100 * self.value:.0f}% [{100 * self.low:.0f}, {100 * self.high:.0f}]"
        return f"{self.value:+.2f} [{self.low:+.2f}, {self.high:+.2f}]"


def clopper_pearson(successes: int, trials: int) -> Interval:
    """The share ``successes / trials`` with its Clopper–Pearson 95% interval (scipy's exact binomial interval, which
    covers at least 95% at every sample size, for a number of trials fixed in advance); NaN for no trials."""
    return _rate(OLD_POLICY, successes, trials)


def _rate(policy: IntervalPolicy, successes: int, trials: int) -> Interval:
    """The share ``successes / trials`` with its interval by ``policy``'s rate method (fixed-n or anytime-valid)."""
    interval = policy.rate_interval(successes, trials)
    return Interval(interval.mean, interval.low, interval.high)


def normalized_relative_advantage(mine: Sequence[float] | np.ndarray, theirs: Sequence[float] | np.ndarray) -> float:
    """GTBench's NRA of one side over the other from their scores in each match (module docstring):
    ``(sum mine - sum theirs) / (sum |mine| + sum |theirs|)``, in [-1, 1]; 0 when every score is 0."""
    scale = float(np.sum(np.abs(mine)) + np.sum(np.abs(theirs)))
    return 0.0 if scale == 0 else float(np.sum(mine) - np.sum(theirs)) / scale


def gtbench_scores(mine: float, theirs: float) -> tuple[float, float]:
    """The two sides' scores of one match as GTBench records them: the payoffs, or 0 and 0 for a draw."""
    return (0.0, 0.0) if mine == theirs else (float(mine), float(theirs))


_UNBOUNDED = (-math.inf, math.inf)


def _mean_interval(
    values: Sequence[float] | np.ndarray, bounds: tuple[float, float] | None, policy: IntervalPolicy
) -> Interval:
    if bounds is None:
        return Interval(float(np.mean(values)), *_UNBOUNDED)
    interval = policy.mean_interval(values, *bounds)
    return Interval(interval.mean, interval.low, interval.high)


def _nra(
    mine: Sequence[float] | np.ndarray,
    theirs: Sequence[float] | np.ndarray,
    bounds: tuple[float, float] | None,
    policy: IntervalPolicy,
) -> Interval:
    """GTBench's NRA of ``mine`` over ``theirs`` (per-match payoffs) with its interval by ``policy``'s method: the
    exact conditional one of a game paid ``+c / -c`` (wins among the decisive matches), else by betting (module
    docstring)."""
    me, them = np.asarray(mine, dtype=float), np.asarray(theirs, dtype=float)
    draws = me == them  # GTBench's scores (gtbench_scores), for every match at once
    scores = np.column_stack([np.where(draws, 0.0, me), np.where(draws, 0.0, them)]).reshape(-1, 2)
    value = normalized_relative_advantage(scores[:, 0], scores[:, 1])
    if bounds is None:
        return Interval(value, *_UNBOUNDED)
    if policy.ratio == RATIO_METHODS[1]:
        wins, losses = int(np.count_nonzero(me > them)), int(np.count_nonzero(me < them))
        return Interval(value, *win_loss_ratio_interval(wins, losses))
    largest = max(abs(bounds[0]), abs(bounds[1]))
    interval = ratio_interval(scores[:, 0] - scores[:, 1], np.abs(scores).sum(axis=1), 2.0 * largest)
    return Interval(value, interval.low, interval.high)


@dataclass(frozen=True)
class PairResult:
    """How ``player`` did against ``opponent`` over their matches (both seatings)."""

    player: str
    opponent: str
    games: int
    wins: int
    draws: int
    losses: int
    win_rate: Interval
    draw_rate: Interval
    loss_rate: Interval
    mean_payoff: Interval
    nra: Interval
    """Normalized relative advantage, GTBench's (module docstring)."""
    first: Interval
    """Win rate of ``player`` when it moved first (seat 0)."""
    second: Interval
    """Win rate of ``player`` when it moved second (seat 1)."""


@dataclass(frozen=True)
class TwoPlayerSummary:
    """The two-player metrics of one game variant."""

    pairs: list[PairResult]
    illegal_rate: dict[str, Interval]
    """Per player: turns with no valid move of its own, over all its turns."""
    mean_length: float
    """Mean number of player turns per match."""
    seat_wins: tuple[Interval, Interval, Interval]
    """Over every match: seat 0 wins, seat 1 wins, draws."""
    matches: int
    policy: IntervalPolicy = OLD_POLICY
    """The interval methods of the rates, means and NRAs."""


def _pair(
    player: str,
    opponent: str,
    records: Sequence[MatchRecord],
    bounds: tuple[float, float] | None,
    policy: IntervalPolicy,
) -> PairResult:
    records = in_repetition_order(records)
    n = len(records)
    mine = np.fromiter((r.returns[r.seats.index(player)] for r in records), dtype=float, count=n)
    theirs = np.fromiter((r.returns[r.seats.index(opponent)] for r in records), dtype=float, count=n)
    wins, draws = int(np.count_nonzero(mine > theirs)), int(np.count_nonzero(mine == theirs))

    def won_in(seat: int) -> Interval:
        subset = views.select(records, lambda r: r.seats[seat] == player)
        won = sum(r.returns[seat] > r.returns[1 - seat] for r in subset)
        return _rate(policy, won, len(subset))

    return PairResult(
        player=player,
        opponent=opponent,
        games=n,
        wins=wins,
        draws=draws,
        losses=n - wins - draws,
        win_rate=_rate(policy, wins, n),
        draw_rate=_rate(policy, draws, n),
        loss_rate=_rate(policy, n - wins - draws, n),
        mean_payoff=_mean_interval(mine, bounds, policy),
        nra=_nra(mine, theirs, bounds, policy),
        first=won_in(0),
        second=won_in(1),
    )


def _between(a: str, b: str) -> Callable[[MatchRecord], bool]:
    """Whether a match is one of ``a`` against ``b`` (either seating)."""
    pair = {a, b}
    return lambda record: set(record.seats) == pair


def two_player_summary(records: Iterable[MatchRecord], *, policy: IntervalPolicy = OLD_POLICY) -> TwoPlayerSummary:
    """The metrics of complete two-seat matches of one game variant (self-play matches count for the game only),
    with the intervals of ``policy`` (resolved for the variant's records:
    :meth:`~analysis.stats.intervals.IntervalPolicy.for_records`)."""
    done = views.select(records, lambda r: r.status == "complete" and len(r.seats) == 2)  # no list of columns
    bounds = records_bounds(done) if done else None
    pairs = []
    for a, b in sorted({tuple(sorted(r.seats)) for r in done if r.seats[0] != r.seats[1]}):
        pairs.append(_pair(a, b, views.select(done, _between(a, b)), bounds, policy))
    illegal = {
        name: _rate(policy, tally.total - tally.valid, tally.total)
        for name, tally in sorted(turn_outcomes(done).items())
        if tally.total
    }
    lengths = [sum(1 for t in r.turns if t.seat >= 0) for r in done]
    seat0 = sum(r.returns[0] > r.returns[1] for r in done)
    seat1 = sum(r.returns[1] > r.returns[0] for r in done)
    return TwoPlayerSummary(
        pairs=pairs,
        illegal_rate=illegal,
        mean_length=float(np.mean(lengths)) if lengths else float("nan"),
        seat_wins=(
            _rate(policy, seat0, len(done)),
            _rate(policy, seat1, len(done)),
            _rate(policy, len(done) - seat0 - seat1, len(done)),
        ),
        matches=len(done),
        policy=policy,
    )


TITLE = "Wins, draws, losses and advantage per pair of players"
"""The two-player metrics' title."""


def _legend(policy: IntervalPolicy) -> str:
    """What the pair table's intervals are, in words (their methods and versions: :meth:`IntervalPolicy.note`, for
    the report's methods section)."""
    what = (
        "rates and a player's mean payoff against that opponent valid although the run looked at its results to "
        "decide when to stop"
        if policy.anytime
        else "rates exact, a player's mean payoff against that opponent for the number of matches fixed in advance"
    )
    return (
        f"95% intervals; {what}; few matches give wide intervals. NRA: GTBench's normalized relative advantage, wins "
        "minus losses over the matches the pair played, draws scored 0"
    )


def two_player_tables(summary: TwoPlayerSummary) -> list[Table]:
    """The metrics as tables: each pair, who wins by seat over every match, and each player's illegal-move rate."""
    header = ("player", "opponent", "games", "win", "draw", "loss", "mean payoff", "NRA", "win 1st", "win 2nd")
    pairs = tuple(
        (
            p.player,
            p.opponent,
            str(p.games),
            p.win_rate.describe(True),
            p.draw_rate.describe(True),
            p.loss_rate.describe(True),
            p.mean_payoff.describe(),
            p.nra.describe(),
            p.first.describe(True),
            p.second.describe(True),
        )
        for p in summary.pairs
    )
    s0, s1, draw = summary.seat_wins
    seats = (s0.describe(True), s1.describe(True), draw.describe(True), str(summary.matches))
    return [
        Table("two_player", TITLE, header, pairs, note=_legend(summary.policy) + "."),
        Table(
            "two_player_seats",
            "Wins by seat over every match (the game's first-mover advantage)",
            ("seat 0 wins", "seat 1 wins", "draws", "matches", "mean length (turns)"),
            ((*seats, f"{summary.mean_length:.1f}"),),
        ),
        Table(
            "two_player_illegal",
            "Illegal-move rate per player (turns with no valid move of its own)",
            ("player", "illegal-move rate"),
            tuple((name, rate.describe(True)) for name, rate in summary.illegal_rate.items()),
        ),
    ]


def format_two_player(
    records: Iterable[MatchRecord], *, summary: TwoPlayerSummary | None = None, policy: IntervalPolicy = OLD_POLICY
) -> str:
    """The two-player metrics as fixed-width text, for the report, under :data:`TITLE` (``summary``: the records'
    summary, when made already; else made with the intervals of ``policy``)."""
    summary = summary if summary is not None else two_player_summary(records, policy=policy)
    if not summary.matches:
        return f"{TITLE}: no complete matches"
    pairs = two_player_tables(summary)[0]
    widths = [max(len(row[i]) for row in [pairs.header, *pairs.rows]) for i in range(len(pairs.header))]
    lines = [f"{TITLE} ({_legend(summary.policy)}):"]
    lines += [
        "  " + "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()
        for row in [pairs.header, *pairs.rows]
    ]
    s0, s1, draw = summary.seat_wins
    lines.append(
        f"  first mover: seat 0 wins {s0.describe(True)}, seat 1 wins {s1.describe(True)}, "
        f"draws {draw.describe(True)} over {summary.matches} matches; mean length {summary.mean_length:.1f} turns"
    )
    illegal = ", ".join(f"{name} {rate.describe(True)}" for name, rate in summary.illegal_rate.items())
    lines.append(f"  illegal-move rate: {illegal}")
    return "\n".join(lines)
