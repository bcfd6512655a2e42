"""Verdict outcomes of judged games: a judge's score for every seat, as one chance-node action.

A judged task (code review, translation) ends in a verdict node: a chance node whose outcomes are every
tuple of integer scores, one per seat, each in ``low..high``. The judge's choice is recorded as a move, so
the returns stay a pure function of the history. The tuple is numbered in row-major order, seat 0 most
significant::

    action = sum((score[i] - low) * base ** (n - 1 - i))   with base = high - low + 1

so for two seats scored 1..10, ``(1, 1)`` is action 0, ``(1, 2)`` action 1 and ``(10, 10)`` action 99.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["decode_scores", "encode_scores", "verdict_count"]


def verdict_count(num_seats: int, low: int, high: int) -> int:
    """How many verdicts there are: ``(high - low + 1) ** num_seats``."""
    if high < low or num_seats < 1:
        raise ValueError(f"no verdicts for {num_seats} seats scored {low}..{high}")
    return (high - low + 1) ** num_seats


def encode_scores(scores: Sequence[int], low: int, high: int) -> int:
    """The verdict action giving ``scores[i]`` to seat i; ``ValueError`` for a score outside ``low..high``."""
    base = high - low + 1
    action = 0
    for seat, score in enumerate(scores):
        if isinstance(score, bool) or not isinstance(score, int) or not low <= score <= high:
            raise ValueError(f"score of seat {seat} must be an integer in {low}..{high}, got {score!r}")
        action = action * base + (score - low)
    return action


def decode_scores(action: int, num_seats: int, low: int, high: int) -> tuple[int, ...]:
    """The per-seat scores of a verdict action (inverse of :func:`encode_scores`)."""
    count = verdict_count(num_seats, low, high)
    if not 0 <= action < count:
        raise ValueError(f"verdict action {action} outside 0..{count - 1}")
    base = high - low + 1
    scores = []
    for _ in range(num_seats):
        action, digit = divmod(action, base)
        scores.append(digit + low)
    return tuple(reversed(scores))
