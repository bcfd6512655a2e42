"""PettingZoo's AEC environments with discrete moves, played as OpenSpiel games: ``pettingzoo:<module>``.

``pettingzoo:classic.connect_four_v3`` names the module ``pettingzoo.classic.connect_four_v3``; loading the name
(:func:`deepeval_games.core.registry.games.load_game`) registers a Python pyspiel game for it (this module registers the
``pettingzoo:`` family when its entry point loads; the core names no library). The adaptation:

* seats are the environment's ``possible_agents`` in order; an environment that PettingZoo builds from a parallel
  one (``is_parallelizable``, e.g. rock-paper-scissors) is a simultaneous game: every live agent moves at each node;
* legal moves come from the action mask (the observation's or the info's), else the whole discrete space; moves
  are named where the environment gives names (chess's UCI moves, the card games' ``call``/``raise``, the
  rock-paper-scissors hands), as a column or a square for the board games, else ``action N``;
* an environment whose play depends on its seed (the card games) starts with a chance node choosing the seed among
  ``seeds`` equally likely ones, so its randomness is the match seed's; one that does not has no chance node;
* a state keeps its seed and its moves: a copy (``clone``, ``serialize``) replays them on a fresh environment
  (:mod:`game_defs.arena.common`); an environment that does not replay alike is refused;
* a seat is shown the environment's own view for it (the board, its hand and the chips, the last round), else its
  observation array; returns are the sum of the rewards of every step;
* ``mcts`` searches the true state of a game of perfect information; on a seeded game with hidden cards it is
  OpenSpiel's information-set MCTS, whose worlds are this state's moves from other seeds that show the searching
  seat the same views (:meth:`PettingZooState.resample_from_infostate`).
"""

from __future__ import annotations

import functools
import importlib
import pkgutil
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyspiel

from deepeval_games.core.registry.games import GameFamily, register_game_family
from game_defs.arena.common import (
    DEFAULT_SEEDS,
    ReplayedEnv,
    SeatObserver,
    game_type,
    replays_alike,
    seat_observer,
    seed_count,
    seed_outcomes,
)

__all__ = ["PREFIX", "PettingZooGame", "PettingZooState", "listing", "register"]

PREFIX = "pettingzoo:"
_PROBE_STEPS = 40
"""Moves of the fixed line played to find whether an environment depends on its seed and replays alike."""
_DEFAULT_LENGTH = 10_000
"""``max_game_length`` of an environment this module knows nothing about."""


@dataclass(frozen=True)
class _Known:
    """What this module knows of an environment beyond PettingZoo's API: bounds, and how to show it in words."""

    length: int
    """The most moves (joint moves of a simultaneous game) a match may last."""
    utility: tuple[float, float]
    perfect_information: bool
    zero_sum: bool = True
    names: Callable[[Any, int, int], str] | None = None
    """``(env, seat, action) -> name`` (None: ``action N``)."""
    view: Callable[[Any, int], str] | None = None
    """``(env, seat) -> what the seat is shown`` (None: its observation array)."""


def _column(env: Any, seat: int, action: int) -> str:
    return f"column {action}"


def _connect_four_view(env: Any, seat: int) -> str:
    marks = {0: ".", 1: "x", 2: "o"}
    board = env.unwrapped.board
    rows = ["".join(marks[board[r * 7 + c]] for c in range(7)) for r in range(6)]
    return "\n".join([*rows, "0123456", f"You play {'xo'[seat]}; a piece falls to the lowest empty row of its column."])


def _square(env: Any, seat: int, action: int) -> str:
    return f"row {action % 3} column {action // 3}"  # PettingZoo numbers the squares down the columns


def _tictactoe_view(env: Any, seat: int) -> str:
    squares = env.unwrapped.board.squares
    marks = {0: ".", 1: "X", 2: "O"}
    rows = [" ".join(marks[squares[c * 3 + r]] for c in range(3)) for r in range(3)]
    return "\n".join([*rows, f"You play {'XO'[seat]}; rows and columns are numbered from 0."])


def _chess_move(env: Any, seat: int, action: int) -> str:
    from pettingzoo.classic.chess import chess_utils

    return str(chess_utils.action_to_move(env.unwrapped.board, action, seat).uci())


def _chess_view(env: Any, seat: int) -> str:
    board = env.unwrapped.board
    return f"{board}\nFEN: {board.fen()}\nYou play {('white', 'black')[seat]}; moves are in UCI notation (e2e4)."


def _rps_move(env: Any, seat: int, action: int) -> str:
    return str(env.unwrapped._moves[action]).lower()


def _rps_view(env: Any, seat: int) -> str:
    raw = env.unwrapped
    agent = raw.possible_agents[seat]
    other = raw.possible_agents[1 - seat]
    done = raw.num_moves
    if not done:
        return f"Round 1 of {raw.max_cycles}."
    hands = [str(raw._moves[raw.state[a]]).lower() for a in (agent, other)]
    return (
        f"Round {done} of {raw.max_cycles}: you played {hands[0]}, the other player played {hands[1]}.\n"
        f"Next: round {done + 1}." * (done < raw.max_cycles)
    ).strip()


def _card_move(env: Any, seat: int, action: int) -> str:
    actions = getattr(env.unwrapped.env, "actions", None)
    if isinstance(actions, Sequence):
        return str(actions[action])
    from rlcard.games.nolimitholdem.round import Action

    return Action(action).name.lower()


def _card_view(env: Any, seat: int) -> str:
    raw = env.unwrapped.env.get_state(seat)["raw_obs"]
    shown = {k: v for k, v in raw.items() if k not in ("legal_actions", "current_player")}
    return "\n".join(f"{key}: {_plain(value)}" for key, value in shown.items())


def _plain(value: Any) -> str:
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_plain(v) for v in value) + "]"
    name = getattr(value, "name", None)
    return str(name).lower() if isinstance(name, str) else str(value.item() if hasattr(value, "item") else value)


_KNOWN: dict[str, _Known] = {
    "classic.connect_four_v3": _Known(42, (-1, 1), True, names=_column, view=_connect_four_view),
    "classic.tictactoe_v3": _Known(9, (-1, 1), True, names=_square, view=_tictactoe_view),
    "classic.chess_v6": _Known(12_000, (-1, 1), True, names=_chess_move, view=_chess_view),
    "classic.go_v5": _Known(19 * 19 * 4, (-1, 1), True),
    "classic.rps_v2": _Known(15, (-15, 15), False, names=_rps_move, view=_rps_view),
    "classic.leduc_holdem_v4": _Known(12, (-13, 13), False, names=_card_move, view=_card_view),
    "classic.texas_holdem_v4": _Known(48, (-50, 50), False, names=_card_move, view=_card_view),
    "classic.texas_holdem_no_limit_v6": _Known(400, (-100, 100), False, names=_card_move, view=_card_view),
}
"""Environments with their bounds and words. Rewards: connect four, tic-tac-toe and chess pay +1/-1 (0 for a draw);
rock-paper-scissors +1/-1 a round over ``max_cycles`` rounds; the poker games pay chips (RLCard's payoffs, which
PettingZoo passes on): Leduc hold'em at most 13 a hand, limit hold'em 50, no-limit the 100-chip stack."""


# -- the live environment ---------------------------------------------------------------------------------------


def _module(path: str) -> Any:
    return importlib.import_module(f"pettingzoo.{path}")


class _Env:
    """A PettingZoo AEC environment driven move by move, terminated agents' steps taken for them."""

    def __init__(self, path: str, seed: int) -> None:
        self.env = _module(path).env()
        self.env.reset(seed=seed)
        self.agents: list[str] = list(self.env.possible_agents)
        self.totals = np.zeros(len(self.agents))
        self._skip_dead()

    def _skip_dead(self) -> None:
        env = self.env
        while env.agents and (env.terminations[env.agent_selection] or env.truncations[env.agent_selection]):
            env.step(None)

    @property
    def over(self) -> bool:
        return not self.env.agents

    def to_move(self) -> int:
        return self.agents.index(self.env.agent_selection)

    def live(self) -> list[int]:
        return [self.agents.index(agent) for agent in self.env.agents]

    def legal(self, seat: int) -> list[int]:
        agent = self.agents[seat]
        if agent not in self.env.agents:
            return []
        mask = _mask(self.env.observe(agent), self.env.infos.get(agent, {}))
        if mask is None:
            return list(range(int(self.env.action_space(agent).n)))
        return [int(a) for a in np.flatnonzero(mask)]

    def step(self, action: int) -> None:
        self.env.step(int(action))
        self.totals += [float(self.env.rewards.get(agent, 0.0)) for agent in self.agents]
        self._skip_dead()

    def observation(self, seat: int) -> Any:
        obs = self.env.observe(self.agents[seat])
        return obs.get("observation") if isinstance(obs, Mapping) else obs


def _mask(obs: Any, info: Mapping[str, Any]) -> np.ndarray | None:
    if isinstance(obs, Mapping) and "action_mask" in obs:
        return np.asarray(obs["action_mask"])
    if "action_mask" in info:
        return np.asarray(info["action_mask"])
    return None


# -- the game ---------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Facts:
    """What probing an environment found: its shape, and why it is refused (if it is)."""

    players: int
    actions: int
    simultaneous: bool
    seeded: bool
    refusal: str | None = None


def _trace(path: str, seed: int) -> list[str]:
    """The observations of a fixed line of play (always the first legal move) from ``seed``."""
    env = _Env(path, seed)
    seen = []
    for _ in range(_PROBE_STEPS):
        if env.over:
            break
        seen.append(repr(np.asarray(env.observation(env.to_move())).tolist()))
        env.step(env.legal(env.to_move())[0])
    return seen


@functools.cache
def _facts(path: str) -> _Facts:
    """Probe ``pettingzoo.<path>``: players, moves, dynamics, whether its seed matters, whether it replays alike."""
    env = _Env(path, 0)
    spaces = [env.env.action_space(agent) for agent in env.agents]
    simultaneous = bool(env.env.metadata.get("is_parallelizable", False))
    facts = _Facts(len(env.agents), max(int(getattr(s, "n", 0)) for s in spaces), simultaneous, False)
    if not all(hasattr(space, "n") for space in spaces):
        return _replace(facts, "its moves are not a discrete space")
    refusal = replays_alike(functools.partial(_trace, path))
    if refusal is not None:
        return _replace(facts, refusal)
    seeded = _trace(path, 0) != _trace(path, 1)
    return _Facts(facts.players, facts.actions, simultaneous, seeded)


def _replace(facts: _Facts, refusal: str) -> _Facts:
    return _Facts(facts.players, facts.actions, facts.simultaneous, facts.seeded, refusal)


class PettingZooGame(pyspiel.Game):
    """A PettingZoo environment as an OpenSpiel game (one class per environment, made by :func:`register`)."""

    path: str = ""
    """The module under ``pettingzoo.`` (``classic.connect_four_v3``)."""
    facts: _Facts
    known: _Known

    def __init__(self, params: Mapping[str, Any] | None = None) -> None:
        params = dict(params or {})
        self.seeds = seed_count(params, self.facts.seeded)
        low, high = self.known.utility
        super().__init__(
            self.game_type,
            pyspiel.GameInfo(
                num_distinct_actions=self.facts.actions,
                max_chance_outcomes=self.seeds,
                num_players=self.facts.players,
                min_utility=float(low),
                max_utility=float(high),
                utility_sum=0.0 if self.known.zero_sum else None,
                max_game_length=self.known.length,
            ),
            params,
        )

    game_type: pyspiel.GameType

    def new_initial_state(self) -> PettingZooState:
        """A new match (at its chance node when the environment is seeded)."""
        return PettingZooState(self)

    def make_py_observer(
        self, iig_obs_type: pyspiel.IIGObservationType | None = None, params: Mapping[str, Any] | None = None
    ) -> SeatObserver:
        """Each seat's own view (other observation types for a game of perfect information only)."""
        return seat_observer(iig_obs_type, params, typed=self.known.perfect_information, what=self.path)

    def rules_text(self) -> str:
        """One paragraph: the environment, the seats, how moves are named."""
        env = _Env(self.path, 0)
        doc = (type(env.env.unwrapped).__doc__ or "").strip()
        lines = [
            f"You are playing PettingZoo's {self.path.rsplit('.', 1)[-1]} environment with "
            f"{self.facts.players} players.",
            "Every seat moves at once each round." if self.facts.simultaneous else "Players move in turn.",
            "Each turn you are shown the game as you see it and your legal moves; answer with one of them.",
        ]
        return "\n".join([*lines, doc] if doc else lines)


class PettingZooState(pyspiel.State):
    """A match: the seed chosen, the moves played, and the live environment (rebuilt by replay in a copy)."""

    def __init__(self, game: PettingZooGame) -> None:
        super().__init__(game)
        # plain values only: OpenSpiel copies a state by deep-copying its attributes and serializes it by pickling
        self._path = game.path
        self._seeds = game.seeds
        self._seed: int | None = None if game.facts.seeded else 0
        self._moves: list[list[int]] = []  # one list a node: the mover's action, or each live seat's
        self._live: ReplayedEnv[_Env] = ReplayedEnv()

    def _env(self) -> _Env:
        return self._live.get(self._replay)

    def _replay(self) -> _Env:
        assert self._seed is not None
        env = _Env(self._path, self._seed)
        for node in self._moves:
            for action in node:
                env.step(action)
        return env

    def current_player(self) -> int:
        """CHANCE until the seed is chosen; the agent to move, SIMULTANEOUS, or TERMINAL."""
        if self._seed is None:
            return pyspiel.PlayerId.CHANCE
        env = self._env()
        if env.over:
            return pyspiel.PlayerId.TERMINAL
        if _SPECS[self._path][0].simultaneous:
            return pyspiel.PlayerId.SIMULTANEOUS
        return env.to_move()

    def _legal_actions(self, player: int) -> list[int]:
        if self._seed is None or self.is_terminal():
            return []
        if not _SPECS[self._path][0].simultaneous and player != self._env().to_move():
            return []
        return self._env().legal(player)

    def chance_outcomes(self) -> list[tuple[int, float]]:
        """Every seed, equally likely (only before the seed is chosen)."""
        return seed_outcomes(self._seeds) if self._seed is None else []

    def _apply_action(self, action: int) -> None:
        if self._seed is None:
            self._seed = int(action)
            return
        self._env().step(action)
        self._moves.append([int(action)])

    def _apply_actions(self, actions: Sequence[int]) -> None:
        env = self._env()
        order = env.live()  # PettingZoo's parallel-made environments step their agents in order
        moves = [int(actions[seat]) for seat in order]
        for action in moves:
            env.step(action)
        self._moves.append(moves)

    def _action_to_string(self, player: int, action: int) -> str:
        if player == pyspiel.PlayerId.CHANCE or self._seed is None:
            return f"seed {action}"
        names = _SPECS[self._path][1].names
        if names is not None and player >= 0:
            try:
                return names(self._env().env, player, int(action))
            except Exception:  # a move that is not legal here has no name in the environment: its number
                pass
        return f"action {action}"

    def is_terminal(self) -> bool:
        """Every agent is done."""
        return self._seed is not None and self._env().over

    def returns(self) -> np.ndarray:
        """Each seat's rewards summed over the match so far."""
        if self._seed is None:
            return np.zeros(_SPECS[self._path][0].players)
        return self._env().totals.copy()

    def seat_view(self, seat: int) -> str:
        """What ``seat`` is shown: the environment's own view for it, else its observation array."""
        if self._seed is None:
            return "The match has not started."
        env = self._env()
        view = _SPECS[self._path][1].view
        text = view(env.env, seat) if view is not None else _array_text(env.observation(seat))
        if env.over:
            text += f"\nThe match is over; you scored {env.totals[seat]:g}."
        return text

    def __str__(self) -> str:
        if self._seed is None:
            return "seed not chosen"
        return f"seed {self._seed}; moves {self._moves}"

    # -- what an information-set search draws (ISMCTS) -------------------------------------------------------------

    def resample_from_infostate(self, player_id: int, probability_sampler: Any) -> PettingZooState:
        """A state that ``player_id`` cannot tell from this one, for ISMCTS: the same moves from another seed whose
        deal shows the seat the same views all along (its cards and what it was shown of the others'), the seeds
        tried in an order drawn from ``probability_sampler``; this state's own seed is always one of them."""
        if self._seed is None or _SPECS[self._path][0].simultaneous:
            return self.clone()
        shown = self._views(self._seed, player_id)
        order = np.random.default_rng(int(probability_sampler() * 2**31)).permutation(self._seeds)
        for seed in (int(s) for s in order):
            if seed == self._seed or self._views(seed, player_id) == shown:
                other = self.clone()
                other._seed, other._live = seed, ReplayedEnv()
                return other
        return self.clone()

    def _views(self, seed: int, seat: int) -> list[str] | None:
        """What ``seat`` is shown before and after each move when this state's moves are played from ``seed`` (None:
        a move is not legal there)."""
        other = self.clone()
        other._seed, other._moves, other._live = seed, [], ReplayedEnv()
        views = [other.seat_view(seat)]
        for node in self._moves:
            env = other._env()
            if env.over or any(action not in env.legal(env.to_move()) for action in node[:1]):
                return None
            for action in node:
                env.step(action)
            other._moves.append(node)
            views.append(other.seat_view(seat))
        return views


def _array_text(obs: Any) -> str:
    array = np.asarray(obs)
    return f"observation (shape {list(array.shape)}): " + np.array2string(array.ravel(), threshold=10_000)


_SPECS: dict[str, tuple[_Facts, _Known]] = {}
"""Per registered module path, what its states read of their game (a state holds the path, not the game)."""

_UNKNOWN = _Known(_DEFAULT_LENGTH, (-1e9, 1e9), False, zero_sum=False)


def register(name: str) -> None:
    """Register the pyspiel game ``pettingzoo:<module>``; ValueError when the environment cannot be adapted."""
    path = name[len(PREFIX) :]
    try:
        facts = _facts(path)
    except ImportError as exc:
        raise ValueError(
            f"PettingZoo's {path} cannot be imported ({exc}); pip install 'deepeval-games[arena]'"
        ) from exc
    except Exception as exc:  # a module that is not an AEC environment with discrete moves
        raise ValueError(f"PettingZoo's {path} cannot be adapted ({type(exc).__name__}: {exc})") from exc
    if facts.refusal is not None:
        raise ValueError(f"PettingZoo's {path} cannot be adapted: {facts.refusal}")
    known = _KNOWN.get(path, _UNKNOWN)
    params = {"seeds": DEFAULT_SEEDS} if facts.seeded else {}
    cls: type[PettingZooGame] = type(
        f"PettingZoo_{path.replace('.', '_')}",
        (PettingZooGame,),
        {
            "path": path,
            "facts": facts,
            "known": known,
            "game_type": game_type(
                name,
                f"PettingZoo {path}",
                players=facts.players,
                simultaneous=facts.simultaneous,
                chance=facts.seeded,
                perfect_information=known.perfect_information and not facts.simultaneous,
                zero_sum=known.zero_sum,
                parameters=params,
            ),
        },
    )
    _SPECS[path] = (facts, known)
    pyspiel.register_game(cls.game_type, cls)


_CLASSIC = ("backgammon", "gin_rummy")
"""Classic environments PettingZoo had (older releases), listed with a verdict when the installed one lacks them."""


def listing() -> list[tuple[str, str | None]]:
    """Every classic PettingZoo environment installed, with why it cannot be adapted (None: it can), and the
    classic ones it no longer ships (:data:`_CLASSIC`), with that as their reason."""
    try:
        import pettingzoo
        import pettingzoo.classic as classic
    except ImportError:
        return [(f"{PREFIX}classic.*", "PettingZoo is not installed (pip install 'deepeval-games[arena]')")]
    rows: list[tuple[str, str | None]] = []
    for info in pkgutil.iter_modules(classic.__path__):
        if info.name.rsplit("_", 1)[-1].startswith("v"):
            name = f"{PREFIX}classic.{info.name}"
            rows.append((name, _refusal(name)))
    for gone in _CLASSIC:
        if not any(name.startswith(f"{PREFIX}classic.{gone}_v") for name, _ in rows):
            reason = f"PettingZoo {pettingzoo.__version__} does not ship it (upstream removed it from its classic set)"
            rows.append((f"{PREFIX}classic.{gone}", reason))
    return sorted(rows)


def _refusal(name: str) -> str | None:
    """Why ``name`` cannot be registered (None: it is, or can be)."""
    if name in {t.short_name for t in pyspiel.registered_games()}:
        return None
    try:
        register(name)
    except ValueError as exc:
        return str(exc)
    return None


register_game_family(
    GameFamily(PREFIX, register, listing, description="PettingZoo's AEC environments with discrete moves")
)
