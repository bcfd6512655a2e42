"""What the TextArena and PettingZoo adapters share: a live environment that copies rebuild by replay.

Neither library's environments form a history tree, so an adapted state keeps what made it (the seed drawn at its
chance node and the moves played since) and a live environment built from them. OpenSpiel copies a Python state by
deep-copying its attributes (``clone``) and serializes it by pickling them: :class:`ReplayedEnv` takes part in both
by dropping the live environment, so every copy rebuilds its own from the seed and the moves, the way a finished
match is replayed from its record. An environment that does not replay to the same place is refused when its game
is registered (:func:`replays_alike`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Generic, TypeVar

import pyspiel

__all__ = ["ReplayedEnv", "game_type", "replays_alike"]

Env = TypeVar("Env")


class ReplayedEnv(Generic[Env]):
    """A live environment, rebuilt on first use after a copy: a deep copy or a pickle carries no environment."""

    __slots__ = ("env",)

    def __init__(self, env: Env | None = None) -> None:
        self.env = env

    def __deepcopy__(self, memo: dict[int, Any]) -> ReplayedEnv[Env]:
        return ReplayedEnv()

    def __reduce__(self) -> tuple[type, tuple[()]]:
        return (ReplayedEnv, ())

    def get(self, build: Callable[[], Env]) -> Env:
        """The live environment, built (replayed) by ``build`` when this holder has none."""
        if self.env is None:
            self.env = build()
        return self.env


def replays_alike(trace: Callable[[int], Sequence[Any]], seeds: Sequence[int] = (0, 1)) -> str | None:
    """Why an environment cannot be replayed (None: it can): ``trace(seed)`` plays a fixed line of moves from
    ``seed`` and returns what the seats were shown; the same seed must give the same trace twice."""
    for seed in seeds:
        first, second = trace(seed), trace(seed)
        if first != second:
            where = next((i for i, (a, b) in enumerate(zip(first, second, strict=False)) if a != b), len(first))
            return f"it is not deterministic: the same seed ({seed}) gave two different plays (from step {where})"
    return None


def game_type(
    short_name: str,
    long_name: str,
    *,
    players: int,
    simultaneous: bool,
    chance: bool,
    perfect_information: bool,
    zero_sum: bool,
    parameters: dict[str, Any] | None = None,
) -> pyspiel.GameType:
    """The OpenSpiel game type of an adapted environment (strings only: its seats are shown text)."""
    kind = pyspiel.GameType
    return kind(
        short_name=short_name,
        long_name=long_name,
        dynamics=kind.Dynamics.SIMULTANEOUS if simultaneous else kind.Dynamics.SEQUENTIAL,
        chance_mode=kind.ChanceMode.EXPLICIT_STOCHASTIC if chance else kind.ChanceMode.DETERMINISTIC,
        information=kind.Information.PERFECT_INFORMATION
        if perfect_information
        else kind.Information.IMPERFECT_INFORMATION,
        utility=kind.Utility.ZERO_SUM if zero_sum else kind.Utility.GENERAL_SUM,
        reward_model=kind.RewardModel.TERMINAL,
        max_num_players=players,
        min_num_players=players,
        provides_information_state_string=False,
        provides_information_state_tensor=False,
        provides_observation_string=True,
        provides_observation_tensor=False,
        provides_factored_observation_string=False,
        parameter_specification=parameters or {},
    )
