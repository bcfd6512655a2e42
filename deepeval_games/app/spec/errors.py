"""How a spec's validation errors are worded: every pydantic error as a sentence that names the table and the key
(:func:`spec_error`), so pydantic's own errors never reach the user."""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ValidationError

from deepeval_games.app.spec.experiment import ExperimentTable, SweepRange
from deepeval_games.app.spec.players import (
    KIND_ERROR,
    BotJudge,
    BotPlayer,
    HumanJudge,
    HumanPlayer,
    ModelJudge,
    ModelPlayer,
)
from deepeval_games.app.spec.stopping import StoppingRule
from deepeval_games.core.errors import SpecError

__all__ = ["spec_error"]

_TYPE_NAMES = {
    "int_type": "an integer",
    "int_parsing": "an integer",
    "int_from_float": "an integer",
    "string_type": "a string",
    "bool_type": "true/false",
    "bool_parsing": "true/false",
    "float_type": "a number",
    "float_parsing": "a number",
    "dict_type": "a table",
    "model_type": "a table",
    "model_attributes_type": "a table",
    "list_type": "a list",
    "tuple_type": "a list",
}
_BOUNDS = {"greater_than": ">", "greater_than_equal": ">=", "less_than": "<", "less_than_equal": "<="}
_BOUND_KEYS = {"greater_than": "gt", "greater_than_equal": "ge", "less_than": "lt", "less_than_equal": "le"}
_TOP_LEVEL = ("experiment", "players", "judge")


def _table_class(loc: tuple[Any, ...]) -> type[BaseModel] | None:
    """The table model an error location points into (for the list of known keys)."""
    head = loc[0] if loc else None
    if head == "experiment":
        if len(loc) > 2 and loc[1] == "until_stable":
            return StoppingRule
        if len(loc) > 3 and loc[1] == "sweep":
            return SweepRange
        return ExperimentTable
    tag = loc[2] if head == "players" and len(loc) > 2 else loc[1] if head == "judge" and len(loc) > 1 else None
    tables: dict[tuple[Any, Any], type[BaseModel]] = {
        ("players", "bot"): BotPlayer,
        ("players", "model"): ModelPlayer,
        ("judge", "bot"): BotJudge,
        ("judge", "model"): ModelJudge,
        ("players", "human"): HumanPlayer,
        ("judge", "human"): HumanJudge,
    }
    return tables.get((head, tag))


def _place(loc: tuple[Any, ...], data: Mapping[str, Any]) -> tuple[str, tuple[Any, ...]]:
    """Where an error is (``[experiment]``, ``[[players]] 'name'``, ...) and the key path inside that table."""
    head = loc[0] if loc else None
    if head == "experiment":
        if len(loc) > 2 and loc[1] == "until_stable":
            return "[experiment.until_stable]", loc[2:]
        if len(loc) > 2 and loc[1] == "sweep":
            return f"[experiment.sweep] {loc[2]!r}", loc[3:]
        return "[experiment]", loc[1:]
    if head == "players" and len(loc) > 1:
        index = loc[1]
        raw = data.get("players")
        entry = raw[index] if isinstance(raw, list) and isinstance(index, int) and index < len(raw) else None
        name = entry.get("name") if isinstance(entry, Mapping) else None
        where = f"[[players]] {name!r}" if isinstance(name, str) and name.strip() else f"[[players]] #{index + 1}"
        return where, loc[3:]  # loc[2] is the table's kind (bot or model)
    if head == "judge":
        return "[judge]", loc[2:]
    return "", loc


def _unknown_kind_keys(head: Any, table: Mapping[str, Any]) -> str:
    """For a player or judge table of no kind: its keys that no kind of table knows, each with the kind key (or else
    the key) it is closest to, as ``unknown key 'bto' (did you mean 'bot'?); `` ("" when every key is known)."""
    kinds = ("bot", "model", "human")
    tables = (BotJudge, ModelJudge, HumanJudge) if head == "judge" else (BotPlayer, ModelPlayer, HumanPlayer)
    known = {field.alias or name for table_class in tables for name, field in table_class.model_fields.items()}
    said = []
    for key in (str(k) for k in table if str(k) not in known):
        close = difflib.get_close_matches(key, kinds, n=1) or difflib.get_close_matches(key, sorted(known), n=1)
        said.append(f"{key!r}" + (f" (did you mean {close[0]!r}?)" if close else ""))
    if not said:
        return ""
    return f"unknown key{'s' if len(said) > 1 else ''} {', '.join(said)}; "


def _message(error: Mapping[str, Any], data: Mapping[str, Any]) -> str:
    """One pydantic error as a sentence that names the table and the key."""
    loc, kind, value = tuple(error["loc"]), error["type"], error.get("input")
    ctx = error.get("ctx") or {}
    if kind == "spec":
        return str(ctx.get("message", error["msg"]))
    if len(loc) == 1 and loc[0] not in _TOP_LEVEL and kind == "extra_forbidden":
        unknown = sorted(str(k) for k in data if k not in _TOP_LEVEL)
        return f"unknown top-level table(s) {unknown}; expected [experiment], [[players]], [judge]"
    if loc == ("experiment",) and kind in ("missing", "model_type", "dict_type"):
        return "the spec needs an [experiment] table"
    if loc == ("players",) and kind in ("missing", "too_short", "tuple_type", "list_type"):
        if kind == "too_short" and value:
            return ""  # pydantic counts the valid entries only: the entries' own errors say what is wrong
        return "the spec needs at least one [[players]] entry"
    where, path = _place(loc, data)
    key = "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in path).lstrip(".")
    subject = f"{where}: {key!r}" if key else where
    if kind == "player_kind":
        if not isinstance(value, Mapping):
            return f"{where}: each entry must be a table with 'name' and 'bot' or 'model'"
        return f"{where}: {_unknown_kind_keys(loc[0], value)}{KIND_ERROR}"
    if kind == "extra_forbidden":
        table = _table_class(loc)
        keys = sorted(f.alias or n for n, f in table.model_fields.items()) if table else []
        close = difflib.get_close_matches(str(path[-1]), keys, n=1) if path else []
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        return f"{where}: unknown key {key!r}{hint}" + (f"; known keys: {', '.join(keys)}" if keys else "")
    if kind == "missing":
        return f"{where}: {key!r} is required"
    if kind in _TYPE_NAMES:
        return f"{subject} must be {_TYPE_NAMES[kind]}, got {value!r}"
    if kind == "spec_type":
        return f"{subject} must be {error['msg']}, got {value!r}"
    if kind in _BOUNDS:
        return f"{subject} must be {_BOUNDS[kind]} {ctx.get(_BOUND_KEYS[kind])}, got {value!r}"
    if kind == "literal_error":
        return f"{subject} must be one of {ctx.get('expected')}, got {value!r}"
    if kind in ("string_too_short", "string_pattern_mismatch"):
        return f"{subject} must be a non-empty string, got {value!r}"
    if kind == "too_short":
        return f"{subject} must not be empty"
    if kind == "value_error":
        text = str(error["msg"]).removeprefix("Value error, ")
        return f"{where}: {text}" if where else text
    return f"{subject}: {error['msg']}" if subject else str(error["msg"])


def spec_error(exc: ValidationError, data: Mapping[str, Any]) -> SpecError:
    """A :class:`SpecError` listing every problem of a spec document, one per line."""
    messages = [m for m in dict.fromkeys(_message(error, data) for error in exc.errors()) if m]
    return SpecError("\n".join(messages))
