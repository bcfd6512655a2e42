"""Re-judging finished transcripts: ``deepeval-games rejudge RUN_DIR --judge MODEL_OR_BOT [--swap] [--repeat K]``.

A judged match (a game whose ``judged`` hook is true) ends in a verdict. :func:`rejudge` gives the transcripts of a run
directory to a judge again — the same or another; a scripted bot, an LLM, later a person — without replaying
play: each match's state is rebuilt from its record up to the verdict node (free-text moves re-interned from
the recorded texts, and checked against the recorded utterance ids), the judge is asked there exactly as the
referee asks it (:func:`~deepeval_games.core.referee.judge_observation`), and its verdict is stored as a
:class:`~deepeval_games.core.judgements.JudgementRecord` in a table of its own beside the matches. The match records
are never changed.

Presentations (for the position/label-bias audit): every match is judged **as played** (the roles introduced
in seat order, seat i labelled ``Player i+1``, the same brief as the original judge's); with ``swap`` also
**swapped** (the roles introduced in reverse order under reversed labels: the programmer becomes ``Player 2``
and is introduced last). The judge fields carry the presentation (``presented_order``, ``seat_labels``); the
verdict is always in seat order, whatever the presentation. A task shows an LLM judge a swapped brief through
its ``judge_text_presented`` hook (:mod:`deepeval_games.core.task`); for a task without it ``--swap`` is refused for
LLM judges (scripted judges read the fields). ``repeat`` asks each judge K times per match and presentation
(the judge-variance audit); a judgement's id hashes the match, the judge's identity, the presentation and the
repeat, so a rerun (or a larger ``--repeat``) adds only what is missing.

**The judge interface**: anything that satisfies :class:`JudgeSource` — a name, an identity (part of every
judgement id), the judge's model if any, and ``build(game, rng, judgement_id)`` returning a
:class:`~deepeval_games.core.bot.DeepEvalBot` whose ``act`` answers the judge observation with a verdict action.
:class:`SpecJudge` wraps a ``[judge]``-style player spec (a registered scripted judge or an LLM). A human
judge is one more :class:`JudgeSource` whose bot asks a person.

A judge that fails on a match (no usable verdict, infrastructure) is logged in the store's attempts and
reported; the other matches go on. A match whose transcript cannot be rebuilt is skipped with its reason.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import time
import traceback
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np
import pyspiel

from deepeval_games.app.spec.manifest import check_prices
from deepeval_games.app.spec.players import PlayerSpec
from deepeval_games.app.spec.schedule import stored_admission
from deepeval_games.app.storage.store import Store, require_results
from deepeval_games.core import task
from deepeval_games.core.bot import DeepEvalBot, Outcome
from deepeval_games.core.errors import DeepEvalError, FatalRunError, SpecError, UnknownBotError, UnknownGameError
from deepeval_games.core.judgements import JudgementRecord
from deepeval_games.core.message_pool import REFEREE, MessagePool, seat_label
from deepeval_games.core.records import CHANCE_SEAT, JUDGE_SEAT, MatchRecord, TurnRecord
from deepeval_games.core.referee import judge_observation
from deepeval_games.core.registry.bots import lookup_bot
from deepeval_games.core.registry.games import load_recorded_game

__all__ = [
    "JudgeSource",
    "Presentation",
    "RejudgeError",
    "RejudgeResult",
    "SpecJudge",
    "judge_source",
    "presentations",
    "rejudge",
    "rejudge_async",
    "replay_to_verdict",
]

log = logging.getLogger(__name__)


class RejudgeError(DeepEvalError):
    """A match's transcript cannot be re-judged (not a judged match, or it does not replay to its verdict)."""


@dataclass(frozen=True)
class Presentation:
    """How the judge is shown the roles: ``order`` (seats, first introduced first) and ``labels`` (per seat)."""

    order: tuple[int, ...]
    labels: tuple[str, ...]

    @classmethod
    def as_played(cls, seats: int) -> Presentation:
        """Seat order, seat i labelled ``Player i+1`` (what the original judge saw)."""
        return cls(tuple(range(seats)), tuple(seat_label(s) for s in range(seats)))

    @classmethod
    def swapped(cls, seats: int) -> Presentation:
        """Reverse order under reversed labels: the last seat is introduced first and labelled ``Player 1``."""
        return cls(tuple(reversed(range(seats))), tuple(seat_label(seats - 1 - s) for s in range(seats)))

    @property
    def is_swapped(self) -> bool:
        """Whether this is not the seat order."""
        return list(self.order) != sorted(self.order)

    def fields(self) -> dict[str, Any]:
        """The judge fields that tell a scripted judge the presentation."""
        return {"presented_order": list(self.order), "seat_labels": list(self.labels)}


def presentations(seats: int, *, swap: bool) -> list[Presentation]:
    """As played, and with ``swap`` also swapped."""
    shown = [Presentation.as_played(seats)]
    return [*shown, Presentation.swapped(seats)] if swap else shown


@runtime_checkable
class JudgeSource(Protocol):
    """What :func:`rejudge` asks for verdicts (see the module docs). Issue 16's human judge is one of these."""

    @property
    def name(self) -> str:
        """The judge's name in reports and judgements (a bot name, a model string, ``human:<name>``)."""
        ...

    @property
    def model(self) -> str | None:
        """The judge's model string, None for scripted or human judges (read by the self-preference audit)."""
        ...

    def identity(self) -> dict[str, Any]:
        """What makes this judge this judge: part of every judgement id (settings that change its verdicts)."""
        ...

    def build(self, game: pyspiel.Game, rng: np.random.Generator, *, judgement_id: str) -> DeepEvalBot:
        """The judge bot for one judgement (called once per judgement; ``judgement_id`` keys any call cache)."""
        ...

    def close(self) -> None:
        """Release what the judge holds (model-call cache, local servers)."""
        ...


class SpecJudge:
    """A judge from a ``[judge]``-style player spec: a registered scripted judge (``bot``) or an LLM (``model``)."""

    def __init__(self, spec: PlayerSpec, *, cache: str | Path | None = None, budget_usd: float | None = None) -> None:
        """``cache``: the model-call cache file for an LLM judge (None: no cache); ``budget_usd``: a cost cap."""
        self.spec = spec
        self._cache = cache
        self._budget = budget_usd
        self._runtime: Any = None

    @property
    def name(self) -> str:
        """The bot's registered name or the model string."""
        return self.spec.name

    @property
    def model(self) -> str | None:
        """The model string of an LLM judge."""
        return self.spec.model

    def identity(self) -> dict[str, Any]:
        """The spec's identity (name, bot or model, the settings that change verdicts)."""
        return self.spec.identity()

    def _model_runtime(self) -> Any:
        if self._runtime is None:
            from llm_bots.llm_bot import ModelRuntime  # only when a model judges: litellm is slow to import

            self._runtime = ModelRuntime.open(self._cache, self._budget)
        return self._runtime

    def build(self, game: pyspiel.Game, rng: np.random.Generator, *, judgement_id: str) -> DeepEvalBot:
        """The judge bot, built as the runner builds a ``[judge]``."""
        from deepeval_games.app.execution.one_match import build_player

        runtime = self._model_runtime() if self.spec.model is not None else None
        return build_player(self.spec, game, JUDGE_SEAT, rng, match_id=judgement_id, runtime=runtime)

    def close(self) -> None:
        """Close the model runtime, if one was opened."""
        if self._runtime is not None:
            self._runtime.close()
            self._runtime = None


def judge_source(
    judge: str,
    params: Mapping[str, Any] | None = None,
    *,
    cache: str | Path | None = None,
    budget_usd: float | None = None,
) -> SpecJudge:
    """The judge named on the command line: a registered scripted judge's name, or a litellm model string.

    A scripted judge with settings is named with them (``judge_position_biased(bonus=2)``), so that judges that
    differ only in their settings stay apart in the audit.

    Raises :class:`~deepeval_games.core.errors.UnknownBotError` for a name that is neither (a model string has a
    provider prefix, ``openai/gpt-4o``), and :class:`~deepeval_games.core.errors.UnpricedModelError` for a model
    judge with a budget and no price (neither in litellm's table nor given by ``params``).
    """
    params = dict(params or {})
    try:
        lookup_bot(judge)
    except UnknownBotError as exc:
        if "/" not in judge:
            raise UnknownBotError(
                f"{exc} A model judge is a litellm model string with its provider, e.g. openai/gpt-4o."
            ) from exc
        spec = PlayerSpec(name=judge, model=judge, params=params)
        if budget_usd is not None:  # before any call: a budget cannot count a judge with no price
            check_prices([spec], f"a budget of ${budget_usd:,.2f} (--budget-usd)")
        return SpecJudge(spec, cache=cache, budget_usd=budget_usd)
    shown = ",".join(f"{key}={json.dumps(value)}" for key, value in sorted(params.items()))
    return SpecJudge(PlayerSpec(name=f"{judge}({shown})" if shown else judge, bot=judge, params=params))


# -- rebuilding a transcript's verdict node --------------------------------------------------------------


def _apply_turn(state: pyspiel.State, turn: TurnRecord) -> pyspiel.State:
    """Apply one recorded move; a free-text move is re-interned from its text and checked against its id."""
    spoken = Outcome(turn.outcome) in (Outcome.OK, Outcome.REASKED)
    if turn.seat >= 0 and spoken and task.is_free_text_turn(state, turn.seat):
        probe = state.clone()
        if task.intern_utterance(probe, turn.seat, turn.text) == turn.action:
            probe.apply_action(turn.action)
            return probe
    # a penalty (the empty utterance) or a text the pool already holds: its id is applied as recorded
    try:
        state.apply_action(turn.action)
    except Exception as exc:  # pyspiel raises its own error types
        raise RejudgeError(
            f"turn {turn.index} (seat {turn.seat}, action {turn.action}) does not replay: {exc}"
        ) from exc
    return state


def replay_to_verdict(record: MatchRecord, game: pyspiel.Game) -> tuple[pyspiel.State, int]:
    """The match's state at its verdict node, rebuilt from the record, and the verdict's round.

    Raises :class:`RejudgeError` when the record is not a judged match or does not replay to its verdict.
    """
    if not task.is_judged(game):
        raise RejudgeError(f"{record.match_id}: {game.get_type().short_name} has no judge")
    state = game.new_initial_state()
    turns = [t for t in record.turns if t.seat != JUDGE_SEAT]
    verdict_round = next((t.round for t in record.turns if t.seat == JUDGE_SEAT), None)
    index = 0
    while not task.is_judge_turn(state):
        if state.is_terminal() or index >= len(turns):
            raise RejudgeError(f"{record.match_id}: the transcript does not reach a verdict node")
        if state.is_simultaneous_node():
            group = [t for t in turns[index:] if t.round == turns[index].round and t.seat >= 0]
            joint = [pyspiel.INVALID_ACTION] * game.num_players()
            for turn in group:
                joint[turn.seat] = turn.action
            try:
                state.apply_actions(joint)
            except Exception as exc:
                raise RejudgeError(f"{record.match_id}: round {turns[index].round} does not replay: {exc}") from exc
            index += len(group)
            continue
        turn = turns[index]
        if turn.seat == CHANCE_SEAT and not state.is_chance_node():
            raise RejudgeError(f"{record.match_id}: a chance outcome is recorded where the game has none")
        state = _apply_turn(state, turn)
        index += 1
    return state, verdict_round if verdict_round is not None else (turns[-1].round + 1 if turns else 1)


def _brief(state: pyspiel.State, shown: Presentation, model: str | None) -> str:
    """The judge's brief under a presentation (as played: the task's own brief, the original judge's)."""
    if not shown.is_swapped:
        return task.judge_text(state)
    presented = task.judge_text_presented(state, shown.order, shown.labels)
    if presented is not None:
        return presented
    if model is not None:
        raise SpecError(
            f"{state.get_game().get_type().short_name} cannot show its roles to a judge in another order "
            "(no judge_text_presented hook): --swap works only with scripted judges for it"
        )
    return task.judge_text(state)


def _check_brief(record: MatchRecord, state: pyspiel.State) -> None:
    """Warn when the rebuilt brief differs from the one the original judge was given."""
    original = next((m.get("text") for m in record.messages if m.get("kind") == "brief"), None)
    if original is not None and original != task.judge_text(state):
        log.warning("%s: the task's judge brief changed since the match was played", record.match_id)


def _judgement_id(match_id: str, judge: Mapping[str, Any], shown: Presentation, repeat: int) -> str:
    key = {
        "match_id": match_id,
        "judge": dict(judge),
        "order": list(shown.order),
        "labels": list(shown.labels),
        "repeat": repeat,
    }
    return hashlib.sha256(json.dumps(key, sort_keys=True, default=str).encode()).hexdigest()[:20]


# -- the command ---------------------------------------------------------------------------------------


@dataclass
class RejudgeResult:
    """What a re-judging did."""

    run_dir: Path
    judge: str
    planned: int = 0
    """Judgements asked for (matches x presentations x repeats)."""
    judged: int = 0
    """Judgements made and stored by this call."""
    skipped: int = 0
    """Judgements already in the store (resumed)."""
    not_judged: int = 0
    """Matches of games without a judge (nothing to re-judge)."""
    failed: list[tuple[str, str]] = field(default_factory=list)
    """(match id, reason) of judgements that could not be made, or transcripts that could not be rebuilt."""


@dataclass(frozen=True)
class _Job:
    record: MatchRecord
    game: pyspiel.Game
    state: pyspiel.State
    round: int
    shown: Presentation
    repeat: int
    judgement_id: str


def _plan(
    records: Sequence[MatchRecord], source: JudgeSource, shown_for: Any, repeat: int, done: set[str]
) -> tuple[list[_Job], RejudgeResult]:
    result = RejudgeResult(run_dir=Path("."), judge=source.name)
    games: dict[str, pyspiel.Game] = {}
    jobs: list[_Job] = []
    identity = source.identity()
    for record in records:
        if record.status != "complete":
            continue
        if record.game not in games:
            try:  # a run directory may come from anyone: no file named by a record's game is opened
                games[record.game] = load_recorded_game(record.game)
            except UnknownGameError as exc:
                log.error("%s: %s", record.match_id, exc)
                result.failed.append((record.match_id, str(exc)))
                continue
        game = games[record.game]
        if not task.is_judged(game):
            result.not_judged += 1
            continue
        try:
            state, verdict_round = replay_to_verdict(record, game)
        except RejudgeError as exc:
            log.error("%s", exc)
            result.failed.append((record.match_id, str(exc)))
            continue
        _check_brief(record, state)
        for shown in shown_for(game.num_players()):
            for k in range(repeat):
                result.planned += 1
                jid = _judgement_id(record.match_id, identity, shown, k)
                if jid in done:
                    result.skipped += 1
                    continue
                jobs.append(_Job(record, game, state, verdict_round, shown, k, jid))
    return jobs, result


def _check(jobs: Sequence[_Job], source: JudgeSource) -> None:
    """Build the judge once per game and render each presentation once, so bad settings fail before any call."""
    seen: set[tuple[str, tuple[int, ...]]] = set()
    for job in jobs:
        key = (str(job.game), job.shown.order)
        if key in seen:
            continue
        seen.add(key)
        source.build(job.game, np.random.default_rng(0), judgement_id="check")
        _brief(job.state, job.shown, source.model)
    models = {p.get("model") for job in jobs for p in job.record.players if isinstance(p, Mapping)}
    if source.model is not None and source.model in models:
        log.warning(
            "the judge %s also played in these matches: expect self-preference (the audit measures it)", source.model
        )


async def _judge_one(job: _Job, source: JudgeSource) -> JudgementRecord:
    from game_defs.verdicts import decode_scores

    state = job.state.clone()
    brief = _brief(state, job.shown, source.model)
    fields = {**task.judge_fields(state), **job.shown.fields()}
    pool = MessagePool()
    pool.add(round=job.round, sender=REFEREE, recipients=(JUDGE_SEAT,), kind="brief", text=brief, fields=fields)
    observation = judge_observation(job.game, state, job.round, brief, fields, pool.visible_to(JUDGE_SEAT))
    rng = np.random.default_rng(int(job.judgement_id[:16], 16))
    bot = source.build(job.game, rng, judgement_id=job.judgement_id)
    started = time.perf_counter()
    decision = await bot.act(observation)
    latency = time.perf_counter() - started
    if decision.action is None or decision.action not in observation.legal_actions:
        raise RejudgeError(f"the judge returned {decision.action}, which is not a verdict of {job.game}")
    scores = decode_scores(
        int(decision.action), job.game.num_players(), int(fields["score_min"]), int(fields["score_max"])
    )
    turn = TurnRecord(
        index=len(job.record.turns) - 1,
        round=job.round,
        seat=JUDGE_SEAT,
        action=int(decision.action),
        action_string=state.action_to_string(CHANCE_SEAT, int(decision.action)),
        text=decision.text,
        latency_s=latency,
        **decision.exchange(),
    )
    return JudgementRecord(
        judgement_id=job.judgement_id,
        match_id=job.record.match_id,
        game=job.record.game,
        judge=source.name,
        judge_identity=bot.identity(),
        judge_model=source.model,
        presented_order=list(job.shown.order),
        seat_labels=list(job.shown.labels),
        repeat=job.repeat,
        scores=list(scores),
        roles=list(job.record.roles),
        verdict_text=decision.text,
        turn=turn,
        created_at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
    )


async def rejudge_async(
    run_dir: str | Path,
    source: JudgeSource,
    *,
    swap: bool = False,
    repeat: int = 1,
    max_concurrency: int = 8,
    order_seed: int | None = None,
) -> RejudgeResult:
    """Re-judge every judged match of ``run_dir`` with ``source``; see :func:`rejudge`."""
    if repeat < 1:
        raise SpecError(f"--repeat must be at least 1, got {repeat}")
    require_results(run_dir)
    with Store(run_dir) as store:
        store.admission = stored_admission(run_dir)  # a record it refuses is skipped (one warning line), not judged
        records = list(store.records())
        jobs, result = _plan(records, source, lambda n: presentations(n, swap=swap), repeat, store.judgement_ids())
        result.run_dir = Path(run_dir)
        if result.not_judged == len(records) or not records:
            raise RejudgeError(f"{run_dir} holds no judged matches: nothing to re-judge")
        for match_id, reason in result.failed:
            store.log_attempt(match_id, "rejudge", reason)
        if order_seed is not None:  # a person judges blind: the transcripts in an order they cannot predict
            np.random.default_rng(order_seed).shuffle(jobs)
        if jobs:
            _check(jobs, source)
        limit = asyncio.Semaphore(max(1, max_concurrency))
        fatal: list[BaseException] = []

        async def one(job: _Job) -> None:
            async with limit:
                if fatal:
                    return
                try:
                    judgement = await _judge_one(job, source)
                except (FatalRunError, SpecError) as exc:
                    fatal.append(exc)
                    return
                except Exception as exc:  # a judge without a usable verdict, infrastructure, a bug: logged, go on
                    reason = "".join(traceback.format_exception_only(type(exc), exc)).strip()
                    log.error("re-judging %s failed: %s", job.record.match_id, reason)
                    store.log_attempt(job.record.match_id, "rejudge", reason)
                    result.failed.append((job.record.match_id, reason))
                    return
                if store.commit_judgement(judgement):
                    result.judged += 1

        try:
            await asyncio.gather(*(one(job) for job in jobs))
        finally:
            source.close()
        if fatal:
            raise fatal[0]
    return result


def rejudge(
    run_dir: str | Path,
    source: JudgeSource,
    *,
    swap: bool = False,
    repeat: int = 1,
    max_concurrency: int = 8,
    order_seed: int | None = None,
) -> RejudgeResult:
    """Re-judge every judged match of the run directory ``run_dir`` with ``source`` (see the module docs).

    Each match is judged ``repeat`` times as played, and with ``swap`` as many times swapped; judgements
    already stored are kept and not asked again. The match records are never changed. With ``order_seed`` the
    judgements are asked in an order shuffled by it (``rejudge --human``: with ``max_concurrency`` 1, a person
    sees the transcripts one at a time, in an order that does not follow the run's).
    """
    from llm_bots import inline_setup  # stdlib only: its loop sets up OpenAI-compatible calls on its own thread

    return inline_setup.run(
        rejudge_async(run_dir, source, swap=swap, repeat=repeat, max_concurrency=max_concurrency, order_seed=order_seed)
    )
