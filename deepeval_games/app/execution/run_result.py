"""What a run did (:class:`RunResult`), where and how it plays (:class:`RunSetup`), and the bookkeeping every way of
running shares: the run's store opened for its spec, its call counters taken from the model runtime, and its manifest
closed."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Iterator
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from deepeval_games.app.spec.manifest import RunManifest, check_manifest_spec
from deepeval_games.app.spec.spec import ExperimentSpec
from deepeval_games.app.storage.admission import Admission
from deepeval_games.app.storage.store import RunLock, Store
from deepeval_games.core.records import MatchRecord

__all__ = ["RunResult", "RunSetup", "ended_status", "finish_manifest", "open_store", "stored_source"]


@dataclass
class RunResult:
    """What a run did."""

    run_dir: Path
    planned: int
    played: int = 0
    """Matches committed by this run."""
    skipped: int = 0
    """Matches already in the store (resumed)."""
    failed: list[tuple[str, str]] = field(default_factory=list)
    """(match id, error) of matches that could not be completed."""
    match_ids: AbstractSet[str] = field(default_factory=frozenset, repr=False)
    """Ids of the run's matches (old and new) committed in the store: what :attr:`records` reads (read it, never
    change it: it may be the set the run's store kept)."""
    model_calls: int = 0
    """Model calls sent by this run (cache hits not counted)."""
    calls_by_model: dict[str, int] = field(default_factory=dict)
    """Per configured model string, the calls sent by this run."""
    cache_hits: dict[str, int] = field(default_factory=dict)
    """Per configured model string, the asks answered from the model-call cache instead of a call."""
    repeats: int = 0
    """Repeats finally played (grows under ``until_stable``)."""
    stableness: dict[str, Any] = field(default_factory=dict)
    """Per task, the stableness check of ``until_stable`` (empty without that rule)."""
    quarantined: frozenset[str] = frozenset()
    """Ids of the records the run refused when it read back its directory (moved to the quarantine file and played
    again)."""
    stopping: Any = None
    """Under ``until_stable`` with ``rule = "adaptive"``, the rule's :class:`~analysis.stats.stopping.StoppingReport`:
    what
    stopped the run, matches per player, intervals, what is unresolved (None otherwise)."""

    @property
    def records(self) -> list[MatchRecord]:
        """Every committed record of the run, old and new, in commit order: read from the store at each access (the
        runner keeps no finished record; :meth:`iter_records` streams them instead)."""
        return list(self.iter_records())

    def iter_records(self, *, rebuild_turns: bool = True) -> Iterator[MatchRecord]:
        """The run's committed records streamed from the store in commit order, one at a time
        (``rebuild_turns``: see :meth:`MatchRecord.from_json`)."""
        if not self.match_ids:
            return
        store = Store(self.run_dir, read_only=True)
        try:
            for record in store.records(rebuild_turns=rebuild_turns):
                if record.match_id in self.match_ids:
                    yield record
        finally:
            store.close()

    def count_calls(self, runtime: Any) -> None:
        """Take the model calls this run sent, and its cache hits, from the run's model runtime (none: no model
        player, nothing to count)."""
        if runtime is not None:
            self.model_calls = runtime.calls
            self.calls_by_model, self.cache_hits = dict(runtime.sent), dict(runtime.hits)


@dataclass(frozen=True)
class RunSetup:
    """Where and how a run plays, whatever extends it (the same for each of its rounds)."""

    out_dir: str | Path
    """The run directory."""
    run_lock: RunLock
    """This process's lock on the run directory."""
    progress: bool
    """Whether a progress bar is drawn."""
    workers: int | str | None = None
    """The caller's ``workers`` setting (None: the spec's)."""
    on_commit: Callable[[str | bytes], None] | None = None
    """Handed the line of every record the run commits, once stored, in commit order
    (:attr:`MatchRunner.on_commit <deepeval_games.app.execution.play_and_commit.MatchRunner.on_commit>`)."""
    admission: Admission | None = None
    """What a record read back from the run directory must pass (the run's plan included); None: every check but the
    plan's. One for the whole run, so that a record it admitted (or committed) is not checked again in a later round.
    """


def stored_source(spec: ExperimentSpec) -> dict[str, Any]:
    """The spec document a new run directory keeps: as written, with the interval version it selects recorded explicitly
    (``[experiment] intervals``), so that a later default does not change how the run is reported."""
    experiment = {**spec.source.get("experiment", {}), "intervals": spec.experiment.intervals}
    return {**spec.source, "experiment": experiment}


def open_store(spec: ExperimentSpec, setup: RunSetup) -> Store:
    """The run directory's store, opened for ``spec`` (its hash and text) by the process holding the run's lock."""
    return Store(
        setup.out_dir,
        spec_hash=spec.content_hash(),
        spec_text=json.dumps(stored_source(spec), sort_keys=True),
        run_lock=setup.run_lock,
        admission=setup.admission,
        check_rebuild=lambda: check_manifest_spec(setup.out_dir, spec),
    )


def ended_status(exc: BaseException) -> str:
    """The manifest's status of a run that ``exc`` ended: ``interrupted`` when it was stopped (Ctrl-C, or SIGTERM,
    which the command line turns into one: a KeyboardInterrupt, or the run's own task cancelled), else ``failed``."""
    if isinstance(exc, KeyboardInterrupt):
        return "interrupted"
    if isinstance(exc, asyncio.CancelledError):
        task = asyncio.current_task()
        cancelling = getattr(task, "cancelling", None)  # Python 3.11+: whether this task was asked to stop
        if cancelling is None or cancelling() > 0:
            return "interrupted"
    return "failed"


def finish_manifest(manifest: RunManifest, status: str, runtime: Any, result: RunResult) -> None:
    """Close the run's manifest: how it ended, what it played, and what the providers reported (the runtime has
    noted every reply, cache hits and workers' included: no record is read back)."""
    manifest.finish(
        status=status,
        reported=runtime.reported if runtime is not None else None,
        played=result.played,
        failed=len(result.failed),
    )
