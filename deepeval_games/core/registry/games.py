"""Loading and listing the registered ``deepeval_`` games, with errors a user can act on."""

from __future__ import annotations

import difflib
import functools
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyspiel

from deepeval_games.core.errors import UnknownGameError
from deepeval_games.core.registry.entry_points import load_entry_points

__all__ = [
    "DATA_ITEM_PARAMETERS",
    "MAX_DISTINCT_ACTIONS",
    "MAX_MATCH_BYTES",
    "MAX_MATCH_MOVES",
    "GameFamily",
    "GameInfo",
    "MatchSize",
    "check_file_parameters",
    "check_match_size",
    "check_parameters",
    "game_families",
    "game_variant",
    "load_game",
    "load_recorded_game",
    "match_size",
    "names_files",
    "payoff_support",
    "recorded_game",
    "register_game_family",
    "register_payoff_support",
    "registered_games",
]

PREFIX = "deepeval_"
ENTRY_POINT_GROUP = "deepeval_games.games"
DATA_ITEM_PARAMETERS = ("start", "task_id", "paragraph")
"""Game parameters that name a data item (a starting word, a dataset task, a paragraph): results over
different items of one game variant are pooled; any other parameter makes a different game."""


def _ensure_registered() -> None:
    """Import every package that registers games (entry point group above), the built-in tasks included."""
    load_entry_points(ENTRY_POINT_GROUP)


@dataclass(frozen=True)
class GameInfo:
    """A registered task: its short name, long name, players and default parameters."""

    short_name: str
    long_name: str
    min_players: int
    max_players: int
    dynamics: str
    parameters: dict[str, Any]


def registered_games() -> list[GameInfo]:
    """Every registered ``deepeval_`` game, sorted by name."""
    _ensure_registered()
    infos = []
    for game_type in pyspiel.registered_games():
        if not game_type.short_name.startswith(PREFIX):
            continue
        infos.append(
            GameInfo(
                short_name=game_type.short_name,
                long_name=game_type.long_name,
                min_players=game_type.min_num_players,
                max_players=game_type.max_num_players,
                dynamics=str(game_type.dynamics).rsplit(".", 1)[-1].lower(),
                parameters=dict(game_type.parameter_specification),
            )
        )
    return sorted(infos, key=lambda info: info.short_name)


@dataclass(frozen=True)
class GameFamily:
    """Games named ``<prefix><id>`` that a package adapts on demand (another library's environments), registered
    with :func:`register_game_family` when its entry point loads: the core names no such library.

    :func:`load_game` asks the family to register a name it does not know yet; ``deepeval-games games --all`` lists
    what :attr:`listing` finds."""

    prefix: str
    """The start of every name of the family, ending in ``:`` (``pettingzoo:``)."""
    register: Callable[[str], None]
    """Register the pyspiel game of a whole name (prefix included); raise ValueError saying why it cannot."""
    listing: Callable[[], list[tuple[str, str | None]]]
    """Every game the family finds installed: (name, why it cannot be played; None when it can)."""
    description: str = ""
    listing_key: Callable[[], str] | None = None
    """What the family's listing depends on beyond the installed libraries (a folder it reads its games from), for
    the cache of ``games --all``; None: nothing."""


_FAMILIES: dict[str, GameFamily] = {}


def register_game_family(family: GameFamily) -> None:
    """Make :func:`load_game` resolve names that start with ``family.prefix`` through ``family``."""
    if not family.prefix.endswith(":"):
        raise ValueError(f"a game family's prefix ends in ':', got {family.prefix!r}")
    _FAMILIES[family.prefix] = family


def game_families() -> list[GameFamily]:
    """Every registered game family (their packages' entry points loaded), by prefix."""
    _ensure_registered()
    return [_FAMILIES[prefix] for prefix in sorted(_FAMILIES)]


def _resolve_family(name: str) -> None:
    """Have the family of ``name`` register it (nothing for a name of no family or one registered already)."""
    prefix = name.split(":", 1)[0] + ":" if ":" in name else ""
    family = _FAMILIES.get(prefix)
    if family is None or name in {t.short_name for t in pyspiel.registered_games()}:
        return
    try:
        family.register(name)
    except (ValueError, ImportError) as exc:
        raise UnknownGameError(f"cannot load {name!r}: {exc}") from exc


def load_game(game_string: str, overrides: Mapping[str, Any] | None = None) -> pyspiel.Game:
    """``pyspiel.load_game`` with the tasks registered and a clear :class:`UnknownGameError` on failure.

    ``overrides`` replace or add parameters of ``game_string`` (used by spec sweeps). Before the game is loaded, its
    parameters are checked against the bounds its task declares and OpenSpiel's player counts
    (:func:`check_parameters`); after, the estimate of a match's length and memory against this project's limits
    (:func:`check_match_size`): an absurd setting is refused with the bound it crossed, never tried.
    """
    _ensure_registered()
    name = game_string.split("(", 1)[0].strip()
    _resolve_family(name)
    types = {game_type.short_name: game_type for game_type in pyspiel.registered_games()}
    if name not in types:
        ours = sorted(k for k in types if k.startswith(PREFIX))
        close = difflib.get_close_matches(name, ours, n=1)
        hint = f" Did you mean {close[0]!r}?" if close else ""
        if ":" in name:
            known = ", ".join(_FAMILIES) or "none"
            hint = f" No installed package adapts {name.split(':', 1)[0]!r} games (game families: {known})."
        raise UnknownGameError(f"unknown game {name!r}.{hint} Registered tasks: {', '.join(ours)}.")
    where = f"{game_string!r} with {dict(overrides)}" if overrides else repr(game_string)
    try:
        params = pyspiel.game_parameters_from_string(game_string)
        params.pop("name", None)
        params = {**params, **(overrides or {})}
        typed = typed_parameters(types[name], params, where)
        check_parameters(types[name], typed, where)
        retyped = any(type(typed[key]) is not type(value) for key, value in params.items())
        game = pyspiel.load_game(name, typed) if overrides or retyped else pyspiel.load_game(game_string)
    except (pyspiel.SpielError, ValueError, TypeError, RuntimeError) as exc:
        message = str(exc).split("OpenSpiel exception:")[0].strip() or str(exc)
        raise UnknownGameError(f"cannot load {where}: {message}") from exc
    check_match_size(game, where)
    return game


MAX_MATCH_MOVES = 100_000
"""The most moves a match may last (OpenSpiel's ``max_game_length``); chess's bound is 17,695, cursor Go's 72,922."""
MAX_DISTINCT_ACTIONS = 1_000_000
"""The most distinct moves a game may have (a seat played through text is shown its legal moves by name)."""
MAX_MATCH_BYTES = 1 << 30
"""The most memory a match's estimate (:func:`match_size`) may come to: 1 GiB."""
_BYTES_PER_MOVE = 2_048
"""A match record's share per move, as estimated (a turn with its texts and tokens; a generous figure)."""
_BYTES_PER_ACTION = 64
"""Memory per distinct move, as estimated (its name in a list of legal moves)."""


@dataclass(frozen=True)
class MatchSize:
    """An upper estimate of one match of a loaded game, from the figures OpenSpiel reports for it."""

    moves: int
    """The most moves a match may last (``max_game_length``)."""
    actions: int
    """Distinct moves of the game (``num_distinct_actions``)."""
    bytes: int
    """Estimated memory: a record's share per move, and the names of the moves."""


def match_size(game: pyspiel.Game) -> MatchSize:
    """The estimate of one match of ``game`` that :func:`check_match_size` checks: from the game's figures only (its
    observation tensors are left out: a Python game builds one to report its size, and no seat played through text
    uses them)."""
    moves, actions = int(game.max_game_length()), int(game.num_distinct_actions())
    return MatchSize(moves, actions, moves * _BYTES_PER_MOVE + actions * _BYTES_PER_ACTION)


def check_match_size(game: pyspiel.Game, where: str = "") -> MatchSize:
    """Refuse a game whose match would be absurdly long or large (:data:`MAX_MATCH_MOVES`,
    :data:`MAX_DISTINCT_ACTIONS`, :data:`MAX_MATCH_BYTES`), naming the bound it crossed.

    Raises:
        UnknownGameError: a bound is crossed.
    """
    size = match_size(game)
    where = where or repr(str(game))
    if size.moves > MAX_MATCH_MOVES:
        raise UnknownGameError(
            f"{where}: a match may last {size.moves:,} moves, over the bound of {MAX_MATCH_MOVES:,} moves a match"
        )
    if size.actions > MAX_DISTINCT_ACTIONS:
        raise UnknownGameError(
            f"{where}: the game has {size.actions:,} distinct moves, over the bound of {MAX_DISTINCT_ACTIONS:,}"
        )
    if size.bytes > MAX_MATCH_BYTES:
        raise UnknownGameError(
            f"{where}: a match is estimated at {size.bytes / 2**20:,.0f} MiB, over the bound of "
            f"{MAX_MATCH_BYTES / 2**20:,.0f} MiB a match"
        )
    return size


_TYPE_WORDS = {bool: "true or false", int: "a whole number", float: "a number", str: "a string"}


def typed_parameters(game_type: pyspiel.GameType, params: Mapping[str, Any], where: str = "") -> dict[str, Any]:
    """``params`` checked against the game's parameter specification before OpenSpiel sees them, so that a typo or a
    value of the wrong type is refused with one clear message (OpenSpiel would print its own to stderr first): an
    unknown name is named with the closest known one; a whole number where the game takes a number is taken as that
    number (``alpha=2`` as ``alpha=2.0``).

    Raises:
        UnknownGameError: an unknown parameter, or a value of another type.
    """
    spec = dict(game_type.parameter_specification)
    name = game_type.short_name
    where = where or repr(name)
    typed: dict[str, Any] = {}
    for key, value in params.items():
        if key not in spec:
            close = difflib.get_close_matches(key, list(spec), n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            known = f"its parameters: {', '.join(sorted(spec))}" if spec else f"{name} takes no parameters"
            raise UnknownGameError(f"cannot load {where}: unknown parameter {key!r}{hint} ({known})")
        want = type(spec[key])
        if want is float and type(value) is int:
            value = float(value)
        elif want in _TYPE_WORDS and type(value) is not want:
            raise UnknownGameError(
                f"cannot load {where}: parameter {key!r} of {name} takes {_TYPE_WORDS[want]} "
                f"(default {spec[key]!r}), got {value!r}"
            )
        typed[key] = value
    return typed


def check_parameters(game_type: pyspiel.GameType, params: Mapping[str, Any], where: str = "") -> None:
    """Refuse parameters outside the bounds the game's task declares (:func:`deepeval_games.core.task.parameter_bounds`)
    and a ``players`` above OpenSpiel's own range for the game, before the game is loaded with them.

    Raises:
        UnknownGameError: a parameter is out of bounds.
    """
    name = game_type.short_name
    where = where or repr(name)
    players = params.get("players")  # too few: the game's own message says so
    if isinstance(players, int) and not isinstance(players, bool) and players > game_type.max_num_players:
        low, high = game_type.min_num_players, game_type.max_num_players
        raise UnknownGameError(f"cannot load {where}: players must be within {low}..{high} for {name}, got {players}")
    for key, (low, high) in _declared_bounds(name).items():
        value = params.get(key)
        if isinstance(value, (int, float)) and not isinstance(value, bool) and not low <= value <= high:
            raise UnknownGameError(
                f"cannot load {where}: {key} must be within {low}..{high} (the bounds {name} declares), got {value}"
            )


@functools.cache
def _declared_bounds(short_name: str) -> dict[str, tuple[float, float]]:
    """The parameter bounds a game declares, read from the game loaded with its default parameters (once per game;
    a game whose defaults do not load declares none)."""
    from deepeval_games.core.task import parameter_bounds

    try:
        default = pyspiel.load_game(short_name)
    except Exception:  # parameters it needs, data it lacks: loading the game asked for says what is wrong
        return {}
    try:
        return parameter_bounds(default)
    except ValueError as exc:  # a task's own mistake: say so where it is used
        raise UnknownGameError(str(exc)) from exc


_PAYOFF_SUPPORTS: dict[str, tuple[float, ...]] = {}


def register_payoff_support(short_name: str, values: tuple[float, ...]) -> None:
    """Declare that every payoff of a complete match of ``short_name`` (whatever its parameters) is one of
    ``values``: what the game's rules say, never what a sample happens to show."""
    if len(set(values)) < 2:
        raise ValueError(f"the payoff support of {short_name} needs two distinct values or more")
    _PAYOFF_SUPPORTS[short_name] = tuple(sorted({float(v) for v in values}))


def payoff_support(game: pyspiel.Game) -> tuple[float, ...] | None:
    """The values every payoff of ``game`` takes, ascending: the game's ``payoff_support()`` hook (the task
    contract, :mod:`deepeval_games.core.task`), else the table of :func:`register_payoff_support`; None when it
    declares none (its payoffs may take any value of its range) or declares values outside its utility range."""
    _ensure_registered()  # the built-in tables register when the game packages load
    from deepeval_games.core.task import declared_payoffs

    declared = declared_payoffs(game) or _PAYOFF_SUPPORTS.get(game.get_type().short_name)
    if declared is None:
        return None
    values = tuple(sorted({float(v) for v in declared}))
    low, high = float(game.min_utility()), float(game.max_utility())
    return values if len(values) >= 2 and low <= values[0] and values[-1] <= high else None


def load_recorded_game(game_string: str, *, data_dir: str | Path | None = None) -> pyspiel.Game:
    """Load a game string read from a record, with the file check a spec's game string gets.

    A run directory may come from anyone, and its records name their games: a record's
    ``efg_game(filename=...)`` must not make OpenSpiel open a file outside the data folder the run's own spec named
    (``data_dir``; without one, no file at all).

    Raises:
        UnknownGameError: the game cannot be loaded, or a parameter names a file outside ``data_dir``.
    """
    check_file_parameters(game_string, data_dir=data_dir)
    return load_game(game_string)


@functools.lru_cache(maxsize=64)  # a run's records share a few game strings; a game is immutable
def recorded_game(game_string: str) -> pyspiel.Game:
    """:func:`load_recorded_game` without a data folder, loaded once a game string: the game a record is replayed in
    (its moves named, its messages rebuilt). A game that names a file is refused, never opened.

    Raises:
        UnknownGameError: the game cannot be loaded, or a parameter names a file.
    """
    return load_recorded_game(game_string)


def names_files(game_string: str) -> bool:
    """True when a parameter of ``game_string`` names a file (:func:`check_file_parameters` refuses it without a
    data folder): its records cannot be replayed by :func:`recorded_game`."""
    try:
        params: dict[str, Any] = dict(pyspiel.game_parameters_from_string(game_string))
    except (pyspiel.SpielError, ValueError, TypeError, RuntimeError):
        return False
    return bool(_file_parameters(params))


@functools.lru_cache(maxsize=4096)  # a report asks once per record, and a run's records share a few game strings
def game_variant(game_string: str) -> str:
    """The game string without its data-item parameters: matches of one variant are pooled in tables."""
    params = pyspiel.game_parameters_from_string(game_string)
    name = params.pop("name")
    kept = ",".join(f"{k}={v}" for k, v in sorted(params.items()) if k not in DATA_ITEM_PARAMETERS)
    return f"{name}({kept})" if kept else name


_PATH_PARAMETER = re.compile(r"(file|filename|path|root|dir|directory|folder)s?$", re.IGNORECASE)
"""Names of game parameters that name something on disk (``filename``, ``instances_file``, ``puzzles_root``)."""


def _file_parameters(params: Mapping[str, Any], where: str = "") -> list[tuple[str, str]]:
    """(parameter, value) of every string parameter that names a file, nested games' parameters included: by its
    name, or because its value is an existing path written with a separator."""
    found = []
    for key, value in params.items():
        name = f"{where}{key}"
        if isinstance(value, Mapping):  # a nested game: game=efg_game(filename=...)
            found.extend(_file_parameters(value, f"{name}."))
        elif isinstance(value, str) and value and key != "name":
            named = _PATH_PARAMETER.search(key) is not None
            if named or (("/" in value or os.sep in value) and os.path.lexists(value)):
                found.append((name, value))
    return found


def check_file_parameters(
    game_string: str, overrides: Mapping[str, Any] | None = None, *, data_dir: str | Path | None = None
) -> None:
    """Refuse game parameters of a spec that name files outside ``data_dir`` (all of them without one).

    OpenSpiel games such as ``efg_game(filename=...)`` and ``nfg_game`` read any file they are given, so a game
    string from a spec may only name files inside the data folder the user named (``[experiment] data_dir``),
    symbolic links and ``..`` resolved.

    Raises:
        UnknownGameError: a parameter names a file, and there is no data folder or the file lies outside it.
    """
    try:
        params: dict[str, Any] = dict(pyspiel.game_parameters_from_string(game_string))
    except (pyspiel.SpielError, ValueError, TypeError, RuntimeError):
        return  # not a game string at all: loading it says so
    params.update(overrides or {})
    root = Path(data_dir).resolve() if data_dir is not None else None
    for name, value in _file_parameters(params):
        if root is None:
            raise UnknownGameError(
                f"{game_string!r}: game parameter {name!r} names a file ({value!r}); a spec may name files only "
                "inside a data folder it names ([experiment] data_dir)"
            )
        target = Path(value).resolve()
        if not target.is_relative_to(root):
            raise UnknownGameError(
                f"{game_string!r}: game parameter {name!r} names {value!r}, outside the data folder {str(root)!r} "
                "([experiment] data_dir); a spec may name files only inside it"
            )
