"""The run directories of a report: opened and checked, their players named once across runs, their records
streamed, and what their specs say (the ``until_stable`` rule, its stableness epsilon).

**Several run directories** (``report A B``): each record is read once, in order, from every store. Players are
keyed by what they are (:attr:`MatchRecord.players`: bot or model, settings, prompt version), not by the name a
spec gave them: the same player under two names in two runs is one row, named as in the first run; two different
players that share a name get the run's name added (``gpt (run-b)``).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from deepeval_games.app.spec.stopping import recheck_epsilon, recorded_rule
from deepeval_games.app.storage.store import DB_NAME, Store
from deepeval_games.core.errors import DeepEvalError
from deepeval_games.core.records import MatchRecord, player_identity

__all__ = [
    "RunSource",
    "max_seats",
    "open_runs",
    "player_labels",
    "spec_epsilon",
    "spec_intervals",
    "spec_source",
    "stream_records",
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
        if not (path / DB_NAME).exists():
            raise DeepEvalError(f"no results in {path} (expected {DB_NAME})")
    names = [p.resolve().name for p in paths]
    return [
        RunSource(path, name if names.count(name) == 1 else str(path)) for path, name in zip(paths, names, strict=True)
    ]


def _identity_key(identity: Any, name: str) -> str:
    if not identity:  # records of an old version: the name is all there is
        return json.dumps({"name": name})
    return json.dumps(player_identity(identity), sort_keys=True, default=str)


def _seatings(run: RunSource) -> Iterator[tuple[list[str], list[Any]]]:
    """(seats, players) of every match of a run, read with SQLite's JSON functions (no record is parsed)."""
    db = sqlite3.connect(f"file:{run.path / DB_NAME}?mode=ro", uri=True)
    try:
        query = "SELECT json_extract(record, '$.seats'), json_extract(record, '$.players') FROM matches"
        for seats, players in db.execute(query):
            yield json.loads(seats or "[]"), json.loads(players or "[]")
    finally:
        db.close()


def max_seats(runs: Sequence[RunSource]) -> int:
    """The most seats any match of ``runs`` has (0 without matches)."""
    return max((len(seats) for run in runs for seats, _ in _seatings(run)), default=0)


def spec_source(run: RunSource) -> dict[str, Any] | None:
    """The spec a run directory was started with (its store's ``meta``), or None when it has none readable."""
    from deepeval_games.app.spec.extends import stored_spec_text

    text = stored_spec_text(run.path)
    try:
        source = json.loads(text) if text else None
    except (ValueError, TypeError):
        return None
    return source if isinstance(source, dict) else None


def spec_intervals(runs: Sequence[RunSource]) -> str:
    """The intervals key of ``runs`` (:func:`~deepeval_games.app.spec.experiment.recorded_intervals`): the version
    the first run's stored spec records (an old run keeps its old methods), collected adaptively when any run was
    stopped by a rule that looked at its results (the anytime-valid intervals are then the valid ones for the
    records read together)."""
    from analysis.stats.intervals import collected_key, split_key
    from deepeval_games.app.spec.experiment import recorded_intervals

    keys = [recorded_intervals(spec_source(run)) for run in runs] or [recorded_intervals(None)]
    version = split_key(keys[0])[0]
    for key in keys:
        _, sequence, alpha = split_key(key)
        if sequence is not None:
            return collected_key(version, sequence, alpha)
    return version


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


def player_labels(runs: Sequence[RunSource]) -> dict[tuple[str, str], str]:
    """The report's name of every (run label, player name): one name per identity, distinct identities apart.

    A single run keeps its names. Across runs, a player (same identity) is named as in the first run it appears
    in; two different players with one name get the run's label added.
    """
    pairs: dict[tuple[str, str], str] = {}  # (run, name) -> identity key
    for run in runs:
        for seats, players in _seatings(run):
            for i, name in enumerate(seats):
                identity = players[i] if i < len(players) else None
                pairs.setdefault((run.label, name), _identity_key(identity, name))
    if len(runs) == 1:
        return {pair: pair[1] for pair in pairs}
    order = {run.label: i for i, run in enumerate(runs)}
    first: dict[str, tuple[str, str]] = {}  # identity -> its first (run, name)
    for pair in sorted(pairs, key=lambda p: (order[p[0]], p[1])):
        first.setdefault(pairs[pair], pair)
    labels: dict[tuple[str, str], str] = {}
    for pair, identity in pairs.items():
        name = first[identity][1]
        same_run_names = {n for (r, n), i in pairs.items() if r == pair[0] and i == identity}
        labels[pair] = pair[1] if len(same_run_names) > 1 else name
    # two identities under one label: the later ones get their first run's label added
    owners: dict[str, str] = {}
    for pair in sorted(pairs, key=lambda p: (order[p[0]], p[1])):
        identity, label = pairs[pair], labels[pair]
        owner = owners.setdefault(label, identity)
        if owner != identity:
            labels[pair] = f"{label} ({first[identity][0]})"
    return labels


def stream_records(
    runs: Sequence[RunSource], labels: dict[tuple[str, str], str] | None = None
) -> Iterator[tuple[RunSource, MatchRecord]]:
    """Every committed record of every run, in run then commit order, its seats renamed by ``labels``."""
    for run in runs:
        with Store(run.path, read_only=True) as store:
            for record in store.records():
                if labels is not None:
                    record.seats = [labels.get((run.label, name), name) for name in record.seats]
                yield run, record
