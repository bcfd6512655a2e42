"""Selecting and ordering records without a list of records: the analyses' filters (:func:`select`) and their order
of repetition (:func:`in_repetition_order`).

A caller may hand the analyses records kept as *columns* (:class:`RecordColumns`: the score summary ``run`` prints
keeps a match as a few array entries, :mod:`deepeval_games.app.reports.columns`), whose items are made as they are
read. A list of such items would hold an object a match again, so columns select and order themselves (a view: an
index a match) and the analyses call these two functions instead of building lists; any other iterable of records
gets a list, as before.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from operator import attrgetter
from typing import Protocol, runtime_checkable

from deepeval_games.core.records import MatchRecord

__all__ = ["RecordColumns", "complete", "in_repetition_order", "select"]


@runtime_checkable
class RecordColumns(Protocol):
    """Records kept as columns: a sequence whose items (records, or objects with the fields the analyses read) are
    made as they are read, and which filters and orders itself without making a list of them."""

    def __len__(self) -> int:
        """The number of records."""
        ...

    def __iter__(self) -> Iterator[MatchRecord]:
        """The records, in order, each made as it is read."""
        ...

    def select(self, keep: Callable[[MatchRecord], bool]) -> Sequence[MatchRecord]:
        """The records ``keep`` keeps, in the same order (a view of these columns)."""
        ...

    def in_repetition_order(self) -> Sequence[MatchRecord]:
        """These records in the order of repetition (:func:`in_repetition_order`; a view of these columns)."""
        ...


def select(records: Iterable[MatchRecord], keep: Callable[[MatchRecord], bool]) -> Sequence[MatchRecord]:
    """The records ``keep`` keeps, in their order: a list, or a view of :class:`RecordColumns`."""
    if isinstance(records, RecordColumns):
        return records.select(keep)
    return [r for r in records if keep(r)]


def _is_complete(record: MatchRecord) -> bool:
    return record.status == "complete"


def complete(records: Iterable[MatchRecord]) -> Sequence[MatchRecord]:
    """The complete records (status ``complete``), in their order (:func:`select`)."""
    return select(records, _is_complete)


def in_repetition_order(records: Iterable[MatchRecord]) -> Sequence[MatchRecord]:
    """``records`` in the order of repetition (repeat, game, match id): an order the payoffs do not set. Sorted by
    each field in turn, least significant first (stable sorts: the order of the three together), so no key tuple is
    made a record; :class:`RecordColumns` sort themselves, with the same result."""
    if isinstance(records, RecordColumns):
        return records.in_repetition_order()
    ordered = list(records)
    for name in ("match_id", "game", "repeat"):
        ordered.sort(key=attrgetter(name))
    return ordered
