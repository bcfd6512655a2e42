"""Which context policy each LLM turn ran under, and which turns were stand-ins for a prompt that did not fit.

An LLM seat asks for a context policy (``full``, ``window`` or ``state``: the player's ``context`` setting, recorded
in its identity when it is not ``full``). Before each ask the prompt is fitted to the model's window; every policy
that did not fit is on record as a ``context_overflow`` attempt that sent nothing (the provider's own overflow
answer is one too), and the turn ran under the next smaller policy. A turn whose outcome is ``context_overflow``
had no prompt that fit: the referee played a stand-in move, which is not the model's move, valid or invalid.
Reads :attr:`MatchRecord.turns` and :attr:`MatchRecord.players` only.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from deepeval_games.core.bot import Outcome
from deepeval_games.core.records import MatchRecord, TurnRecord

__all__ = ["CONTEXT_COLUMNS", "STAND_IN", "context_use", "format_context_use", "turn_policy"]

POLICIES = ("full", "window", "state")
"""The context policies in fallback order (as :mod:`llm_bots.context` has them)."""

STAND_IN = "stand-in"
"""A turn no prompt fit: the referee's stand-in move."""

CONTEXT_COLUMNS = (*POLICIES, STAND_IN)
"""The columns of :func:`format_context_use`."""


def turn_policy(turn: TurnRecord, asked: str = "full") -> str:
    """The policy ``turn`` ran under (its last ask's), the player having asked for ``asked``; :data:`STAND_IN`
    for a turn that no prompt fit."""
    if Outcome(turn.outcome) is Outcome.CONTEXT_OVERFLOW:
        return STAND_IN
    skipped = sum(1 for attempt in turn.attempts if attempt.status == Outcome.CONTEXT_OVERFLOW.value)
    start = POLICIES.index(asked) if asked in POLICIES else 0
    return POLICIES[min(start + skipped, len(POLICIES) - 1)]


def context_use(records: Iterable[MatchRecord]) -> dict[str, dict[str, int]]:
    """Per LLM player (sorted by name), its turns per policy and its stand-ins (policies never used are absent)."""
    out: dict[str, dict[str, int]] = {}
    for record in records:
        for turn in record.turns:
            if not 0 <= turn.seat < len(record.seats):
                continue
            player = record.players[turn.seat] if turn.seat < len(record.players) else {}
            if player.get("kind") != "llm":
                continue
            tally = out.setdefault(record.seats[turn.seat], {})
            used = turn_policy(turn, str(player.get("context", "full")))
            tally[used] = tally.get(used, 0) + 1
    return dict(sorted(out.items()))


def format_context_use(use: Mapping[str, Mapping[str, int]]) -> str:
    """``Context per turn:`` then one line per player, ``  gpt  full 30, window 10, stand-in 0 (of 40)``."""
    if not use:
        return "Context per turn: no LLM turns"
    width = max(len(name) for name in use)
    lines = ["Context per turn (the policy each turn ran under; stand-in: no prompt fit, not the model's move):"]
    for name, tally in use.items():
        parts = [
            f"{column} {tally.get(column, 0)}" for column in CONTEXT_COLUMNS if tally.get(column) or column == STAND_IN
        ]
        lines.append(f"  {name.ljust(width)}  {', '.join(parts)} (of {sum(tally.values())})")
    return "\n".join(lines)
