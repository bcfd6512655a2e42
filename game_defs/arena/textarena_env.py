"""A live TextArena environment driven move by move, and what probing one finds (:func:`facts`).

:class:`LiveEnv` builds TextArena's ``<EnvId>-raw`` for a number of players and a seed, with its own state of
Python's global ``random`` (swapped in around every call into the environment, under a lock), NLTK's downloads read
from this project's data files (:mod:`game_defs.arena.word_lists`) and a jury that reads the match's recorded
verdicts (:mod:`game_defs.arena.jury`). :func:`facts` probes an environment once, with the network blocked: which
player counts it accepts, whether its seed matters, whether it replays alike, whether it names its moves, whether
its whole state is public (:mod:`game_defs.arena.textarena_tables`), and why it cannot be adapted.
"""

from __future__ import annotations

import contextlib
import copy
import enum
import functools
import io
import random
import re
import socket
import sys
import threading
import types
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from deepeval_games.core.message_pool import seat_label
from game_defs.arena.common import replays_alike
from game_defs.arena.jury import JURY_ENVIRONMENTS, RecordedVerdicts, VerdictNeeded, VerdictRequest, stand_in_gamemaster
from game_defs.arena.textarena_tables import base_name, public_state_declared
from game_defs.arena.word_lists import WordListMissing, nltk_from_data_files

__all__ = [
    "DEFAULT_TURNS",
    "PLAYER_COUNTS",
    "Facts",
    "LiveEnv",
    "NetworkBlocked",
    "deep_copy",
    "facts",
    "listed_moves",
    "no_network",
    "relabelled",
]

T = TypeVar("T")

DEFAULT_TURNS = 100
"""Turns of an environment that sets no ``max_turns`` (a match is cut there as a draw)."""
PLAYER_COUNTS = range(1, 9)
"""The player counts an environment is probed with (TextArena's own limits go up to 15 in places)."""
_PROBE_MOVES = 12
_LISTED = re.compile(r"(available|valid|legal)[^\n]*?(moves|actions|options)?[^\n]*?:", re.IGNORECASE)
_BRACKETED = re.compile(r"\[[^\[\]\n]{1,40}\]")
_EXAMPLE = re.compile(r"\b(format|e\.g\.|for example|example)\b", re.IGNORECASE)
_TEMPLATE = re.compile(r"\b[XYNK]\b|<[^>]*>|\.\.\.")
"""A placeholder in a listed move (``[bet X]``, ``[<amount>]``): the list shows a template, not a move."""
_SEAT_NUMBER = re.compile(r"\bPlayer (0|[1-9][0-9]*)\b")
_LOCK = threading.RLock()
"""Held around every call into an environment: Python's global ``random`` is swapped for the match's own."""


class NetworkBlocked(OSError):
    """An environment opened a network connection while :func:`no_network` was in force."""


@contextmanager
def no_network() -> Iterator[None]:
    """Refuse sockets while a probe runs: an environment that needs the network fails here, not in a match."""
    original = socket.socket.connect

    def refuse(self: socket.socket, address: Any) -> None:
        raise NetworkBlocked(f"the environment opened a network connection to {address!r}")

    socket.socket.connect = refuse  # type: ignore[method-assign,assignment]
    try:
        yield
    finally:
        socket.socket.connect = original  # type: ignore[method-assign]


def relabelled(text: str, players: int = 2) -> str:
    """``text`` with TextArena's seat numbers (0 to ``players - 1``) as the referee's anonymous labels (``Player 1``
    for 0); other numbers are left as they are."""

    def label(found: re.Match[str]) -> str:
        number = int(found.group(1))
        return seat_label(number) if number < players else found.group(0)

    return _SEAT_NUMBER.sub(label, text)


class LiveEnv:
    """A TextArena environment with its own generator state, driven move by move.

    ``verdicts`` answer the environment's jury questions in order; a question beyond them leaves the environment
    :attr:`pending` (it is then a judge node, and unusable until it is rebuilt with one more verdict). ``copies``:
    whether :meth:`duplicate` may deep-copy it (:attr:`Facts.copies`: the probe found a copy goes on alike).
    """

    def __init__(
        self,
        env_id: str,
        seed: int,
        players: int = 2,
        verdicts: RecordedVerdicts | None = None,
        *,
        reset: bool = True,
        copies: bool = True,
    ) -> None:
        import textarena

        self.env_id = env_id
        self.players = players
        self.verdicts = verdicts if verdicts is not None else RecordedVerdicts()
        self.pending: VerdictRequest | None = None
        self.done = False
        self._random = random.Random(seed).getstate()
        self._numpy = np.random.RandomState(seed).get_state()
        kind = JURY_ENVIRONMENTS.get(base_name(env_id))
        self._copyable = copies and kind is None  # a jury's stand-in reads the verdicts of the match it was built for
        kwargs = {"jury_class": self.verdicts.jury_class(), "jury_size": 1} if kind == "jury" else {}
        with _LOCK, contextlib.redirect_stdout(io.StringIO()), nltk_from_data_files():
            if kind is None:
                self.env = _fresh(env_id)
            else:  # its jury reads this match's verdicts: built for it
                with stand_in_gamemaster(self.verdicts) if kind == "gamemaster" else _nothing() as connect:
                    self.env = textarena.make(f"{env_id}-raw", **kwargs)
                    if connect is not None:
                        connect(self.env)
        if reset:
            self.reset(players, seed)

    def reset(self, players: int, seed: int) -> None:
        """Start a match of ``players`` from ``seed`` (raises what TextArena raises for a count it does not take)."""
        self.players = players
        self.done = False
        self.pending = None
        self._call(lambda: self.env.reset(num_players=players, seed=seed))

    def _call(self, fn: Callable[[], Any]) -> Any:
        """``fn`` under the match's own ``random`` and ``numpy.random`` states, its prints kept off the terminal (an
        environment's chatter, e.g. "Generated puzzle in 1 attempts", is not the program's output); a jury question
        without a verdict leaves the environment pending."""
        with _LOCK, contextlib.redirect_stdout(io.StringIO()), nltk_from_data_files():
            saved, saved_numpy = random.getstate(), np.random.get_state()
            random.setstate(self._random)
            np.random.set_state(self._numpy)
            try:
                return fn()
            except VerdictNeeded as needed:
                self.pending = needed.request
                return None
            finally:
                self._random, self._numpy = random.getstate(), np.random.get_state()
                random.setstate(saved)
                np.random.set_state(saved_numpy)

    def duplicate(self) -> LiveEnv | None:
        """A deep copy of this environment, its generator states with it, to go on from where it is (a state's
        ``clone`` copies it instead of replaying the match); None where it cannot be copied, or asks a jury (its
        stand-in reads the verdicts of this match): a copy of the state then replays."""
        if not self._copyable:
            return None
        with _LOCK:
            try:
                return deep_copy(self)
            except Exception:  # an environment that holds what cannot be copied
                return None

    def step(self, text: str) -> None:
        """Play ``text`` as the move of the seat to move."""
        if self.pending is not None:
            raise RuntimeError("the environment waits for a verdict")
        result = self._call(lambda: self.env.step(text))
        if self.pending is None:
            done = result[0] if isinstance(result, tuple) else False
            self.done = bool(done) or bool(self.env.state.done)

    @property
    def to_move(self) -> int:
        """The seat TextArena names to move."""
        return int(self.env.state.current_player_id)

    def messages(self, seat: int) -> list[tuple[int, str]]:
        """Everything the environment sent ``seat`` so far (sender, text): none before it has started."""
        return [(sender, text) for sender, text, _ in self.typed_messages(seat)]

    def typed_messages(self, seat: int) -> list[tuple[int, str, str]]:
        """Everything the environment sent ``seat`` so far, with each message's TextArena type (``PROMPT``,
        ``GAME_BOARD``, ...)."""
        observations = getattr(getattr(self.env, "state", None), "observations", None) or {}
        return [_message_parts(entry) for entry in observations.get(seat, [])]

    def rewards(self) -> list[float]:
        """TextArena's rewards per seat (0 for a seat it names none for; -1, TextArena's reward of an invalid move,
        for one that is not a number: ThreeCardMonte 0.7.4 passes an invalid move's reason as its reward)."""
        rewards = self.env.state.rewards or {}
        return [_reward(rewards.get(seat, 0.0)) for seat in range(self.players)]

    def moves(self, seat: int, since: int) -> list[str]:
        """The legal moves of ``seat`` the environment names in its messages since ``since`` (none: it names none)."""
        return listed_moves(self.messages(seat)[since:])


def _message_parts(entry: Sequence[Any]) -> tuple[int, str, str]:
    """(sender, text, type name) of one of TextArena's messages. Countdown, Cryptarithm and Slitherlink (0.7.4) pass
    a player's move as ``add_observation(player, text, type)``, which lands as (type, player, text): read back."""
    sender, text, kind = [*entry, None, None][:3]
    if not isinstance(sender, int) and isinstance(text, int) and isinstance(kind, str):
        sender, text, kind = text, kind, sender
    who = sender if isinstance(sender, int) else -1
    return who, str(text), str(getattr(kind, "name", kind))


def _reward(value: Any) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        return -1.0


_ATOMS = (str, bytes, int, float, bool, type(None))
_ATOM_TYPES = frozenset(_ATOMS)
_FLAT_SIZE = 8
"""A list or set of at least this many immutable items is copied flat by :func:`deep_copy`."""
_FLAT_DEPTH = 4
"""How deep in attributes :func:`deep_copy` looks for them (a live environment, TextArena's, its state)."""


def deep_copy(obj: T) -> T:
    """``copy.deepcopy(obj)``, faster where ``obj`` holds large lists of immutable items: a list or set of atoms
    (strings, numbers) or of tuples of atoms and enum members (TextArena's messages: sender, text, type), found in
    its attributes (and in the values of a dictionary there), theirs and so on, is copied as a new container of the
    same items, which is what ``deepcopy`` makes of it (each such item is its own deep copy), without copying item by
    item: an English dictionary of sets of 100,000 words is most of a word game's environment, and the messages
    most of a long match's."""
    memo: dict[int, Any] = {}
    _flat_copies(obj, memo, _FLAT_DEPTH)
    return copy.deepcopy(obj, memo)


def _flat_copies(obj: Any, memo: dict[int, Any], depth: int) -> None:
    """Put in ``memo`` the copy of each list or set of immutable items among ``obj``'s attributes and the values of
    its dictionaries (``depth`` deep)."""
    attributes = getattr(obj, "__dict__", None)
    if depth == 0 or not isinstance(attributes, dict) or isinstance(obj, (type, types.ModuleType)):
        return
    for value in attributes.values():
        values = value.values() if type(value) is dict else (value,)
        for item in values:
            kind = type(item)
            if kind in (list, set) and len(item) >= _FLAT_SIZE:
                if id(item) not in memo and _immutable_items(item):
                    memo[id(item)] = kind(item)
            elif kind not in _ATOM_TYPES and kind is not dict and not callable(item):
                _flat_copies(item, memo, depth - 1)


def _immutable_items(items: list[Any] | set[Any]) -> bool:
    """Whether every item is an atom, or a tuple of atoms and enum members (``deepcopy`` returns each as it is)."""
    kinds = set(map(type, items))
    if kinds <= _ATOM_TYPES:
        return True
    return kinds == {tuple} and all(
        type(part) in _ATOM_TYPES or isinstance(part, enum.Enum) for item in items for part in item
    )


_PRISTINE: dict[str, Any] = {}
"""Per environment (without a jury), one built and never reset: each live environment is a copy of it, since some
environments take seconds to build (SpellingBee and WordChains read a dictionary of English words)."""


def _fresh(env_id: str) -> Any:
    """A new environment ``env_id`` as TextArena builds it (a copy of the pristine one; the caller holds the lock)."""
    import textarena

    if env_id not in _PRISTINE:
        _PRISTINE[env_id] = textarena.make(f"{env_id}-raw")
    try:
        return deep_copy(_PRISTINE[env_id])
    except Exception:  # an environment that holds what cannot be copied: built anew
        return textarena.make(f"{env_id}-raw")


@contextmanager
def _nothing() -> Iterator[None]:
    yield None


def listed_moves(messages: Sequence[tuple[int, str]]) -> list[str]:
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
class Facts:
    """What probing an environment found."""

    seeded: bool
    turns: int
    names_moves: bool
    description: str
    refusal: str | None = None
    first_prompt_is_rules: bool = False
    """The description is the first seat's prompt (the environment has no docstring)."""
    players: tuple[int, ...] = (2,)
    """The player counts the environment accepts (of :data:`PLAYER_COUNTS`), its default first."""
    jury: bool = False
    """The environment asks a jury (its states have judge nodes)."""
    perfect_information: bool = False
    """Its whole state is public: declared in the table and checked (every seat shown the same, no seed)."""
    public_note: str | None = None
    """Why a declared public state was not found to be one (None: not declared, or it was)."""
    copies: bool = False
    """A deep copy of a live environment, made halfway through a fixed line, goes on as the original does (a state's
    ``clone`` copies it; else a clone replays the match)."""


def _fixed_line(env: LiveEnv, moves: int) -> list[str]:
    """Play a fixed line (the first named move, else a fixed text) and return what the seats were shown."""
    seen = []
    for _ in range(moves):
        if env.done:
            break
        seat = env.to_move
        shown = env.messages(seat)
        seen.append(repr(shown))
        listed = env.moves(seat, 0)
        env.step(listed[0] if listed else "[0] I play my first option.")
    seen.append(repr(env.rewards()))
    return seen


def _trace(env_id: str, players: int, seed: int) -> list[str]:
    return _fixed_line(LiveEnv(env_id, seed, players, RecordedVerdicts(auto=True)), _PROBE_MOVES)


def _accepted_counts(env_id: str) -> tuple[tuple[int, ...], str | None]:
    """The player counts (of :data:`PLAYER_COUNTS`) the environment plays, the default first (two where it plays
    two, the adapter's first count, else the fewest), and why the fewest count its ``reset`` takes fails in play
    (None: none fails). A count is played where ``reset`` takes it, the state it makes has that many players (some
    environments ignore the count they are given), and a few moves of a fixed line run; each count is tried on a
    fresh copy of one environment built once (some carry state across resets)."""
    ok: list[int] = []
    failure = None
    built = LiveEnv(env_id, 0, verdicts=RecordedVerdicts(auto=True), reset=False)
    for players in PLAYER_COUNTS:
        env = deep_copy(built)
        try:
            env.reset(players, 0)
        except Exception:  # the environment's own refusal of the count (an assertion, mostly)
            continue
        if int(getattr(env.env.state, "num_players", players)) != players:
            continue
        try:
            _fixed_line(env, 2 * players)
        except Exception as exc:
            failure = failure or f"with {players} players, {type(exc).__name__}: {exc}"
            continue
        ok.append(players)
    if 2 in ok:
        ok.remove(2)
        ok.insert(0, 2)
    return tuple(ok), failure


_OWN = ("PROMPT", "GAME_ADMIN")
"""Messages of TextArena's types that may go to one seat alone in a game of perfect information: its prompt, and
what the game tells it of its own move (an invalid move, asked again)."""


def _seats_see_alike(env: LiveEnv) -> bool:
    """Whether every seat has been shown the same messages, its own prompt and admin aside (the whole state is
    public)."""
    views = [[m for m in env.typed_messages(seat) if m[2] not in _OWN] for seat in range(env.players)]
    return all(view == views[0] for view in views)


def _public_check(env_id: str, players: int, seeded: bool) -> str | None:
    """Why the declared public state of ``env_id`` is not one (None: every seat was shown alike on a fixed line)."""
    if seeded:
        return "its play depends on its seed, which a search of its state would know ahead"
    env = LiveEnv(env_id, 0, players, RecordedVerdicts(auto=True))
    for _ in range(_PROBE_MOVES):
        if not _seats_see_alike(env):
            return "its seats were shown different messages"
        if env.done:
            break
        listed = env.moves(env.to_move, 0)
        env.step(listed[0] if listed else "[0] I play my first option.")
    return None if _seats_see_alike(env) else "its seats were shown different messages"


@functools.cache
def facts(env_id: str) -> Facts:
    """Probe TextArena's ``<env_id>-raw`` with the network blocked: player counts, determinism, named moves."""
    import textarena
    from textarena.envs.registration import ENV_REGISTRY

    if f"{env_id}-raw" not in ENV_REGISTRY:
        raise ValueError(f"TextArena has no environment {env_id!r} (textarena {textarena.__version__})")
    with no_network():
        try:
            counts, failure = _accepted_counts(env_id)
            if not counts and failure is not None:
                failing = f"upstream bug: TextArena {textarena.__version__}'s {env_id} fails in play ({failure})"
                return _refused(failing[:200])
            if not counts:
                LiveEnv(env_id, 0, 2)  # the environment's own words for why it takes no count
                return _refused(f"it takes none of {PLAYER_COUNTS.start}..{PLAYER_COUNTS.stop - 1} players")
            env = LiveEnv(env_id, 0, counts[0], RecordedVerdicts(auto=True))
        except (NetworkBlocked, WordListMissing) as exc:
            return _refused(f"it needs the network ({exc})" if isinstance(exc, NetworkBlocked) else str(exc))
        except Exception as exc:
            return _refused(start_failure(exc))
        return _probe(env_id, env, counts)


def _probe(env_id: str, env: LiveEnv, counts: tuple[int, ...]) -> Facts:
    """The facts of an environment that starts (``env``: built for the default count)."""
    players = counts[0]
    turns = int(getattr(env.env.state, "max_turns", None) or DEFAULT_TURNS)
    description = _description(env)
    try:
        first: dict[int, list[str]] = {}  # each seed's first play, which tells the seeds apart too

        def trace(seed: int) -> list[str]:
            played = _trace(env_id, players, seed)
            first.setdefault(seed, played)
            return played

        refusal = replays_alike(trace)
        seeded = _first(first, 0, trace) != _first(first, 1, trace) or (
            _hidden_state(env_id, players, 0) != _hidden_state(env_id, players, 1)
        )
        names = bool(env.moves(env.to_move, 0))
        copies = _copies_alike(env_id, players)
        public = _public_check(env_id, players, seeded) if public_state_declared(env_id) else None
    except NetworkBlocked as exc:
        return _refused(f"it needs the network ({exc})", turns, description)
    except Exception as exc:
        import textarena

        failure = (
            f"upstream bug: TextArena {textarena.__version__}'s {env_id} fails in play ({type(exc).__name__}: {exc})"
        )
        return _refused(failure[:200], turns, description)
    found = Facts(seeded, turns, names, description, refusal, not _docstring(env), counts)
    jury = base_name(env_id) in JURY_ENVIRONMENTS
    declared = public_state_declared(env_id)
    return replace(found, jury=jury, perfect_information=declared and public is None, public_note=public, copies=copies)


def _copies_alike(env_id: str, players: int) -> bool:
    """Whether a deep copy of the environment, made halfway through a fixed line, shows the seats what the original
    does and goes on to the same end (an environment that rebuilds itself when copied does not)."""
    half = _PROBE_MOVES // 2
    try:
        env = LiveEnv(env_id, 0, players, RecordedVerdicts(auto=True))
        _fixed_line(env, half)
        twin = env.duplicate()
        return twin is not None and _fixed_line(twin, _PROBE_MOVES - half) == _fixed_line(env, _PROBE_MOVES - half)
    except NetworkBlocked:
        raise
    except Exception:  # the copy, or the line played on it, failed: states replay
        return False


def _first(first: dict[int, list[str]], seed: int, trace: Callable[[int], list[str]]) -> list[str]:
    """The first play from ``seed``: the one kept, else played now."""
    return first[seed] if seed in first else trace(seed)


def _hidden_state(env_id: str, players: int, seed: int) -> str:
    """The environment's own state after ``reset`` from ``seed`` (a puzzle's answer, which no seat is shown): an
    environment whose hidden state the seed changes is seeded, though its seats are shown alike at first (MemoryGame's
    face-down layout; of TextArena 0.7.4's two-player environments, the one so found)."""
    env = LiveEnv(env_id, seed, players, RecordedVerdicts(auto=True))
    return repr(getattr(env.env.state, "game_state", None))


def _refused(reason: str, turns: int = 0, description: str = "") -> Facts:
    return Facts(False, turns, False, description, reason)


def start_failure(exc: BaseException) -> str:
    """Why an environment fails to start, in words: a file of TextArena's that does not compile on this Python or
    that its package lacks is named with TextArena's version; a download it needs is named."""
    import textarena

    version = f"TextArena {textarena.__version__}"
    text = str(exc)
    if isinstance(exc, SyntaxError):
        where = _site_path(exc.filename or "")
        python = f"Python {sys.version_info.major}.{sys.version_info.minor}"
        return f"upstream bug: {version}'s {where} does not compile on {python} ({exc.msg}, line {exc.lineno})"
    if isinstance(exc, FileNotFoundError):
        missing = _site_path(str(exc.filename or text.rsplit(": ", 1)[-1]))
        return f"upstream bug: {version} ships without a file it reads ({missing})"
    if isinstance(exc, LookupError) and "nltk" in text.lower():
        return "it needs NLTK data that deepeval-games does not fetch (" + text.strip().splitlines()[0][:120] + ")"
    if "OpenRouter" in text:
        return "it needs the network (a jury of models called over OpenRouter)"
    return f"it fails to start ({type(exc).__name__}: {text.strip().splitlines()[0][:160] if text.strip() else ''})"


def _site_path(path: str) -> str:
    """``path`` from ``textarena/`` on (the part that names the file in TextArena's package)."""
    parts = Path(path).parts
    return str(Path(*parts[parts.index("textarena") :])) if "textarena" in parts else path


def _docstring(env: LiveEnv) -> str:
    return (type(env.env).__doc__ or "").strip()


def _description(env: LiveEnv) -> str:
    """The environment's own description: its docstring, else its prompt to the first seat (the rules, told to that
    seat: said so, since the other seats read it too), else ''."""
    doc = _docstring(env)
    if doc:
        return relabelled(doc, env.players)
    first = env.messages(0)[:1]
    if not first:
        return ""
    if env.players == 1:
        head = "TextArena's prompt to the player:"
    elif env.players == 2:
        head = (
            f"TextArena's prompt to the first seat ({seat_label(0)}); the other seat's own prompt is its first message:"
        )
    else:
        head = (
            f"TextArena's prompt to the first seat ({seat_label(0)}); each other seat's own prompt is its first "
            "message:"
        )
    return f"{head}\n\n{relabelled(first[0][1], env.players)}"
