"""Helpers of the TextArena tests: a spec file for ``deepeval-games run``, a reply that names a bracketed move, and
replaying a finished match from its record."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pyspiel

from deepeval_games.app.storage.store import Store
from deepeval_games.core import task
from deepeval_games.core.records import JUDGE_SEAT, MatchRecord
from deepeval_games.core.registry.games import load_game
from tests.fake_openai_server import last_user_message

__all__ = ["bracketed_move", "records", "replayed", "write_spec"]

_BRACKETED = re.compile(r"\[[^\[\]\n]{1,40}\]")


def _value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_value(v) for v in value) + "]"
    return json.dumps(str(value))


def _table(header: str, values: Mapping[str, Any]) -> str:
    return "\n".join([header, *(f"{key} = {_value(value)}" for key, value in values.items())]) + "\n"


def write_spec(
    path: Path,
    experiment: Mapping[str, Any],
    players: Sequence[Mapping[str, Any]],
    judge: Mapping[str, Any] | None = None,
) -> Path:
    """Write a spec file of ``[experiment]``, ``[[players]]`` and an optional ``[judge]``."""
    parts = [_table("[experiment]", experiment), *(_table("[[players]]", p) for p in players)]
    if judge is not None:
        parts.append(_table("[judge]", judge))
    path.write_text("\n".join(parts), encoding="utf-8")
    return path


def bracketed_move(body: dict[str, Any]) -> str:
    """A model's reply: the last bracketed move the last user message shows (``[up]``), else ``[0]``."""
    found = _BRACKETED.findall(last_user_message(body))
    return found[-1] if found else "[0]"


def records(run_dir: Path) -> list[MatchRecord]:
    """Every match record of a run directory."""
    with Store(run_dir, read_only=True) as store:
        return list(store.records())


def replayed(record: MatchRecord) -> pyspiel.State:
    """The match's final state, rebuilt from its record alone: chance outcomes and verdicts by their actions, every
    move by its text, interned again after the seat's legal moves, as in play (and checked to get the utterance id
    the record holds)."""
    state = load_game(record.game).new_initial_state()
    for turn in record.turns:
        if turn.seat < 0 or turn.seat == JUDGE_SEAT:
            state.apply_action(turn.action)
            continue
        state.legal_actions(turn.seat)  # the referee lists a seat's moves before it answers: they are interned first
        action = turn.action if turn.action == 0 else task.intern_utterance(state, turn.seat, turn.action_string)
        assert action == turn.action, (record.game, turn.index, turn.action_string)
        state.apply_action(action)
    return state
