"""What the TextArena, PettingZoo and clembench adapters share: a live environment that copies rebuild by replay,
and a pool of the seats' free-text replies.

Neither library's environments form a history tree, so an adapted state keeps what made it (the seed drawn at its
chance node and the moves played since) and a live environment built from them. OpenSpiel copies a Python state by
deep-copying its attributes (``clone``) and serializes it by pickling them: :class:`ReplayedEnv` takes part in both
by dropping the live environment, so a copy rebuilds its own from the seed and the moves, the way a finished match
is replayed from its record (a pickle always; a ``clone`` where the environment cannot copy itself). An environment
that does not replay to the same place is refused when its game is registered (:func:`replays_alike`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, Generic, TypeVar

import pyspiel

from deepeval_games.core.observer import TextObserver

__all__ = [
    "DEFAULT_SEEDS",
    "ReplayedEnv",
    "SeatObserver",
    "TextPool",
    "game_type",
    "listing_rows",
    "replays_alike",
    "seat_observer",
    "seed_count",
    "seed_outcomes",
]

Env = TypeVar("Env")

DEFAULT_SEEDS = 1024
"""Seeds the chance node of a seeded environment chooses among (``seeds=`` in the game string overrides it)."""


class ReplayedEnv(Generic[Env]):
    """A live environment, rebuilt on first use after a copy: a pickle carries no environment, and neither does a
    deep copy, unless the environment copies itself (its ``duplicate()`` returns a copy; None: it cannot, and the
    copy replays)."""

    __slots__ = ("env",)

    def __init__(self, env: Env | None = None) -> None:
        self.env = env

    def __deepcopy__(self, memo: dict[int, Any]) -> ReplayedEnv[Env]:
        duplicate = getattr(self.env, "duplicate", None)
        return ReplayedEnv(duplicate() if duplicate is not None else None)

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


class TextPool:
    """The free-text moves of an adapted state whose every move is a reply (a mixin before ``pyspiel.State``): a
    reply is interned in the state's pool (``self._pool``, at most ``self._capacity`` texts, the game's distinct
    actions) and the move is its index, as the referee's free-text protocol asks."""

    _pool: list[str]
    _capacity: int

    if TYPE_CHECKING:  # the adapted state's own

        def current_player(self) -> int: ...

    def is_free_text_turn(self, player: int) -> bool:
        """Every move is free text (the environment reads the move in it)."""
        return self.current_player() == player and player >= 0

    def intern_utterance(self, player: int, text: str) -> int:
        """Store ``text`` in the pool and return its id (blank text is id 0; a known text keeps its id)."""
        text = text if text and text.strip() else ""
        if text in self._pool:
            return self._pool.index(text)
        if len(self._pool) >= self._capacity:
            raise ValueError(f"the utterance pool is full ({self._capacity} texts)")
        self._pool.append(text)
        return len(self._pool) - 1


def listing_rows(prefix: str, names: Iterable[str], register: Callable[[str], object]) -> list[tuple[str, str | None]]:
    """A family's rows of ``games --all``: each of ``names`` under ``prefix``, registered (``register``, which raises
    ``ValueError`` naming why a game cannot be adapted) unless it is already, with its refusal (None: playable)."""
    rows: list[tuple[str, str | None]] = []
    registered = {t.short_name for t in pyspiel.registered_games()}
    for game in names:
        name = f"{prefix}{game}"
        refusal = None
        if name not in registered:
            try:
                register(name)
            except ValueError as exc:
                refusal = str(exc).split(": ", 1)[-1]
        rows.append((name, refusal))
    return rows


def game_type(
    short_name: str,
    long_name: str,
    *,
    players: int,
    min_players: int | None = None,
    simultaneous: bool,
    chance: bool,
    perfect_information: bool,
    zero_sum: bool,
    parameters: dict[str, Any] | None = None,
) -> pyspiel.GameType:
    """The OpenSpiel game type of an adapted environment (strings only: its seats are shown text); ``players`` seats
    at most, ``min_players`` at least (default: exactly ``players``)."""
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
        min_num_players=players if min_players is None else min_players,
        provides_information_state_string=False,
        provides_information_state_tensor=False,
        provides_observation_string=True,
        provides_observation_tensor=False,
        provides_factored_observation_string=False,
        parameter_specification=parameters or {},
    )


def seed_count(params: dict[str, Any], seeded: bool) -> int:
    """Seeds the chance node chooses among (``seeds=`` in the game string; 0 for an environment without one)."""
    if not seeded:
        return 0
    seeds = int(params.get("seeds", DEFAULT_SEEDS))
    if seeds < 1:
        raise ValueError(f"seeds must be >= 1, got {seeds}")
    return seeds


def seed_outcomes(seeds: int) -> list[tuple[int, float]]:
    """The chance node's outcomes: every seed, equally likely."""
    return [(seed, 1.0 / seeds) for seed in range(seeds)]


class SeatObserver(TextObserver):
    """The seats' own view of an adapted state (its ``seat_view(seat)``)."""

    def string_from(self, state: Any, player: int) -> str:
        """The seat's view."""
        return str(state.seat_view(player))


def seat_observer(
    iig_obs_type: pyspiel.IIGObservationType | None, params: Any, *, typed: bool, what: str
) -> SeatObserver:
    """The observer of an adapted game. Other observation types than the seats' own only where ``typed`` (a game of
    perfect information, where every view is public): the libraries do not say which part of a view is private."""
    if iig_obs_type is not None and not typed:
        seat_type = iig_obs_type.public_info and iig_obs_type.private_info == pyspiel.PrivateInfoType.SINGLE_PLAYER
        if not seat_type or iig_obs_type.perfect_recall:
            raise ValueError(f"{what} gives only each seat's own view")
    return SeatObserver(iig_obs_type, params)
