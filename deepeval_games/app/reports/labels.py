"""Short, readable labels for what the report names: a game variant (:func:`game_label`, in place of its full game
string of a dozen parameters) and a player's identity (:func:`identity_text`, in place of its JSON).

A game's label is its long name (``DeepEval`` dropped) with only the parameters that differ from the game's
defaults: ``deepeval_public_goods(alpha=1.6,answer=free,endowment=10,...,mode=2,players=4,rounds=5,...)`` is
``Public Goods Game (answer=free, feedback=paper, mode=2, unusable=reformat)``. The full string stays where a person
can read it (the HTML report's tooltip and details); the label is what tables, lists and figure titles show.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from typing import Any

import pyspiel

from deepeval_games.core.records import player_identity
from deepeval_games.core.registry.games import DATA_ITEM_PARAMETERS, registered_games

__all__ = ["game_label", "identity_text", "short_labels", "unique_labels"]

_LONG_NAME_PREFIX = "DeepEval "


@functools.lru_cache(maxsize=1)
def _game_types() -> dict[str, pyspiel.GameType]:
    registered_games()  # the tasks' packages register their games on import
    return {game_type.short_name: game_type for game_type in pyspiel.registered_games()}


def _same(value: Any, default: Any) -> bool:
    """Whether a parameter's value (as the game string spells it) is its default."""
    if isinstance(default, bool):
        return str(value).lower() == str(default).lower()
    if isinstance(default, (int, float)):
        try:
            return float(value) == float(default)
        except (TypeError, ValueError):
            return False
    return str(value) == str(default)


@functools.lru_cache(maxsize=1024)
def _parsed(game: str) -> tuple[str, str, dict[str, str], dict[str, str]] | None:
    """(short name, long name, the parameters that differ from the game's defaults, the defaults; values as
    strings, data items left out) of a game string; None when it cannot be parsed."""
    try:
        params = dict(pyspiel.game_parameters_from_string(game))
    except Exception:  # pyspiel raises plain errors on a malformed string
        return None
    name = str(params.pop("name", game))
    game_type = _game_types().get(name)
    defaults: Mapping[str, Any] = dict(game_type.parameter_specification) if game_type else {}
    long_name = game_type.long_name if game_type else name
    if long_name.startswith(_LONG_NAME_PREFIX):
        long_name = long_name[len(_LONG_NAME_PREFIX) :]
    differs = {
        key: str(value)
        for key, value in sorted(params.items())
        if key not in DATA_ITEM_PARAMETERS and not (key in defaults and _same(value, defaults[key]))
    }
    return (
        name,
        long_name,
        differs,
        {key: f"{value:g}" if isinstance(value, float) else str(value) for key, value in defaults.items()},
    )


def _label(long_name: str, params: Mapping[str, str]) -> str:
    return f"{long_name} ({', '.join(f'{k}={v}' for k, v in params.items())})" if params else long_name


def game_label(game: str) -> str:
    """The game's long name and the parameters of ``game`` that differ from its defaults (data items left out);
    the game string itself when it cannot be parsed."""
    parsed = _parsed(game)
    return game if parsed is None else _label(parsed[1], parsed[2])


def short_labels(games: Sequence[str]) -> list[str]:
    """A label per game that tells it from the others of ``games`` (a report's variants): the game's long name and
    only the parameters in which the variants of that game differ (``Public Goods Game`` when a report has one
    variant of it, ``Public Goods Game (mode=1)`` and ``(mode=2)`` when it has two); :func:`unique_labels` where
    that does not tell two apart."""
    parsed = {game: _parsed(game) for game in games}
    by_name: dict[str, list[dict[str, str]]] = {}
    for found in parsed.values():
        if found is not None:
            by_name.setdefault(found[0], []).append(found[2])
    labels = []
    for game in games:
        found = parsed[game]
        if found is None:
            labels.append(game)
            continue
        name, long_name, params, defaults = found
        others = by_name[name]
        keys = sorted({k for p in others for k in p})
        varying = [k for k in keys if len({p.get(k) for p in others}) > 1]
        labels.append(_label(long_name, {k: params.get(k, defaults.get(k, "default")) for k in varying}))
    if len(set(labels)) == len(set(games)):
        return labels
    return unique_labels(games)


def unique_labels(games: Sequence[str]) -> list[str]:
    """:func:`game_label` of each game; a label two different games would share is their full string instead."""
    owners: dict[str, set[str]] = {}
    for game in games:
        owners.setdefault(game_label(game), set()).add(game)
    return [game if len(owners[game_label(game)]) > 1 else game_label(game) for game in games]


def _leaves(value: Mapping[str, Any]) -> list[tuple[str, Any]]:
    """(key, value) of every non-empty leaf of a nested identity."""
    leaves: list[tuple[str, Any]] = []
    for key, item in sorted(value.items()):
        if isinstance(item, Mapping):
            leaves += _leaves(item)
        elif item is not None and item != "" and item != [] and item != {}:
            leaves.append((key, item))
    return leaves


def _value(item: Any) -> str:
    if isinstance(item, float):
        return f"{item:g}"
    if isinstance(item, (list, tuple)):
        return "/".join(_value(x) for x in item)
    return str(item)


def identity_text(identity: Mapping[str, Any]) -> str:
    """A recorded identity as a line of text: ``openai/gpt-4o, temperature 0.2, prompt public_goods-2 (chat)``,
    ``FreeRider (scripted)``, ``MCTSPlayer (classical): rollouts 1, search mcts, ...``. A seed in its ``sampling``
    is left out (one the engine derived per match is not what the player is:
    :func:`~deepeval_games.core.records.player_identity`)."""
    rest = player_identity(dict(identity))
    kind = str(rest.pop("kind", "") or "")
    model = rest.pop("model", None)
    name = rest.pop("class", None) or rest.pop("name", None)
    version, style = rest.pop("prompt_version", None), rest.pop("prompt_style", None)
    if model:
        head = str(model) if kind in ("", "llm") else f"{model} ({kind})"
    elif name:
        head = f"{name} ({kind})" if kind else str(name)
    else:
        head = kind or "unknown"
    details = [f"{key.replace('_', ' ')} {_value(item)}" for key, item in _leaves(rest)]
    if version or style:
        details.append(f"prompt {version or ''}" + (f" ({style})" if style else ""))
    if model:
        return ", ".join([head, *details])
    return head + (": " + ", ".join(details) if details else "")
