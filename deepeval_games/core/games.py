"""Loading and listing the registered ``deepeval_`` games, with errors a user can act on."""

from __future__ import annotations

import difflib
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyspiel

from deepeval_games.core.errors import UnknownGameError
from deepeval_games.core.plugins import load_entry_points

__all__ = [
    "DATA_ITEM_PARAMETERS",
    "GameInfo",
    "check_file_parameters",
    "game_variant",
    "load_game",
    "load_recorded_game",
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


def load_game(game_string: str, overrides: Mapping[str, Any] | None = None) -> pyspiel.Game:
    """``pyspiel.load_game`` with the tasks registered and a clear :class:`UnknownGameError` on failure.

    ``overrides`` replace or add parameters of ``game_string`` (used by spec sweeps).
    """
    _ensure_registered()
    name = game_string.split("(", 1)[0].strip()
    known = {game_type.short_name for game_type in pyspiel.registered_games()}
    if name not in known:
        ours = sorted(k for k in known if k.startswith(PREFIX))
        close = difflib.get_close_matches(name, ours, n=1)
        hint = f" Did you mean {close[0]!r}?" if close else ""
        raise UnknownGameError(f"unknown game {name!r}.{hint} Registered tasks: {', '.join(ours)}.")
    try:
        if overrides:
            params = pyspiel.game_parameters_from_string(game_string)
            params.pop("name", None)
            return pyspiel.load_game(name, {**params, **overrides})
        return pyspiel.load_game(game_string)
    except (pyspiel.SpielError, ValueError, TypeError, RuntimeError) as exc:
        message = str(exc).split("OpenSpiel exception:")[0].strip() or str(exc)
        where = f"{game_string!r} with {dict(overrides)}" if overrides else repr(game_string)
        raise UnknownGameError(f"cannot load {where}: {message}") from exc


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
