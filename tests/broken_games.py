"""Deliberately broken games: the conformance kit must reject each with a clear message.

Registered under ``testkit_`` names so that they never count as project tasks.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyspiel

from deepeval_games.core.observer import TextObserver
from game_defs.public_goods import PublicGoodsGame, PublicGoodsObserver, PublicGoodsState


def renamed_type(base: pyspiel.GameType, short_name: str) -> pyspiel.GameType:
    """``base`` under another short name, claiming both observation strings (tests must not trust the flags)."""
    return pyspiel.GameType(
        short_name=short_name,
        long_name=short_name,
        dynamics=base.dynamics,
        chance_mode=base.chance_mode,
        information=base.information,
        utility=base.utility,
        reward_model=base.reward_model,
        max_num_players=base.max_num_players,
        min_num_players=base.min_num_players,
        provides_information_state_string=True,
        provides_information_state_tensor=False,
        provides_observation_string=True,
        provides_observation_tensor=False,
        provides_factored_observation_string=False,
        parameter_specification=dict(base.parameter_specification),
    )


class _LeakyObserver(PublicGoodsObserver):
    """Shows every seat's investment by seat: the rules of both modes hide that."""

    def string_from(self, state: PublicGoodsState, player: int) -> str:
        return f"{super().string_from(state, player)} By seat: {state._investments[-1:]}"


class LeakyPublicGoodsGame(PublicGoodsGame):
    """PGG whose observation tells each seat who invested what."""

    game_type = renamed_type(PublicGoodsGame.game_type, "testkit_leaky_public_goods")

    def make_py_observer(self, iig_obs_type: Any = None, params: Any = None) -> _LeakyObserver:
        return _LeakyObserver(iig_obs_type, params)


_SEQ_PARAMS = {"moves": 2, "declared_length": 2, "payout": 1.0, "empty_strings": False}

_SEQ_TYPE = pyspiel.GameType(
    short_name="testkit_counting",
    long_name="testkit counting game",
    dynamics=pyspiel.GameType.Dynamics.SEQUENTIAL,
    chance_mode=pyspiel.GameType.ChanceMode.DETERMINISTIC,
    information=pyspiel.GameType.Information.PERFECT_INFORMATION,
    utility=pyspiel.GameType.Utility.GENERAL_SUM,
    reward_model=pyspiel.GameType.RewardModel.TERMINAL,
    max_num_players=2,
    min_num_players=2,
    provides_information_state_string=False,
    provides_information_state_tensor=False,
    provides_observation_string=True,
    provides_observation_tensor=False,
    provides_factored_observation_string=False,
    parameter_specification=_SEQ_PARAMS,
)


class CountingGame(pyspiel.Game):
    """Two seats alternately say 0 or 1 for ``moves`` moves; each gets ``payout`` times its count of 1s.

    Declares ``max_game_length = declared_length`` and ``max_utility = 1`` whatever the parameters, so
    parameters can break it: more moves than declared, a payout above the bound, empty action strings.
    """

    game_type: pyspiel.GameType = _SEQ_TYPE
    """Registered type; a subclass registered under another name overrides it."""

    def __init__(self, params: dict[str, Any] | None = None) -> None:
        merged = {**_SEQ_PARAMS, **(params or {})}
        super().__init__(
            self.game_type,
            pyspiel.GameInfo(
                num_distinct_actions=2,
                max_chance_outcomes=0,
                num_players=2,
                min_utility=0.0,
                max_utility=1.0,
                utility_sum=None,
                max_game_length=int(merged["declared_length"]),
            ),
            merged,
        )

    def new_initial_state(self) -> CountingState:
        return CountingState(self)

    def make_py_observer(self, iig_obs_type: Any = None, params: Any = None) -> _CountingObserver:
        return _CountingObserver(iig_obs_type, params)


class CountingState(pyspiel.State):
    def __init__(self, game: CountingGame) -> None:
        super().__init__(game)
        params = game.get_parameters()
        self._moves = int(params["moves"])
        self._payout = float(params["payout"])
        self._empty = bool(params["empty_strings"])
        self._said: list[int] = []

    def current_player(self) -> int:
        return pyspiel.PlayerId.TERMINAL if self.is_terminal() else len(self._said) % 2

    def _legal_actions(self, player: int) -> list[int]:
        return [0, 1]

    def _apply_action(self, action: int) -> None:
        self._said.append(int(action))

    def _action_to_string(self, player: int, action: int) -> str:
        return "" if self._empty else str(action)

    def is_terminal(self) -> bool:
        return len(self._said) >= self._moves

    def returns(self) -> np.ndarray:
        if not self.is_terminal():
            return np.zeros(2)
        return np.array([self._payout * sum(self._said[p::2]) for p in (0, 1)])

    def __str__(self) -> str:
        return ",".join(map(str, self._said))


class _CountingObserver(TextObserver):
    def string_from(self, state: CountingState, player: int) -> str:
        return str(state)


pyspiel.register_game(LeakyPublicGoodsGame.game_type, LeakyPublicGoodsGame)
pyspiel.register_game(_SEQ_TYPE, CountingGame)
