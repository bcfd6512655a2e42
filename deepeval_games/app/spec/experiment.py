"""The ``[experiment]`` table of a spec: what is played (games, sweep, preset, pairing, repeats, seed) and how the run
executes (the run settings, kept out of the spec hash: :data:`RUN_ONLY_KEYS`), with the limits a spec may not pass."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictFloat,
    StrictInt,
    StrictStr,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

from deepeval_games.app.spec.stopping import StoppingRule, recorded_rule
from deepeval_games.app.spec.tables import TABLE, Name, verbatim_error

if TYPE_CHECKING:
    from analysis.stats.intervals import IntervalPolicy

__all__ = [
    "DEFAULT_MAX_MATCHES",
    "MAX_GAME_NESTING",
    "MAX_GAME_STRING",
    "MAX_MATCHES_CEILING",
    "PAIRINGS",
    "RUN_ONLY_KEYS",
    "ExperimentTable",
    "IntervalsVersion",
    "SweepRange",
    "recorded_intervals",
]

IntervalsVersion = Literal["1", "2", "3"]
"""The versions of ``[experiment] intervals``: what each prints is :data:`analysis.stats.intervals.INTERVAL_VERSIONS`
(kept equal by a test; the spec does not import the statistics to load), and ``report --intervals`` offers these."""

PAIRINGS = ("auto", "permute", "round_robin", "combinations", "self_play", "fixed", "active")
"""The values of ``[experiment] pairing`` (see :mod:`deepeval_games.app.spec.schedule`)."""

RUN_ONLY_KEYS = (
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
    "intervals",
)
"""Keys that change how a run executes, not what it measures; they stay out of the spec hash."""

DEFAULT_MAX_MATCHES = 100_000
"""Planned matches a run may hold without ``[experiment] max_matches`` raised explicitly."""
MAX_MATCHES_CEILING = 5_000_000
"""Planned matches no run may hold (the plan is built in memory); split a larger experiment."""
MAX_GAME_STRING = 4_000
"""The longest game string a spec may give, in characters."""
MAX_GAME_NESTING = 8
"""The deepest nesting of games in a game string (``turn_based_simultaneous_game(game=...)`` is one level)."""


def _check_game_string(value: str) -> str:
    """A game string short and shallow enough for OpenSpiel's parser (which recurses per nested game)."""
    if len(value) > MAX_GAME_STRING:
        raise verbatim_error(
            f"[experiment]: a game string may have at most {MAX_GAME_STRING:,} characters, got {len(value):,}"
        )
    depth = deepest = 0
    for char in value:
        depth += (char == "(") - (char == ")")
        deepest = max(deepest, depth)
    if deepest > MAX_GAME_NESTING:
        raise verbatim_error(
            f"[experiment]: a game string may nest games at most {MAX_GAME_NESTING} deep, got {deepest}"
        )
    return value


SweepValue = StrictBool | StrictInt | StrictFloat | StrictStr
"""One value of a swept game parameter."""


class SweepRange(BaseModel):
    """A range of integers in ``[experiment.sweep]``: ``{from = 11, to = 510}``, both ends included."""

    model_config = ConfigDict(**TABLE, populate_by_name=True)

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
                raise verbatim_error(f"{where}: a range is written {{from = 11, to = 510}} (both included)")
            if values["from"] > values["to"]:
                raise verbatim_error(f"{where}: no values (from > to)")
        elif isinstance(values, (list, tuple)):
            if not values:
                raise verbatim_error(f"{where}: no values")
            if not all(isinstance(v, (int, float, str, bool)) for v in values):
                raise verbatim_error(f"{where}: values must be numbers, strings or booleans")
        else:
            raise verbatim_error(f"{where}: give a list of values or {{from = .., to = ..}}")
    return value


class ExperimentTable(BaseModel):
    """``[experiment]``: what is played, how often, and how the run executes.

    Give exactly one of ``game`` and ``games``.
    """

    model_config = ConfigDict(
        **TABLE,
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
    """How records keep a match's transcript. ``auto``: a match where no seat is awaited (classical players, scripted
    baselines), without a judge or scorers, is stored as its moves (``transcript = "moves"`` in the record, a fraction
    of a full transcript); reading it rebuilds its turns and :func:`deepeval_games.core.transcript.with_messages` its
    messages, as the HTML report does.
    ``full``: every record keeps its turns and message pool as played. Run setting: not part of the spec hash (a run
    may hold both kinds)."""
    max_concurrency: int = Field(default=8, ge=1)
    """Matches played at once. Run setting: not part of the spec hash."""
    max_match_attempts: int = Field(default=3, ge=1)
    """Attempts of a match whose model infrastructure fails (timeouts, 429, 5xx) before it is given up; such a
    match is rescheduled, never scored as a loss. Run setting."""
    workers: Literal["auto"] | Annotated[int, Field(ge=1)] = "auto"
    """Processes that play the matches (:mod:`~deepeval_games.app.execution.process_executor`): a number, or
    ``"auto"`` (one per core for a run of many LLM matches, else one). ``run --workers`` overrides it. Run setting:
    not part of the spec hash."""
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
    intervals: IntervalsVersion = "3"
    """Which interval methods the run's reports print, by version: ``"3"`` (new runs) the tightest valid method per
    kind of number (exact where the game declares its payoff values, e.g. tic-tac-toe's -1, 0, 1, at every number
    of matches; betting otherwise), ``"2"`` the same with the three-value exact interval only up to 40 matches
    (the betting interval above), ``"1"`` the betting intervals printed before methods had versions. A run
    directory records the version it was started with; one that records none (made before this key) is reported
    with ``"1"`` unless ``report --intervals`` asks for another. Run setting (not part of the spec's hash)."""
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
        raise verbatim_error(f"[experiment] workers: 'auto' or a number of processes >= 1, got {value!r}")

    @field_validator("cache", mode="before")
    @classmethod
    def _cache_type(cls, value: Any) -> Any:
        if not isinstance(value, (bool, str)):
            raise PydanticCustomError("spec_type", "true/false or a path")
        return value

    @model_validator(mode="after")
    def _ray_address_needs_ray(self) -> ExperimentTable:
        if self.ray_address is not None and self.executor != "ray":
            raise verbatim_error('[experiment] ray_address is only used with executor = "ray" (--executor ray)')
        return self

    @model_validator(mode="after")
    def _active_is_adaptive(self) -> ExperimentTable:
        rule = self.until_stable
        if self.pairing == "active" and rule is not None and rule.rule != "adaptive":
            raise verbatim_error(
                '[experiment] pairing = "active" stops by the anytime-valid rule: [experiment.until_stable] rule '
                'must be "adaptive" (or leave until_stable out for its defaults)'
            )
        if rule is not None and self.pairing != "active" and (rule.top is not None or rule.top_epsilon is not None):
            raise verbatim_error('[experiment.until_stable] top and top_epsilon are used with pairing = "active" only')
        return self

    @model_validator(mode="after")
    def _one_game_key(self) -> ExperimentTable:
        if (self.game is None) == (self.games is None):
            raise verbatim_error("[experiment]: give exactly one of 'game' (a game string) or 'games' (a list of them)")
        return self


def recorded_intervals(source: Mapping[str, Any] | None) -> IntervalPolicy:
    """The interval policy of a run directory's stored spec document, resolved once for the run: the version it
    records (``[experiment] intervals``; the old version, the methods printed before versions, for one that records
    none or no document), collected adaptively where a stopping rule (``until_stable``, or active matchmaking)
    decided when the run stopped: such a run is reported with the anytime-valid intervals."""
    from analysis.stats.intervals import INTERVAL_VERSIONS, OLD_VERSION, IntervalPolicy

    experiment = (source or {}).get("experiment")
    value = experiment.get("intervals") if isinstance(experiment, Mapping) else None
    version = str(value) if value in INTERVAL_VERSIONS else OLD_VERSION
    rule = recorded_rule(source)  # a rule looked at the results: every interval is the anytime-valid one
    return IntervalPolicy(version, sequence=rule.sequence, alpha=rule.alpha) if rule else IntervalPolicy(version)
