"""The referee: Algorithm 1 of the paper (synchronous interaction) over any OpenSpiel game.

:func:`play_match` runs one match:

1. broadcast the rules to every seat and give each seat its anonymous id ("Player 1".."Player N");
2. each round, collect the moves of the seats to act. At a simultaneous node every seat is asked at
   once from the same state, so nobody sees a same-round move before choosing; the replies go into the
   message pool together;
3. deliver to each seat what the rules let it see (the game's observation for that seat, when it changed),
   before the seat moves and once more when the game is over;
4. at chance nodes sample the outcome from the match seed; at a judge node ask the judge;
5. stop at a terminal state and evaluate: the returns, plus the game's own match metrics.

No model or bot name ever reaches a seat: observations come from the game, and the referee's own
messages name seats only by their anonymous ids.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Coroutine, Mapping, Sequence
from dataclasses import replace
from datetime import datetime, timezone
from typing import Any, TypeVar, cast

import numpy as np
import pyspiel

from deepeval_games import task
from deepeval_games.bot import Decision, DeepEvalBot, Observation, Outcome, StateBot, observe
from deepeval_games.errors import SpecError
from deepeval_games.message_pool import REFEREE, Message, MessagePool, seat_label
from deepeval_games.records import CHANCE_SEAT, JUDGE_SEAT, MatchRecord, TurnRecord

__all__ = ["Scorer", "judge_observation", "play_match", "seat_label"]

_T = TypeVar("_T")

Scorer = Callable[[pyspiel.State, MatchRecord], Mapping[str, Any]]
"""Computes ground-truth metrics from a finished match (e.g. MBPP pass rate) for ``record.metrics``."""


_FACTORY_FIELDS: tuple[tuple[str, Callable[[], Any]], ...] = tuple(
    (name, cast(Callable[[], Any], field.default_factory))
    for name, field in TurnRecord.model_fields.items()
    if field.default_factory is not None
)
"""The turn record's fields whose default is made by a factory (the empty lists)."""


def _turn(**values: Any) -> TurnRecord:
    """A turn record built without validation, its list fields filled here.

    pydantic's ``model_construct`` inspects each default factory's signature on every call (about 0.1 ms a
    field, most of a chance turn's cost); filling them here keeps the record identical and the turn cheap.
    """
    for name, factory in _FACTORY_FIELDS:
        if name not in values:
            values[name] = factory()
    return TurnRecord.model_construct(**values)


class _Match:
    """State of one match in progress (kept apart from :func:`play_match` for readability)."""

    def __init__(
        self,
        game: pyspiel.Game,
        bots: Sequence[DeepEvalBot],
        judge: DeepEvalBot | None,
        seed: int,
    ) -> None:
        self.game = game
        self.bots = bots
        self.judge = judge
        self.state = game.new_initial_state()
        self.rng = np.random.default_rng(seed)
        self.penalty_rng = np.random.default_rng([seed, 1])  # its own stream: penalties never shift chance draws
        self.pool = MessagePool()
        self.turns: list[TurnRecord] = []
        self.round = 0
        self.n = game.num_players()
        self._delivered: dict[int, str] = {}
        self._moves: tuple[int, dict[int, tuple[int, ...] | None]] | None = None
        self._views: dict[int, tuple[int, str, Mapping[str, Any] | None]] = {}
        """Per seat: (length of the history, observation text, fields or None) last computed, reused by
        :meth:`observation` while the state has not moved (the text is computed once per seat and state)."""

    # -- messages ------------------------------------------------------------------------------

    def broadcast_rules(self) -> None:
        rules = task.rules_text(self.game)
        for seat in range(self.n):
            self.pool.add(
                round=0,
                sender=REFEREE,
                recipients=(seat,),
                kind="rules",
                text=f"{rules}\nYou are {seat_label(seat)}.",
                fields={"seat_label": seat_label(seat)},
            )

    def seats_to_act(self) -> list[int]:
        """The seats that move next: all seats with legal moves at a simultaneous node, else the current one."""
        return list(self.legal_moves())

    def legal_moves(self) -> dict[int, tuple[int, ...] | None]:
        """The seats that move next, each with its legal actions where they were read (None: not read yet); read
        once per state (the observations are delivered, then the seats asked, from the same state)."""
        at = len(self.state.history())
        if self._moves is not None and self._moves[0] == at:
            return self._moves[1]
        moves: dict[int, tuple[int, ...] | None] = {}
        if self.state.is_terminal() or self.state.is_chance_node():
            pass
        elif self.state.is_simultaneous_node():
            legal = {seat: tuple(self.state.legal_actions(seat)) for seat in range(self.n)}
            moves = {seat: actions for seat, actions in legal.items() if actions}
        else:
            moves = {self.state.current_player(): None}
        self._moves = (at, moves)
        return moves

    def deliver_observations(self) -> None:
        """Send the seats about to move (every seat, once the game is over) their view, if it changed.

        A seat's view is delivered when it is needed, before the seat chooses: a seat that does not move this
        round gets its next view at its next turn (which then shows everything it may know), so no model is
        shown an intermediate view it could not act on. Views never include a same-round move of another seat.
        """
        seats = range(self.n) if self.state.is_terminal() else self.seats_to_act()
        at = len(self.state.history())
        for seat in seats:
            text = task.observation_text(self.state, seat)
            self._views[seat] = (at, text, None)
            if not text or self._delivered.get(seat) == text:
                continue
            self._delivered[seat] = text
            fields = task.observation_fields(self.state, seat)
            self._views[seat] = (at, text, fields)
            self.pool.add(
                round=self.round, sender=REFEREE, recipients=(seat,), kind="observation", text=text, fields=fields
            )

    def observation(self, seat: int, legal: tuple[int, ...] | None = None) -> Observation:
        at, text, fields = self._views.get(seat, (-1, "", None))
        inbox = self.pool.visible_to(seat)
        if at != len(self.state.history()):  # computed for another state: compute it here
            return observe(self.state, seat, inbox, self.round, legal_actions=legal)
        return observe(self.state, seat, inbox, self.round, text=text, fields=fields, legal_actions=legal)

    # -- moves ---------------------------------------------------------------------------------

    async def ask(self, bot: DeepEvalBot, observation: Observation) -> tuple[Decision, float]:
        start = time.perf_counter()
        if isinstance(bot, StateBot):  # trusted classical search (MCTS, minimax) works on a copy of the state
            decision = bot.decide(self.state.clone(), observation)
        else:
            decision = await bot.act(observation)
        return decision, time.perf_counter() - start

    def resolve(self, seat: int, observation: Observation, decision: Decision) -> tuple[int, Decision]:
        """The action to apply for a decision; a missing or illegal one becomes the penalty, recorded."""
        if decision.action is None:
            if observation.free_text and decision.outcome in (Outcome.OK, Outcome.REASKED):
                return task.intern_utterance(self.state, seat, decision.text), decision
            if decision.outcome in (Outcome.OK, Outcome.REASKED):
                decision = _invalid(decision, "free-text answer where a move was expected")
            return self.penalty(seat, observation, decision)
        if observation.free_text or decision.action in observation.legal_actions:
            return int(decision.action), decision
        if decision.outcome is not Outcome.OK and decision.action == observation.penalty_action:
            return int(decision.action), decision
        return self.penalty(seat, observation, _invalid(decision, f"illegal action {decision.action}"))

    def penalty(self, seat: int, observation: Observation, decision: Decision) -> tuple[int, Decision]:
        """The task's penalty move; without one, a seeded uniformly random legal move (the turn stays invalid)."""
        if observation.penalty_action is not None:
            return int(observation.penalty_action), decision
        if observation.free_text and task.can_intern(self.state):
            return task.intern_utterance(self.state, seat, ""), decision
        action = int(self.penalty_rng.choice(observation.legal_actions))
        note = f"a random legal move ({observation.action_to_string(action)}) was played for the seat"
        return action, replace(decision, error=f"{decision.error}; {note}" if decision.error else note)

    def record_move(self, seat: int, action: int, decision: Decision, latency: float) -> None:
        action_string = self.state.action_to_string(seat, action)
        text = decision.text or action_string
        self.pool.add(round=self.round, sender=seat, recipients=(), kind="move", text=text, action=action)
        self.turns.append(
            _turn(
                index=len(self.turns),
                round=self.round,
                seat=seat,
                action=action,
                action_string=action_string,
                text=text,
                latency_s=latency,
                **decision.exchange(),
            )
        )

    async def simultaneous_round(self) -> None:
        moves = self.legal_moves()
        seats = list(moves)
        observations = {seat: self.observation(seat, moves[seat]) for seat in seats}  # all from the same state
        answers = await _gather_or_cancel([self.ask(self.bots[s], observations[s]) for s in seats])
        joint = [pyspiel.INVALID_ACTION] * self.n
        resolved: list[tuple[int, int, Decision, float]] = []
        for seat, (decision, latency) in zip(seats, answers, strict=True):
            action, decision = self.resolve(seat, observations[seat], decision)
            joint[seat] = action
            resolved.append((seat, action, decision, latency))
        for seat, action, decision, latency in resolved:  # into the pool together, before anyone sees them
            self.record_move(seat, action, decision, latency)
        self.state.apply_actions(joint)

    async def sequential_round(self) -> None:
        seat = self.state.current_player()
        observation = self.observation(seat)
        decision, latency = await self.ask(self.bots[seat], observation)
        action, decision = self.resolve(seat, observation, decision)
        self.record_move(seat, action, decision, latency)
        self.state.apply_action(action)

    async def chance_or_judge(self) -> None:
        if task.is_judge_turn(self.state):
            await self.judge_round()
            return
        outcomes, probs = zip(*self.state.chance_outcomes(), strict=True)
        action = int(self.rng.choice(outcomes, p=np.asarray(probs) / np.sum(probs)))
        self.turns.append(
            _turn(
                index=len(self.turns),
                round=self.round,
                seat=CHANCE_SEAT,
                action=action,
                action_string=self.state.action_to_string(CHANCE_SEAT, action),
            )
        )
        self.state.apply_action(action)

    async def judge_round(self) -> None:
        if self.judge is None:
            raise SpecError(f"{self.game} needs a judge, and none is configured (add a [judge] table to the spec)")
        legal = tuple(action for action, _ in self.state.chance_outcomes())
        view = self.state.clone()
        brief = task.judge_text(self.state)
        fields = task.judge_fields(self.state)
        self.pool.add(
            round=self.round, sender=REFEREE, recipients=(JUDGE_SEAT,), kind="brief", text=brief, fields=fields
        )
        observation = judge_observation(self.game, view, self.round, brief, fields, self.pool.visible_to(JUDGE_SEAT))
        decision, latency = await self.ask(self.judge, observation)
        verdict = decision.action
        if verdict is None or verdict not in legal:
            raise SpecError(f"the judge returned {verdict}, which is not a verdict of {self.game}")
        self.pool.add(
            round=self.round, sender=REFEREE, recipients=(), kind="verdict", text=decision.text, action=verdict
        )
        self.record_move(JUDGE_SEAT, verdict, decision, latency)
        self.state.apply_action(verdict)

    async def run(self, max_rounds: int) -> None:
        self.broadcast_rules()
        self.deliver_observations()
        while not self.state.is_terminal():
            if self.round >= max_rounds:
                raise RuntimeError(f"{self.game} did not end within {max_rounds} rounds")
            self.round += 1
            if self.state.is_chance_node():
                await self.chance_or_judge()
            elif self.state.is_simultaneous_node():
                await self.simultaneous_round()
            else:
                await self.sequential_round()
            self.deliver_observations()


def judge_observation(
    game: pyspiel.Game,
    state: pyspiel.State,
    round: int,
    brief: str,
    fields: Mapping[str, Any],
    inbox: tuple[Message, ...],
) -> Observation:
    """What the judge is asked with at a verdict node: the brief, its fields, the verdicts as legal actions.

    ``state`` is at the verdict node (a copy the judge's action names are read from); ``inbox`` holds the
    pool messages addressed to the judge (the brief). Used by the referee and by ``deepeval-games rejudge``.
    """
    return Observation(
        seat=JUDGE_SEAT,
        num_seats=game.num_players(),
        game=game.get_type().short_name,
        params=dict(game.get_parameters()),
        round=round,
        text=brief,
        fields=fields,
        legal_actions=tuple(action for action, _ in state.chance_outcomes()),
        inbox=inbox,
        action_to_string=lambda action: state.action_to_string(CHANCE_SEAT, action),
    )


async def _gather_or_cancel(calls: list[Coroutine[Any, Any, _T]]) -> list[_T]:
    """Run the seats of a round at once; if one fails, cancel the others (no orphan model calls) and re-raise."""
    tasks = [asyncio.ensure_future(call) for call in calls]
    try:
        return list(await asyncio.gather(*tasks))
    except BaseException:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise


def _invalid(decision: Decision, reason: str) -> Decision:
    return replace(decision, outcome=Outcome.INVALID, error=reason)


async def play_match(
    game: pyspiel.Game,
    bots: Sequence[DeepEvalBot],
    *,
    seed: int = 0,
    match_id: str = "",
    seat_names: Sequence[str] | None = None,
    judge: DeepEvalBot | None = None,
    scorers: Sequence[Scorer] = (),
    max_rounds: int | None = None,
) -> MatchRecord:
    """Play one match of ``game`` with ``bots[i]`` in seat i and return its record.

    ``seed`` drives chance nodes (bots carry their own generators). Infrastructure failures raised by a
    bot (:class:`~deepeval_games.errors.InfrastructureError`) propagate: the caller reschedules the match.
    """
    if len(bots) != game.num_players():
        raise SpecError(f"{game} has {game.num_players()} seats, got {len(bots)} bots")
    names = list(seat_names) if seat_names is not None else [seat_label(i) for i in range(len(bots))]
    started = datetime.now(timezone.utc).isoformat(timespec="seconds")
    clock = time.perf_counter()
    match = _Match(game, bots, judge, seed)
    await match.run(max_rounds if max_rounds is not None else max(game.max_game_length(), 1) * 4 + 16)
    record = MatchRecord(
        match_id=match_id,
        game=str(game),
        seats=names,
        returns=[float(r) for r in match.state.returns()],
        turns=match.turns,
        seed=seed,
        players=[bot.identity() for bot in bots],
        roles=task.seat_roles(game),
        messages=[m.to_dict() for m in match.pool],
        metrics=task.match_metrics(match.state),
        started_at=started,
    )
    for scorer in scorers:  # ground truth may be slow (a sandbox run): keep the event loop free
        record.metrics.update(await asyncio.to_thread(scorer, match.state, record))
    record.wall_time_s = time.perf_counter() - clock
    return record
