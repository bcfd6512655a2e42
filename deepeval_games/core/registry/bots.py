"""Registry of bots that specs name by string (``bot = "pgg_free_rider"``), and of scorers.

Register a bot class with the :func:`register_bot` decorator, a scorer with :func:`register_scorer`. Every
package, the built-in ones included, makes its modules known through entry points (each entry point is a
module to import, which registers): ``deepeval_games.bots`` for bots, ``deepeval_games.games`` for games
and the scorers beside them. This module names no built-in bot.
"""

from __future__ import annotations

import difflib
import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np
import pyspiel

from deepeval_games.core.bot import DeepEvalBot, SeatSeed
from deepeval_games.core.errors import SpecError, UnknownBotError
from deepeval_games.core.registry.entry_points import load_entry_points

__all__ = ["BotEntry", "BotFactory", "bot_factory", "make_bot", "register_bot", "registered_bots"]

ENTRY_POINT_GROUP = "deepeval_games.bots"
GAMES_ENTRY_POINT_GROUP = "deepeval_games.games"
_BOTS: dict[str, BotEntry] = {}

BotClass = TypeVar("BotClass", bound=type)


@dataclass(frozen=True)
class BotEntry:
    """A registered scripted bot."""

    name: str
    cls: type[DeepEvalBot]
    games: tuple[str, ...]
    """Game short names it can play (empty: any game)."""
    description: str


def register_bot(name: str, *, games: tuple[str, ...] = ()) -> Callable[[BotClass], BotClass]:
    """Class decorator: make a :class:`DeepEvalBot` subclass available to specs under ``name``.

    The class is built as ``cls(player_id, rng, game=game, **params)``; ``params`` come from the spec. ``games``:
    the short names of the games it plays (a name ending in ``:`` is a game family: every game named with it); none:
    any game.
    """

    def decorate(cls: BotClass) -> BotClass:
        if name in _BOTS and _BOTS[name].cls is not cls:
            raise ValueError(f"bot name {name!r} is already registered by {_BOTS[name].cls.__qualname__}")
        doc = inspect.getdoc(cls) or ""
        _BOTS[name] = BotEntry(name, cls, tuple(games), doc.splitlines()[0] if doc else "")
        return cls

    return decorate


def _ensure_registered() -> None:
    """Load every package that registers bots or scorers, built-in or not, through their entry points."""
    load_entry_points(ENTRY_POINT_GROUP)
    load_entry_points(GAMES_ENTRY_POINT_GROUP)  # scorers live beside their games


def registered_bots() -> list[BotEntry]:
    """Every registered bot, sorted by name."""
    _ensure_registered()
    return [_BOTS[name] for name in sorted(_BOTS)]


def lookup_bot(name: str, game: pyspiel.Game | None = None) -> BotEntry:
    """The entry for ``name``; :class:`UnknownBotError` if none, :class:`SpecError` if it cannot play ``game``."""
    _ensure_registered()
    if name not in _BOTS:
        close = difflib.get_close_matches(name, list(_BOTS), n=1)
        hint = f" Did you mean {close[0]!r}?" if close else ""
        raise UnknownBotError(f"unknown bot {name!r}.{hint} Registered bots: {', '.join(sorted(_BOTS))}.")
    entry = _BOTS[name]
    if game is not None and entry.games:
        short = game.get_type().short_name
        if not any(short == g or (g.endswith(":") and short.startswith(g)) for g in entry.games):
            raise SpecError(f"bot {name!r} plays {', '.join(entry.games)}, not {short}")
    return entry


_INIT_PARAMETERS: dict[type, Mapping[str, inspect.Parameter]] = {}


def _init_parameters(cls: type) -> Mapping[str, inspect.Parameter]:
    """The parameters of a bot class's constructor (read once per class: bots are built for every seat of every
    match)."""
    if cls not in _INIT_PARAMETERS:
        _INIT_PARAMETERS[cls] = inspect.signature(cls.__init__).parameters  # type: ignore[misc]
    return _INIT_PARAMETERS[cls]


BotFactory = Callable[[int, np.random.Generator | SeatSeed], DeepEvalBot]
"""Builds one registered bot, with its game and parameters fixed, for a seat and its generator (or the
:class:`~deepeval_games.core.bot.SeatSeed` it comes from: the bot gets it if it takes one, else the generator)."""


def bot_factory(name: str, game: pyspiel.Game, params: Mapping[str, Any] | None = None) -> BotFactory:
    """The registered bot ``name`` with ``game`` and ``params`` resolved once: the bot, whether it plays ``game``
    and whether it takes ``params`` are checked here, so a runner builds its seats without looking them up per match.

    Raises:
        UnknownBotError: no bot is registered under ``name``.
        SpecError: it cannot play ``game`` or takes no such parameter (bad values surface when a bot is built).
    """
    entry = lookup_bot(name, game)
    fixed = dict(params or {})
    accepted = _init_parameters(entry.cls)
    unknown = [key for key in fixed if key not in accepted]
    if unknown and not any(p.kind is p.VAR_KEYWORD for p in accepted.values()):
        allowed = [k for k in accepted if k not in ("self", "player_id", "rng", "game")]
        raise SpecError(f"bot {name!r} takes no parameter {', '.join(unknown)}; it takes: {allowed or 'none'}")
    cls = entry.cls

    lazy = cls.takes_seat_seed

    def build(player_id: int, rng: np.random.Generator | SeatSeed) -> DeepEvalBot:
        if not lazy and isinstance(rng, SeatSeed):
            rng = rng.generator()
        try:
            return cls(player_id, rng, game=game, **fixed)
        except (TypeError, ValueError) as exc:
            raise SpecError(f"bad parameters for bot {name!r}: {exc}") from exc

    return build


def make_bot(
    name: str,
    game: pyspiel.Game,
    player_id: int,
    rng: np.random.Generator,
    params: Mapping[str, Any] | None = None,
) -> DeepEvalBot:
    """Build the registered bot ``name`` for one seat of ``game`` (see :func:`bot_factory`)."""
    return bot_factory(name, game, params)(player_id, rng)


_SCORERS: dict[str, list[Callable[..., Mapping[str, Any]]]] = {}

ScorerFn = TypeVar("ScorerFn", bound=Callable[..., Any])


def register_scorer(game_short_name: str) -> Callable[[ScorerFn], ScorerFn]:
    """Function decorator: run this scorer after every match of ``game_short_name``.

    A scorer takes ``(terminal_state, record)`` and returns metrics for ``record.metrics`` (ground
    truth such as an MBPP pass rate); it lives beside its task, never inside the game's rules.
    """

    def decorate(fn: ScorerFn) -> ScorerFn:
        if fn not in _SCORERS.setdefault(game_short_name, []):
            _SCORERS[game_short_name].append(fn)
        return fn

    return decorate


def scorers_for(game_short_name: str) -> list[Callable[..., Mapping[str, Any]]]:
    """The scorers registered for a game."""
    _ensure_registered()
    return list(_SCORERS.get(game_short_name, []))
