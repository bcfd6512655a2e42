"""A base for the observers of text games (OpenSpiel's ``make_py_observer`` protocol).

DeepEval games observe through strings: the words a seat is shown. Subclasses implement
:meth:`TextObserver.string_from`; no tensor is provided.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pyspiel

__all__ = ["TextObserver"]


class TextObserver:
    """String-only observer; ``iig_obs_type.perfect_recall`` says whether to show the whole past."""

    def __init__(self, iig_obs_type: pyspiel.IIGObservationType | None, params: Mapping[str, Any] | None) -> None:
        if params:
            raise ValueError(f"observation parameters not supported: {params}")
        self.iig_obs_type = iig_obs_type or pyspiel.IIGObservationType(perfect_recall=False)
        self.tensor = None
        self.dict: dict[str, Any] = {}

    def set_from(self, state: pyspiel.State, player: int) -> None:
        """No tensor observation: the strings are the observation."""

    def string_from(self, state: pyspiel.State, player: int) -> str:
        """What ``player`` is shown in ``state``."""
        raise NotImplementedError
