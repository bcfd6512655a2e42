"""``deepeval-games eval`` and ``init``: a spec built from a task's default study and a few command-line names.

A task declares its default study through the task contract (:func:`deepeval_games.core.task.default_study`):
the games, the preset, the scripted baselines, the data items and the stopping rule's margin and budget. The
models named on the command line join the baselines; ``--against`` replaces them; ``--judge`` (or
:data:`JUDGE_ENV`) names the judge of a judged task, which gets none by default. The spec is a plain spec
document, so ``--print-spec`` writes it as TOML that ``deepeval-games run`` plays into the same match ids.
"""

from __future__ import annotations

import json
import math
import os
import re
import textwrap
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from deepeval_games.app.spec.experiment import ExperimentTable
from deepeval_games.app.spec.spec import ExperimentSpec, parse_spec
from deepeval_games.app.spec.stopping import StoppingRule
from deepeval_games.core import task
from deepeval_games.core.errors import DeepEvalError, UnknownBotError, UnknownGameError
from deepeval_games.core.registry.bots import lookup_bot
from deepeval_games.core.registry.games import PREFIX, load_game

__all__ = ["JUDGE_ENV", "StudyPlan", "model_label", "plan_study", "spec_toml"]

JUDGE_ENV = "DEEPEVAL_GAMES_JUDGE"
"""The judge ``eval`` uses on a judged task when ``--judge`` names none (a scripted judge or a model string)."""


@dataclass(frozen=True)
class StudyPlan:
    """What ``eval`` plays: the spec document, the study it came from, and what to tell the user first."""

    document: dict[str, Any]
    study: task.Study
    notes: tuple[str, ...]

    def spec(self) -> ExperimentSpec:
        """The validated spec."""
        return parse_spec(self.document)


def model_label(model: str) -> str:
    """A player name for a model string: its last path part (``openai/gpt-4o`` -> ``gpt-4o``)."""
    return model.rstrip("/").rsplit("/", 1)[-1] or model


def _resolve_game(name: str) -> Any:
    """Load ``name``; a task's name may leave out the ``deepeval_`` prefix (``ultimatum``)."""
    try:
        return load_game(name)
    except UnknownGameError:
        if name.startswith(PREFIX):
            raise
        try:
            return load_game(PREFIX + name)
        except UnknownGameError:
            pass
        raise


def _unique(name: str, taken: set[str]) -> str:
    candidate, n = name, 2
    while candidate in taken:
        candidate, n = f"{name}-{n}", n + 1
    taken.add(candidate)
    return candidate


def _opponent(name: str, game: Any) -> dict[str, Any]:
    """An ``--against`` name: a registered bot, else a model string (it has a ``/``)."""
    try:
        lookup_bot(name, game)
    except UnknownBotError:
        if "/" in name:
            return {"name": model_label(name), "model": name}
        raise
    return {"name": name, "bot": name}


def _judge_table(judge: str, game: Any) -> dict[str, Any]:
    if "/" in judge:
        return {"model": judge}
    lookup_bot(judge, game)  # an unknown name fails here, with "did you mean"
    return {"bot": judge}


def _judge(study: task.Study, game: Any, named: str | None, task_name: str) -> tuple[dict[str, Any] | None, str]:
    """The judge table (None: no judge) and a line saying where it came from or that there is none."""
    judge, source = named, "--judge"
    if judge is None and os.environ.get(JUDGE_ENV, "").strip():
        judge, source = os.environ[JUDGE_ENV].strip(), f"${JUDGE_ENV}"
    choices = " or ".join(study.judges) or "a scripted judge or a model"
    if study.judge == "none":
        if named is not None:
            raise DeepEvalError(f"{task_name} is not judged: drop --judge")
        return None, ""
    if judge is None:
        if study.judge == "required":
            raise DeepEvalError(
                f"{task_name} needs a judge and none is named: give --judge JUDGE (e.g. {choices}) or set "
                f"{JUDGE_ENV}; no judge is chosen for you, since it decides the scores"
            )
        return None, f"Judge: none (the paper's referee was a model; --judge JUDGE, e.g. {choices}, adds one)"
    return _judge_table(judge, game), f"Judge: {judge} (from {source})"


def plan_study(
    task_name: str,
    models: Sequence[str],
    *,
    against: Sequence[str] = (),
    judge: str | None = None,
    max_matches: int | None = None,
    budget_usd: float | None = None,
    model_settings: Mapping[str, Any] | None = None,
    baselines_only: bool = False,
) -> StudyPlan:
    """The spec of ``eval TASK --model M ...``: the task's default study with the models added.

    Args:
        task_name: a game name or game string (``tic_tac_toe``, ``kuhn_poker(players=3)``);
            with parameters the string replaces the study's games.
        models: litellm model strings; each becomes a player named by :func:`model_label`.
        against: opponents instead of the study's baselines: registered bots, or model strings.
        judge: the judge (a scripted judge or a model string); else :data:`JUDGE_ENV`.
        max_matches: the stopping rule's match budget (default: the study's).
        budget_usd: stop sending model calls past this cost.
        model_settings: settings given to every model player (``api_base``, ``temperature``, ...).
        baselines_only: with no model, the study's baselines alone, and OpenSpiel's uniform random player in the
            model's seat where the baselines do not fill the game (``init`` on a machine with no model to run).

    Raises:
        DeepEvalError: an unknown game, bot or judge (with "did you mean"), or a judged task with no judge.
    """
    if not models and not against and not baselines_only:
        raise DeepEvalError("name a model to evaluate: --model PROVIDER/MODEL (e.g. openai/gpt-4o-mini)")
    game = _resolve_game(task_name)
    short = game.get_type().short_name
    study = task.default_study(game)
    if study is None:
        raise DeepEvalError(f"{short} declares no default study: write a spec for it (deepeval-games run SPEC)")
    # a game string with parameters is played as given (a task's prefix may be left out); a name plays the study
    games = [short + task_name[task_name.index("(") :]] if "(" in task_name else list(study.games)
    taken: set[str] = set()
    players = [{"name": _unique(model_label(m), taken), "model": m, **dict(model_settings or {})} for m in models]
    opponents = [_opponent(name, game) for name in against] if against else [dict(t) for t in study.opponents]
    if baselines_only and not models and len(opponents) < game.num_players():
        players.append({"name": _unique("random", taken), "bot": "random"})  # the seat a model would take
    for table in opponents:
        players.append({**table, "name": _unique(str(table["name"]), taken)})
    judge_table, judge_note = _judge(study, game, judge, short)
    rule: dict[str, Any] = {
        "rule": "adaptive",
        "epsilon": study.epsilon,
        "budget_matches": max_matches or study.budget_matches,
    }
    experiment: dict[str, Any] = {"name": f"eval-{short.removeprefix(PREFIX)}"}
    experiment.update({"game": games[0]} if len(games) == 1 else {"games": games})
    if study.preset is not None:
        experiment["preset"] = study.preset
    experiment.update(repeats=study.repeats, seed=0, pairing=study.pairing)
    if budget_usd is not None:
        experiment["budget_usd"] = budget_usd
    if study.sweep:
        experiment["sweep"] = dict(study.sweep)
    experiment["until_stable"] = rule
    document: dict[str, Any] = {"experiment": experiment, "players": players}
    if judge_table is not None:
        document["judge"] = judge_table
    notes = tuple(n for n in ("" if against else study.note, judge_note) if n)
    plan = StudyPlan(document=document, study=study, notes=notes)
    plan.spec()  # every name checked now, before anything is printed or played
    return plan


# -- writing a spec document as TOML ------------------------------------------------------------------------

_BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")


def _key(key: str) -> str:
    return key if _BARE_KEY.match(key) else json.dumps(key, ensure_ascii=False)


def _value(value: Any) -> str:
    """A TOML value: JSON's string escapes are TOML's too; tables are written inline."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"TOML specs hold finite numbers only, got {value}")
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{_key(str(k))} = {_value(v)}" for k, v in value.items()) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_value(v) for v in value) + "]"
    raise TypeError(f"cannot write {type(value).__name__} to a TOML spec")


_MARKUP = re.compile(r":\w+:`~?([^`]+)`")


def _described(table: type[Any], key: str) -> list[str]:
    """A spec key's description (the models' attribute docstrings) as comment lines, markup removed."""
    field = table.model_fields.get(key)
    text = " ".join(((field.description if field else None) or "").split())
    text = _MARKUP.sub(r"\1", text).replace("``", "")
    return [f"# {line}" for line in textwrap.wrap(text, 100)]


def _lines(values: Mapping[str, Any], comments: type[Any] | None) -> list[str]:
    lines = []
    for key, value in values.items():
        if comments is not None:
            lines += _described(comments, str(key))
        lines.append(f"{_key(str(key))} = {_value(value)}")
    return lines


def spec_toml(document: Mapping[str, Any], *, comments: bool = False, header: str = "") -> str:
    """A spec document as TOML (``comments``: every ``[experiment]`` key explained beside it)."""
    out = [f"# {line}" if line else "#" for line in header.splitlines()]
    experiment = dict(document["experiment"])
    sweep, rule = experiment.pop("sweep", None), experiment.pop("until_stable", None)
    out += ["[experiment]", *_lines(experiment, ExperimentTable if comments else None)]
    if sweep:
        out += ["", "[experiment.sweep]", *_lines(sweep, None)]
    if rule:
        out += ["", "[experiment.until_stable]", *_lines(rule, StoppingRule if comments else None)]
    for player in document["players"]:
        out += ["", "[[players]]", *_lines(player, None)]
    if document.get("judge"):
        out += ["", "[judge]", *_lines(document["judge"], None)]
    return "\n".join(out) + "\n"
