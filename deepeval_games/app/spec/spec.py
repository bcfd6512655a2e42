"""Experiment specs: the TOML file that names the game(s), the players, the judge and the repeats.

The spec is a pydantic model of the document itself (:class:`ExperimentSpec`: an ``[experiment]`` table,
``[[players]]`` entries and an optional ``[judge]`` table), so every key is documented once, here, and
``deepeval-games schema`` prints the JSON Schema of the whole document. The keys of an LLM player's table
are those of :class:`llm_bots.model_config.ModelSettings`.

Parsing is strict: an unknown key, a wrong type or a missing value is a
:class:`~deepeval_games.core.errors.SpecError` that names the table and the key (:func:`parse_spec`,
:func:`load_spec`); pydantic's own errors never reach the user.

A spec is identified by :meth:`ExperimentSpec.content_hash` (guards resuming a run directory) and each
player by :meth:`PlayerSpec.identity` (part of every match id): both are computed from the document as
written, so the same document always gives the same hash and the same match ids.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import math
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    GetCoreSchemaHandler,
    PrivateAttr,
    StrictBool,
    StrictFloat,
    StrictInt,
    StrictStr,
    Tag,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError, core_schema

from deepeval_games.core.errors import SpecError
from llm_bots.model_config import DELIVERY_SETTING_KEYS, ModelSettings

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

__all__ = [
    "DELIVERY_KEYS",
    "HUMAN_BOT",
    "PAIRINGS",
    "RECHECK_RULES",
    "BotJudge",
    "BotPlayer",
    "ExperimentSpec",
    "ExperimentTable",
    "HumanJudge",
    "HumanPlayer",
    "ModelJudge",
    "ModelPlayer",
    "PlayerSpec",
    "StoppingRule",
    "SweepRange",
    "as_spec",
    "load_spec",
    "parse_spec",
    "spec_json_schema",
]

PAIRINGS = ("auto", "permute", "round_robin", "combinations", "self_play", "fixed", "active")
"""The values of ``[experiment] pairing`` (see :mod:`deepeval_games.app.spec.schedule`)."""

DELIVERY_KEYS = DELIVERY_SETTING_KEYS
"""Model settings that change how calls are delivered, never what a model is asked."""

_RUN_ONLY_KEYS = (
    "transcript",
    "max_concurrency",
    "max_match_attempts",
    "cache",
    "budget_usd",
    "until_stable",
    "max_matches",
    "workers",
    "executor",
    "ray_address",
)
"""Keys that change how a run executes, not what it measures; they stay out of the spec hash."""

HUMAN_BOT = "human"
"""The registered bot that seats a person (:mod:`llm_bots.players.human`): ``human = true`` is ``bot = "human"``."""

_ALLOW_PLAYER_MODEL = "allow_player_model"  # llm_bots.judge's key; a test checks they agree

_TABLE = ConfigDict(extra="forbid", strict=True, frozen=True, use_attribute_docstrings=True, allow_inf_nan=False)

DEFAULT_MAX_MATCHES = 100_000
"""Planned matches a run may hold without ``[experiment] max_matches`` raised explicitly."""
MAX_MATCHES_CEILING = 5_000_000
"""Planned matches no run may hold (the plan is built in memory); split a larger experiment."""
MAX_NESTING = 32
"""The deepest nesting of tables and lists a spec document may have."""
MAX_GAME_STRING = 4_000
"""The longest game string a spec may give, in characters."""
MAX_GAME_NESTING = 8
"""The deepest nesting of games in a game string (``turn_based_simultaneous_game(game=...)`` is one level)."""


def _check_game_string(value: str) -> str:
    """A game string short and shallow enough for OpenSpiel's parser (which recurses per nested game)."""
    if len(value) > MAX_GAME_STRING:
        raise _spec_error(
            f"[experiment]: a game string may have at most {MAX_GAME_STRING:,} characters, got {len(value):,}"
        )
    depth = deepest = 0
    for char in value:
        depth += (char == "(") - (char == ")")
        deepest = max(deepest, depth)
    if deepest > MAX_GAME_NESTING:
        raise _spec_error(f"[experiment]: a game string may nest games at most {MAX_GAME_NESTING} deep, got {deepest}")
    return value


Name = Annotated[StrictStr, Field(min_length=1, pattern=r"\S")]
"""A non-blank string."""
SweepValue = StrictBool | StrictInt | StrictFloat | StrictStr


def _spec_error(message: str) -> PydanticCustomError:
    """A validation error whose message is shown as it is (it names its table itself)."""
    return PydanticCustomError("spec", "{message}", {"message": message})


# -- the [experiment] table ------------------------------------------------------------------------------


RECHECK_RULES = ("recheck", "bootstrap")
"""The ``until_stable`` rules whose ``epsilon`` is a half-width target (the fixed-sample stableness check); under
``adaptive`` it is the margin within which two players are tied."""


class StoppingRule(BaseModel):
    """``[experiment.until_stable]``: add repeats until the stableness condition holds.

    ``rule = "adaptive"`` (the default; :mod:`analysis.stats.stopping`) is valid at every look: anytime-valid confidence
    sequences per player, per role and per game variant; after the first ``repeats`` rounds only the seatings of
    players whose ranks are unresolved are repeated, in complete blocks; it stops when every adjacent pair is
    separated or tied within ``epsilon``, when ``budget_matches`` would be passed, or after ``max_repeats`` rounds.
    ``rule = "recheck"`` (the default until the adaptive rule took its place; ``"bootstrap"`` is its old name, kept
    for old specs) extends every seating by ``step`` repeats until every fixed-sample 95% interval's half-width is
    below ``epsilon`` and the ranking is steady; re-checking a fixed-sample interval after every extension is
    optional stopping, so its error rate grows with each look, and its report says so.
    """

    model_config = _TABLE

    epsilon: float = Field(gt=0)
    """Required. ``adaptive``: the indifference margin: adjacent players whose means surely differ by at most this
    are tied. ``recheck``: every player's 95% interval half-width of the mean payoff must fall below this."""
    rule: Literal["adaptive", "recheck", "bootstrap"] = "adaptive"
    """``adaptive`` (anytime-valid, the default) or ``recheck`` (uniform extensions, not valid under repeated looks;
    ``bootstrap`` is the same rule under its old name)."""
    alpha: float = Field(default=0.05, gt=0, lt=1)
    """``adaptive``: the chance that a ranking of one variant and role separates two players in the wrong order."""
    budget_matches: int | None = Field(default=None, ge=1)
    """``adaptive``: the most matches the rule may play in all (no round is started that would pass it)."""
    sequence: Literal["betting", "bernstein"] = "betting"
    """``adaptive``: the confidence sequence, hedged-capital ``betting`` or empirical-``bernstein``."""
    step: int = Field(default=0, ge=0)
    """Repeats added per extension (0: the initial ``repeats``)."""
    max_repeats: int = Field(default=50, ge=1)
    """Give up (results reported as not stable) past this many repeats."""
    batch: int = Field(default=5, ge=1)
    """Matches per player between two ranking checkpoints."""
    window: int = Field(default=2, ge=1)
    """Checkpoints over which the ranking must stay the same."""
    top: int | None = Field(default=None, ge=1)
    """``pairing = "active"`` only: the boundary of the top ``top`` players of each ranking (who is in the top k) is
    resolved to ``top_epsilon`` instead of ``epsilon``, as a leaderboard is read from its top (none by default)."""
    top_epsilon: float | None = Field(default=None, gt=0)
    """``pairing = "active"`` with ``top``: the width at which the pair at the top-``top`` boundary counts as tied
    (default ``epsilon / 2``)."""


class SweepRange(BaseModel):
    """A range of integers in ``[experiment.sweep]``: ``{from = 11, to = 510}``, both ends included."""

    model_config = ConfigDict(**_TABLE, populate_by_name=True)

    from_: int = Field(alias="from")
    """The first value."""
    to: int
    """The last value (included)."""

    def values(self) -> tuple[int, ...]:
        """Every integer of the range."""
        return tuple(range(self.from_, self.to + 1))


def _check_sweep(value: Any) -> Any:
    """The old, precise messages for a bad ``[experiment.sweep]`` (checked before the types)."""
    if not isinstance(value, Mapping):
        return value  # the type check says it
    for key, values in value.items():
        where = f"[experiment.sweep] {key!r}"
        if isinstance(values, SweepRange):
            values = values.model_dump(by_alias=True)
        if isinstance(values, Mapping):
            if set(values) != {"from", "to"} or not all(
                isinstance(values[k], int) and not isinstance(values[k], bool) for k in ("from", "to")
            ):
                raise _spec_error(f"{where}: a range is written {{from = 11, to = 510}} (both included)")
            if values["from"] > values["to"]:
                raise _spec_error(f"{where}: no values (from > to)")
        elif isinstance(values, (list, tuple)):
            if not values:
                raise _spec_error(f"{where}: no values")
            if not all(isinstance(v, (int, float, str, bool)) for v in values):
                raise _spec_error(f"{where}: values must be numbers, strings or booleans")
        else:
            raise _spec_error(f"{where}: give a list of values or {{from = .., to = ..}}")
    return value


class ExperimentTable(BaseModel):
    """``[experiment]``: what is played, how often, and how the run executes.

    Give exactly one of ``game`` and ``games``.
    """

    model_config = ConfigDict(
        **_TABLE,
        json_schema_extra={"oneOf": [{"required": ["game"]}, {"required": ["games"]}]},
    )

    name: StrictStr = "experiment"
    """The experiment's name, written into every match record."""
    game: Name | None = None
    """A game string, e.g. ``kuhn_poker(players=3)`` (``deepeval-games games`` lists them)."""
    games: Annotated[list[Name], Field(min_length=1, strict=False)] | None = None
    """Several game strings: every one is played."""
    repeats: int = Field(default=1, ge=1)
    """How many times each seating is played (seats are re-drawn each repeat). Not part of the spec hash:
    raising it and rerunning into the same directory adds matches."""
    seed: int = Field(default=0, ge=0)
    """The experiment seed: seat orders, chance nodes and every bot's random generator derive from it and the match.
    The same seed gives identical records."""
    pairing: Literal["auto", "permute", "round_robin", "combinations", "self_play", "fixed", "active"] = "auto"
    """How players are seated: ``permute``, ``round_robin``, ``combinations``, ``self_play`` (seating with
    replacement, for α-Rank's meta-game), ``fixed`` (the players sit in the order the spec lists them, as
    ``deepeval-games play`` seats a person), ``active`` (the seatings of ``round_robin`` / ``combinations``, repeated
    only for players whose rank is unresolved, stopped by the anytime-valid rule of ``until_stable``'s ``adaptive``
    rule) or ``auto``: ``round_robin`` for a two-seat game with a first mover (both seats in one role, moving in
    turn), so both seatings are played every repeat; otherwise ``permute`` when the players fill the seats exactly
    (a fresh random order every repeat), else ``round_robin`` for two seats and ``combinations`` (every set of
    players that fills the seats, in a random order each repeat) for more."""
    preset: Literal["paper", "project"] | None = None
    """A set of documented choices in every task (:mod:`deepeval_games.app.spec.presets`, ``docs/paper_choices.md``):
    ``paper`` (the paper's behaviour wherever it is known) or ``project`` (this project's first choices). It fills
    game parameters the game strings do not set, so it changes the game strings (never pooled across presets)."""
    transcript: Literal["auto", "full"] = "auto"
    """How records keep a match's transcript. ``auto``: a match whose every seat is a scripted bot that moves from its
    observation fields (:class:`~deepeval_games.core.bot.FieldsBot`), without a judge or scorers, is stored as its
    moves (``transcript = "moves"`` in the record, a fraction of a full transcript); reading
    it rebuilds its turns and :func:`deepeval_games.core.transcript.with_messages` its messages, as the HTML report
    does.
    ``full``: every record keeps its turns and message pool as played. Run setting: not part of the spec hash (a run
    may hold both kinds)."""
    max_concurrency: int = Field(default=8, ge=1)
    """Matches played at once. Run setting: not part of the spec hash."""
    max_match_attempts: int = Field(default=3, ge=1)
    """Attempts of a match whose model infrastructure fails (timeouts, 429, 5xx) before it is given up; such a
    match is rescheduled, never scored as a loss. Run setting."""
    workers: Literal["auto"] | Annotated[int, Field(ge=1)] = "auto"
    """Processes that play the matches (:mod:`deepeval_games.app.execution.executors`): a number, or ``"auto"`` (one
    per core
    for a run of many LLM matches, else one). ``run --workers`` overrides it. Run setting: not part of the spec
    hash."""
    executor: Literal["local", "ray"] = "local"
    """Where the matches are played: ``local`` (this process, or ``workers`` processes of this machine) or ``ray``
    (actors on a Ray cluster, :mod:`deepeval_games.app.execution.ray_executor`; needs ``pip install
    "deepeval-games[ray]"``).
    The driver commits every record either way. Run setting: not part of the spec hash."""
    ray_address: Name | None = None
    """Under ``executor = "ray"``: the cluster to join (``ray start --head`` prints it; ``auto``: the one started on
    this machine). Unset: ``RAY_ADDRESS``, else a local Ray instance for the run. Run setting."""
    sweep: Annotated[dict[str, list[SweepValue] | SweepRange], Field(strict=False)] = Field(default_factory=dict)
    """Game parameters to vary: every game is played with every combination of these values. A value is a
    list (``alpha = [1.2, 1.6]``) or an integer range (``task_id = {from = 11, to = 510}``)."""
    cache: StrictBool | StrictStr = True
    """Model-call cache: true for the user cache, a path (a SQLite file), or false for none. Run setting."""
    budget_usd: float | None = Field(default=None, ge=0)
    """Stop making new model calls once this much (USD, as litellm prices them) is spent. Run setting."""
    max_matches: int = Field(default=DEFAULT_MAX_MATCHES, ge=1, le=MAX_MATCHES_CEILING)
    """The most matches the run may plan (every game, sweep value, seating and repeat; under ``until_stable`` at
    its ``max_repeats``). A larger plan is refused before anything is played or written, unless this is raised
    explicitly (at most 5,000,000). Run setting."""
    data_dir: Name | None = None
    """The folder that game parameters naming files (``efg_game(filename=...)``, ``nfg_game``, any parameter
    that is a path) may read from. Without it, no game parameter may name a file. Links and ``..`` are resolved
    before the check; game strings read back from a run directory's records get the same check."""
    until_stable: StoppingRule | None = None
    """Add repeats until the results are stable (``[experiment.until_stable]``). Run setting."""
    extends: Annotated[list[Name], Field(strict=False)] = Field(default_factory=list)
    """Run directories of an earlier study (the pool) that this spec adds players to: the run plays only the
    seatings with a listed player who is not in the pool, against the pool's players, with the pool's games, sweep,
    seed and pairing (:mod:`deepeval_games.app.spec.extends`); paths are read from the working directory."""

    @field_validator("sweep", mode="before")
    @classmethod
    def _sweep_messages(cls, value: Any) -> Any:
        return _check_sweep(value)

    @field_validator("game", "games")
    @classmethod
    def _game_strings(cls, value: str | list[str] | None) -> str | list[str] | None:
        for game in [value] if isinstance(value, str) else value or []:
            _check_game_string(game)
        return value

    @field_validator("workers", mode="before")
    @classmethod
    def _workers_value(cls, value: Any) -> Any:
        if value == "auto" or (isinstance(value, int) and not isinstance(value, bool) and value >= 1):
            return value
        raise _spec_error(f"[experiment] workers: 'auto' or a number of processes >= 1, got {value!r}")

    @field_validator("cache", mode="before")
    @classmethod
    def _cache_type(cls, value: Any) -> Any:
        if not isinstance(value, (bool, str)):
            raise PydanticCustomError("spec_type", "true/false or a path")
        return value

    @model_validator(mode="after")
    def _ray_address_needs_ray(self) -> ExperimentTable:
        if self.ray_address is not None and self.executor != "ray":
            raise _spec_error('[experiment] ray_address is only used with executor = "ray" (--executor ray)')
        return self

    @model_validator(mode="after")
    def _active_is_adaptive(self) -> ExperimentTable:
        rule = self.until_stable
        if self.pairing == "active" and rule is not None and rule.rule != "adaptive":
            raise _spec_error(
                '[experiment] pairing = "active" stops by the anytime-valid rule: [experiment.until_stable] rule '
                'must be "adaptive" (or leave until_stable out for its defaults)'
            )
        if rule is not None and self.pairing != "active" and (rule.top is not None or rule.top_epsilon is not None):
            raise _spec_error('[experiment.until_stable] top and top_epsilon are used with pairing = "active" only')
        return self

    @model_validator(mode="after")
    def _one_game_key(self) -> ExperimentTable:
        if (self.game is None) == (self.games is None):
            raise _spec_error("[experiment]: give exactly one of 'game' (a game string) or 'games' (a list of them)")
        return self


# -- players and the judge -------------------------------------------------------------------------------


class BotPlayer(BaseModel):
    """A ``[[players]]`` entry played by a registered scripted bot (``deepeval-games bots`` lists them)."""

    model_config = _TABLE

    name: Name
    """The player's name in tables and match records (unique in the spec)."""
    bot: Name
    """The registered name of the scripted bot, e.g. ``pgg_free_rider``."""
    params: dict[str, Any] = Field(default_factory=dict)
    """The bot's parameters (``[players.params]``), checked by the bot."""


class ModelPlayer(ModelSettings):
    """A ``[[players]]`` entry played by a language model: ``model`` plus the model settings, side by side."""

    model_config = ConfigDict(
        extra="forbid", strict=True, frozen=True, use_attribute_docstrings=True, allow_inf_nan=False
    )

    name: Name
    """The player's name in tables and match records (unique in the spec)."""
    model: StrictStr
    """A litellm model string (``openai/gpt-4o``, ``anthropic/...``, ``ollama/llama3``), ``local/smollm2`` or
    ``local/<path to a .gguf>`` (a llama.cpp server started for the run)."""

    @field_validator("model")
    @classmethod
    def _model_string(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("'model' must be a litellm model string like 'openai/gpt-4o'")
        if not value.isprintable():
            raise ValueError("'model' may not hold control characters (a litellm model string or local/...)")
        return value


class BotJudge(BotPlayer):
    """``[judge]`` with ``bot``: a registered scripted judge (``judge_fixed``, ``judge_pass_rate``)."""

    name: Name = "judge"
    """The judge's name (default ``judge``)."""


class ModelJudge(ModelPlayer):
    """``[judge]`` with ``model``: an LLM judge. It samples at temperature 0 with up to 1024 tokens unless
    set otherwise, and may not be a player's model unless ``allow_player_model`` is true."""

    name: Name = "judge"
    """The judge's name (default ``judge``)."""
    allow_player_model: StrictBool = False
    """Let a model that also plays judge (a warning about self-preference is logged)."""


class HumanPlayer(BaseModel):
    """A ``[[players]]`` entry played by a person at the terminal (``human = true``, the same as ``bot = "human"``).

    A run with a human seat plays its matches one at a time, with no model-call cache and no time limit for the
    person."""

    model_config = _TABLE

    name: Name
    """The player's name in tables and match records (unique in the spec)."""
    human: Literal[True]
    """``true``: a person plays this seat (or judges, in ``[judge]``)."""
    params: dict[str, Any] = Field(default_factory=dict)
    """The human seat's settings (``[players.params]``): ``terminator`` (the line that ends a multi-line answer,
    default ``.``) and ``max_reasks`` (re-asks after an invalid move, default 2, as for models)."""


class HumanJudge(HumanPlayer):
    """``[judge]`` with ``human = true``: a person gives the scores and reasons at each verdict node."""

    name: Name = "human judge"
    """The judge's name (default ``human judge``)."""


def _kind(value: Any) -> str | None:
    """``bot``, ``model`` or ``human`` for a player table with exactly one of these keys; None otherwise."""
    if isinstance(value, PlayerSpec):
        return value.kind
    if not isinstance(value, Mapping):
        return None
    kinds = [key for key in ("bot", "model", "human") if key in value]
    return kinds[0] if len(kinds) == 1 else None


_KIND_ERROR = "give exactly one of 'bot' (a scripted bot), 'model' (a litellm model) or 'human = true' (a person)"

PlayerTable = Annotated[
    Annotated[BotPlayer, Tag("bot")] | Annotated[ModelPlayer, Tag("model")] | Annotated[HumanPlayer, Tag("human")],
    Discriminator(_kind, custom_error_type="player_kind", custom_error_message=_KIND_ERROR),
]
"""One ``[[players]]`` entry as written."""
JudgeTable = Annotated[
    Annotated[BotJudge, Tag("bot")] | Annotated[ModelJudge, Tag("model")] | Annotated[HumanJudge, Tag("human")],
    Discriminator(_kind, custom_error_type="player_kind", custom_error_message=_KIND_ERROR),
]
"""The ``[judge]`` table as written."""


class PlayerSpec(BaseModel):
    """A player (or the judge) as the runner uses it: a scripted bot (``bot``) or an LLM bot (``model``).

    Made from a ``[[players]]`` entry by :func:`parse_spec`, or directly in Python.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True)

    name: str
    """The player's name."""
    bot: str | None = None
    """The scripted bot's registered name; None for an LLM."""
    model: str | None = None
    """The litellm model string; None for a scripted bot."""
    params: dict[str, Any] = Field(default_factory=dict)
    """Bot parameters (``[players.params]``) or, for a model, the model settings (every other key), as written."""

    @property
    def kind(self) -> str:
        """``bot`` or ``model`` (a person is the bot ``human``, see :attr:`is_human`)."""
        return "model" if self.model is not None else "bot"

    @property
    def is_human(self) -> bool:
        """Whether a person plays (or judges): ``human = true``, or ``bot = "human"``."""
        return self.bot == HUMAN_BOT

    def identity(self) -> dict[str, Any]:
        """What makes this player this player: part of every match id.

        Settings that change only how calls are delivered (timeouts, retries, concurrency, the key's
        variable, accepted model ids) are left out, so changing them neither renames matches nor misses
        the model-call cache.
        """
        played = {k: v for k, v in self.params.items() if k not in DELIVERY_KEYS}
        return {"name": self.name, "bot": self.bot, "model": self.model, "params": played}

    def to_table(self) -> dict[str, Any]:
        """The spec table that describes this player."""
        if self.kind == "model":
            return {"name": self.name, "model": self.model, **self.params}
        return {"name": self.name, "bot": self.bot, "params": dict(self.params)}


class _FromTable:
    """Annotation: validate the value as a spec table of ``table``, keep a :class:`PlayerSpec` of it.

    The JSON Schema shows the table; the values of a model's settings are kept as written (so ``1`` and
    ``1.0`` stay apart in :meth:`PlayerSpec.identity`, as they always did).
    """

    def __init__(self, table: Any) -> None:
        self.table = table

    def __get_pydantic_core_schema__(self, source: Any, handler: GetCoreSchemaHandler) -> core_schema.CoreSchema:
        return core_schema.no_info_wrap_validator_function(
            self._resolve,
            handler.generate_schema(self.table),
            serialization=core_schema.plain_serializer_function_ser_schema(PlayerSpec.to_table),
        )

    @staticmethod
    def _resolve(value: Any, validate: Callable[[Any], Any]) -> PlayerSpec:
        if isinstance(value, PlayerSpec):
            return value
        table = validate(value)
        raw = dict(value) if isinstance(value, Mapping) else table.model_dump(exclude_unset=True)
        if isinstance(table, BotPlayer):
            return PlayerSpec(name=table.name, bot=table.bot, params=dict(raw.get("params", {})))
        if isinstance(table, HumanPlayer):
            return PlayerSpec(name=table.name, bot=HUMAN_BOT, params=dict(raw.get("params", {})))
        settings = {k: v for k, v in raw.items() if k not in ("name", "model")}
        return PlayerSpec(name=table.name, model=table.model, params=settings)


# -- the spec ---------------------------------------------------------------------------------------------


class ExperimentSpec(BaseModel):
    """A deepeval-games experiment spec: the ``[experiment]`` table, ``[[players]]`` and an optional ``[judge]``."""

    model_config = ConfigDict(
        extra="forbid", frozen=True, use_attribute_docstrings=True, title="deepeval-games experiment spec"
    )

    experiment: ExperimentTable
    """What is played and how the run executes."""
    players: Annotated[tuple[Annotated[PlayerSpec, _FromTable(PlayerTable)], ...], Field(min_length=1)]
    """The players: each entry has ``bot`` (a scripted bot) or ``model`` (an LLM), never both."""
    judge: Annotated[PlayerSpec, _FromTable(JudgeTable)] | None = None
    """The judge of judged games: a scripted judge (``bot``) or an LLM (``model``)."""

    _source: dict[str, Any] = PrivateAttr(default_factory=dict)

    @model_validator(mode="wrap")
    @classmethod
    def _keep_source(cls, data: Any, handler: Callable[[Any], ExperimentSpec]) -> ExperimentSpec:
        if isinstance(data, Mapping):
            problem = _document_problem(data)  # before anything recurses into the document
            if problem:
                raise _spec_error(problem)
        spec = handler(data)
        if isinstance(data, Mapping):
            spec._source = _plain(data)
        elif not spec._source:
            spec._source = _plain(spec.model_dump(mode="json", by_alias=True, exclude_unset=True))
        return spec

    @model_validator(mode="after")
    def _unique_names(self) -> ExperimentSpec:
        names = [p.name for p in self.players]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise _spec_error(f"[[players]]: names must be unique; repeated: {duplicates}")
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
    def until_stable(self) -> StoppingRule | None:
        """``[experiment.until_stable]``, if given."""
        return self.experiment.until_stable

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
            k: v for k, v in self.source.get("experiment", {}).items() if k not in (*_RUN_ONLY_KEYS, "repeats")
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
        """The player called ``name``."""
        for player in self.players:
            if player.name == name:
                return player
        raise KeyError(name)

    def with_experiment(self, **changes: Any) -> ExperimentSpec:
        """A copy with some ``[experiment]`` keys changed (e.g. ``repeats=40``), validated again."""
        source = {**self.source, "experiment": {**self.source.get("experiment", {}), **changes}}
        return parse_spec(source)


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


# -- errors -------------------------------------------------------------------------------------------------

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
        return f"{where}: {_KIND_ERROR}"
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


# -- entry points -------------------------------------------------------------------------------------------


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
    except RecursionError:  # the TOML parser recurses per nesting level
        raise SpecError(f"{path}: tables or lists nested too deeply to read (at most {MAX_NESTING})") from None
    return parse_spec(data)


def as_spec(spec: ExperimentSpec | Mapping[str, Any] | str | Path) -> ExperimentSpec:
    """An :class:`ExperimentSpec` from a spec, a spec document (a mapping) or the path of a TOML spec file.

    Raises:
        SpecError: the document or file is not a valid spec.
    """
    if isinstance(spec, ExperimentSpec):
        return spec
    if isinstance(spec, Mapping):
        return parse_spec(spec)
    if isinstance(spec, (str, Path)):
        return load_spec(spec)
    raise SpecError(f"a spec is an ExperimentSpec, a mapping or the path of a TOML file, got {type(spec).__name__}")


def spec_json_schema() -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of a spec document, with a description of every key."""
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", **ExperimentSpec.model_json_schema()}
