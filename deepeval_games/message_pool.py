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
        data = self.__dict__.copy()  # the fields, in order (the pool's fast constructors keep that order too)
        data["recipients"] = list(self.recipients)
        data["fields"] = dict(self.fields)
        return data


_new = object.__new__
_set = object.__setattr__


class MessagePool:
    """Append-only list of :class:`Message`, with per-seat views.

    Each seat's view (its inbox) is kept as messages are added, so reading it costs nothing per message already in
    the pool: a match's views cost linear time in its messages, not quadratic. (The referee's, which no seat reads,
    is found by a scan when asked.)
    """

    def __init__(self) -> None:
        self._messages: list[Message] = []
        self._inboxes: dict[int, list[Message]] = {}
        self._views: dict[int, tuple[Message, ...]] = {}
        """Per seat, its inbox as a tuple, as last read (dropped when a message reaches the seat)."""

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
        recipients = tuple(recipients)
        message = _new(Message)  # a frozen dataclass filled without its per-field __setattr__: the same message
        _set(
            message,
            "__dict__",
            {
                "index": len(self._messages),
                "round": round,
                "sender": sender,
                "recipients": recipients,
                "kind": kind,
                "text": text,
                "action": action,
                "fields": dict(fields) if fields else {},
            },
        )
        self._messages.append(message)
        inboxes, views = self._inboxes, self._views
        for seat in recipients if len(recipients) < 2 else dict.fromkeys(recipients):  # each seat once
            if seat != REFEREE:
                inboxes.setdefault(seat, []).append(message)
                views.pop(seat, None)
        if sender not in recipients and sender != REFEREE:
            inboxes.setdefault(sender, []).append(message)
            views.pop(sender, None)
        return message

    def add_move(self, round: int, sender: int, text: str, action: int) -> Message:
        """``add(round=round, sender=sender, recipients=(), kind="move", text=text, action=action)``, the
        referee's most frequent message, without the general method's keyword handling."""
        values = {"index": 0, "round": round, "sender": sender, "recipients": (), "kind": "move", "text": text}
        values["action"], values["fields"] = action, {}
        return self._append_for(values, sender)

    def tell(self, round: int, seat: int, kind: str, text: str, fields: dict[str, Any]) -> Message:
        """``add(round=round, sender=REFEREE, recipients=(seat,), kind=kind, text=text, fields=fields)``: the
        referee's word to one seat (its view), without the general method's keyword handling."""
        values = {"index": 0, "round": round, "sender": REFEREE, "recipients": (seat,), "kind": kind, "text": text}
        values["action"], values["fields"] = None, dict(fields) if fields else {}
        return self._append_for(values, seat)  # the referee's own "inbox" is not kept: visible_to scans the pool

    def _append_for(self, values: dict[str, Any], seat: int) -> Message:
        """Append the message of ``values`` (every field, in order; its index is set here) to the pool and to the
        one inbox it goes to, ``seat``'s, without the frozen dataclass's per-field ``__setattr__``."""
        messages = self._messages
        values["index"] = len(messages)
        message = _new(Message)
        _set(message, "__dict__", values)
        messages.append(message)
        inbox = self._inboxes.get(seat)
        if inbox is None:
            self._inboxes[seat] = [message]
        else:
            inbox.append(message)
        self._views.pop(seat, None)
        return message

    def visible_to(self, seat: int) -> tuple[Message, ...]:
        """Every message the seat may read, in order (its own moves included)."""
        if seat == REFEREE:  # everything the referee said or was sent (no seat reads this; not kept as it goes)
            return tuple(m for m in self._messages if m.sender == REFEREE or REFEREE in m.recipients)
        view = self._views.get(seat)
        if view is None:
            view = self._views[seat] = tuple(self._inboxes.get(seat, ()))
        return view

    def __iter__(self) -> Iterator[Message]:
        return iter(self._messages)

    def __len__(self) -> int:
        return len(self._messages)
