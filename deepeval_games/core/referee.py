"""The referee: Algorithm 1 of the paper (synchronous interaction) over any OpenSpiel game.

:func:`play_match` runs one match:

1. broadcast the rules to every seat and give each seat its anonymous id ("Player 1".."Player N");
2. each round, collect the moves of the seats to act. At a simultaneous node every seat is asked at once from the
   same state, so nobody sees a same-round move before choosing; the replies go into the message pool together;
3. deliver to each seat what the rules let it see (the game's observation for that seat, when it changed), before
   the seat moves and once more when the game is over;
4. at chance nodes sample the outcome from the match seed; at a judge node ask the judge;
5. stop at a terminal state and evaluate: the returns, plus the game's own match metrics.

Every node where seats move goes through one turn pipeline, written once: **deliver** each seat its view,
**ask** each seat's bot, **resolve** its answer to a legal move (or the task's penalty), **record** the move in the
pool and the match record, and **apply** the round's moves. What differs between kinds of players is only how a seat
is asked (:class:`_SeatKind`): a classical player that reads no view picks from the state, a scripted baseline that
reads its observation fields alone is handed those, an LLM is awaited with its full :class:`Observation`. Transcripts
differ only in how a move is recorded: in full, or as a row (:mod:`deepeval_games.core.transcript` derives the rest).

No model or bot name ever reaches a seat: observations come from the game, and the referee's own messages name seats
only by their anonymous ids. The game's hooks are read through the task contract (:func:`binding.state_hooks`).
"""

from __future__ import annotations

import asyncio
import functools
import time
from collections.abc import Awaitable, Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Literal, TypeVar, cast

import msgspec
import numpy as np
import pyspiel

from deepeval_games.core import task
from deepeval_games.core.binding import game_memo, state_hooks
from deepeval_games.core.bot import (
    ActionNames,
    Decision,
    DeepEvalBot,
    FieldsBot,
    Observation,
    Outcome,
    StateBot,
    SyncBot,
    answers_at_once,
    answers_on_its_own,
    make_observation,
    reads_fields_only,
)
from deepeval_games.core.errors import SpecError
from deepeval_games.core.judgements import judge_observation
from deepeval_games.core.message_pool import REFEREE, MessagePool, seat_label
from deepeval_games.core.records import CHANCE_SEAT, JUDGE_SEAT, MatchRecord, MoveRow
from deepeval_games.core.registry.games import names_files

__all__ = ["Scorer", "TranscriptNotDerivable", "blind_seats", "judge_observation", "play_match"]

_T = TypeVar("_T")

Scorer = Callable[[pyspiel.State, MatchRecord], Mapping[str, Any]]
"""Computes ground-truth metrics from a finished match (e.g. MBPP pass rate) for ``record.metrics``."""


class TranscriptNotDerivable(Exception):
    """Under ``transcript="moves"``, a seat answered other than a plain legal move: play the match again in full."""


# -- what the referee reads of a game once ---------------------------------------------------------------------


@dataclass(frozen=True)
class _GameFacts:
    """What the referee reads of a game once, not per match (OpenSpiel's games are immutable)."""

    name: str  # str(game): the game string of the record
    short_name: str
    params: Mapping[str, Any]  # shared by the observations of every match: read-only by contract
    seat_rules: tuple[dict[str, Any], ...]  # per seat, its rules message as the pool records it (copied per match)
    labels: tuple[str, ...]  # per seat, its anonymous id (a record's seats when no names are given)
    roles: tuple[str, ...]
    n: int
    others: tuple[tuple[int, ...], ...]  # per seat, every other seat
    max_rounds: int  # the rounds a match may take before the referee stops it as endless
    replays: bool  # its moves replay its transcript (task.replays_from_moves): a match may be stored as its moves


def _facts(game: pyspiel.Game) -> _GameFacts:
    """The facts of ``game``, made on its first match and kept in its memo (:func:`binding.game_memo`)."""
    memo = game_memo(game)
    facts: _GameFacts | None = memo.get("referee")
    if facts is not None:
        return facts
    rules, n, name = task.rules_text(game), game.num_players(), str(game)
    facts = _GameFacts(
        name=name,
        short_name=game.get_type().short_name,
        params=dict(game.get_parameters()),
        seat_rules=tuple(_rules_message(rules, seat) for seat in range(n)),
        labels=tuple(seat_label(seat) for seat in range(n)),
        roles=tuple(task.seat_roles(game)),
        n=n,
        others=tuple(tuple(s for s in range(n) if s != seat) for seat in range(n)),
        max_rounds=max(game.max_game_length(), 1) * 4 + 16,
        replays=task.replays_from_moves(game) and not names_files(name),  # replayed in a game that opens no file
    )
    memo["referee"] = facts
    return facts


def _rules_message(rules: str, seat: int) -> dict[str, Any]:
    """``seat``'s rules message as :meth:`MessagePool.tell` records it (index and round 0)."""
    pool = MessagePool()
    pool.tell(0, seat, "rules", f"{rules}\nYou are {seat_label(seat)}.", {"seat_label": seat_label(seat)})
    return pool.records()[0]


# -- how a seat is asked ---------------------------------------------------------------------------------------

_Ask = Callable[["_Match", int, tuple[int, ...]], Any]  # an answer, or an awaitable of one where the kind awaits
_Answer = tuple["int | Decision", float]
"""A seat's answer and the seconds it took: a :class:`Decision`, or a bare ``int`` (a pick or a scripted move with
nothing else to say), made a decision only where one is recorded (a move not legal, a transcript in full)."""


def _ask_pick(match: _Match, seat: int, legal: tuple[int, ...]) -> int | Decision:
    """A classical player that reads no view: its move from the state and the seat's legal moves."""
    bot: StateBot = match.bots[seat]
    if not legal or bot.player_id != seat:  # nothing to pick, or seated where it was not made for: it says why
        return _ask_decide(match, seat, legal)
    return int(bot.pick(match.state.clone() if bot.copies_state else match.state, list(legal)))


def _ask_fields(match: _Match, seat: int, legal: tuple[int, ...]) -> int | Decision:
    """A scripted baseline that reads its observation fields alone: handed the fields its view was delivered with.
    An answer that is not a legal move is named as the bot's own ``respond`` names it."""
    bot: FieldsBot = match.bots[seat]
    action = bot.move_from_fields(match.fields(seat))
    if action.__class__ is int and action in legal:
        return action
    return Decision.move(action, match.observation(seat, legal).action_to_string(action))


def _ask_decide(match: _Match, seat: int, legal: tuple[int, ...]) -> Decision:
    """A trusted classical search (MCTS, minimax) that reads its view: a copy of the state and its observation."""
    bot: StateBot = match.bots[seat]
    return bot.decide(match.state.clone(), match.observation(seat, legal))


def _ask_respond(match: _Match, seat: int, legal: tuple[int, ...]) -> Decision:
    """A bot that answers at once (a scripted baseline): its observation, no coroutine."""
    bot: SyncBot = match.bots[seat]
    return bot.respond(match.observation(seat, legal))


def _ask_act(match: _Match, seat: int, legal: tuple[int, ...]) -> Awaitable[Decision]:
    """A bot that is awaited (an LLM, a human): its observation."""
    return match.bots[seat].act(match.observation(seat, legal))


@dataclass(frozen=True, eq=False)  # five singletons, told apart by identity
class _SeatKind:
    """How the referee asks one kind of bot: the ask step of the pipeline, and what the seat is sent."""

    ask: _Ask
    awaits: bool
    """``ask`` returns an awaitable (the seats that await are asked together, after the others)."""
    reads_views: bool
    """The seat is sent its view before each of its moves (else only the rules and the final view)."""


_PICK = _SeatKind(_ask_pick, awaits=False, reads_views=False)
_FIELDS = _SeatKind(_ask_fields, awaits=False, reads_views=True)
_DECIDE = _SeatKind(_ask_decide, awaits=False, reads_views=True)
_RESPOND = _SeatKind(_ask_respond, awaits=False, reads_views=True)
_ACT = _SeatKind(_ask_act, awaits=True, reads_views=True)


def blind_seats(bots: Sequence[DeepEvalBot]) -> list[int]:
    """The seats whose bots are sent no views (classical players that read none): a record's ``blind``."""
    return [seat for seat, bot in enumerate(bots) if not _seat_kind(bot).reads_views]


def _seat_kind(bot: DeepEvalBot) -> _SeatKind:
    """How ``bot`` is asked, from its class (remembered per class), or from the instance where a ``respond`` or an
    ``act`` was patched onto it."""
    kind = None if answers_on_its_own(bot) else _KINDS.get(type(bot))
    if kind is None:
        if isinstance(bot, StateBot):
            kind = _DECIDE if bot.reads_views else _PICK
        elif reads_fields_only(bot):
            kind = _FIELDS
        else:
            kind = _RESPOND if answers_at_once(bot) else _ACT
        if not answers_on_its_own(bot):
            _KINDS[type(bot)] = kind
    return kind


_KINDS: dict[type, _SeatKind] = {}


# -- records -------------------------------------------------------------------------------------------------

_Move = tuple[int, int, int, str, str, float, Decision]
"""A move of a match recorded in full while it plays (a plain tuple): round, seat, action, the action's name, the text
put in the pool, latency, decision; made the record's turns once, when the match is over (:func:`_turn_values`)."""


def _turn_values(index: int, move: _Move) -> dict[str, Any]:
    """The values of one :class:`~deepeval_games.core.records.TurnRecord` (validated with the record, at its edge):
    where and what the move was, and the decision's exchange with a model as it is (a chance outcome: no text, no
    latency, no exchange)."""
    round_, seat, action, action_string, text, latency, decision = move
    values: dict[str, Any] = dict(index=index, round=round_, seat=seat, action=action, action_string=action_string)
    if seat == CHANCE_SEAT:
        return values
    values |= {"text": text, "latency_s": latency, "outcome": decision.outcome, "error": decision.error}
    if not decision.is_plain():
        values |= decision.exchange()
    return values


def _derivable(decision: Decision, action_string: str) -> bool:
    """True when a legal move's decision is plain (no model, ``ok``, no error, text "" or its name): a row holds it."""
    plain = decision.is_plain() and decision.outcome == Outcome.OK and decision.error is None
    return plain and decision.text in ("", action_string)


def _invalid(decision: Decision, reason: str) -> Decision:
    """``decision`` marked invalid, with the reason."""
    return msgspec.structs.replace(decision, outcome=Outcome.INVALID, error=reason)


_TERMINAL, _CHANCE, _SIMULTANEOUS, _SEQUENTIAL = "terminal", "chance", "simultaneous", "sequential"
_P = pyspiel.PlayerId
_TERMINAL_ID, _CHANCE_ID, _SIMULTANEOUS_ID = int(_P.TERMINAL), int(_P.CHANCE), int(_P.SIMULTANEOUS)


class _Match:
    """One match in progress: the state, the pool, the record so far, and the pipeline's steps."""

    def __init__(
        self, game: pyspiel.Game, bots: Sequence[DeepEvalBot], judge: DeepEvalBot | None, seed: int, rows: bool
    ) -> None:
        self.game, self.bots, self.judge, self.seed = game, bots, judge, seed
        self.facts = _facts(game)
        if len(bots) != self.facts.n:
            raise SpecError(f"{game} has {self.facts.n} seats, got {len(bots)} bots")
        self.state = game.new_initial_state()
        self.hooks = state_hooks(self.state, game)
        self.kinds = [_seat_kind(bot) for bot in bots]
        derivable = self.facts.replays and not self.hooks.may_judge and not any(k.awaits for k in self.kinds)
        self.rows: list[MoveRow] | None = [] if rows and derivable else None
        """The match's moves as rows (``transcript="moves"``: no seat is awaited and no judge decides, so the moves
        alone replay the match), or None: recorded in full (turns and messages)."""
        # a seat that reads no observation never reads its inbox: the pool keeps inboxes only where one is read
        observed = judge is not None or any(kind in (_DECIDE, _RESPOND, _ACT) for kind in self.kinds)
        self.pool = MessagePool(inboxes=observed)
        self.tells = self.rows is None or observed
        """The pool is built as the match goes: recorded in full, or a seat reads its inbox (else replays build it)."""
        self.turns: list[_Move] = []
        self.round = self.step = 0
        """Moves applied to the state so far: where the state is (an observation names moves only while it holds)."""
        self._delivered: dict[int, str] = {}
        self._views: dict[int, tuple[int, str, Mapping[str, Any] | None]] = {}
        """Per seat: (step, text, fields or None) of the view computed last, reused while the state has not moved."""

    @functools.cached_property
    def rng(self) -> np.random.Generator:
        """The chance nodes' generator, from the match seed (made when first needed)."""
        return np.random.default_rng(self.seed)

    @functools.cached_property
    def penalty_rng(self) -> np.random.Generator:
        """The generator of random penalty moves: a stream of its own, so penalties never shift chance draws."""
        return np.random.default_rng([self.seed, 1])

    # -- the match -----------------------------------------------------------------------------------------

    async def run(self, max_rounds: int) -> None:
        """Rules, then node after node until the game is over, then every seat's final view."""
        if self.tells:
            self.pool.tell_copies(self.facts.seat_rules)
        while True:
            kind, seats = self.node()
            if kind is _TERMINAL:
                break
            if self.round >= max_rounds:
                raise RuntimeError(f"{self.game} did not end within {max_rounds} rounds")
            if kind is not _CHANCE:  # the turn pipeline; nothing is awaited unless a seat's bot awaits
                if self.tells:
                    self.deliver_views(seats)
                self.round += 1
                answers = self.ask_at_once(seats)
                if len(answers) < len(seats):
                    answers |= await self.ask_awaited(seats, answers)
                self.settle_round(kind, seats, answers)
            elif self.hooks.may_judge and self.hooks.judge_turn():
                await self.judge_round()
            else:
                self.chance()
        for seat in range(self.facts.n) if self.tells else ():
            self.deliver(seat)

    def node(self) -> tuple[str, dict[int, tuple[int, ...]]]:
        """The kind of node the state is at, and the seats to move there with their legal moves."""
        state = self.state
        player = _TERMINAL_ID if state.is_terminal() else state.current_player()
        if player in (_TERMINAL_ID, _CHANCE_ID):
            return (_TERMINAL if player == _TERMINAL_ID else _CHANCE), {}
        legal_of = self.hooks.legal_actions
        if player == _SIMULTANEOUS_ID:  # the seats with a move
            return _SIMULTANEOUS, {seat: legal for seat in range(self.facts.n) if (legal := legal_of(seat))}
        return _SEQUENTIAL, {player: legal_of(player)}

    def settle_round(self, kind: str, seats: dict[int, tuple[int, ...]], answers: dict[int, _Answer]) -> None:
        """Resolve and record every seat's answer in seat order (into the pool together), then apply the moves."""
        if kind is _SIMULTANEOUS:
            joint = [pyspiel.INVALID_ACTION] * self.facts.n
            for seat, legal in seats.items():
                joint[seat] = self.settle(seat, legal, *answers[seat])
            self.state.apply_actions(joint)
        else:
            ((seat, legal),) = seats.items()
            self.state.apply_action(self.settle(seat, legal, *answers[seat]))
        self.step += 1

    # -- deliver -------------------------------------------------------------------------------------------

    def deliver_views(self, seats: dict[int, tuple[int, ...]]) -> None:
        """Send each seat about to move that reads views its view (before the round opens)."""
        for seat in (seat for seat in seats if self.kinds[seat].reads_views):
            self.deliver(seat)

    def view(self, seat: int) -> tuple[int, str, Mapping[str, Any] | None]:
        """``seat``'s view of the state as it is: (step, text, fields where computed already)."""
        view = self._views.get(seat)
        if view is None or view[0] != self.step:
            view = self._views[seat] = (self.step, self.hooks.observation_text(seat), None)
        return view

    def fields(self, seat: int) -> Mapping[str, Any]:
        """``seat``'s observation fields in the state as it is (computed once a state; read only). Where the
        pool is not built (``transcript="moves"``, no seat reads its inbox) no view is rendered: the fields alone."""
        of = self.hooks.observation_fields
        if not self.tells:
            return of(seat)
        at, text, fields = self.view(seat)
        if fields is None:
            fields = dict(of(seat))
            self._views[seat] = (at, text, fields)
        return fields

    def deliver(self, seat: int) -> None:
        """Send ``seat`` its view if it changed since it was last sent one (the pool records what it was given)."""
        text = self.view(seat)[1]
        if text and self._delivered.get(seat) != text:
            self._delivered[seat] = text
            self.pool.tell(self.round, seat, "observation", text, self.fields(seat))

    def observation(self, seat: int, legal: tuple[int, ...]) -> Observation:
        """What ``seat`` is asked with: its view as delivered, its inbox, its legal moves, how to name them."""
        hooks, facts = self.hooks, self.facts
        return make_observation(
            seat=seat,
            num_seats=facts.n,
            game=facts.short_name,
            params=facts.params,
            round=self.round,
            text=self.view(seat)[1],
            fields=self.fields(seat),
            legal_actions=legal,
            inbox=self.pool.inbox_later(seat),  # read only if the bot reads it
            penalty_action=hooks.penalty(seat),
            free_text=hooks.free_text(seat),
            action_to_string=ActionNames(self.state, seat, self, hooks.action_name),
            combined=hooks.may_combine and hooks.combined(seat),
        )

    # -- ask -----------------------------------------------------------------------------------------------

    def ask_at_once(self, seats: dict[int, tuple[int, ...]]) -> dict[int, _Answer]:
        """The seats answering at once, asked first from the same state (no model call wasted), each with its time."""
        clock = time.perf_counter
        answers: dict[int, _Answer] = {}
        start = clock()
        for seat, legal in seats.items():
            kind = self.kinds[seat]
            if not kind.awaits:
                answers[seat] = (kind.ask(self, seat, legal), (now := clock()) - start)
                start = now  # the next seat's answer starts here
        return answers

    async def ask_awaited(self, seats: dict[int, tuple[int, ...]], answered: dict[int, _Answer]) -> dict[int, _Answer]:
        """The other seats (LLMs, people), asked together from the same state."""
        waiting = [seat for seat in seats if seat not in answered]
        timed: list[Coroutine[Any, Any, _Answer]] = [
            self.timed(self.kinds[seat].ask(self, seat, seats[seat])) for seat in waiting
        ]
        return dict(zip(waiting, await _gather_or_cancel(timed), strict=True))

    @staticmethod
    async def timed(answer: Awaitable[Decision]) -> tuple[Decision, float]:
        start = time.perf_counter()
        return await answer, time.perf_counter() - start

    # -- resolve and record --------------------------------------------------------------------------------

    def settle(self, seat: int, legal: tuple[int, ...], answer: int | Decision, latency: float) -> int:
        """Resolve ``seat``'s answer to the move applied (a legal move as it is), and record it; that move."""
        decision: Decision | None = None
        if answer.__class__ is int and answer in legal:  # a plain legal move: nothing to resolve
            action = answer
        else:
            decision = answer if isinstance(answer, Decision) else Decision.move(answer)
            chosen = decision.action
            if self.rows is not None and not (chosen.__class__ is int and chosen in legal):
                raise TranscriptNotDerivable(f"seat {seat} answered {chosen!r}, not one of its legal moves")
            action, decision = self.resolve(seat, legal, decision)
        self.record(seat, action, decision, latency)
        return action

    def resolve(self, seat: int, legal: tuple[int, ...], decision: Decision) -> tuple[int, Decision]:
        """The action to apply for a decision; a missing or illegal one becomes the penalty, recorded."""
        action, hooks = decision.action, self.hooks
        if action is not None and action in legal:
            return int(action), decision
        free_text = hooks.free_text(seat)
        answered = decision.outcome in (Outcome.OK, Outcome.REASKED)
        if action is None:
            interned = hooks.intern(seat, decision.text) if free_text and answered else None
            if interned is not None:
                return interned, decision
            if answered:
                decision = _invalid(decision, "free-text answer where a move was expected")
            return self.penalty(seat, legal, free_text, decision)
        if free_text:
            return int(action), decision
        if decision.outcome is not Outcome.OK and action == hooks.penalty(seat):
            return int(action), decision
        return self.penalty(seat, legal, free_text, _invalid(decision, f"illegal action {action}"))

    def penalty(self, seat: int, legal: tuple[int, ...], free_text: bool, decision: Decision) -> tuple[int, Decision]:
        """The task's penalty move; without one, a seeded uniformly random legal move (the turn stays invalid)."""
        hooks = self.hooks
        action = hooks.penalty(seat)
        if action is None and free_text:  # a free-text seat without the task's penalty says nothing
            action = hooks.intern(seat, "")
        if action is not None:
            return action, decision
        action = int(self.penalty_rng.choice(legal))
        note = f"a random legal move ({hooks.action_name(seat, action)}) was played for the seat"
        return action, msgspec.structs.replace(decision, error=f"{decision.error}; {note}" if decision.error else note)

    def name(self, seat: int, action: int) -> str:
        """The name of a move in the state it is made in (a chance outcome's or a verdict's by OpenSpiel's own)."""
        return self.hooks.action_name(seat, action) if seat >= 0 else self.state.action_to_string(seat, action)

    def record(self, seat: int, action: int, decision: Decision | None, latency: float) -> None:
        """Put a move in the record (a row under ``transcript="moves"``, its name left to reading) and, a seat's or the
        judge's, in the pool (``decision`` None: a plain legal move, its text the action's name; or chance's)."""
        if self.rows is not None:
            if decision is not None and not _derivable(decision, self.name(seat, action)):
                raise TranscriptNotDerivable(f"seat {seat}'s move {action} is not a plain move: {decision.error}")
            self.rows.append((self.round, seat, action, latency))
            if not self.tells:
                return
        action_string = self.name(seat, action)
        if decision is None:
            decision = Decision.move(action)
        text = "" if seat == CHANCE_SEAT else decision.text or action_string
        if seat != CHANCE_SEAT:  # who reads it beside its seat: at a combined turn answered validly, every other seat
            hooks = self.hooks
            told = hooks.may_combine and decision.outcome in (Outcome.OK, Outcome.REASKED) and hooks.combined(seat)
            self.pool.add_move(self.round, seat, text, action, self.facts.others[seat] if told else ())
        if self.rows is None:
            self.turns.append((self.round, seat, action, action_string, text, latency, decision))

    # -- chance and the judge ------------------------------------------------------------------------------

    def chance(self) -> None:
        """A chance outcome, sampled from the match seed."""
        self.round += 1
        outcomes, probs = zip(*self.state.chance_outcomes(), strict=True)
        action = int(self.rng.choice(outcomes, p=np.asarray(probs) / np.sum(probs)))
        self.record(CHANCE_SEAT, action, None, 0.0)
        self.state.apply_action(action)
        self.step += 1

    async def judge_round(self) -> None:
        """The judge's verdict: its brief into the pool, its answer a verdict message and a recorded move."""
        self.round += 1
        if self.judge is None:
            raise SpecError(f"{self.game} needs a judge, and none is configured (add a [judge] table to the spec)")
        legal = tuple(action for action, _ in self.state.chance_outcomes())
        brief, fields = task.judge_text(self.state), task.judge_fields(self.state)
        pool, at = self.pool, self.round
        pool.add(round=at, sender=REFEREE, recipients=(JUDGE_SEAT,), kind="brief", text=brief, fields=fields)
        inbox = pool.visible_to(JUDGE_SEAT)
        observation = judge_observation(self.game, self.state.clone(), self.round, brief, fields, inbox)
        decision, latency = await self.timed(self.judge.act(observation))
        verdict = decision.action
        if verdict is None or verdict not in legal:
            raise SpecError(f"the judge returned {verdict}, which is not a verdict of {self.game}")
        pool.add(round=at, sender=REFEREE, recipients=(), kind="verdict", text=decision.text, action=verdict)
        self.record(JUDGE_SEAT, verdict, decision, latency)
        self.state.apply_action(verdict)
        self.step += 1


async def _gather_or_cancel(calls: list[Coroutine[Any, Any, _T]]) -> list[_T]:
    """Run the seats of a round at once; if one fails, cancel the others (no orphan model calls) and re-raise."""
    if len(calls) == 1:  # one seat waits (a model among scripted seats): awaited here, with no task for it
        return [await calls[0]]
    tasks = [asyncio.ensure_future(call) for call in calls]
    try:
        return list(await asyncio.gather(*tasks))
    except BaseException:
        for pending in tasks:
            pending.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise


def _returns(state: pyspiel.State) -> list[float]:
    """The returns as floats (a Python game's numpy array as ``.tolist()`` gives its floats)."""
    returns = state.returns()
    if isinstance(returns, np.ndarray) and returns.dtype.kind == "f":
        return cast(list[float], returns.tolist())
    return [float(value) for value in returns]


@functools.lru_cache(maxsize=1)  # a record's ``started_at``, shared by the matches started within one second
def _started(second: int) -> str:
    return datetime.fromtimestamp(second, timezone.utc).isoformat(timespec="seconds")


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
    transcript: Literal["full", "moves"] = "full",
) -> MatchRecord:
    """Play one match of ``game`` with ``bots[i]`` in seat i and return its record.

    ``seed`` drives chance nodes (bots carry their own generators). Infrastructure failures raised by a
    bot (:class:`~deepeval_games.core.errors.InfrastructureError`) propagate: the caller reschedules the match.

    ``transcript="moves"`` (what a run asks for by default: the spec's ``transcript = "auto"``): a match where no
    seat is awaited (classical players, scripted baselines), in a game without a judge and with no ``scorers``, is
    recorded as its moves alone (:attr:`MatchRecord.transcript` ``moves``: no messages, the turns as rows, no record
    per move while it plays), from which reading the record and :func:`deepeval_games.core.transcript.with_messages`
    rebuild the rest; any other match is recorded in full (its turns made into records once, when it is over).

    Raises:
        TranscriptNotDerivable: under ``transcript="moves"``, a seat's answer was not a plain legal move (play the
            match again with new bots and ``transcript="full"``).
    """
    started = _started(int(time.time()))
    clock = time.perf_counter()
    match = _Match(game, bots, judge, seed, rows=transcript == "moves" and not scorers)
    await match.run(max_rounds if max_rounds is not None else match.facts.max_rounds)
    values: dict[str, Any] = {
        "match_id": match_id,
        "game": match.facts.name,
        "seats": list(seat_names if seat_names is not None else match.facts.labels),
        "returns": _returns(match.state),
        "turns": [_turn_values(index, move) for index, move in enumerate(match.turns)],
        "seed": seed,
        "players": [bot.identity() for bot in bots],
        "roles": list(match.facts.roles),
        "messages": match.pool.records() if match.rows is None else [],  # the pool's own dicts: the match is over
        "metrics": dict(match.hooks.match_metrics()),
        "started_at": started,
    }
    if match.rows is not None:
        blind = [seat for seat, kind in enumerate(match.kinds) if not kind.reads_views]  # blind_seats(bots)
        values |= {"transcript": "moves", "moves": match.rows, "blind": blind}
    values["wall_time_s"] = time.perf_counter() - clock
    record = MatchRecord.model_validate(values)  # the record's edge: validated once, its turns with it
    for scorer in scorers:  # ground truth may be slow (a sandbox run): keep the event loop free
        record.metrics.update(await asyncio.to_thread(scorer, match.state, record))
        record.wall_time_s = time.perf_counter() - clock
    return record
