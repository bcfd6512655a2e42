"""A base for the observers of text games (OpenSpiel's ``make_py_observer`` protocol).

DeepEval games observe through strings: the words a seat is shown. Subclasses implement
:meth:`TextObserver.string_from`. A game whose moves are a finite vocabulary may also give a tensor, as
OpenSpiel's own Python games do: the subclass lays it out once with :meth:`TextObserver.allocate` (named pieces,
each a view into one flat array, ``self.dict``) and fills it in :meth:`TextObserver.set_from`; OpenSpiel's learning
and equilibrium algorithms and PettingZoo (through Shimmy) read it as ``observation_tensor`` /
``information_state_tensor``. An observer without a tensor raises on :meth:`TextObserver.set_from`, as
OpenSpiel's games raise for a tensor they do not implement (``state.information_state_tensor`` of such a game
raises ``pyspiel.SpielError`` instead of returning an empty list).

Observation types. OpenSpiel makes an observer for a :class:`pyspiel.IIGObservationType`: whether to show the
public information (``public_info``), whose private information to show (``private_info``: no seat's, the
observing seat's, every seat's), and whether to show the past (``perfect_recall``). The seats are shown public
information and their own private information, now (``observation_string``) or with the past
(``information_state_string``): that view is the subclass's :meth:`TextObserver.string_from`, the text the
referee sends. Every other type is put together from two hooks: :meth:`TextObserver.public_string_from`, what
every seat is shown alike, and :meth:`TextObserver.private_string_from`, what one seat alone knows. A game of
perfect information needs neither (it has no private information; its public view is what the seats are shown,
see :meth:`TextObserver.public_string_from`); a game of imperfect information must give both.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pyspiel

from deepeval_games.core.message_pool import seat_label

__all__ = ["TextObserver"]

_SINGLE_PLAYER = pyspiel.PrivateInfoType.SINGLE_PLAYER
_ALL_PLAYERS = pyspiel.PrivateInfoType.ALL_PLAYERS


class TextObserver:
    """String observer honouring OpenSpiel's observation types (module docstring); tensors are optional."""

    def __init__(self, iig_obs_type: pyspiel.IIGObservationType | None, params: Mapping[str, Any] | None) -> None:
        if params:
            raise ValueError(f"observation parameters not supported: {params}")
        self.iig_obs_type = iig_obs_type or pyspiel.IIGObservationType(perfect_recall=False)
        self.tensor: np.ndarray | None = None
        self.dict: dict[str, Any] = {}
        # read once: an attribute of the C++ type object costs more than a Python attribute
        self.public_info = bool(self.iig_obs_type.public_info)
        self.private_info: pyspiel.PrivateInfoType = self.iig_obs_type.private_info
        self.perfect_recall = bool(self.iig_obs_type.perfect_recall)
        self._perfect_information: bool | None = None
        if not (self.public_info and self.private_info == _SINGLE_PLAYER):
            # Another type: the instance's ``string_from`` (what OpenSpiel and the referee call) composes the hooks.
            # The seats' own types keep the subclass's method itself, with no call in between.
            self.string_from = self._typed_string_from  # type: ignore[method-assign]

    def allocate(self, pieces: Sequence[tuple[str, tuple[int, ...]]]) -> None:
        """Lay out the tensor: one flat float32 array, and per named piece a view of its shape in ``self.dict``."""
        sizes = [math.prod(shape) for _, shape in pieces]
        self.tensor = np.zeros(sum(sizes), np.float32)
        offset = 0
        for (name, shape), size in zip(pieces, sizes, strict=True):
            self.dict[name] = self.tensor[offset : offset + size].reshape(shape)
            offset += size

    def set_from(self, state: pyspiel.State, player: int) -> None:
        """Fill the tensor for ``player``; an observer without a tensor raises ``pyspiel.SpielError``.

        A subclass with a tensor fills it, and calls this method when it has none.
        """
        kind = "InformationStateTensor" if self.perfect_recall else "ObservationTensor"
        raise pyspiel.SpielError(
            f"{kind} unimplemented: {type(self).__name__} gives strings only for this observation type"
        )

    def string_from(self, state: pyspiel.State, player: int) -> str:
        """What ``player`` is shown in ``state``: public information and its own private information."""
        raise NotImplementedError

    def seat_view(self, state: pyspiel.State, player: int) -> str:
        """The subclass's :meth:`string_from`, whatever type this observer was made for (the past with
        ``perfect_recall``)."""
        return type(self).string_from(self, state, player)

    def public_string_from(self, state: pyspiel.State) -> str:
        """What every seat is shown alike in ``state`` (the past too, with ``perfect_recall``), the same for all.

        The default serves games of perfect information, where everything a seat is shown is public: the view
        every seat is shown, with each seat's own version of a line where the views differ (a seat told its own
        role: ``Player 1 is shown: ...`` then ``Player 2 is shown: ...``). A game of imperfect information must
        override it.
        """
        self._require_perfect_information(state, "public_string_from")
        views = [self.seat_view(state, seat).split("\n") for seat in range(state.num_players())]
        if any(len(view) != len(views[0]) for view in views):  # no line to line match: each whole view, labelled
            return "\n\n".join(f"{seat_label(seat)} is shown:\n" + "\n".join(view) for seat, view in enumerate(views))
        lines = []
        for row in zip(*views, strict=True):
            if all(line == row[0] for line in row):
                lines.append(row[0])
            else:
                lines.extend(f"{seat_label(seat)} is shown: {line}" for seat, line in enumerate(row))
        return "\n".join(lines)

    def private_string_from(self, state: pyspiel.State, player: int) -> str:
        """What ``player`` alone knows in ``state`` (the past too, with ``perfect_recall``), naming the seat.

        The default serves games of perfect information: nothing is private, the text is empty. A game of
        imperfect information must override it.
        """
        self._require_perfect_information(state, "private_string_from")
        return ""

    def _typed_string_from(self, state: pyspiel.State, player: int) -> str:
        """The view of an observation type other than the seats' own: the public part, then the private parts."""
        parts = [self.public_string_from(state)] if self.public_info else []
        if self.private_info == _SINGLE_PLAYER:
            parts.append(self.private_string_from(state, player))
        elif self.private_info == _ALL_PLAYERS:
            parts.extend(self.private_string_from(state, seat) for seat in range(state.num_players()))
        return "\n".join(part for part in parts if part)

    def _require_perfect_information(self, state: pyspiel.State, hook: str) -> None:
        if self._perfect_information is None:
            information = state.get_game().get_type().information
            self._perfect_information = information == pyspiel.GameType.Information.PERFECT_INFORMATION
        if not self._perfect_information:
            raise NotImplementedError(
                f"{type(self).__name__} observes a game of imperfect information: it must give {hook} to say "
                "what is public and what is private"
            )
