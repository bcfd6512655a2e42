"""The message pool: the append-only record of everything said in a match.

The paper's referee owns a pool that holds every message; players never talk to each other directly.
Each :class:`Message` says who sent it (a seat, or the referee), who may read it, and in which round
of Algorithm 1 it was written. What a seat is shown is exactly the messages addressed to it.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

__all__ = ["REFEREE", "Message", "MessagePool", "seat_label"]

REFEREE = -1
"""Sender id of the referee (seats are 0..n-1)."""


def seat_label(seat: int) -> str:
    """The anonymous id of a seat as players see it (``Player 1`` for seat 0)."""
    return f"Player {seat + 1}"


@dataclass(frozen=True)
class Message:
    """One entry of the pool."""

    index: int
    """Position in the pool, from 0."""
    round: int
    """Round of Algorithm 1 in which it was written (0 = before the first move)."""
    sender: int
    """Seat that wrote it, or :data:`REFEREE`."""
    recipients: tuple[int, ...]
    """Seats that may read it; empty for a move that only the referee reads."""
    kind: str
    """``rules``, ``observation``, ``move`` or ``verdict``."""
    text: str
    """The words, as delivered."""
    action: int | None = None
    """The game action a ``move`` stands for."""
    fields: dict[str, Any] = field(default_factory=dict)
    """Structured values behind ``text`` (for prompts and scripted bots)."""

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-able form: a shallow copy (``fields`` is a new dict holding the same values, which the pool
        never changes), so a record is not built by deep-copying every message."""
        return {
            "index": self.index,
            "round": self.round,
            "sender": self.sender,
            "recipients": list(self.recipients),
            "kind": self.kind,
            "text": self.text,
            "action": self.action,
            "fields": dict(self.fields),
        }


class MessagePool:
    """Append-only list of :class:`Message`, with per-seat views."""

    def __init__(self) -> None:
        self._messages: list[Message] = []

    def add(
        self,
        *,
        round: int,
        sender: int,
        recipients: tuple[int, ...],
        kind: str,
        text: str,
        action: int | None = None,
        fields: dict[str, Any] | None = None,
    ) -> Message:
        """Append a message and return it."""
        message = Message(
            index=len(self._messages),
            round=round,
            sender=sender,
            recipients=tuple(recipients),
            kind=kind,
            text=text,
            action=action,
            fields=dict(fields or {}),
        )
        self._messages.append(message)
        return message

    def visible_to(self, seat: int) -> tuple[Message, ...]:
        """Every message the seat may read, in order (its own moves included)."""
        return tuple(m for m in self._messages if seat in m.recipients or m.sender == seat)

    def __iter__(self) -> Iterator[Message]:
        return iter(self._messages)

    def __len__(self) -> int:
        return len(self._messages)
