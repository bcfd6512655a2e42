"""Adding players to a finished study: ``[experiment] extends = ["runs/study"]``.

The run directories named by ``extends`` are the *pool*: their stored specs give the pool's players. A spec that
extends a pool lists only the players to add; the run plays the round robin of pool and new players restricted to
the seatings with at least one new player (against every pool player, every seat order and role), with the pool's
games, sweep, seed and pairing, so every such match has the id, items and seed that a full round robin of all the
players would have given it. ``deepeval-games leaderboard POOL... NEW`` then reads as that full round robin.

The spec a run stores is the whole one (pool players included), so a later spec may extend the extended run.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from deepeval_games.app.spec.experiment import recorded_intervals
from deepeval_games.app.spec.spec import ExperimentSpec, parse_spec
from deepeval_games.app.storage.store import DB_NAME, read_results, require_results
from deepeval_games.core.errors import DeepEvalError, SpecError

if TYPE_CHECKING:
    from analysis.stats.intervals import IntervalPolicy

__all__ = ["pool_names", "stored_intervals", "stored_spec", "stored_spec_source", "stored_spec_text", "with_pool"]

_MEASURED = ("games", "seed", "sweep", "pairing")
"""What the pool and the extending spec must share for their matches to be one round robin's."""


def stored_spec_text(run_dir: str | Path) -> str | None:
    """The spec document a run directory keeps (JSON text), or None when it keeps none; nothing is written."""
    try:
        db = read_results(run_dir)
    except DeepEvalError:
        return None
    try:
        row = db.execute("SELECT value FROM meta WHERE key='spec'").fetchone()
    except sqlite3.Error:
        row = None
    finally:
        db.close()
    return row[0] if row and row[0] else None


def stored_spec_source(run_dir: str | Path) -> dict[str, Any] | None:
    """The spec document a run directory keeps, parsed (a JSON object); None when it keeps none, or none that parses
    as one (text nested past Python's stack included: a store is read, never trusted)."""
    text = stored_spec_text(run_dir)
    try:
        source = json.loads(text) if text else None
    except (ValueError, RecursionError):
        return None
    return source if isinstance(source, dict) else None


def stored_intervals(run_dir: str | Path) -> IntervalPolicy:
    """The interval policy of the run directory's stored spec
    (:func:`~deepeval_games.app.spec.experiment.recorded_intervals`: the old version where it records none)."""
    return recorded_intervals(stored_spec_source(run_dir) if (Path(run_dir) / DB_NAME).exists() else None)


def stored_spec(run_dir: str | Path) -> ExperimentSpec | None:
    """The spec a run directory was made by (as the store keeps it); None when it keeps none that still parses.

    Raises:
        DeepEvalError: the directory holds no results.
    """
    require_results(run_dir)
    source = stored_spec_source(run_dir)
    try:
        return parse_spec(source) if source is not None else None
    except (ValueError, DeepEvalError):
        return None


def _pool_specs(spec: ExperimentSpec) -> list[tuple[str, ExperimentSpec]]:
    out = []
    for run_dir in spec.experiment.extends:
        try:
            pool = stored_spec(run_dir)
        except DeepEvalError as exc:
            raise SpecError(f"[experiment] extends: {exc}") from exc
        if pool is None:
            raise SpecError(f"[experiment] extends: {run_dir} keeps no readable spec")
        out.append((run_dir, pool))
    return out


def pool_names(spec: ExperimentSpec) -> frozenset[str]:
    """The names of the pool's players (empty without ``extends``)."""
    return frozenset(p.name for _, pool in _pool_specs(spec) for p in pool.players)


def _measured(spec: ExperimentSpec) -> dict[str, Any]:
    judge = spec.judge.identity() if spec.judge else None
    return {**{key: getattr(spec, key) for key in _MEASURED}, "judge": judge}


def _check_same_study(spec: ExperimentSpec, pools: Iterable[tuple[str, ExperimentSpec]]) -> None:
    mine = _measured(spec)
    for run_dir, pool in pools:
        theirs = _measured(pool)
        differ = [key for key in mine if mine[key] != theirs[key]]
        if differ:
            said = "; ".join(f"{key}: {theirs[key]!r} there, {mine[key]!r} here" for key in differ)
            raise SpecError(
                f"[experiment] extends {run_dir}: the pool was played with other settings ({said}); an extension "
                "plays the pool's games, sweep, seed, pairing and judge"
            )


def with_pool(spec: ExperimentSpec) -> ExperimentSpec:
    """``spec`` with the pool's players added (itself without ``extends``); the same spec again for a spec that has
    them already.

    Raises:
        SpecError: a pool directory is missing or keeps no spec, the pool was played with other games, sweep,
            seed, pairing or judge, or a pool player and a listed player share a name but are different players.
    """
    if not spec.experiment.extends:
        return spec
    pools = _pool_specs(spec)
    _check_same_study(spec, pools)
    listed = {p.name: p for p in spec.players}
    added: dict[str, dict[str, Any]] = {}
    for run_dir, pool in pools:
        for player in pool.players:
            mine = listed.get(player.name)
            if mine is not None and mine.identity() != player.identity():
                raise SpecError(
                    f"[[players]] {player.name!r}: the pool ({run_dir}) has another player of that name; "
                    "give the new player another name"
                )
            earlier = added.get(player.name)
            if earlier is not None and earlier != player.to_table():
                raise SpecError(f"[experiment] extends: two pool players are called {player.name!r}")
            if mine is None:
                added[player.name] = player.to_table()
    if not added:
        return spec
    source = {**spec.source, "players": [*added.values(), *spec.source.get("players", [])]}
    return parse_spec(source)
