"""The matches of a run still to be sent or played, with their attempt (:class:`Waiting`): the rest of the run's plan,
each match made as it is taken, and the matches handed back or rescheduled. A queue of every match of a long run
would hold an object and a tuple a match for the whole run."""

from __future__ import annotations

import collections
from collections.abc import Iterable, Sequence

from deepeval_games.app.spec.plan import PlannedMatch

__all__ = ["Waiting"]


class Waiting:
    """A first-in first-out queue of ``(match, attempt)`` that starts with every match of ``todo`` at attempt 1, in
    order, without holding them: :meth:`popleft` reads the next one from ``todo`` (a
    :class:`~deepeval_games.app.spec.plan.Plan` makes it then). :meth:`append` puts a match at the end (a retry),
    :meth:`extendleft` back at the front (a batch that could not be sent)."""

    __slots__ = ("_back", "_front", "_left", "_rest")

    def __init__(self, todo: Sequence[PlannedMatch]) -> None:
        self._rest = iter(todo)
        """The matches of ``todo`` not taken yet (each made as it is taken)."""
        self._left = len(todo)
        self._front: collections.deque[tuple[PlannedMatch, int]] = collections.deque()
        """Matches handed back: before the rest of ``todo``."""
        self._back: collections.deque[tuple[PlannedMatch, int]] = collections.deque()
        """Matches appended: after the rest of ``todo``."""

    def __len__(self) -> int:
        return len(self._front) + self._left + len(self._back)

    def __bool__(self) -> bool:
        return len(self) > 0

    def popleft(self) -> tuple[PlannedMatch, int]:
        """The first match waiting and its attempt, taken out.

        Raises:
            IndexError: nothing is waiting.
        """
        if self._front:
            return self._front.popleft()
        if self._left:
            self._left -= 1
            return next(self._rest), 1
        return self._back.popleft()

    def append(self, item: tuple[PlannedMatch, int]) -> None:
        """Put ``item`` at the end."""
        self._back.append(item)

    def extendleft(self, items: Iterable[tuple[PlannedMatch, int]]) -> None:
        """Put ``items`` back at the front, each before the ones already there (as :meth:`collections.deque.extendleft`:
        hand back a batch reversed to keep its order)."""
        self._front.extendleft(items)
