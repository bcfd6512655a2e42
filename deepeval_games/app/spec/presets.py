"""Presets: one word in a spec that selects a documented set of choices in every task (``[experiment] preset``).

Where the paper states a behaviour, the tasks follow it by default; where this project first chose otherwise,
the earlier choice is a game parameter. A preset names a set of those parameters per task, so a user need not
know them one by one:

* ``paper`` — the paper's behaviour everywhere it is known (what a turn shows, what a seat is asked to aim for,
  the judge's criteria, as each task declares them);
* ``project`` — this project's first choices where they differ.

A task declares its presets as a class attribute of its game, ``presets = {"paper": {...}, "project": {...}}``
(game parameters by preset name); a task without one is left as it is. An entry named ``"<preset>+judge"`` holds
the parameters the preset sets as well when the spec names a ``[judge]`` (``paper+judge``: a task whose paper referee
was a language model lets the judge rule where its own rules cannot). A preset only fills parameters the game
string does not set itself, and a sweep value wins over both. Because a preset sets game parameters, it changes
the game strings: results under different presets are different game variants, never pooled or resumed into
each other. The table of every choice, with the paper's behaviour and the switch that selects it, is
``docs/paper_choices.md``.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

import pyspiel

from deepeval_games.core import task
from deepeval_games.core.registry.games import load_game

__all__ = ["PRESETS", "WITH_JUDGE", "apply_preset", "game_presets", "preset_parameters"]

PRESETS = ("paper", "project")
"""The preset names a spec may give."""
WITH_JUDGE = "+judge"
"""The suffix of a game's preset entry that applies only when the spec names a judge (``paper+judge``)."""


@functools.cache
def game_presets(name: str) -> Mapping[str, Mapping[str, Any]]:
    """The presets a registered game declares (its ``presets`` attribute), by preset name; empty when none."""
    return task.presets(load_game(name))


def preset_parameters(game_string: str, preset: str | None, *, judge: bool = False) -> dict[str, Any]:
    """The parameters ``preset`` sets on ``game_string`` that the string does not set itself; with ``judge`` (the
    spec names a judge) also those of the game's ``"<preset>+judge"`` entry.

    Raises:
        ValueError: an unknown preset name.
    """
    if preset is None:
        return {}
    if preset not in PRESETS:
        raise ValueError(f"unknown preset {preset!r}; presets: {', '.join(PRESETS)}")
    explicit = pyspiel.game_parameters_from_string(game_string)
    chosen = game_presets(str(explicit.pop("name")))
    params = {**chosen.get(preset, {}), **(chosen.get(preset + WITH_JUDGE, {}) if judge else {})}
    return {k: v for k, v in params.items() if k not in explicit}


def _value(value: Any) -> str:
    return ("true" if value else "false") if isinstance(value, bool) else str(value)


def apply_preset(game_string: str, preset: str | None, *, judge: bool = False) -> str:
    """``game_string`` with the parameters of ``preset`` it does not set itself written into it (``judge``: the spec
    names a judge, see :func:`preset_parameters`)."""
    extra = preset_parameters(game_string, preset, judge=judge)
    if not extra:
        return game_string
    added = ",".join(f"{k}={_value(v)}" for k, v in sorted(extra.items()))
    text = game_string.strip()
    if text.endswith(")"):
        inner = text[text.index("(") + 1 : -1].strip()
        return f"{text[: text.index('(')]}({inner + ',' if inner else ''}{added})"
    return f"{text}({added})"
