"""The message pool: the append-only record of everything said in a match.

The paper's referee owns a pool that holds every message; players never talk to each other directly.
Each :class:`Message` says who sent it (a seat, or the referee), who may read it, and in which round
of Algorithm 1 it was written. What a seat is shown is exactly the messages addressed to it.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any

import msgspec

__all__ = ["REFEREE", "InboxAt", "Message", "MessagePool", "seat_label"]

REFEREE = -1
"""Sender id of the referee (seats are 0..n-1)."""


def seat_label(seat: int) -> str:
    """The anonymous id of a seat as players see it (``Player 1`` for seat 0)."""
    return f"Player {seat + 1}"


class Message(msgspec.Struct, frozen=True):
    """One entry of the pool (a frozen :class:`msgspec.Struct`, like a turn's ``Observation``: made in C)."""

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
    fields: dict[str, Any] = msgspec.field(default_factory=dict)
    """Structured values behind ``text`` (for prompts and scripted bots)."""

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-able form: a shallow copy (``fields`` is a new dict holding the same values, which the pool
        never changes), so a record is not built by deep-copying every message."""
        data = msgspec.structs.asdict(self)  # the fields, in order
        data["recipients"] = list(self.recipients)
        data["fields"] = dict(self.fields)
        return data


_MOVE: dict[str, Any] = dict.fromkeys(("index", "round", "sender", "recipients", "kind", "text", "action", "fields"))
"""A message record's keys in order (:meth:`Message.to_dict`), as a move has them: copied, then filled in."""
_MOVE["kind"] = "move"
_TOLD: dict[str, Any] = dict(_MOVE, sender=REFEREE, kind=None)
"""Likewise, as the referee's word to one seat has them."""


class MessagePool:
    """Append-only list of :class:`Message`, with per-seat views.

    Each message is kept as it goes into a match record (:meth:`records`: a plain dict, ``recipients`` a list),
    and a :class:`Message` is made of it when someone reads it (:meth:`visible_to`, iteration), once. Most messages
    of a match are never read during it (a classical player's moves, the final views): they are written once, as
    the record needs them, and never copied.

    Each seat's view (its inbox) is kept as messages are added, so reading it costs nothing per message already in
    the pool: a match's views cost linear time in its messages, not quadratic. (The referee's, which no seat reads,
    is found by a scan when asked.) A pool made with ``inboxes=False`` keeps none, for a match whose seats read no
    view while it is played (classical players): :meth:`visible_to` then scans the pool for any seat.
    """

    __slots__ = ("_inboxes", "_made", "_read", "_records", "_views")

    def __init__(self, *, inboxes: bool = True) -> None:
        self._records: list[dict[str, Any]] = []
        """Every message in order, in its record form (:meth:`Message.to_dict`)."""
        self._made: dict[int, Message] = {}
        """The :class:`Message` made of a record, by index (made when first read)."""
        self._inboxes: dict[int, list[dict[str, Any]]] | None = {} if inboxes else None
        """Per seat, the records of the messages it may read (None: not kept)."""
        self._read: dict[int, list[Message]] = {}
        """Per seat, the messages of its inbox made so far (the first records of its inbox, in order)."""
        self._views: dict[int, tuple[Message, ...]] = {}
        """Per seat, its inbox as a tuple of messages, as last read (dropped when a message reaches the seat)."""

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
        records = self._records
        record = {
            "index": len(records),
            "round": round,
            "sender": sender,
            "recipients": list(recipients),
            "kind": kind,
            "text": text,
            "action": action,
            "fields": dict(fields) if fields else {},
        }
        records.append(record)
        for seat in recipients if len(recipients) < 2 else dict.fromkeys(recipients):  # each seat once
            if seat != REFEREE:
                self._deliver(seat, record)
        if sender not in recipients and sender != REFEREE:
            self._deliver(sender, record)
        return self._message(record)

    def _deliver(self, seat: int, record: dict[str, Any]) -> None:
        """Put ``record`` in ``seat``'s inbox and drop the seat's cached view (it has a new message)."""
        inboxes = self._inboxes
        if inboxes is None:  # not kept
            return
        inbox = inboxes.get(seat)
        if inbox is None:
            inboxes[seat] = [record]
        else:
            inbox.append(record)
        if seat in self._views:
            del self._views[seat]

    def add_move(self, round: int, sender: int, text: str, action: int, recipients: tuple[int, ...] = ()) -> None:
        """``add(round=round, sender=sender, recipients=recipients, kind="move", text=text, action=action)``, the
        referee's most frequent message, without the general method's keyword handling (nor a :class:`Message`
        made of it before someone reads it). A move goes to its sender only, unless ``recipients`` read it too
        (the message of a combined turn)."""
        records = self._records
        record = _MOVE.copy()  # a copy, then stores: cheaper than a dict display of 8 keys
        record["index"] = len(records)
        record["round"] = round
        record["sender"] = sender
        record["recipients"] = list(recipients)
        record["text"] = text
        record["action"] = action
        record["fields"] = {}
        records.append(record)
        for seat in recipients:
            self._deliver(seat, record)
        self._deliver(sender, record)

    def tell(self, round: int, seat: int, kind: str, text: str, fields: Mapping[str, Any] | None) -> None:
        """``add(round=round, sender=REFEREE, recipients=(seat,), kind=kind, text=text, fields=fields)``: the
        referee's word to one seat (its view), without the general method's keyword handling (the referee's own
        "inbox" is not kept: :meth:`visible_to` scans the pool for it)."""
        records = self._records
        record = _TOLD.copy()
        record["index"] = len(records)
        record["round"] = round
        record["recipients"] = [seat]
        record["kind"] = kind
        record["text"] = text
        record["fields"] = dict(fields) if fields else {}
        records.append(record)
        if self._inboxes is not None:  # kept
            self._deliver(seat, record)

    def tell_copies(self, told: Iterable[dict[str, Any]]) -> None:
        """:meth:`tell` of messages made beforehand in their record form (a match's rules, made once per game): a
        copy of each (its ``index`` set, its ``recipients`` and ``fields`` new), delivered to its one recipient."""
        records, deliver = self._records, self._deliver if self._inboxes is not None else None
        for told_record in told:
            record = told_record.copy()
            record["index"] = len(records)
            seat = told_record["recipients"][0]
            record["recipients"] = [seat]
            record["fields"] = dict(told_record["fields"])
            records.append(record)
            if deliver is not None:  # None: the pool keeps no inboxes
                deliver(seat, record)

    def _message(self, record: dict[str, Any]) -> Message:
        """The :class:`Message` of a record (made once). Its ``fields`` is a copy: a reader cannot change the
        record."""
        index = record["index"]
        message = self._made.get(index)
        if message is None:
            r, recipients, fields = record, tuple(record["recipients"]), dict(record["fields"])
            message = Message(index, r["round"], r["sender"], recipients, r["kind"], r["text"], r["action"], fields)
            self._made[index] = message
        return message

    def visible_to(self, seat: int) -> tuple[Message, ...]:
        """Every message the seat may read, in order (its own moves included)."""
        if seat == REFEREE or self._inboxes is None:  # everything it said or was sent (not kept as it goes)
            return tuple(self._message(r) for r in self._records if r["sender"] == seat or seat in r["recipients"])
        view = self._views.get(seat)
        if view is None:
            inbox = self._inboxes.get(seat, ())
            read = self._read.get(seat)
            if read is None:
                read = self._read[seat] = []
            if len(read) < len(inbox):  # the messages that reached the seat since it last read its inbox
                made = self._message
                read.extend([made(r) for r in inbox[len(read) :]])
            view = self._views[seat] = tuple(read)
        return view

    def inbox_later(self, seat: int) -> InboxAt:
        """``seat``'s inbox as it is now, read when first needed (:class:`InboxAt`): an observation holds one, so a
        bot that never reads its inbox (a scripted baseline) costs no :class:`Message` made for it."""
        if self._inboxes is None:
            return InboxAt(self, seat, len(self.visible_to(seat)))
        inbox = self._inboxes.get(seat)
        return InboxAt(self, seat, 0 if inbox is None else len(inbox))

    def records(self) -> list[dict[str, Any]]:
        """Every message in order, as a match record holds them (``[m.to_dict() for m in pool]``, without the
        copies): the pool's own list and dicts, for the record of a finished match (the pool is not added to after
        that). A reader of :class:`Message` objects never sees these dicts (they are made of copies)."""
        return self._records

    def __iter__(self) -> Iterator[Message]:
        made = self._message
        return iter([made(r) for r in self._records])

    def __len__(self) -> int:
        return len(self._records)


class InboxAt:
    """A seat's inbox as it was at one point of a match (its first ``count`` messages), made when :meth:`read`.

    The pool only appends, so the messages read later are the very ones the seat had then."""

    __slots__ = ("count", "messages", "pool", "seat")

    def __init__(self, pool: MessagePool, seat: int, count: int) -> None:
        self.pool = pool
        self.seat = seat
        self.count = count
        self.messages: tuple[Message, ...] | None = None
        """What :meth:`read` read, once it has."""

    def read(self) -> tuple[Message, ...]:
        """The messages (:meth:`MessagePool.visible_to`, as it was), read from the pool the first time only."""
        messages = self.messages
        if messages is None:
            view = self.pool.visible_to(self.seat)
            messages = self.messages = view if len(view) == self.count else view[: self.count]
        return messages
