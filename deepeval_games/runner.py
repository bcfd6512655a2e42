"""Runs an experiment: every planned match, concurrently, durably, resumable.

The default executor is asyncio in one process: up to ``max_concurrency`` matches at once (LLM bots
add per-model limits of their own). Each finished match is committed to the store at once. A match
whose model infrastructure fails is logged and rescheduled (up to ``max_match_attempts``), never
scored; a fatal error (bad credentials, unknown model) stops the run after keeping what was committed;
any other error in one match is logged and the tournament goes on.
"""

from __future__ import annotations

import asyncio
import logging
import sys
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyspiel
from tqdm import tqdm

from deepeval_games.bot import DeepEvalBot
from deepeval_games.errors import FatalRunError, InfrastructureError, SpecError
from deepeval_games.games import load_game
from deepeval_games.records import MatchRecord
from deepeval_games.referee import play_match
from deepeval_games.registry import make_bot, scorers_for
from deepeval_games.schedule import PlannedMatch, plan_matches
from deepeval_games.spec import ExperimentSpec, PlayerSpec
from deepeval_games.store import Store

__all__ = ["RunResult", "build_player", "run_experiment", "run_experiment_async"]

log = logging.getLogger(__name__)

ModelBotFactory = Callable[[PlayerSpec, pyspiel.Game, int, np.random.Generator], DeepEvalBot]


def _model_bot_factory() -> ModelBotFactory:
    try:
        from llm_bots.llm_bot import make_llm_bot
    except ImportError as exc:  # pragma: no cover - only before the LLM bot exists
        raise SpecError("players with 'model' need the LLM bot (llm_bots.llm_bot), which is not installed") from exc
    return make_llm_bot


def build_player(player: PlayerSpec, game: pyspiel.Game, seat: int, rng: np.random.Generator) -> DeepEvalBot:
    """The bot for one seat: a registered scripted bot or an LLM bot."""
    if player.bot is not None:
        return make_bot(player.bot, game, seat, rng, player.params)
    return _model_bot_factory()(player, game, seat, rng)


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
    records: list[MatchRecord] = field(default_factory=list)
    """Every committed record in the store, old and new."""


class _Runner:
    def __init__(self, spec: ExperimentSpec, store: Store, progress: bool) -> None:
        self.spec = spec
        self.store = store
        self.progress = progress
        self.games: dict[str, pyspiel.Game] = {}

    def game(self, game_string: str) -> pyspiel.Game:
        if game_string not in self.games:
            self.games[game_string] = load_game(game_string)
        return self.games[game_string]

    def validate(self, plan: list[PlannedMatch]) -> None:
        """Build every player once per game before any match starts, so spec errors surface at once."""
        for game_string in {m.game for m in plan}:
            game = self.game(game_string)
            for player in self.spec.players:
                build_player(player, game, 0, np.random.default_rng(0))
            if self.spec.judge is not None:
                build_player(self.spec.judge, game, -2, np.random.default_rng(0))

    async def play(self, planned: PlannedMatch) -> MatchRecord:
        game = self.game(planned.game)
        seeds = np.random.SeedSequence(planned.seed).spawn(game.num_players() + 1)
        bots = [
            build_player(self.spec.player(name), game, seat, np.random.default_rng(seeds[seat]))
            for seat, name in enumerate(planned.seats)
        ]
        judge = None
        if self.spec.judge is not None:
            judge = build_player(self.spec.judge, game, -2, np.random.default_rng(seeds[-1]))
        record = await play_match(
            game,
            bots,
            seed=planned.seed,
            match_id=planned.match_id,
            seat_names=planned.seats,
            judge=judge,
            scorers=scorers_for(game.get_type().short_name),
        )
        record.experiment = self.spec.name
        record.repeat = planned.repeat
        return record

    async def run(self, todo: list[PlannedMatch], result: RunResult) -> None:
        queue: asyncio.Queue[tuple[PlannedMatch, int]] = asyncio.Queue()
        for planned in todo:
            queue.put_nowait((planned, 1))
        bar = tqdm(total=len(todo), disable=not self.progress, file=sys.stderr, unit="match", desc=self.spec.name)
        fatal: list[BaseException] = []

        async def worker() -> None:
            while not fatal:
                try:
                    planned, attempt = queue.get_nowait()
                except asyncio.QueueEmpty:
                    return
                try:
                    record = await self.play(planned)
                except InfrastructureError as exc:
                    self.store.log_attempt(planned.match_id, "infra", str(exc))
                    if attempt < self.spec.max_match_attempts:
                        log.warning("match %s aborted (%s); rescheduled", planned.match_id, exc)
                        queue.put_nowait((planned, attempt + 1))
                    else:
                        result.failed.append((planned.match_id, f"infrastructure: {exc}"))
                        bar.update(1)
                    continue
                except (FatalRunError, SpecError) as exc:
                    fatal.append(exc)
                    return
                except Exception as exc:  # a bug in a bot or game: log it, keep the tournament going
                    detail = "".join(traceback.format_exception_only(type(exc), exc)).strip()
                    self.store.log_attempt(planned.match_id, "error", traceback.format_exc())
                    log.error("match %s failed: %s", planned.match_id, detail)
                    result.failed.append((planned.match_id, detail))
                    bar.update(1)
                    continue
                if self.store.commit(record):
                    result.played += 1
                bar.update(1)

        workers = max(1, min(self.spec.max_concurrency, len(todo)))
        try:
            await asyncio.gather(*(worker() for _ in range(workers)))
        finally:
            bar.close()
        if fatal:
            raise fatal[0]


async def run_experiment_async(spec: ExperimentSpec, out_dir: str | Path, *, progress: bool = False) -> RunResult:
    """Play every match of ``spec`` that ``out_dir`` does not hold yet; see :func:`run_experiment`."""
    import json

    plan = plan_matches(spec)
    store = Store(out_dir, spec_hash=spec.content_hash(), spec_text=json.dumps(spec.source, sort_keys=True))
    try:
        done = store.completed_ids()
        todo = [m for m in plan if m.match_id not in done]
        result = RunResult(run_dir=Path(out_dir), planned=len(plan), skipped=len(plan) - len(todo))
        runner = _Runner(spec, store, progress)
        runner.validate(plan)
        await runner.run(todo, result)
        planned_ids = {m.match_id for m in plan}
        result.records = [r for r in store.records() if r.match_id in planned_ids]
        return result
    finally:
        store.close()


def run_experiment(spec: ExperimentSpec, out_dir: str | Path, *, progress: bool = False) -> RunResult:
    """Run an experiment into the run directory ``out_dir`` (created if needed) and return its results.

    Resumes: matches already committed there are skipped. Raises
    :class:`~deepeval_games.errors.ResumeMismatchError` if ``out_dir`` belongs to another spec.
    """
    return asyncio.run(run_experiment_async(spec, out_dir, progress=progress))
