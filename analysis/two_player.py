"""Metrics of two-player games, from match records: who beats whom, by how much, and what moving first is worth.

Per pair of players (each pair once, from the view of the first name in sorted order):

* win / draw / loss rates, each with a Wilson 95% interval (a win: a higher payoff than the opponent);
* the mean payoff with a bootstrap 95% interval;
* the normalized relative advantage of GTBench, ``(s_me - s_opp) / (|s_me| + |s_opp|)`` per match (0 when both
  payoffs are 0), averaged, with a bootstrap 95% interval;
* the first-mover split: the win rate of the player when it sat in seat 0 and when it sat in seat 1.

Per player: the illegal-move rate (turns that gave no valid move, so the task's penalty or a seeded random legal
move was played, over all its turns). Per game: the mean game length in player turns, and the seat-0 / seat-1 /
draw rates over every match (the first-mover advantage of the game itself).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from analysis.outcomes import turn_outcomes
from analysis.scores import bootstrap_ci
from deepeval_games.core.records import MatchRecord

__all__ = [
    "Interval",
    "PairResult",
    "TwoPlayerSummary",
    "format_two_player",
    "normalized_relative_advantage",
    "two_player_summary",
    "wilson",
]


@dataclass(frozen=True)
class Interval:
    """A point estimate with its 95% interval."""

    value: float
    low: float
    high: float

    def describe(self, percent: bool = False) -> str:
        """``0.62 [0.55, 0.69]`` (or ``62% [55, 69]`` with ``percent``); ``n/a`` when nothing was measured (a pair
        that never played one of the seatings)."""
        if math.isnan(self.value):
            return "n/a"
        if percent:
            return f"{100 * self.value:.0f}% [{100 * self.low:.0f}, {100 * self.high:.0f}]"
        return f"{self.value:+.2f} [{self.low:+.2f}, {self.high:+.2f}]"


def wilson(successes: int, trials: int) -> Interval:
    """The share ``successes / trials`` with its Wilson 95% interval (scipy); NaN for no trials."""
    if trials == 0:
        return Interval(float("nan"), float("nan"), float("nan"))
    from scipy.stats import binomtest  # scipy loads only when a report needs it

    ci = binomtest(successes, trials).proportion_ci(confidence_level=0.95, method="wilson")
    return Interval(successes / trials, float(ci.low), float(ci.high))


def normalized_relative_advantage(mine: float, theirs: float) -> float:
    """``(mine - theirs) / (|mine| + |theirs|)``, in [-1, 1]; 0 when both are 0."""
    scale = abs(mine) + abs(theirs)
    return 0.0 if scale == 0 else (mine - theirs) / scale


def _mean_interval(values: Sequence[float]) -> Interval:
    low, high = bootstrap_ci(values)
    return Interval(float(np.mean(values)), low, high)


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
    """Normalized relative advantage (GTBench)."""
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


def _pair(player: str, opponent: str, records: Sequence[MatchRecord]) -> PairResult:
    mine = [r.returns[r.seats.index(player)] for r in records]
    theirs = [r.returns[r.seats.index(opponent)] for r in records]
    wins = sum(m > t for m, t in zip(mine, theirs, strict=True))
    draws = sum(m == t for m, t in zip(mine, theirs, strict=True))
    n = len(records)

    def won_in(seat: int) -> Interval:
        subset = [r for r in records if r.seats[seat] == player]
        won = sum(r.returns[seat] > r.returns[1 - seat] for r in subset)
        return wilson(won, len(subset))

    return PairResult(
        player=player,
        opponent=opponent,
        games=n,
        wins=wins,
        draws=draws,
        losses=n - wins - draws,
        win_rate=wilson(wins, n),
        draw_rate=wilson(draws, n),
        loss_rate=wilson(n - wins - draws, n),
        mean_payoff=_mean_interval(mine),
        nra=_mean_interval([normalized_relative_advantage(m, t) for m, t in zip(mine, theirs, strict=True)]),
        first=won_in(0),
        second=won_in(1),
    )


def two_player_summary(records: Iterable[MatchRecord]) -> TwoPlayerSummary:
    """The metrics of complete two-seat matches of one game variant (self-play matches count for the game only)."""
    done = [r for r in records if r.status == "complete" and len(r.seats) == 2]
    pairs = []
    for a, b in sorted({tuple(sorted(r.seats)) for r in done if r.seats[0] != r.seats[1]}):
        pairs.append(_pair(a, b, [r for r in done if set(r.seats) == {a, b}]))
    illegal = {
        name: wilson(tally.total - tally.valid, tally.total)
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
        seat_wins=(wilson(seat0, len(done)), wilson(seat1, len(done)), wilson(len(done) - seat0 - seat1, len(done))),
        matches=len(done),
    )


def format_two_player(records: Iterable[MatchRecord]) -> str:
    """The two-player metrics as fixed-width text, for the report."""
    summary = two_player_summary(records)
    if not summary.matches:
        return "Two-player metrics: no complete matches"
    header = ["player", "opponent", "games", "win", "draw", "loss", "mean payoff", "NRA", "win 1st", "win 2nd"]
    rows = [
        [
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
        ]
        for p in summary.pairs
    ]
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    lines = ["Two-player metrics (95% intervals; NRA: normalized relative advantage):"]
    lines += [
        "  " + "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() for row in [header, *rows]
    ]
    s0, s1, draw = summary.seat_wins
    lines.append(
        f"  first mover: seat 0 wins {s0.describe(True)}, seat 1 wins {s1.describe(True)}, "
        f"draws {draw.describe(True)} over {summary.matches} matches; mean length {summary.mean_length:.1f} turns"
    )
    illegal = ", ".join(f"{name} {rate.describe(True)}" for name, rate in summary.illegal_rate.items())
    lines.append(f"  illegal-move rate: {illegal}")
    return "\n".join(lines)
