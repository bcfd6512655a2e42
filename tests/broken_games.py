"""Deliberately broken games: the conformance kit must reject each with a clear message.

Registered under ``testkit_`` names so that they never count as project tasks.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyspiel

from deepeval_games.core.message_pool import seat_label
from deepeval_games.core.observer import TextObserver
from game_defs.public_goods.game import PublicGoodsGame, PublicGoodsObserver, PublicGoodsState


def renamed_type(base: pyspiel.GameType, short_name: str, **changes: Any) -> pyspiel.GameType:
    """``base`` under another short name, claiming both observation strings (tests must not trust the flags);
    ``changes`` replace other fields (``information=...``)."""
    fields: dict[str, Any] = {
        "short_name": short_name,
        "long_name": short_name,
        "dynamics": base.dynamics,
        "chance_mode": base.chance_mode,
        "information": base.information,
        "utility": base.utility,
        "reward_model": base.reward_model,
        "max_num_players": base.max_num_players,
        "min_num_players": base.min_num_players,
        "provides_information_state_string": True,
        "provides_information_state_tensor": False,
        "provides_observation_string": True,
        "provides_observation_tensor": False,
        "provides_factored_observation_string": False,
        "parameter_specification": dict(base.parameter_specification),
    }
    return pyspiel.GameType(**{**fields, **changes})


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


_DEAL_PARAMS = {"values": 4, "leak": "never", "typed": True}

_DEAL_TYPE = renamed_type(
    _SEQ_TYPE,
    "testkit_hidden_values",
    chance_mode=pyspiel.GameType.ChanceMode.EXPLICIT_STOCHASTIC,
    information=pyspiel.GameType.Information.IMPERFECT_INFORMATION,
    utility=pyspiel.GameType.Utility.ZERO_SUM,
    parameter_specification=_DEAL_PARAMS,
)
_FOLD, _SHOW = 0, 1


class HiddenValuesGame(pyspiel.Game):
    """Chance deals each seat a hidden value in ``0..values-1`` (seat 0's first); then seat 0 and seat 1 in turn
    ``fold`` or ``show``. A fold loses 1 to the other seat; if both show, the higher value wins 1 (a tie, 0).

    ``leak=always``: the observation also shows each seat the other seat's value (the rules hide it unless both
    show); ``leak=at_end``: only once the game is over (after a fold too, where the rules keep it hidden).
    ``typed=false``: the observer ignores OpenSpiel's observation types (every type gives the seat's view).
    """

    def __init__(self, params: dict[str, Any] | None = None) -> None:
        merged = {**_DEAL_PARAMS, **(params or {})}
        info = pyspiel.GameInfo(
            num_distinct_actions=2,
            max_chance_outcomes=int(merged["values"]),
            num_players=2,
            min_utility=-1.0,
            max_utility=1.0,
            utility_sum=0.0,
            max_game_length=4,
        )
        super().__init__(_DEAL_TYPE, info, merged)

    def new_initial_state(self) -> HiddenValuesState:
        return HiddenValuesState(self)

    def make_py_observer(self, iig_obs_type: Any = None, params: Any = None) -> Any:
        p = self.get_parameters()
        if not p["typed"]:
            return _UntypedValuesObserver(str(p["leak"]))
        return _HiddenValuesObserver(iig_obs_type, params, leak=str(p["leak"]))


class HiddenValuesState(pyspiel.State):
    def __init__(self, game: HiddenValuesGame) -> None:
        super().__init__(game)
        self.count = int(game.get_parameters()["values"])
        self.values: list[int] = []
        self.said: list[int] = []

    def current_player(self) -> int:
        if self.is_terminal():
            return pyspiel.PlayerId.TERMINAL
        return pyspiel.PlayerId.CHANCE if len(self.values) < 2 else len(self.said)

    def chance_outcomes(self) -> list[tuple[int, float]]:
        return [(v, 1 / self.count) for v in range(self.count)]

    def _legal_actions(self, player: int) -> list[int]:
        return [_FOLD, _SHOW]

    def _apply_action(self, action: int) -> None:
        (self.values if len(self.values) < 2 else self.said).append(int(action))

    def _action_to_string(self, player: int, action: int) -> str:
        if player == pyspiel.PlayerId.CHANCE:
            return f"deal {action} to {seat_label(len(self.values))}"
        return "show" if action == _SHOW else "fold"

    def is_terminal(self) -> bool:
        return len(self.said) == 2 or _FOLD in self.said

    def returns(self) -> np.ndarray:
        if not self.is_terminal():
            return np.zeros(2)
        if _FOLD in self.said:
            loser = self.said.index(_FOLD)
            return np.array([-1.0, 1.0] if loser == 0 else [1.0, -1.0])
        d = float(np.sign(self.values[0] - self.values[1]))
        return np.array([d, -d])

    def public_text(self) -> str:
        moves = ", ".join(f"{seat_label(i)} {'shows' if a else 'folds'}" for i, a in enumerate(self.said))
        if self.is_terminal():
            shown = f" Values: {self.values}." if _FOLD not in self.said else ""
            return f"Moves: {moves}. Game over.{shown}"
        return f"Moves: {moves or 'none'}."

    def __str__(self) -> str:
        return f"values={self.values} said={self.said}"


class _HiddenValuesObserver(TextObserver):
    """Each seat sees its own value and every move; with ``leak``, the other seat's value too (once dealt)."""

    def __init__(self, iig_obs_type: Any, params: Any, *, leak: str) -> None:
        super().__init__(iig_obs_type, params)
        self.leak = leak

    def string_from(self, state: HiddenValuesState, player: int) -> str:
        mine = state.values[player] if len(state.values) > player else "?"
        text = f"Your value: {mine}. {state.public_text()}"
        if len(state.values) == 2 and (self.leak == "always" or (self.leak == "at_end" and state.is_terminal())):
            text += f" {seat_label(1 - player)} holds {state.values[1 - player]}."
        return text

    def public_string_from(self, state: HiddenValuesState) -> str:
        return state.public_text()

    def private_string_from(self, state: HiddenValuesState, player: int) -> str:
        return f"{seat_label(player)} holds {state.values[player]}." if len(state.values) > player else ""


class _UntypedValuesObserver:
    """An observer that ignores the observation type it is made for (every type: the seat's whole view)."""

    def __init__(self, leak: str) -> None:
        self.leak = leak
        self.tensor = None
        self.dict: dict[str, Any] = {}

    def set_from(self, state: HiddenValuesState, player: int) -> None:
        raise pyspiel.SpielError("no tensor")

    def string_from(self, state: HiddenValuesState, player: int) -> str:
        return _HiddenValuesObserver(None, None, leak=self.leak).string_from(state, player)


class _PrivateCountingObserver(_CountingObserver):
    """Claims private information in a game of perfect information."""

    def private_string_from(self, state: CountingState, player: int) -> str:
        return "a secret"


class PrivateCountingGame(CountingGame):
    """The counting game whose observer has a private observation, though every move is public."""

    game_type = renamed_type(_SEQ_TYPE, "testkit_private_counting")

    def make_py_observer(self, iig_obs_type: Any = None, params: Any = None) -> _PrivateCountingObserver:
        return _PrivateCountingObserver(iig_obs_type, params)


pyspiel.register_game(_DEAL_TYPE, HiddenValuesGame)
pyspiel.register_game(PrivateCountingGame.game_type, PrivateCountingGame)


class _ClockState(PublicGoodsState):
    """Names a move with how many names this process made so far: a name its history does not determine."""

    names_made = 0

    def _action_to_string(self, player: int, action: int) -> str:
        _ClockState.names_made += 1
        return f"{super()._action_to_string(player, action)} (#{_ClockState.names_made})"


class ClockPublicGoodsGame(PublicGoodsGame):
    """PGG whose move names are not derived from its moves: the kit's ``replays`` check must fail it."""

    game_type = renamed_type(PublicGoodsGame.game_type, "testkit_clock_public_goods")

    def new_initial_state(self) -> _ClockState:
        return _ClockState(self)


class StoredClockPublicGoodsGame(ClockPublicGoodsGame):
    """The same game saying so (``replays_from_moves = False``): its matches are stored in full."""

    game_type = renamed_type(PublicGoodsGame.game_type, "testkit_stored_clock_public_goods")
    replays_from_moves = False


pyspiel.register_game(ClockPublicGoodsGame.game_type, ClockPublicGoodsGame)
pyspiel.register_game(StoredClockPublicGoodsGame.game_type, StoredClockPublicGoodsGame)
