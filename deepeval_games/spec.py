"""Experiment specs: the TOML file that names the game(s), the players, the judge and the repeats.

See the README's "Spec reference" for every key. Parsing is strict: an unknown key, a wrong type or a
missing value is a :class:`~deepeval_games.errors.SpecError` that names the key.
"""

from __future__ import annotations

import hashlib
import json
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from deepeval_games.errors import SpecError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

__all__ = ["DELIVERY_KEYS", "PAIRINGS", "ExperimentSpec", "PlayerSpec", "StoppingRule", "load_spec", "parse_spec"]

PAIRINGS = ("auto", "permute", "round_robin", "combinations")

_EXPERIMENT_KEYS = {
    "name": str,
    "game": str,
    "games": list,
    "repeats": int,
    "seed": int,
    "pairing": str,
    "max_concurrency": int,
    "max_match_attempts": int,
    "sweep": dict,
    "cache": (bool, str),
    "budget_usd": (int, float),
    "until_stable": dict,
}
_PLAYER_KEYS = {"name", "bot", "params", "model"}
DELIVERY_KEYS = frozenset(
    {
        "api_key_env",
        "max_concurrency",
        "timeout_s",
        "max_retries",
        "backoff_base_s",
        "backoff_max_s",
        "retry_after_max_s",
        "accept_model_ids",
    }
)
"""Model settings that change how calls are delivered, never what a model is asked."""

_RUN_ONLY_KEYS = ("max_concurrency", "max_match_attempts", "cache", "budget_usd", "until_stable")
"""Keys that change how a run executes, not what it measures; they stay out of the spec hash."""


@dataclass(frozen=True)
class PlayerSpec:
    """One entry of ``[[players]]``: a scripted bot (``bot``) or an LLM bot (``model``)."""

    name: str
    bot: str | None = None
    model: str | None = None
    params: Mapping[str, Any] = field(default_factory=dict)
    """Bot parameters (``[players.params]``) or, for a model, the model settings (every other key)."""

    @property
    def kind(self) -> str:
        """``bot`` or ``model``."""
        return "model" if self.model is not None else "bot"

    def identity(self) -> dict[str, Any]:
        """What makes this player this player: part of every match id.

        Settings that change only how calls are delivered (timeouts, retries, concurrency, the key's
        variable, accepted model ids) are left out, so changing them neither renames matches nor misses
        the model-call cache.
        """
        played = {k: v for k, v in self.params.items() if k not in DELIVERY_KEYS}
        return {"name": self.name, "bot": self.bot, "model": self.model, "params": played}


@dataclass(frozen=True)
class StoppingRule:
    """``[experiment.until_stable]``: add repeats until the stableness condition holds."""

    epsilon: float
    """Every player's 95% CI half-width of the mean payoff must fall below this."""
    step: int = 0
    """Repeats added per extension (0: the initial ``repeats``)."""
    max_repeats: int = 50
    """Give up (results reported as not stable) past this many repeats."""
    batch: int = 5
    """Matches per player between two ranking checkpoints."""
    window: int = 2
    """Checkpoints over which the ranking must stay the same."""


@dataclass(frozen=True)
class ExperimentSpec:
    """A parsed and validated experiment spec."""

    name: str
    games: tuple[str, ...]
    players: tuple[PlayerSpec, ...]
    repeats: int = 1
    seed: int = 0
    pairing: str = "auto"
    max_concurrency: int = 8
    max_match_attempts: int = 3
    judge: PlayerSpec | None = None
    cache: bool | str = True
    """Model-call cache: True for the user cache, a path, or False for none."""
    budget_usd: float | None = None
    """Stop making new model calls once this much (USD, as litellm prices them) is spent."""
    until_stable: StoppingRule | None = None
    sweep: Mapping[str, tuple[Any, ...]] = field(default_factory=dict)
    """Game parameters to vary: every game is played with every combination of these values."""
    source: Mapping[str, Any] = field(default_factory=dict, repr=False)

    def content_hash(self) -> str:
        """Hash of what the spec measures (not ``repeats`` or run-only knobs): guards resuming a run."""
        experiment = {
            k: v for k, v in self.source.get("experiment", {}).items() if k not in (*_RUN_ONLY_KEYS, "repeats")
        }
        content = {
            "experiment": experiment,
            "players": sorted((p.identity() for p in self.players), key=lambda identity: identity["name"]),
            "judge": self.judge.identity() if self.judge else None,
        }
        return hashlib.sha256(json.dumps(content, sort_keys=True, default=str).encode()).hexdigest()[:16]

    def uses_models(self) -> bool:
        """True when any player or the judge is an LLM."""
        return any(p.kind == "model" for p in (*self.players, *([self.judge] if self.judge else [])))

    def player(self, name: str) -> PlayerSpec:
        """The player called ``name``."""
        for player in self.players:
            if player.name == name:
                return player
        raise KeyError(name)


def _check_type(where: str, key: str, value: Any, expected: type | tuple[type, ...]) -> None:
    types = expected if isinstance(expected, tuple) else (expected,)
    ok = isinstance(value, types) and not (bool not in types and isinstance(value, bool))
    if not ok:
        names = {
            int: "an integer",
            str: "a string",
            list: "a list",
            dict: "a table",
            bool: "true/false",
            float: "a number",
        }
        kind = " or ".join(names.get(t, t.__name__) for t in types)
        raise SpecError(f"{where}: {key!r} must be {kind}, got {value!r}")


def _parse_player(index: int, raw: Any, *, where: str) -> PlayerSpec:
    if not isinstance(raw, dict):
        raise SpecError(f"{where}: each entry must be a table with 'name' and 'bot' or 'model'")
    name = raw.get("name")
    if not isinstance(name, str) or not name.strip():
        raise SpecError(f"{where} #{index + 1}: 'name' is required and must be a non-empty string")
    has_bot, has_model = "bot" in raw, "model" in raw
    if has_bot == has_model:
        raise SpecError(f"{where} {name!r}: give exactly one of 'bot' (a scripted bot) or 'model' (a litellm model)")
    if has_bot:
        unknown = sorted(set(raw) - _PLAYER_KEYS - {"model"})
        if unknown:
            raise SpecError(f"{where} {name!r}: unknown key(s) {unknown}; a scripted bot takes name, bot, params")
        if not isinstance(raw["bot"], str):
            raise SpecError(f"{where} {name!r}: 'bot' must be a string")
        params = raw.get("params", {})
        if not isinstance(params, dict):
            raise SpecError(f"{where} {name!r}: 'params' must be a table")
        return PlayerSpec(name=name, bot=raw["bot"], params=dict(params))
    if not isinstance(raw["model"], str) or not raw["model"].strip():
        raise SpecError(f"{where} {name!r}: 'model' must be a litellm model string like 'openai/gpt-4o'")
    settings = {k: v for k, v in raw.items() if k not in ("name", "model")}
    return PlayerSpec(name=name, model=raw["model"], params=settings)


def _parse_stopping(raw: dict[str, Any]) -> StoppingRule:
    where = "[experiment.until_stable]"
    unknown = sorted(set(raw) - {"epsilon", "step", "max_repeats", "batch", "window"})
    if unknown:
        raise SpecError(f"{where}: unknown key(s) {unknown}; known: epsilon, step, max_repeats, batch, window")
    if "epsilon" not in raw:
        raise SpecError(f"{where}: 'epsilon' (the largest acceptable CI half-width) is required")
    _check_type(where, "epsilon", raw["epsilon"], (int, float))
    for key in ("step", "max_repeats", "batch", "window"):
        if key in raw:
            _check_type(where, key, raw[key], int)
    rule = StoppingRule(epsilon=float(raw["epsilon"]), **{k: v for k, v in raw.items() if k != "epsilon"})
    if rule.epsilon <= 0 or rule.step < 0 or rule.max_repeats < 1 or rule.batch < 1 or rule.window < 1:
        raise SpecError(f"{where}: epsilon must be > 0, step >= 0, max_repeats, batch and window >= 1")
    return rule


def _parse_sweep(key: str, value: Any) -> tuple[Any, ...]:
    """A sweep value: a list of parameter values, or ``{from = a, to = b}`` for the integers a..b."""
    if isinstance(value, dict):
        if set(value) != {"from", "to"} or not all(isinstance(value[k], int) for k in ("from", "to")):
            raise SpecError(f"[experiment.sweep] {key!r}: a range is written {{from = 11, to = 510}} (both included)")
        values: tuple[Any, ...] = tuple(range(value["from"], value["to"] + 1))
    elif isinstance(value, list):
        values = tuple(value)
    else:
        raise SpecError(f"[experiment.sweep] {key!r}: give a list of values or {{from = .., to = ..}}")
    if not values:
        raise SpecError(f"[experiment.sweep] {key!r}: no values")
    if not all(isinstance(v, (int, float, str, bool)) for v in values):
        raise SpecError(f"[experiment.sweep] {key!r}: values must be numbers, strings or booleans")
    return values


def parse_spec(data: Mapping[str, Any]) -> ExperimentSpec:
    """Validate a spec already read from TOML."""
    unknown_tables = sorted(set(data) - {"experiment", "players", "judge"})
    if unknown_tables:
        raise SpecError(f"unknown top-level table(s) {unknown_tables}; expected [experiment], [[players]], [judge]")
    experiment = data.get("experiment")
    if not isinstance(experiment, dict):
        raise SpecError("the spec needs an [experiment] table")
    for key, value in experiment.items():
        if key not in _EXPERIMENT_KEYS:
            raise SpecError(f"[experiment]: unknown key {key!r}; known keys: {', '.join(sorted(_EXPERIMENT_KEYS))}")
        _check_type("[experiment]", key, value, _EXPERIMENT_KEYS[key])
    if ("game" in experiment) == ("games" in experiment):
        raise SpecError("[experiment]: give exactly one of 'game' (a game string) or 'games' (a list of them)")
    games = [experiment["game"]] if "game" in experiment else list(experiment["games"])
    if not games or not all(isinstance(g, str) and g.strip() for g in games):
        raise SpecError("[experiment]: 'games' must be a non-empty list of game strings")
    repeats = experiment.get("repeats", 1)
    if repeats < 1:
        raise SpecError(f"[experiment]: 'repeats' must be >= 1, got {repeats}")
    if experiment.get("seed", 0) < 0:
        raise SpecError(f"[experiment]: 'seed' must be >= 0, got {experiment['seed']}")
    pairing = experiment.get("pairing", "auto")
    if pairing not in PAIRINGS:
        raise SpecError(f"[experiment]: 'pairing' must be one of {', '.join(PAIRINGS)}, got {pairing!r}")
    for key in ("max_concurrency", "max_match_attempts"):
        if experiment.get(key, 1) < 1:
            raise SpecError(f"[experiment]: {key!r} must be >= 1")
    sweep = {key: _parse_sweep(key, value) for key, value in experiment.get("sweep", {}).items()}
    raw_players = data.get("players")
    if not isinstance(raw_players, list) or not raw_players:
        raise SpecError("the spec needs at least one [[players]] entry")
    players = tuple(_parse_player(i, raw, where="[[players]]") for i, raw in enumerate(raw_players))
    names = [p.name for p in players]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise SpecError(f"[[players]]: names must be unique; repeated: {duplicates}")
    judge = None
    if "judge" in data:
        raw_judge = data["judge"]
        if isinstance(raw_judge, dict) and "name" not in raw_judge:
            raw_judge = {**raw_judge, "name": "judge"}
        judge = _parse_player(0, raw_judge, where="[judge]")
    return ExperimentSpec(
        name=experiment.get("name", "experiment"),
        games=tuple(games),
        players=players,
        repeats=repeats,
        seed=experiment.get("seed", 0),
        pairing=pairing,
        max_concurrency=experiment.get("max_concurrency", 8),
        max_match_attempts=experiment.get("max_match_attempts", 3),
        judge=judge,
        sweep=sweep,
        cache=experiment.get("cache", True),
        budget_usd=float(experiment["budget_usd"]) if "budget_usd" in experiment else None,
        until_stable=_parse_stopping(experiment["until_stable"]) if "until_stable" in experiment else None,
        source=json.loads(json.dumps(data, default=str)),
    )


def load_spec(path: str | Path) -> ExperimentSpec:
    """Read and validate a TOML spec file."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise SpecError(f"spec file not found: {path}") from None
    except OSError as exc:
        raise SpecError(f"cannot read spec file {path}: {exc}") from exc
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise SpecError(f"{path} is not valid TOML: {exc}") from exc
    return parse_spec(data)
