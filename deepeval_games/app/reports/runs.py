"""The run directories of a report: opened and checked, their players named once across runs, their records
streamed, and what their specs say (the ``until_stable`` rule, its stableness epsilon).

**Several run directories** (``report A B``): each record is read once, in order, from every store, and a match
held by several of them once (:func:`stream_records`). A player is its name and its spec entry with what its seat
recorded (:func:`seat_identity`; DESIGN.md section 8), as in the leaderboard: the same player in two runs is one row;
two players that share a name are told apart by what differs (``gpt [temperature=0.7]``, :func:`identity_labels`);
one bot under two names is two rows, as it would be in one run holding both.

**Labels.** What a report shows a reader in place of a long string: a game variant's label (:func:`game_label`: its
long name, ``DeepEval`` dropped, with only the parameters that differ from the game's defaults, e.g.
``Kuhn Poker (players=3)``; the full string stays in the HTML report's tooltip and details) and a player's identity as
a line of text (:func:`identity_text`, in place of its JSON, without what the engine derived for one match).

**Partial runs.** A run still being written, interrupted, or ended by an error holds fewer matches than it planned;
:func:`partial_note` says so (from the last entry of its ``manifest.json``), for the text report's first line and the
HTML report's notice.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyspiel

from deepeval_games.app.spec.schedule import stored_admission
from deepeval_games.app.spec.stopping import recheck_epsilon, recorded_rule
from deepeval_games.app.storage.store import Store, read_results, require_results
from deepeval_games.core.errors import DeepEvalError
from deepeval_games.core.records import MatchRecord, player_identity
from deepeval_games.core.registry.games import DATA_ITEM_PARAMETERS, game_variant, registered_games

if TYPE_CHECKING:
    from analysis.stats.intervals import IntervalPolicy

__all__ = [
    "PlayerLabels",
    "RunSource",
    "SeatIdentities",
    "game_label",
    "identity_key",
    "identity_labels",
    "identity_text",
    "max_seats",
    "open_runs",
    "partial_note",
    "player_labels",
    "seat_identity",
    "short_labels",
    "spec_epsilon",
    "spec_identities",
    "spec_intervals",
    "spec_source",
    "stream_records",
    "unique_labels",
]


@dataclass(frozen=True)
class RunSource:
    """One run directory of a report."""

    path: Path
    label: str
    """Its short name in the report (the folder name; the full path when two folders share a name)."""


def open_runs(run_dirs: Sequence[str | Path]) -> list[RunSource]:
    """The run directories of a report, checked; a clear error for one without results."""
    if not run_dirs:
        raise DeepEvalError("no run directory given")
    paths = [Path(p) for p in run_dirs]
    for path in paths:
        require_results(path)
    names = [p.resolve().name for p in paths]
    return [
        RunSource(path, name if names.count(name) == 1 else str(path)) for path, name in zip(paths, names, strict=True)
    ]


def _seatings(run: RunSource) -> Iterator[tuple[str, list[str], list[Any]]]:
    """(game, seats, players) of every match of a run, read with SQLite's JSON functions (no record is parsed)."""
    db = read_results(run.path)
    try:
        query = (  # a line SQLite cannot read (a number not finite, too deep) is no record: admission refuses it
            "SELECT json_extract(record, '$.game'), json_extract(record, '$.seats'), "
            "json_extract(record, '$.players') FROM matches WHERE json_valid(record)"
        )
        for game, seats, players in db.execute(query):
            yield str(game or ""), json.loads(seats or "[]"), json.loads(players or "[]")
    finally:
        db.close()


def max_seats(runs: Sequence[RunSource]) -> int:
    """The most seats any match of ``runs`` has (0 without matches)."""
    return max((len(seats) for run in runs for _, seats, _ in _seatings(run)), default=0)


def spec_source(run: RunSource) -> dict[str, Any] | None:
    """The spec a run directory was started with (its store's ``meta``), or None when it has none readable."""
    from deepeval_games.app.spec.extends import stored_spec_source

    return stored_spec_source(run.path)


def spec_intervals(runs: Sequence[RunSource]) -> IntervalPolicy:
    """The interval policy of ``runs``, resolved once for a report
    (:func:`~deepeval_games.app.spec.experiment.recorded_intervals`): the version the first run's stored spec
    records (an old run keeps its old methods), collected adaptively when any run was stopped by a rule that looked
    at its results (the anytime-valid intervals are then the valid ones for the records read together)."""
    from analysis.stats.intervals import IntervalPolicy
    from deepeval_games.app.spec.experiment import recorded_intervals

    policies = [recorded_intervals(spec_source(run)) for run in runs] or [recorded_intervals(None)]
    adaptive = next((p for p in policies if p.anytime), None)
    if adaptive is None:
        return policies[0]
    return IntervalPolicy(policies[0].version, sequence=adaptive.sequence, alpha=adaptive.alpha)


def spec_epsilon(runs: Sequence[RunSource]) -> float | None:
    """The ``until_stable`` epsilon of the first run whose spec has one under the ``recheck`` rule (the stableness
    verdict's default: there it is the half-width every interval must fall below). Under the ``adaptive`` rule (the
    default) epsilon is the margin within which two players are tied, and the rule's own report says whether the run
    is settled: no fixed-sample verdict is added."""
    for run in runs:
        epsilon = recheck_epsilon(recorded_rule(spec_source(run)))
        if epsilon is not None:
            return epsilon
    return None


_UNFINISHED = {
    "running": "the run is still being written, or was killed before it could say so",
    "interrupted": "the run was interrupted; rerun it to resume",
    "failed": "the run ended with an error; rerun it to resume",
}


def _partial(run: RunSource, held: int) -> str | None:
    """How ``run`` (holding ``held`` matches) falls short of its plan, from its manifest's last entry; None when it
    does not (or keeps no readable manifest)."""
    from deepeval_games.app.spec.manifest import read_manifest

    try:
        entries = read_manifest(run.path)["runs"]
    except DeepEvalError:
        return None
    last = entries[-1] if entries and isinstance(entries[-1], dict) else {}
    planned, status = last.get("planned"), last.get("status")
    if not isinstance(planned, int) or isinstance(planned, bool):
        return None
    if status in _UNFINISHED:
        why = _UNFINISHED[status]
    elif held < planned and recorded_rule(spec_source(run)) is None:  # a stopping rule plays fewer on purpose
        why = "the run finished without every planned match; rerun it to play the rest"
    else:
        return None
    return f"{held:,} of {planned:,} planned matches ({why})"


def partial_note(runs: Sequence[RunSource], held: Mapping[str, int]) -> str | None:
    """``partial: 2,493 of 3,000 planned matches (the run was interrupted; ...)`` for runs that hold fewer matches
    than their manifest planned, or whose last run is still ``running``, ``interrupted`` or ``failed``; None when
    every run is whole.

    Args:
        runs: the report's runs; ``held``: matches per run label (what the report read).
    """
    notes = [(run, note) for run in runs if (note := _partial(run, held.get(run.label, 0))) is not None]
    if not notes:
        return None
    if len(runs) == 1:
        return f"partial: {notes[0][1]}"
    return "partial: " + "; ".join(f"{run.label} holds {note}" for run, note in notes)


def spec_identities(run_dir: str | Path) -> dict[str, dict[str, Any]]:
    """Each player name of a run directory's stored spec -> its identity (:meth:`PlayerSpec.identity`: its name, bot or
    model, and the settings that change play, what match ids hash); empty when the directory keeps no readable spec
    (records of an old version)."""
    from deepeval_games.app.spec.extends import stored_spec

    spec = stored_spec(run_dir)
    return {p.name: p.identity() for p in spec.players} if spec else {}


def seat_identity(spec_identity: Mapping[str, Any] | None, name: str, recorded: Any) -> dict[str, Any]:
    """What played a seat (DESIGN.md section 8: a player is its name and its spec): its spec entry's identity
    (:func:`spec_identities`; the name alone for records of an old version) with what the seat recorded, less what
    the engine derived for its match (:func:`~deepeval_games.core.records.player_identity`: a sampling seed)."""
    played = player_identity(recorded) if isinstance(recorded, Mapping) and recorded else {}
    return {"spec": dict(spec_identity) if spec_identity else {"name": name}, "seat": played}


def identity_key(identity: Mapping[str, Any]) -> str:
    """An identity as one string, the same for equal identities."""
    return json.dumps(identity, sort_keys=True, default=str)


def _flat(value: Any, prefix: str = "") -> dict[str, str]:
    """Dotted keys -> JSON values of a nested identity (what two identities' differences are read from)."""
    if isinstance(value, dict) and value:
        out: dict[str, str] = {}
        for key, item in value.items():
            out.update(_flat(item, f"{prefix}.{key}" if prefix else str(key)))
        return out
    return {prefix: json.dumps(value, sort_keys=True, default=str)}


def _setting(field: str, value: str | None) -> str:
    """``simulations=5``, ``bot=random``: a field of a flat identity as the user wrote it."""
    name = field.removeprefix("spec.params.").removeprefix("spec.").removeprefix("seat.")
    shown = "-" if value is None else value
    if value is not None and value.startswith('"'):
        shown = str(json.loads(value))
    return f"{name}={shown}"


def identity_labels(keys: Iterable[str], identities: Mapping[str, Mapping[str, Any]]) -> dict[str, tuple[str, str]]:
    """Identity key -> (its name in a table, how it differs from the other identities of that name; ``""`` when no
    other shares it): ``m [simulations=5]`` beside ``m [simulations=50]``, in the words of the spec where the spec
    tells them apart, else of what the seats recorded. The report and the leaderboard name players with this."""
    by_name: dict[str, list[str]] = {}
    for key in sorted(set(keys)):
        by_name.setdefault(str(identities[key]["spec"].get("name", "?")), []).append(key)
    out: dict[str, tuple[str, str]] = {}
    for name, group in by_name.items():
        if len(group) == 1:
            out[group[0]] = (name, "")
            continue
        flats = [_flat(identities[key]) for key in group]
        fields = sorted({f for flat in flats for f in flat if len({fl.get(f) for fl in flats}) > 1})
        fields = [f for f in fields if f.startswith("spec.")] or fields
        for key, flat in zip(group, flats, strict=True):
            differs = ", ".join(_setting(f, flat.get(f)) for f in fields)
            out[key] = (f"{name} [{differs}]", differs)
    return out


class SeatIdentities:
    """Who played the seats of records of a report's runs: each seat's identity (:func:`seat_identity`, the run's
    stored spec read once a run) by its key (:func:`identity_key`). The report's names and the leaderboard's rows
    both group seats by these keys."""

    def __init__(self) -> None:
        self._specs: dict[str, dict[str, dict[str, Any]]] = {}
        self.identities: dict[str, dict[str, Any]] = {}
        """Every identity met, by its key."""

    def key(self, run: RunSource, name: str, recorded: Any) -> str:
        """The identity key of the seat ``name`` of a record of ``run`` that recorded ``recorded`` of its player."""
        specs = self._specs.get(run.label)
        if specs is None:
            specs = self._specs[run.label] = spec_identities(run.path)
        identity = seat_identity(specs.get(name), name, recorded)
        key = identity_key(identity)
        self.identities.setdefault(key, identity)
        return key

    def keys(self, run: RunSource, record: MatchRecord) -> list[str]:
        """The identity keys of ``record``'s seats (a record of ``run``)."""
        players = record.players
        return [self.key(run, name, players[i] if i < len(players) else None) for i, name in enumerate(record.seats)]


class PlayerLabels:
    """The report's name of every seat of every record of its runs: one name per identity and game variant
    (:func:`seat_identity`, per seat of each record, and :func:`identity_labels` per variant: what the leaderboard's
    rows are), distinct identities apart.

    A single run keeps its names. Across runs, a player of the same name and spec in several runs is one row; two
    identities under one name are told apart by what differs; one bot under two names is two rows, as it would be in
    one run holding both. What a seat records can differ by game (a search bot's ``search``, a model's prompt
    version), so names are worked out per variant, as the leaderboard's tables are.
    """

    def __init__(self, runs: Sequence[RunSource]) -> None:
        self.single = len(runs) <= 1
        """One run: its names as they are (nothing worked out)."""
        self._seats = SeatIdentities()
        self._labels: dict[tuple[str, str], str] = {}  # (variant, identity key) -> name
        if self.single:
            return
        keys: dict[str, set[str]] = {}
        for run in runs:
            for game, seats, players in _seatings(run):
                group = keys.setdefault(game_variant(game), set())
                for i, name in enumerate(seats):
                    group.add(self._seats.key(run, name, players[i] if i < len(players) else None))
        for variant, group in keys.items():
            for key, (label, _) in identity_labels(group, self._seats.identities).items():
                self._labels[variant, key] = label

    def seat_names(self, run: RunSource, record: MatchRecord) -> list[str]:
        """The names of ``record``'s seats (a record of ``run``) in the report."""
        if self.single:
            return list(record.seats)
        variant = game_variant(record.game)
        keys = self._seats.keys(run, record)
        return [self._labels.get((variant, key), name) for key, name in zip(keys, record.seats, strict=True)]


def player_labels(runs: Sequence[RunSource]) -> PlayerLabels:
    """The names of the players of ``runs`` in a report (:class:`PlayerLabels`)."""
    return PlayerLabels(runs)


def stream_records(
    runs: Sequence[RunSource],
    labels: PlayerLabels | None = None,
    *,
    on_duplicate: Callable[[RunSource, MatchRecord], None] | None = None,
) -> Iterator[tuple[RunSource, MatchRecord]]:
    """Every committed record of every run that its run's admission admits
    (:func:`~deepeval_games.app.spec.schedule.stored_admission`: the others are skipped, one warning line a run), in
    run then commit order, its seats renamed by ``labels``.

    **One record a match.** A match id in more than one run (the same game, seats, repeat and seed: the same planned
    match, as two runs of one spec, or of specs sharing scripted players, have) is yielded once: its first complete
    record in run order (the first record when none is complete). Each other copy goes to ``on_duplicate`` instead,
    so that no match is counted twice (two copies of a deterministic match are one observation, not two). A copy
    passed over for one that admission then refuses is yielded in its place, after the runs."""
    chosen = _chosen_copies(runs) if len(runs) > 1 else None
    yielded: set[str] = set()
    held: dict[str, tuple[RunSource, MatchRecord]] = {}  # passed over for a later run's copy, not yet yielded

    def named(run: RunSource, record: MatchRecord) -> tuple[RunSource, MatchRecord]:
        if labels is not None:
            record.seats = labels.seat_names(run, record)
        return run, record

    def duplicate(run: RunSource, record: MatchRecord) -> None:
        if on_duplicate is not None:
            on_duplicate(run, record)

    for index, run in enumerate(runs):
        with Store(run.path, read_only=True, admission=stored_admission(run.path)) as store:
            for record in store.records():
                if chosen is not None:
                    match_id = record.match_id
                    if match_id in yielded:
                        duplicate(run, record)
                        continue
                    if chosen.get(match_id, index) > index:  # a later run holds the copy to read
                        if match_id in held:
                            duplicate(run, record)
                        else:
                            held[match_id] = (run, record)
                        continue
                    yielded.add(match_id)
                    if match_id in held:
                        duplicate(*held.pop(match_id))
                yield named(run, record)
    for match_id, (run, record) in held.items():
        if match_id in yielded:
            duplicate(run, record)
        else:  # the copy chosen was refused by its run's admission
            yield named(run, record)


def _chosen_copies(runs: Sequence[RunSource]) -> dict[str, int]:
    """The run (its index) whose copy of each match id :func:`stream_records` yields: the first run holding it
    complete, else the first holding it (read with SQLite's JSON functions: no record is parsed)."""
    chosen: dict[str, tuple[int, bool]] = {}
    for index, run in enumerate(runs):
        db = read_results(run.path)
        try:
            query = "SELECT match_id, json_extract(record, '$.status') FROM matches WHERE json_valid(record)"
            for match_id, status in db.execute(query):
                seen = chosen.get(match_id)
                if seen is None or (not seen[1] and status == "complete"):
                    chosen[match_id] = (index, status == "complete")
        finally:
            db.close()
    return {match_id: index for match_id, (index, _) in chosen.items()}


# -- labels: how a report names a game variant and what played a seat --------------------------------------------

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
    only the parameters in which the variants of that game differ (``Kuhn Poker`` when a report has one
    variant of it, ``Kuhn Poker (players=2)`` and ``(players=3)`` when it has two); :func:`unique_labels` where
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
    """A recorded identity as a line of text: ``openai/gpt-4o, temperature 0.2, prompt generic-1 (chat)``,
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
