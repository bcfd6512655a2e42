"""Experiment specs: the TOML file that names the game(s), the players, the judge and the repeats.

The spec is a pydantic model of the document itself (:class:`ExperimentSpec`: an ``[experiment]`` table,
``[[players]]`` entries and an optional ``[judge]`` table), so every key is documented once, beside its table
(:mod:`~deepeval_games.app.spec.experiment`, :mod:`~deepeval_games.app.spec.stopping`,
:mod:`~deepeval_games.app.spec.players`), and ``deepeval-games schema`` prints the JSON Schema of the whole
document (:func:`spec_json_schema`). The keys of an LLM player's table are those of
:class:`llm_bots.model_config.ModelSettings`.

Parsing is strict: an unknown key, a wrong type or a missing value is a
:class:`~deepeval_games.core.errors.SpecError` that names the table and the key (:func:`parse_spec`,
:func:`~deepeval_games.app.spec.loading.load_spec`; the wording is :mod:`~deepeval_games.app.spec.errors`);
pydantic's own errors never reach the user.

A spec is identified by :meth:`ExperimentSpec.content_hash` (guards resuming a run directory) and each
player by :meth:`~deepeval_games.app.spec.players.PlayerSpec.identity` (part of every match id): both are computed
from the document as written, so the same document always gives the same hash and the same match ids.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections import Counter
from collections.abc import Mapping
from typing import Annotated, Any, Self

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ModelWrapValidatorHandler,
    PrivateAttr,
    ValidationError,
    model_validator,
)

from deepeval_games.app.spec.errors import spec_error
from deepeval_games.app.spec.experiment import RUN_ONLY_KEYS, ExperimentTable, SweepRange
from deepeval_games.app.spec.players import FromTable, JudgeTable, PlayerSpec, PlayerTable
from deepeval_games.app.spec.tables import verbatim_error
from deepeval_games.core.errors import SpecError

__all__ = ["MAX_NAME_CHARS", "MAX_NESTING", "MAX_PLAYERS", "ExperimentSpec", "parse_spec", "spec_json_schema"]

MAX_NESTING = 32
MAX_PLAYERS = 100_000
"""The most ``[[players]]`` entries a spec may list (no run plans more than 5,000,000 matches anyway)."""
MAX_NAME_CHARS = 200
"""The longest name a player or the judge may have, in characters (tables, plots and match ids show it)."""
"""The deepest nesting of tables and lists a spec document may have."""


class ExperimentSpec(BaseModel):
    """A deepeval-games experiment spec: the ``[experiment]`` table, ``[[players]]`` and an optional ``[judge]``."""

    model_config = ConfigDict(
        extra="forbid", frozen=True, use_attribute_docstrings=True, title="deepeval-games experiment spec"
    )

    experiment: ExperimentTable
    """What is played and how the run executes."""
    players: Annotated[tuple[Annotated[PlayerSpec, FromTable(PlayerTable)], ...], Field(min_length=1)]
    """The players: each entry has ``bot`` (a scripted bot) or ``model`` (an LLM), never both."""
    judge: Annotated[PlayerSpec, FromTable(JudgeTable)] | None = None
    """The judge of judged games: a scripted judge (``bot``) or an LLM (``model``)."""

    _source: dict[str, Any] = PrivateAttr(default_factory=dict)
    _by_name: dict[str, PlayerSpec] | None = PrivateAttr(default=None)

    @model_validator(mode="wrap")
    @classmethod
    def _keep_source(cls, data: Any, handler: ModelWrapValidatorHandler[Self]) -> Self:
        if isinstance(data, Mapping):
            problem = _size_problem(data) or _document_problem(data)  # before anything recurses into the document
            if problem:
                raise verbatim_error(problem)
        spec = handler(data)
        if isinstance(data, Mapping):
            spec._source = _plain(data)
        elif not spec._source:
            spec._source = _plain(spec.model_dump(mode="json", by_alias=True, exclude_unset=True))
        return spec

    @model_validator(mode="after")
    def _unique_names(self) -> ExperimentSpec:
        counts = Counter(p.name for p in self.players)  # linear: a spec may list 200,000 players
        duplicates = sorted(n for n, k in counts.items() if k > 1)
        if duplicates:
            raise verbatim_error(f"[[players]]: names must be unique; repeated: {duplicates}")
        return self

    # -- the [experiment] table, as attributes --

    @property
    def name(self) -> str:
        """``[experiment] name``."""
        return self.experiment.name

    @property
    def games(self) -> tuple[str, ...]:
        """The game strings (``game`` or ``games``), with the parameters of ``preset`` written into them."""
        games = (self.experiment.game,) if self.experiment.game is not None else tuple(self.experiment.games or ())
        if self.experiment.preset is None:
            return games
        from deepeval_games.app.spec.presets import apply_preset

        return tuple(apply_preset(game, self.experiment.preset, judge=self.judge is not None) for game in games)

    @property
    def repeats(self) -> int:
        """``[experiment] repeats``."""
        return self.experiment.repeats

    @property
    def seed(self) -> int:
        """``[experiment] seed``."""
        return self.experiment.seed

    @property
    def pairing(self) -> str:
        """``[experiment] pairing``."""
        return self.experiment.pairing

    @property
    def max_concurrency(self) -> int:
        """``[experiment] max_concurrency``."""
        return self.experiment.max_concurrency

    @property
    def max_match_attempts(self) -> int:
        """``[experiment] max_match_attempts``."""
        return self.experiment.max_match_attempts

    @property
    def cache(self) -> bool | str:
        """Model-call cache: True for the user cache, a path, or False for none."""
        return self.experiment.cache

    @property
    def budget_usd(self) -> float | None:
        """Stop making new model calls once this much (USD) is spent; None for no budget."""
        return self.experiment.budget_usd

    @property
    def sweep(self) -> dict[str, tuple[Any, ...]]:
        """Game parameters to vary, each with its values (ranges spelled out)."""
        return {
            key: values.values() if isinstance(values, SweepRange) else tuple(values)
            for key, values in self.experiment.sweep.items()
        }

    @property
    def source(self) -> dict[str, Any]:
        """The spec document as given (JSON-able): what the run directory stores and the hash reads."""
        return self._source

    # -- identity and look-ups --

    def content_hash(self) -> str:
        """Hash of what the spec measures (not ``repeats`` or run-only knobs): guards resuming a run."""
        experiment = {
            k: v for k, v in self.source.get("experiment", {}).items() if k not in (*RUN_ONLY_KEYS, "repeats")
        }
        content = {
            "experiment": experiment,
            "players": sorted((p.identity() for p in self.players), key=lambda identity: identity["name"]),
            "judge": self.judge.identity() if self.judge else None,
        }
        return hashlib.sha256(json.dumps(content, sort_keys=True, default=str).encode()).hexdigest()[:16]

    def has_humans(self) -> bool:
        """True when a person plays a seat or judges: the run then plays one match at a time, with no call cache."""
        return any(p.is_human for p in (*self.players, *([self.judge] if self.judge else [])))

    def uses_models(self) -> bool:
        """True when any player or the judge is an LLM."""
        return any(p.kind == "model" for p in (*self.players, *([self.judge] if self.judge else [])))

    def player(self, name: str) -> PlayerSpec:
        """The player called ``name`` (looked up in a table made once: a spec may list 200,000 players)."""
        if self._by_name is None:
            self._by_name = {p.name: p for p in self.players}
        return self._by_name[name]

    def with_experiment(self, **changes: Any) -> ExperimentSpec:
        """A copy with some ``[experiment]`` keys changed (e.g. ``repeats=40``), validated again."""
        source = {**self.source, "experiment": {**self.source.get("experiment", {}), **changes}}
        return parse_spec(source)


def _size_problem(data: Mapping[str, Any]) -> str | None:
    """What is too large in a spec document: more than :data:`MAX_PLAYERS` players, or a name longer than
    :data:`MAX_NAME_CHARS` (named by its position, before anything else reads the players)."""
    players = data.get("players")
    players = players if isinstance(players, (list, tuple)) else []
    if len(players) > MAX_PLAYERS:
        return (
            f"[[players]]: the spec lists {len(players):,} players, more than the {MAX_PLAYERS:,} a spec may list; "
            "split the study into runs (a later one may extend an earlier one)"
        )
    judge = data.get("judge")
    tables = [(f"[[players]] #{index}", table) for index, table in enumerate(players, 1)] + [("[judge]", judge)]
    for where, table in tables:
        name = table.get("name") if isinstance(table, Mapping) else None
        if isinstance(name, str) and len(name) > MAX_NAME_CHARS:
            return (
                f"{where} name: {len(name):,} characters (it begins {name[:24]!r}); a name may be at most "
                f"{MAX_NAME_CHARS} characters"
            )
    return None


def _document_problem(data: Mapping[str, Any]) -> str | None:
    """What makes a spec document unusable whatever its keys: nesting deeper than :data:`MAX_NESTING`, or a number
    that is not finite (``nan``, ``inf``) anywhere, bot parameters included. Walked without recursion."""
    stack: list[tuple[Any, str, int]] = [(data, "", 0)]
    while stack:
        value, path, depth = stack.pop()
        if depth > MAX_NESTING:
            return f"the spec nests tables or lists more than {MAX_NESTING} deep (at {path or 'the top'})"
        if isinstance(value, float) and not math.isfinite(value):
            return f"{path}: numbers must be finite, got {value}"
        if isinstance(value, Mapping):
            stack.extend((item, f"{path}.{key}" if path else str(key), depth + 1) for key, item in value.items())
        elif isinstance(value, (list, tuple)):
            stack.extend((item, f"{path}[{index}]", depth + 1) for index, item in enumerate(value))
    return None


def _plain(data: Any) -> dict[str, Any]:
    """A JSON round trip of a spec document (models as their tables, anything else as a string)."""

    def default(value: Any) -> Any:
        if isinstance(value, PlayerSpec):
            return value.to_table()
        if isinstance(value, BaseModel):
            return value.model_dump(mode="json", by_alias=True, exclude_unset=True)
        return str(value)

    return json.loads(json.dumps(data, default=default))


def parse_spec(data: Mapping[str, Any]) -> ExperimentSpec:
    """Validate a spec document (as read from TOML, or a plain dict) into an :class:`ExperimentSpec`.

    Raises:
        SpecError: the document is not a valid spec; the message names the table and the key.
    """
    if not isinstance(data, Mapping):
        raise SpecError(f"a spec is a table (a mapping), got {type(data).__name__}")
    try:
        return ExperimentSpec.model_validate(data)
    except ValidationError as exc:
        raise spec_error(exc, data) from None


def spec_json_schema() -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of a spec document, with a description of every key."""
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", **ExperimentSpec.model_json_schema()}
