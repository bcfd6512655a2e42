"""A base for the observers of text games (OpenSpiel's ``make_py_observer`` protocol).

DeepEval games observe through strings: the words a seat is shown. Subclasses implement
:meth:`TextObserver.string_from`. A game whose moves are a finite vocabulary may also give a tensor, as
OpenSpiel's own Python games do: the subclass lays it out once with :meth:`TextObserver.allocate` (named pieces,
each a view into one flat array, ``self.dict``) and fills it in :meth:`TextObserver.set_from`; OpenSpiel's learning
and equilibrium algorithms and PettingZoo (through Shimmy) read it as ``observation_tensor`` /
``information_state_tensor``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pyspiel

__all__ = ["TextObserver"]


class TextObserver:
    """String-only observer; ``iig_obs_type.perfect_recall`` says whether to show the whole past."""

    def __init__(self, iig_obs_type: pyspiel.IIGObservationType | None, params: Mapping[str, Any] | None) -> None:
        if params:
            raise ValueError(f"observation parameters not supported: {params}")
        self.iig_obs_type = iig_obs_type or pyspiel.IIGObservationType(perfect_recall=False)
        self.tensor: np.ndarray | None = None
        self.dict: dict[str, Any] = {}

    def allocate(self, pieces: Sequence[tuple[str, tuple[int, ...]]]) -> None:
        """Lay out the tensor: one flat float32 array, and per named piece a view of its shape in ``self.dict``."""
        sizes = [math.prod(shape) for _, shape in pieces]
        self.tensor = np.zeros(sum(sizes), np.float32)
        offset = 0
        for (name, shape), size in zip(pieces, sizes, strict=True):
            self.dict[name] = self.tensor[offset : offset + size].reshape(shape)
            offset += size

    def set_from(self, state: pyspiel.State, player: int) -> None:
        """Fill the tensor for ``player`` (a string-only observer has none: the strings are the observation)."""

    def string_from(self, state: pyspiel.State, player: int) -> str:
        """What ``player`` is shown in ``state``."""
        raise NotImplementedError
