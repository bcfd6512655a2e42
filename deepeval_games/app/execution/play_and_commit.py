"""The driver's loop over a run's planned matches: many at once, each committed to the store as it finishes
(:class:`MatchRunner`), played in this process or in an executor's workers. A run without model players in worker
processes hands its matches over in batches and commits what arrives together in one write (:class:`_BatchedRun`). A
match that fails is rescheduled, logged, or stops the run (:meth:`MatchRunner.run` says which)."""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
import sys
import traceback
from collections.abc import AsyncIterator, Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

from tqdm import tqdm

from deepeval_games.app.execution.one_match import MatchPlayer
from deepeval_games.app.execution.process_executor import ProcessExecutor
from deepeval_games.app.execution.run_result import RunResult
from deepeval_games.app.spec.plan import PlannedMatch, as_plan
from deepeval_games.app.spec.spec import ExperimentSpec
from deepeval_games.app.storage.store import Store
from deepeval_games.core.errors import FatalRunError, InfrastructureError, SpecError
from deepeval_games.core.quoting import visible
from deepeval_games.core.records import MatchRecord

if TYPE_CHECKING:
    from deepeval_games.app.execution.ray_executor import RayExecutor

__all__ = ["LIVE_TICK_S", "MatchRunner"]

log = logging.getLogger(__name__)

LIVE_TICK_S = 1.0
"""Seconds between two redraws of what the models are doing, beside the progress bar (:meth:`MatchRunner.live_line`)."""


class Waiting:
    """A first-in first-out queue of ``(match, attempt)`` that starts with every match of ``todo`` at attempt 1, in
    order, without holding them: :meth:`popleft` reads the next one from ``todo`` (a
    :class:`~deepeval_games.app.spec.plan.Plan` makes it then). :meth:`append` puts a match at the end (a retry),
    :meth:`extendleft` back at the front (a batch that could not be sent)."""

    __slots__ = ("_back", "_front", "_left", "_rest")

    def __init__(self, todo: Sequence[PlannedMatch]) -> None:
        self._rest = iter(todo)
        """The matches of ``todo`` not taken yet (each made as it is taken)."""
        self._left = len(todo)
        self._front: collections.deque[tuple[PlannedMatch, int]] = collections.deque()
        """Matches handed back: before the rest of ``todo``."""
        self._back: collections.deque[tuple[PlannedMatch, int]] = collections.deque()
        """Matches appended: after the rest of ``todo``."""

    def __len__(self) -> int:
        return len(self._front) + self._left + len(self._back)

    def __bool__(self) -> bool:
        return len(self) > 0

    def popleft(self) -> tuple[PlannedMatch, int]:
        """The first match waiting and its attempt, taken out.

        Raises:
            IndexError: nothing is waiting.
        """
        if self._front:
            return self._front.popleft()
        if self._left:
            self._left -= 1
            return next(self._rest), 1
        return self._back.popleft()

    def append(self, item: tuple[PlannedMatch, int]) -> None:
        """Put ``item`` at the end."""
        self._back.append(item)

    def extendleft(self, items: Iterable[tuple[PlannedMatch, int]]) -> None:
        """Put ``items`` back at the front, each before the ones already there (as :meth:`collections.deque.extendleft`:
        hand back a batch reversed to keep its order)."""
        self._front.extendleft(items)


class MatchRunner(MatchPlayer):
    """Plays a list of planned matches, many at once, committing each record to the store as it finishes; matches
    are played here (:class:`MatchPlayer`) or by an executor's workers."""

    def __init__(self, spec: ExperimentSpec, store: Store | None, progress: bool, runtime: Any) -> None:
        super().__init__(spec, runtime)
        self.store = store
        self.progress = progress
        self.executor: ProcessExecutor | RayExecutor | None = None
        """Where matches are played when not in this process (:mod:`deepeval_games.app.execution.process_executor`)."""
        self.plays_too = False
        """Whether this process plays matches too while worker processes play theirs (a run without model players:
        one core is this process's, see :func:`~deepeval_games.app.execution.placement.worker_pool`)."""
        self.on_commit: Callable[[str | bytes], None] | None = None
        """Handed the line of every record this runner commits, once it is stored, in commit order (what the store
        holds: e.g. the run's summary, fed as the run plays)."""

    async def play(self, planned: PlannedMatch) -> MatchRecord:
        """Play one planned match, here or in a worker process (whose record comes back here to be committed)."""
        if self.executor is not None:
            record = await self.executor.play(planned)
        else:
            record = await super().play(planned)
        self.played(record)
        return record

    def load_games(self, plan: Sequence[PlannedMatch]) -> None:
        """Load the games that ``plan`` plays, in the order of their game strings."""
        for game_string in sorted(as_plan(plan).games()):
            self.game(game_string)

    def played(self, record: MatchRecord) -> None:
        """A record played (here, or in a worker and read back), before it is committed (a subclass may read it)."""

    async def play_and_commit(self, planned: PlannedMatch) -> bool:
        """Play one planned match and commit its record; True if it was stored now (False: its id was stored
        already). A worker process's record is committed as the JSON text the worker wrote, never parsed here."""
        assert self.store is not None
        if isinstance(self.executor, ProcessExecutor):
            text = await self.executor.play_json(planned)
            self.played_json(planned.match_id, text)
            return self.commit_line(planned.match_id, text)
        return self.commit(await self.play(planned))

    def commit(self, record: MatchRecord) -> bool:
        """Commit a record played in this process, serialised once (the line stored is the line fed); True if it
        was stored now."""
        return self.commit_line(record.match_id, record.to_json_bytes())

    def commit_line(self, match_id: str, line: str | bytes) -> bool:
        """Commit one record's JSON line (:meth:`Store.commit_json`) and feed it to :attr:`on_commit` if it was
        stored now; True if it was."""
        assert self.store is not None
        return self.fed([line], [self.store.commit_json(match_id, line)])[0]

    def fed(self, lines: Sequence[str | bytes], committed: list[bool]) -> list[bool]:
        """``committed`` (whether each record of ``lines``, its JSON line, was stored now), once the line of each
        record stored now is handed to :attr:`on_commit`."""
        if self.on_commit is not None:
            for line, stored in zip(lines, committed, strict=True):
                if stored:
                    self.on_commit(line)
        return committed

    def played_json(self, match_id: str, text: str | bytes) -> None:
        """A record played in a worker process, as its JSON line (UTF-8 bytes), before it is committed (a subclass
        may read it)."""

    def progress_bar(self, total: int) -> tqdm:
        """The run's progress bar over ``total`` matches (drawn only with ``progress``, and never over a person's
        prompts)."""
        hidden = not self.progress or self.spec.has_humans()
        name = visible(self.spec.name, keep_lines=False)  # the bar is drawn raw: the name must not drive the terminal
        return tqdm(total=total, disable=hidden, file=sys.stderr, unit="match", desc=name)

    @contextlib.asynccontextmanager
    async def live_line(self, shown: tqdm) -> AsyncIterator[None]:
        """While inside, redraw beside the progress bar, every :data:`LIVE_TICK_S`, what the models of this process
        are answering: the match's round, the model, for how long, and its output tokens per second
        (:meth:`llm_bots.live.LiveCalls.line`), so that a slow model's long match is not a silent bar."""
        live = getattr(self.runtime, "live", None)  # a run without model players has no runtime
        if live is None or shown.disable:
            yield
            return

        async def redraw() -> None:
            while True:
                await asyncio.sleep(LIVE_TICK_S)
                shown.set_postfix_str(live.line(), refresh=True)

        ticking = asyncio.ensure_future(redraw())
        try:
            yield
        finally:
            ticking.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await ticking
            shown.set_postfix_str("", refresh=False)

    async def run(self, todo: Sequence[PlannedMatch], result: RunResult, *, bar: tqdm | None = None) -> None:
        """Play and commit ``todo`` (up to ``max_concurrency`` at once), counting into ``result``; ``bar``: the run's
        progress bar when it spans more than this call (else one is drawn for ``todo`` and closed)."""
        if isinstance(self.executor, ProcessExecutor) and not self.spec.uses_models() and todo:
            shown = bar if bar is not None else self.progress_bar(len(todo))
            try:
                await _BatchedRun(self, self.executor, todo, result, shown).drive()
            finally:
                if bar is None:
                    shown.close()
            return
        waiting = Waiting(todo)  # each match made as it is taken (no queue of the whole plan)
        humans = self.spec.has_humans()  # a person plays one match at a time
        shown = bar if bar is not None else self.progress_bar(len(todo))
        fatal: list[BaseException] = []

        async def worker() -> None:
            while not fatal:
                try:
                    planned, attempt = waiting.popleft()
                except IndexError:
                    return
                try:
                    committed = await self.play_and_commit(planned)
                except Exception as exc:
                    settled = self.handle_failure(planned, attempt, exc, result, waiting.append, fatal)
                    if settled:
                        shown.update(settled)
                    continue  # the loop ends when the run stops (a fatal error)
                if committed:
                    result.played += 1
                shown.update(1)

        workers = 1 if humans else max(1, min(self.spec.max_concurrency, len(todo)))
        try:
            async with self.live_line(shown):
                await asyncio.gather(*(worker() for _ in range(workers)))
        finally:
            if bar is None:
                shown.close()
        if fatal:
            raise fatal[0]

    def handle_failure(
        self,
        planned: PlannedMatch,
        attempt: int,
        exc: BaseException,
        result: RunResult,
        retry: Callable[[tuple[PlannedMatch, int]], Any],
        fatal: list[BaseException],
    ) -> int:
        """What a run does with a match that failed with ``exc`` at attempt ``attempt``; how many matches it settled
        (0: rescheduled, or the run stops). An infrastructure fault is logged and the match handed to ``retry`` (its
        next attempt) until ``max_match_attempts``, then counted failed; a fatal or spec error is appended to
        ``fatal`` (the run stops); anything else (a bug in a bot or game) is logged and counted failed, and the
        tournament goes on."""
        assert self.store is not None
        if isinstance(exc, InfrastructureError):
            self.store.log_attempt(planned.match_id, "infra", str(exc))
            if attempt < self.spec.max_match_attempts:
                log.warning("match %s aborted (%s); rescheduled", planned.match_id, exc)
                retry((planned, attempt + 1))
                return 0
            result.failed.append((planned.match_id, f"infrastructure: {exc}"))
            return 1
        if isinstance(exc, (FatalRunError, SpecError)):
            fatal.append(exc)
            return 0
        detail = "".join(traceback.format_exception_only(type(exc), exc)).strip()
        self.store.log_attempt(planned.match_id, "error", "".join(traceback.format_exception(exc)))
        log.error("match %s failed: %s", planned.match_id, detail)
        result.failed.append((planned.match_id, detail))
        return 1


class _BatchedRun:
    """:meth:`MatchRunner.run` for a run without model players in worker processes: its matches never wait for this
    process, so they are handed to the workers as they have room (up to ``max_concurrency`` in flight, as
    :meth:`MatchRunner.run` keeps) without a coroutine or future per match, and the records that arrive together are
    committed together (:meth:`Store.commit_many_json <deepeval_games.app.storage.store.Store.commit_many_json>`:
    one ``writev``). Failures are handled as :meth:`MatchRunner.run` handles them: rescheduled, logged, or stopping
    the run. A driver that plays too (:attr:`MatchRunner.plays_too`) plays a match itself whenever the workers have
    their fill."""

    def __init__(
        self,
        runner: MatchRunner,
        executor: ProcessExecutor,
        todo: Sequence[PlannedMatch],
        result: RunResult,
        shown: tqdm,
    ) -> None:
        assert runner.store is not None
        self.runner, self.store, self.executor, self.result, self.shown = runner, runner.store, executor, result, shown
        self.waiting = Waiting(todo)
        """Matches to send, with their attempt (each made as it is taken)."""
        self.here = runner.plays_too
        self.limit = max(1, min(runner.spec.max_concurrency - (1 if self.here else 0), len(todo)))  # one is played here
        """The most matches in flight in the workers."""
        self.in_flight = 0
        self.fatal: list[BaseException] = []
        """What stops the run (its first)."""
        self.loop = asyncio.get_running_loop()
        self.wake: asyncio.Future[None] | None = None
        """What the driving loop waits on while the workers play (set by :meth:`settle`)."""
        self.starting: asyncio.Future[None] | None = None
        """Workers being started (:meth:`ProcessExecutor.start_missing`)."""

    async def drive(self) -> None:
        """Play and commit every match; raise what stopped the run, once the matches in flight are committed."""
        executor = self.executor
        executor.sink = self.settle
        try:
            while True:
                pending = self.starting is not None and not self.starting.done()  # (refill would only be refused)
                if not self.fatal and self.waiting and (pending or not self.refill()):  # a worker must be started first
                    if self.starting is None:
                        self.starting = asyncio.ensure_future(executor.start_missing())
                        self.starting.add_done_callback(_retrieved)  # its failure is read here, or left when stopping
                    if not self.here or self.starting.done():  # (a driver that plays plays on meanwhile)
                        await self.await_start()
                        continue
                if not self.in_flight and (self.fatal or not self.waiting):
                    if self.starting is not None:  # the driver played everything, or stopped, while they started
                        self.starting.cancel()  # (a worker forked meanwhile ends at once; the executor closes the rest)
                        await asyncio.wait([self.starting])
                    break  # done; or stopped, once the matches in flight are committed (as run() lets them finish)
                if self.here and self.waiting and not self.fatal:  # the workers have their fill: play one here
                    await self.play_here()
                    continue
                self.wake = self.loop.create_future()
                await self.wake
                self.wake = None
        finally:
            executor.sink = None
            if self.starting is not None:  # stopped from outside: the executor closes what started
                self.starting.cancel()
        if self.fatal:
            raise self.fatal[0]

    def refill(self) -> bool:
        """Send waiting matches while fewer than ``limit`` are in flight; False: a worker must be started."""
        count = min(self.limit - self.in_flight, len(self.waiting))
        if count <= 0 or self.fatal:
            return True
        batch = [self.waiting.popleft() for _ in range(count)]
        try:
            sent = self.executor.submit_nowait([(item[0], item) for item in batch])
        except (FatalRunError, SpecError) as exc:
            self.fatal.append(exc)
            return True
        if not sent:
            self.waiting.extendleft(reversed(batch))
            return False
        self.in_flight += count
        return True

    async def await_start(self) -> None:
        """Wait for the workers being started; a failure to start them stops the run."""
        assert self.starting is not None
        try:
            await self.starting
        except (FatalRunError, SpecError) as exc:
            self.fatal.append(exc)
        finally:
            self.starting = None

    async def play_here(self) -> None:
        """Play the next waiting match in this process and commit it (then the workers' records are taken)."""
        planned, attempt = self.waiting.popleft()
        try:
            record = await MatchPlayer.play(self.runner, planned)
            self.runner.played(record)
            committed = self.runner.commit(record)
        except Exception as exc:
            settled = self.failed(planned, attempt, exc)
        else:
            self.result.played += committed
            settled = 1
        if settled:
            self.shown.update(settled)
        await asyncio.sleep(0)

    def failed(self, planned: PlannedMatch, attempt: int, exc: BaseException) -> int:
        """A match failed: see :meth:`MatchRunner.handle_failure` (a retry goes back to the waiting matches)."""
        return self.runner.handle_failure(planned, attempt, exc, self.result, self.waiting.append, self.fatal)

    def settle(self, outcomes: list[tuple[Any, bytes | BaseException]]) -> None:
        """Outcomes that arrived together: send more matches first (the workers play on), then commit."""
        self.in_flight -= len(outcomes)
        lines: list[tuple[str, bytes]] = []
        played: list[PlannedMatch] = []
        settled = 0
        try:
            for (planned, attempt), outcome in outcomes:
                if isinstance(outcome, BaseException):
                    settled += self.failed(planned, attempt, outcome)
                else:
                    lines.append((planned.match_id, outcome))
                    played.append(planned)
            started = self.refill()
            self.executor.flush()
            if lines:
                settled += self.commit(played, lines)
        except BaseException as exc:  # never raised into the worker's socket: the run stops with it
            self.fatal.append(exc)
            started = False
        if settled:
            self.shown.update(settled)
        wake = self.wake
        if wake is not None and not wake.done() and (self.fatal or not started or not (self.waiting or self.in_flight)):
            wake.set_result(None)

    def commit(self, played: list[PlannedMatch], lines: list[tuple[str, bytes]]) -> int:
        """Commit the records (JSON lines) of the matches ``played``, together; how many matches that settled."""
        for match_id, data in lines:
            self.runner.played_json(match_id, data)
        settled = len(lines)
        try:
            committed = self.runner.fed([line for _, line in lines], self.store.commit_many_json(lines))
        except Exception:  # one at a time, so that only the faulty ones fail, as in run()
            committed = []
            for planned, (match_id, data) in zip(played, lines, strict=True):
                try:
                    committed.append(self.runner.commit_line(match_id, data))
                except Exception as exc:
                    committed.append(False)
                    settled += self.failed(planned, 1, exc) - 1
        self.result.played += sum(committed)
        return settled


def _retrieved(future: asyncio.Future[Any]) -> None:
    """Read a finished future's failure so that asyncio never reports it as unretrieved (its owner may have stopped
    waiting for it)."""
    if not future.cancelled():
        future.exception()
