"""TextArena's two-player environments played as OpenSpiel games: ``textarena:<EnvId>``.

``textarena:KuhnPoker-v0`` is TextArena's ``KuhnPoker-v0-raw``: the environment without TextArena's own prompt
wrappers, since the referee owns the prompts. Loading the name registers a Python pyspiel game for it (this module
registers the ``textarena:`` family when its entry point loads; the core names no library). The adaptation:

* every move is free text (TextArena's own protocol: the environment reads the bracketed action in a reply): the
  referee interns a reply in the state's utterance pool and the move is its id; where the environment names the
  legal moves to the seat (``Your available actions are: '[check]', '[bet]'``), those names are interned and are the
  legal actions, so ``random`` draws among them; an environment that does not name them is refused to ``random``
  (:meth:`TextArenaGame.unlisted_moves`);
* an environment whose play depends on its seed starts with a chance node choosing the seed among ``seeds`` equally
  likely ones: its randomness is the match seed's. TextArena seeds and draws from Python's global ``random``; each
  live environment keeps its own generator state, swapped in around every call into the environment (under a lock),
  so concurrent matches and replays never draw from one another's stream;
* a state keeps its seed, its moves and its pool; a copy (``clone``, ``serialize``) replays the moves on a fresh
  environment (:mod:`game_defs.arena.common`); an environment that does not replay alike is refused, and so is one
  that fails to start with the network blocked (a judge jury, a downloaded word list);
* a seat is shown the messages the environment sent it since its last move (its first view starts with
  TextArena's prompt for it), with TextArena's seat numbers (``Player 0``, ``Player 1``) shifted to the referee's
  anonymous labels (``Player 1``, ``Player 2``), so a seat is never told two numbers for itself; returns are the
  environment's rewards; the rules are the environment's description: its docstring, else its prompt to the first
  seat, marked as that seat's (the other seat is shown its own prompt first, and the first seat is not shown the
  same text twice);
* the LLM players' answer texts are ``game_defs/arena/textarena.toml``: the bracketed action alone, on one line
  (a reply cut at the token cap is never read as a move, and a small model that is asked for "a message" writes
  until the cap).
"""

from __future__ import annotations

import contextlib
import functools
import io
import random
import re
import socket
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyspiel

from deepeval_games.core.message_pool import seat_label
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

__all__ = ["PREFIX", "TextArenaGame", "TextArenaState", "listing", "register"]

PREFIX = "textarena:"
_DEFAULT_TURNS = 100
"""Turns of an environment that sets no ``max_turns`` (a match is cut there as a draw)."""
_POOL_PER_MOVE = 64
"""Utterance ids a move may add to the pool (its text and the named legal moves shown with it)."""
_PROBE_MOVES = 12
EMPTY = 0
"""The empty utterance: the penalty move, and the placeholder legal action where no move is named."""
_LISTED = re.compile(r"(available|valid|legal)[^\n]*?(moves|actions|options)?[^\n]*?:", re.IGNORECASE)
_BRACKETED = re.compile(r"\[[^\[\]\n]{1,40}\]")
_EXAMPLE = re.compile(r"\b(format|e\.g\.|for example|example)\b", re.IGNORECASE)
_TEMPLATE = re.compile(r"\b[XYNK]\b|<[^>]*>|\.\.\.")
"""A placeholder in a listed move (``[bet X]``, ``[<amount>]``): the list shows a template, not a move."""
_SEAT_NUMBER = re.compile(r"\bPlayer ([01])\b")
_PROMPTS = Path(__file__).with_name("textarena.toml")
_LOCK = threading.RLock()
"""Held around every call into an environment: Python's global ``random`` is swapped for the match's own."""


class _NetworkBlocked(OSError):
    pass


@contextmanager
def _no_network() -> Iterator[None]:
    """Refuse sockets while a probe runs: an environment that needs the network fails here, not in a match."""
    original = socket.socket.connect

    def refuse(self: socket.socket, address: Any) -> None:
        raise _NetworkBlocked(f"the environment opened a network connection to {address!r}")

    socket.socket.connect = refuse  # type: ignore[method-assign,assignment]
    try:
        yield
    finally:
        socket.socket.connect = original  # type: ignore[method-assign]


class _Env:
    """A TextArena environment with its own generator state, driven move by move."""

    def __init__(self, env_id: str, seed: int) -> None:
        import textarena

        self._random = random.Random(seed).getstate()
        with contextlib.redirect_stdout(io.StringIO()):
            self.env = textarena.make(f"{env_id}-raw")
        self.done = False
        self._call(lambda: self.env.reset(num_players=2, seed=seed))

    def _call(self, fn: Callable[[], Any]) -> Any:
        """``fn`` under the match's own ``random`` state, its prints kept off the terminal (an environment's
        chatter, e.g. "Generated puzzle in 1 attempts", is not the program's output)."""
        with _LOCK, contextlib.redirect_stdout(io.StringIO()):
            saved = random.getstate()
            random.setstate(self._random)
            try:
                return fn()
            finally:
                self._random = random.getstate()
                random.setstate(saved)

    def step(self, text: str) -> None:
        done, _ = self._call(lambda: self.env.step(text))
        self.done = bool(done) or bool(self.env.state.done)

    @property
    def to_move(self) -> int:
        return int(self.env.state.current_player_id)

    def messages(self, seat: int) -> list[tuple[int, str]]:
        return [(int(sender), str(text)) for sender, text, *_ in self.env.state.observations[seat]]

    def rewards(self) -> list[float]:
        rewards = self.env.state.rewards or {}
        return [float(rewards.get(seat, 0.0)) for seat in (0, 1)]


def _listed_moves(messages: Sequence[tuple[int, str]]) -> list[str]:
    """The moves the latest message that lists some names (``Available Moves: '[0]', '[1]'``), in order; none when
    that list holds a template (``'[bet X]'``) or only shows the format by an example (``Format: '[A4 B2 C2]'``):
    such an environment does not name its moves, and a player drawing from the list would play a template."""
    for sender, text in reversed(messages):
        if sender >= 0:  # a player's words never list the rules' moves
            continue
        found = _LISTED.search(text)
        if found is None:
            continue
        listing = text[found.start() :]
        example = _EXAMPLE.search(listing)
        moves = list(dict.fromkeys(_BRACKETED.findall(listing[: example.start()] if example else listing)))
        if any(_TEMPLATE.search(move) for move in moves) or (example and _BRACKETED.search(listing[example.start() :])):
            return []
        if moves:
            return moves
    return []


@dataclass(frozen=True)
class _Facts:
    """What probing an environment found."""

    seeded: bool
    turns: int
    names_moves: bool
    description: str
    refusal: str | None = None
    first_prompt_is_rules: bool = False
    """The description is the first seat's prompt (the environment has no docstring)."""


def _fixed_line(env: _Env, moves: int) -> list[str]:
    """Play a fixed line (the first named move, else a fixed text) and return what the seats were shown."""
    seen = []
    for _ in range(moves):
        if env.done:
            break
        seat = env.to_move
        shown = env.messages(seat)
        seen.append(repr(shown))
        listed = _listed_moves(shown)
        env.step(listed[0] if listed else "[0] I play my first option.")
    seen.append(repr(env.rewards()))
    return seen


def _trace(env_id: str, seed: int) -> list[str]:
    return _fixed_line(_Env(env_id, seed), _PROBE_MOVES)


@functools.cache
def _facts(env_id: str) -> _Facts:
    """Probe TextArena's ``<env_id>-raw`` with the network blocked: two players, determinism, named moves."""
    import textarena
    from textarena.envs.registration import ENV_REGISTRY

    if f"{env_id}-raw" not in ENV_REGISTRY:
        raise ValueError(f"TextArena has no environment {env_id!r} (textarena {textarena.__version__})")
    with _no_network():
        try:
            env = _Env(env_id, 0)
        except _NetworkBlocked as exc:
            return _Facts(False, 0, False, "", f"it needs the network ({exc})")
        except AssertionError as exc:
            return _Facts(False, 0, False, "", f"it is not a two-player game ({exc})")
        except Exception as exc:
            return _Facts(False, 0, False, "", _start_failure(exc))
        turns = int(getattr(env.env.state, "max_turns", None) or _DEFAULT_TURNS)
        description = _description(env)
        try:
            refusal = replays_alike(functools.partial(_trace, env_id))
            seeded = _trace(env_id, 0) != _trace(env_id, 1)
            names = bool(_listed_moves(env.messages(env.to_move)))
        except _NetworkBlocked as exc:
            return _Facts(False, turns, False, description, f"it needs the network ({exc})")
        except Exception as exc:
            return _Facts(False, turns, False, description, f"it fails in play ({type(exc).__name__}: {exc})"[:200])
    return _Facts(seeded, turns, names, description, refusal, not _docstring(env))


def _start_failure(exc: Exception) -> str:
    """Why an environment fails to start, in words: most of them need the network."""
    text = str(exc)
    if isinstance(exc, LookupError) and "nltk" in text.lower():
        return "it needs the network (NLTK's word lists, downloaded at first use)"
    if "OpenRouter" in text:
        return "it needs the network (a jury of models called over OpenRouter)"
    return f"it fails to start ({type(exc).__name__}: {text.strip().splitlines()[0][:160] if text.strip() else ''})"


def _docstring(env: _Env) -> str:
    return (type(env.env).__doc__ or "").strip()


def _description(env: _Env) -> str:
    """The environment's own description: its docstring, else its prompt to the first seat (the rules, told to that
    seat: said so, since the other seat reads it too), else ''."""
    doc = _docstring(env)
    if doc:
        return _relabelled(doc)
    first = env.messages(0)[:1]
    if not first:
        return ""
    head = f"TextArena's prompt to the first seat ({seat_label(0)}); the other seat's own prompt is its first message:"
    return f"{head}\n\n{_relabelled(first[0][1])}"


def _relabelled(text: str) -> str:
    """``text`` with TextArena's seat numbers (0 and 1) as the referee's anonymous labels (``Player 1`` for 0)."""
    return _SEAT_NUMBER.sub(lambda found: seat_label(int(found.group(1))), text)


class TextArenaGame(pyspiel.Game):
    """A TextArena environment as an OpenSpiel game (one class per environment, made by :func:`register`)."""

    env_id: str = ""
    facts: _Facts
    game_type: pyspiel.GameType

    def __init__(self, params: Mapping[str, Any] | None = None) -> None:
        params = dict(params or {})
        self.seeds = seed_count(params, self.facts.seeded)
        self.max_moves = 2 * self.facts.turns + 2  # an invalid move is asked again, once, by TextArena
        super().__init__(
            self.game_type,
            pyspiel.GameInfo(
                num_distinct_actions=1 + self.max_moves * _POOL_PER_MOVE,
                max_chance_outcomes=self.seeds,
                num_players=2,
                min_utility=-1.0,
                max_utility=1.0,
                utility_sum=None,
                max_game_length=self.max_moves,
            ),
            params,
        )

    def new_initial_state(self) -> TextArenaState:
        """A new match (at its chance node when the environment is seeded)."""
        return TextArenaState(self)

    def make_py_observer(
        self, iig_obs_type: pyspiel.IIGObservationType | None = None, params: Mapping[str, Any] | None = None
    ) -> SeatObserver:
        """Each seat's own view (other observation types for a game of perfect information only)."""
        return seat_observer(iig_obs_type, params, typed=False, what=self.env_id)

    def rules_text(self) -> str:
        """The environment's description (TextArena's prompt to a seat, where it has no other)."""
        head = (
            f"You are playing TextArena's {self.env_id} with one other player; write each move in square brackets, "
            "as the game asks."
        )
        return f"{head}\n\n{self.facts.description}".strip()

    def prompt_file(self) -> Path:
        """The LLM players' answer texts: the bracketed action alone, on one line."""
        return _PROMPTS

    def unlisted_moves(self) -> str | None:
        """Why the legal actions are not the game's moves (None: the environment names them)."""
        if self.facts.names_moves:
            return None
        return f"{self.env_id} does not name its legal moves: a move is free text, which a random player cannot write"


class TextArenaState(pyspiel.State):
    """A match: the seed chosen, the moves (utterance ids), the pool, the live environment (rebuilt by replay)."""

    def __init__(self, game: TextArenaGame) -> None:
        super().__init__(game)
        # plain values only: OpenSpiel copies a state by deep-copying its attributes and serializes it by pickling
        self._env_id = game.env_id
        self._seeds = game.seeds
        self._max_moves = game.max_moves
        self._capacity = game.num_distinct_actions()
        self._seed: int | None = None if game.facts.seeded else 0
        self._pool: list[str] = [""]
        self._moves: list[int] = []
        self._seen = [0, 0]  # per seat: its messages shown before its last move
        self._rules_prompt = game.facts.first_prompt_is_rules  # the first seat's prompt is in the rules
        self._live: ReplayedEnv[_Env] = ReplayedEnv()

    def _env(self) -> _Env:
        return self._live.get(self._replay)

    def _replay(self) -> _Env:
        assert self._seed is not None
        env = _Env(self._env_id, self._seed)
        for action in self._moves:
            env.step(self._pool[action])
        return env

    def current_player(self) -> int:
        """CHANCE until the seed is chosen; the seat TextArena names, or TERMINAL."""
        if self._seed is None:
            return pyspiel.PlayerId.CHANCE
        if self.is_terminal():
            return pyspiel.PlayerId.TERMINAL
        return self._env().to_move

    def _legal_actions(self, player: int) -> list[int]:
        """The moves the environment names (interned), else the empty utterance; any interned id is accepted."""
        if self._seed is None or self.is_terminal() or player != self._env().to_move:
            return []
        listed = _listed_moves(self._env().messages(player)[self._seen[player] :])
        return sorted({self.intern_utterance(player, move) for move in listed}) or [EMPTY]

    def chance_outcomes(self) -> list[tuple[int, float]]:
        """Every seed, equally likely (only before the seed is chosen)."""
        return seed_outcomes(self._seeds) if self._seed is None else []

    def _apply_action(self, action: int) -> None:
        if self._seed is None:
            self._seed = int(action)
            return
        if not 0 <= action < len(self._pool):
            raise ValueError(f"action {action} is not an utterance id of this state (0..{len(self._pool) - 1})")
        env = self._env()
        seat = env.to_move
        self._seen[seat] = len(env.messages(seat))
        env.step(self._pool[action])
        self._moves.append(int(action))

    def _action_to_string(self, player: int, action: int) -> str:
        if player == pyspiel.PlayerId.CHANCE or self._seed is None:
            return f"seed {action}"
        if not 0 <= action < len(self._pool):
            return f"<utterance {action}>"
        return self._pool[action] or "(an empty reply)"

    def is_terminal(self) -> bool:
        """TextArena says the match is over, or it reached its move limit (a draw)."""
        if self._seed is None:
            return False
        return len(self._moves) >= self._max_moves or self._env().done

    def returns(self) -> np.ndarray:
        """TextArena's rewards once the match is over (0 and 0 before, and for a match cut at the move limit)."""
        if self._seed is None or not self._env().done:
            return np.zeros(2)
        return np.asarray(self._env().rewards(), dtype=float)

    def seat_view(self, seat: int) -> str:
        """The messages TextArena sent ``seat`` since its last move, each with its sender."""
        if self._seed is None:
            return "The match has not started."
        env = self._env()
        start = self._seen[seat] or int(seat == 0 and self._rules_prompt)  # not the rules again
        lines = [_message(sender, text) for sender, text in env.messages(seat)[start:]]
        if self.is_terminal():
            lines.append(f"The match is over; you scored {self.returns()[seat]:g}.")
        return "\n\n".join(lines)

    def __str__(self) -> str:
        if self._seed is None:
            return "seed not chosen"
        return f"seed {self._seed}; moves {[self._pool[a] for a in self._moves]}"

    # -- DeepEval protocol ---------------------------------------------------------------------------

    def is_free_text_turn(self, player: int) -> bool:
        """Every move is free text (TextArena reads the bracketed action in it)."""
        return self._seed is not None and not self.is_terminal() and player == self._env().to_move

    def intern_utterance(self, player: int, text: str) -> int:
        """Store ``text`` in the pool and return its id (blank text is id 0; a known text keeps its id)."""
        text = text if text and text.strip() else ""
        if text in self._pool:
            return self._pool.index(text)
        if len(self._pool) >= self._capacity:
            raise ValueError(f"the utterance pool is full ({self._capacity} texts)")
        self._pool.append(text)
        return len(self._pool) - 1

    def penalty_action(self, player: int) -> int:
        """The empty utterance (TextArena treats it as an invalid move)."""
        return EMPTY


def _message(sender: int, text: str) -> str:
    """One message as a seat sees it, after its sender. Not ``[The game] ...``: brackets are the moves' syntax, and
    a model that copies the tag has written the move ``[The game]``."""
    who = "The game" if sender < 0 else seat_label(sender)
    return f"{who}: {_relabelled(text)}"


_SPECS: dict[str, _Facts] = {}


def register(name: str) -> None:
    """Register the pyspiel game ``textarena:<EnvId>``; ValueError when the environment cannot be adapted."""
    env_id = name[len(PREFIX) :]
    try:
        facts = _facts(env_id)
    except ImportError as exc:
        hint = "pip install 'deepeval-games[arena]'"
        raise ValueError(f"TextArena cannot be imported ({exc}); {hint}") from exc
    if facts.refusal is not None:
        raise ValueError(f"TextArena's {env_id} cannot be adapted: {facts.refusal}")
    params = {"seeds": DEFAULT_SEEDS} if facts.seeded else {}
    cls: type[TextArenaGame] = type(
        f"TextArena_{re.sub(r'[^0-9A-Za-z]', '_', env_id)}",
        (TextArenaGame,),
        {
            "env_id": env_id,
            "facts": facts,
            "game_type": game_type(
                name,
                f"TextArena {env_id}",
                players=2,
                simultaneous=False,
                chance=facts.seeded,
                perfect_information=False,
                zero_sum=False,
                parameters=params,
            ),
        },
    )
    _SPECS[env_id] = facts
    pyspiel.register_game(cls.game_type, cls)


def environment_ids() -> list[str]:
    """TextArena's environments by their ids without ``-raw`` (its base variants, ``KuhnPoker-v0``)."""
    from textarena.envs.registration import ENV_REGISTRY

    return sorted(key[: -len("-raw")] for key in ENV_REGISTRY if re.fullmatch(r"[^-]+-v\d+-raw", key))


def listing() -> list[tuple[str, str | None]]:
    """Every TextArena environment installed (base variants), with why it cannot be adapted (None: it can)."""
    try:
        ids = environment_ids()
    except ImportError:
        return [(f"{PREFIX}*", "TextArena is not installed (pip install 'deepeval-games[arena]')")]
    rows: list[tuple[str, str | None]] = []
    registered = {t.short_name for t in pyspiel.registered_games()}
    for env_id in ids:
        name = f"{PREFIX}{env_id}"
        refusal = None
        if name not in registered:
            try:
                register(name)
            except ValueError as exc:
                refusal = str(exc).split(": ", 1)[-1]
        rows.append((name, refusal))
    return rows


register_game_family(GameFamily(PREFIX, register, listing, description="TextArena's two-player environments"))
