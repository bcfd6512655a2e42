"""Convergence across repeats: the paper's stableness condition as a measurable stopping rule.

The paper repeats matches until the results converge. Here that is made concrete: order each player's
payoffs by repetition, and call the results *stable* when, for every player, the fixed-n 95% interval of its mean
payoff (:func:`analysis.stats.confseq.mean_interval`, on the game's payoff range) has a half-width below ``epsilon`` and
the ranking of players by mean payoff has not changed over the last ``window`` batches of matches.

This is the ``until_stable`` rule ``recheck`` (the default before the anytime-valid ``adaptive`` rule): each
interval holds at one sample size fixed in advance, and re-checking it after every extension and stopping when it
looks narrow enough is optional stopping, so the chance that some stopped interval misses its mean grows with the
number of looks. Its verdict says when the results stopped moving, not that they are right at 95%.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from analysis import views
from analysis.stats.confseq import mean_interval, records_bounds
from deepeval_games.core.records import MatchRecord
from deepeval_games.core.registry.games import game_variant

__all__ = ["Stableness", "payoff_sequences", "running_means", "stableness"]


def payoff_sequences(records: Iterable[MatchRecord], task: str | None = None) -> dict[str, list[float]]:
    """Every payoff of every player, ordered by (repeat, game, match id): the order of repetition.

    ``task`` keeps one game variant (:func:`~deepeval_games.core.registry.games.game_variant`, data items pooled). In a
    match
    whose
    seats play different roles, a player's payoffs are kept per role, under ``"name (role)"``: a programmer's payoff
    is never pooled with a reviewer's.
    """
    kept = views.select(records, lambda r: r.status == "complete" and (task is None or game_variant(r.game) == task))
    rows: dict[str, list[float]] = {}
    for fill, ordered in ((False, kept), (True, views.in_repetition_order(kept))):  # the names in the order met,
        for record in ordered:  # then the payoffs in the order of repetition
            roles = record.roles if len(set(record.roles)) > 1 else [""] * len(record.seats)
            for name, role, payoff in zip(record.seats, roles, record.returns, strict=True):
                values = rows.setdefault(f"{name} ({role})" if role else name, [])
                if fill:
                    values.append(float(payoff))
    return rows


def running_means(records: Iterable[MatchRecord], task: str | None = None) -> dict[str, list[float]]:
    """Each player's mean payoff after 1, 2, ... of its matches, in order of repetition (a convergence curve)."""
    out = {}
    for name, payoffs in payoff_sequences(records, task).items():
        values = np.asarray(payoffs, dtype=float)
        out[name] = list(np.cumsum(values) / np.arange(1, len(values) + 1))
    return out


@dataclass(frozen=True)
class Stableness:
    """The outcome of the stableness check."""

    stable: bool
    matches: int
    """Fewest matches played by any player."""
    half_widths: dict[str, float]
    """Half-width of each player's 95% interval of the mean payoff (inf: the game has no finite payoff range)."""
    ranking_history: list[tuple[str, ...]]
    """Ranking by mean payoff after each batch of matches, best first."""
    reason: str


def stableness(
    records: Sequence[MatchRecord],
    *,
    epsilon: float,
    batch: int = 5,
    window: int = 2,
    task: str | None = None,
) -> Stableness:
    """Check the stableness condition (see the module docstring).

    Batches count each player's own matches: after ``batch``, ``2 * batch``, ... matches of every player
    the ranking by mean payoff is taken; the last ``window`` rankings must equal the final one.
    """
    sequences = payoff_sequences(records, task)
    if not sequences:
        return Stableness(False, 0, {}, [], "no completed matches")
    matches = min(len(values) for values in sequences.values())
    bounds = records_bounds(r for r in records if task is None or game_variant(r.game) == task)
    half = {
        name: mean_interval(values, *bounds).half_width if bounds else math.inf for name, values in sequences.items()
    }
    history = []
    for count in [*range(batch, matches, batch), matches]:
        means = {name: float(np.mean(values[:count])) for name, values in sequences.items()}
        history.append(tuple(sorted(means, key=lambda name: (-means[name], name))))
    wide = {name: round(h, 4) for name, h in half.items() if h >= epsilon}
    if wide:
        return Stableness(False, matches, half, history, f"interval half-width >= {epsilon} for {wide}")
    if len(history) < window + 1:
        return Stableness(False, matches, half, history, f"fewer than {window + 1} batches of {batch} matches")
    if len(set(history[-(window + 1) :])) != 1:
        return Stableness(False, matches, half, history, f"ranking changed within the last {window} batches")
    return Stableness(True, matches, half, history, f"every interval half-width < {epsilon}; ranking steady")
