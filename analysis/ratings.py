"""Ratings from head-to-head results: Bradley–Terry strengths and Elo.

Each two-seat match is a comparison: the seat with the higher payoff wins, equal payoffs are a draw
(half a win each). Bradley–Terry strengths are fitted by the classic minorise–maximise iteration and
reported on the Elo scale (400 · log10 of the strength, centred on the mean).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

import numpy as np

from deepeval_games.records import MatchRecord

__all__ = ["bradley_terry", "elo", "pairwise_outcomes"]


def pairwise_outcomes(records: Iterable[MatchRecord]) -> list[tuple[str, str, float]]:
    """(a, b, score of a) for every completed two-seat match: 1 win, 0.5 draw, 0 loss."""
    out = []
    for record in records:
        if record.status != "complete" or len(record.seats) != 2:
            continue
        a, b = record.seats
        ra, rb = record.returns
        out.append((a, b, 1.0 if ra > rb else 0.5 if ra == rb else 0.0))
    return out


def bradley_terry(records: Iterable[MatchRecord], *, iterations: int = 500, prior: float = 0.5) -> dict[str, float]:
    """Bradley–Terry ratings on the Elo scale; ``prior`` adds that many virtual draws against every opponent."""
    games = pairwise_outcomes(records)
    players = sorted({p for a, b, _ in games for p in (a, b)})
    if not players:
        return {}
    index = {p: i for i, p in enumerate(players)}
    n = len(players)
    wins = np.zeros((n, n))
    for a, b, score in games:
        wins[index[a], index[b]] += score
        wins[index[b], index[a]] += 1.0 - score
    wins += prior * (1 - np.eye(n)) / 2  # regularises players who never lose or never win
    played = wins + wins.T
    strength = np.ones(n)
    for _ in range(iterations):
        denominator = (played / (strength[:, None] + strength[None, :])).sum(axis=1)
        updated = wins.sum(axis=1) / np.maximum(denominator, 1e-12)
        updated /= np.exp(np.mean(np.log(updated)))
        if np.allclose(updated, strength, rtol=1e-10, atol=0):
            strength = updated
            break
        strength = updated
    elo_scale = 400.0 * np.log10(strength)
    return {p: float(elo_scale[index[p]] - elo_scale.mean()) for p in players}


def elo(records: Iterable[MatchRecord], *, k: float = 16.0, start: float = 1500.0) -> dict[str, float]:
    """Sequential Elo over the matches in the order given (depends on that order, unlike Bradley–Terry)."""
    rating: dict[str, float] = defaultdict(lambda: start)
    for a, b, score in pairwise_outcomes(records):
        expected = 1.0 / (1.0 + 10 ** ((rating[b] - rating[a]) / 400.0))
        rating[a] += k * (score - expected)
        rating[b] -= k * (score - expected)
    return dict(rating)
