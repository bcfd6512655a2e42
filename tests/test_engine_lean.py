"""The turn pipeline's choices: how each kind of seat is asked (a classical player that reads no view picks from the
state, a scripted one answers at once without a coroutine), per-seat inboxes, fast constructors that build the very
same objects, and a bound on the Python calls a move costs (deterministic, unlike a timing). That records stay what
they were is ``tests/test_engine_records.py``."""

from __future__ import annotations

import asyncio
import copy
import pickle
import sys
from typing import Any

import msgspec
import numpy as np
import pyspiel
import pytest

from deepeval_games import Decision, Observation, load_game, make_bot, play_match
from deepeval_games.core.bot import (
    DeepEvalBot,
    Outcome,
    StateBot,
    SyncBot,
    answers_at_once,
    make_observation,
    observe,
)
from deepeval_games.core.message_pool import REFEREE, Message, MessagePool
from deepeval_games.core.records import TurnRecord
from llm_bots.players.classical import MCTSPlayer, RandomBot


def test_decision_move_is_the_same_decision() -> None:
    fast, slow = Decision.move(3, "invest 3"), Decision(action=3, text="invest 3")
    assert fast == slow and repr(fast) == repr(slow) and hash(fast) == hash(slow)
    assert msgspec.structs.asdict(fast) == msgspec.structs.asdict(slow)
    assert msgspec.structs.replace(fast, error="late") == msgspec.structs.replace(slow, error="late")
    assert pickle.loads(pickle.dumps(fast)) == slow and copy.copy(fast) == slow
    assert fast.exchange() == slow.exchange()
    assert fast.is_plain() and slow.is_plain() and not msgspec.structs.replace(slow, retries=1).is_plain()
    for field in msgspec.structs.fields(Decision)[3:]:  # a field of the exchange away from its default: not plain
        other = {(): ("x",), 0: 1, None: "x"}[field.default]  # 0.0 == 0: cost_usd gets 1
        plain = field.name == "error"  # an error alone is the referee's note, not an exchange with a model
        assert msgspec.structs.replace(slow, **{field.name: other}).is_plain() is plain, field.name
    assert Decision(3, "invest 3", Outcome.OK, ()) == slow  # positional, as a bot may write it
    with pytest.raises(AttributeError):
        fast.action = 4  # type: ignore[misc]


def test_make_observation_is_the_same_observation() -> None:
    state = pyspiel.load_game("tic_tac_toe").new_initial_state()
    slow = observe(state, 0)
    fast = make_observation(**{f.name: getattr(slow, f.name) for f in msgspec.structs.fields(Observation)})
    assert fast == slow and repr(fast) == repr(slow)
    assert "action_to_string" not in repr(fast) and fast == msgspec.structs.replace(slow, action_to_string=repr)
    assert fast != msgspec.structs.replace(slow, round=3) and fast != object()
    positional = Observation(*(getattr(slow, f.name) for f in msgspec.structs.fields(Observation)))
    assert positional == slow and positional.action_to_string is slow.action_to_string
    with pytest.raises(AttributeError):
        fast.round = 3  # type: ignore[misc]
    with pytest.raises(TypeError):
        hash(fast)  # its params and fields are mappings


@pytest.mark.parametrize("inboxes", [True, False])
def test_pool_inboxes_are_the_messages_each_seat_may_read(inboxes: bool) -> None:
    """Each seat's view is the messages it may read, whether the pool keeps inboxes as messages come or (a pool of a
    match of lean seats, ``inboxes=False``) scans for them when asked; the records are the same either way."""
    rng = np.random.default_rng(0)
    pool = MessagePool(inboxes=inboxes)
    for i in range(300):
        choice = int(rng.integers(4))
        if choice == 0:
            pool.add_move(i, int(rng.integers(3)), f"m{i}", i)
        elif choice == 1:
            pool.tell(i, int(rng.integers(3)), "observation", f"o{i}", {"i": i})
        else:
            recipients = tuple(int(s) for s in rng.integers(-2, 3, size=int(rng.integers(0, 3))))
            pool.add(round=i, sender=int(rng.integers(-1, 3)), recipients=recipients, kind="x", text=f"t{i}")
        if i % 7 == 0:
            for seat in (-2, -1, 0, 1, 2, 3):
                assert pool.visible_to(seat) == tuple(m for m in pool if seat in m.recipients or m.sender == seat)
    told = next(m for m in pool if m.kind == "observation")
    assert told.sender == REFEREE and told == Message(**msgspec.structs.asdict(told))
    assert [m.index for m in pool] == list(range(len(pool)))
    assert pool.inbox_later(1).read() == pool.visible_to(1)


class NeverAwaited(SyncBot):
    """Answers only through respond: the referee must not await it."""

    def respond(self, observation: Observation) -> Decision:
        return Decision.move(observation.legal_actions[0], "first")

    async def act(self, observation: Observation) -> Decision:  # an override: awaited, as any bot's act
        await asyncio.sleep(0)
        return self.respond(observation)


def test_bots_that_answer_at_once_are_called_without_a_coroutine(monkeypatch: pytest.MonkeyPatch) -> None:
    game = load_game("tic_tac_toe")
    bots = [RandomBot(seat, np.random.default_rng(seat), game=game) for seat in range(2)]
    assert all(answers_at_once(bot) for bot in bots)
    assert answers_at_once(MCTSPlayer(0, np.random.default_rng(0), game=game, simulations=5))
    assert not answers_at_once(NeverAwaited(0))  # it answers in its own act: awaited

    async def refuse(self: SyncBot, observation: Observation) -> Decision:
        raise AssertionError("the referee awaited a bot that answers at once")

    monkeypatch.setattr(SyncBot, "act", refuse)
    record = asyncio.run(play_match(game, bots, seed=1))  # respond is called; act never is
    assert record.turns and all(t.outcome == "ok" for t in record.turns)
    monkeypatch.undo()
    mixed = asyncio.run(play_match(game, [NeverAwaited(0), bots[1]], seed=1))
    assert mixed.turns[0].text == "first"


def test_sync_bots_step_inside_a_running_event_loop() -> None:
    """OpenSpiel's step() on a scripted bot needs no event loop of its own (it used to call asyncio.run)."""
    game = load_game("deepeval_public_goods(players=2,rounds=1)")
    bot = make_bot("pgg_full_contributor", game, 0, np.random.default_rng(0))

    async def inside() -> int:
        return bot.step(game.new_initial_state())

    assert asyncio.run(inside()) == bot.step(game.new_initial_state())


def test_a_move_costs_a_bounded_number_of_python_calls() -> None:
    """Every Python and C call made while playing a connect_four match, per turn (fixed costs included).

    Deterministic, unlike a timing: 178 a turn before the engine's first lean path, 28 with a loop written out for
    classical seats; 86 with the one turn pipeline (deliver, ask, resolve, record, apply), of which about 45 are the
    C calls of pydantic's ``model_construct`` filling a turn record's 21 fields. A regression that puts work back on
    the move path (a scan of the pool per ask, a view built for a bot that reads none, an observation made for a
    seat asked by ``pick``) crosses the bound."""
    game = load_game("connect_four")
    bots = [RandomBot(seat, np.random.default_rng(seat), game=game) for seat in range(2)]
    calls = 0

    def count(frame: object, event: str, arg: object) -> None:
        nonlocal calls
        if event in ("call", "c_call"):
            calls += 1

    async def match() -> int:
        sys.setprofile(count)
        try:
            record = await play_match(game, bots, seed=3)
        finally:
            sys.setprofile(None)
        return len(record.turns)

    turns = asyncio.run(match())
    assert turns > 20 and calls / turns < 150, (calls, turns)
    calls = 0
    bots = [RandomBot(seat, np.random.default_rng(seat), game=game) for seat in range(2)]
    turns = asyncio.run(match())  # the game's facts are known now: the per-move cost alone, nearly
    assert turns > 20 and calls / turns < 95, (calls, turns)


def test_chance_outcomes_are_numpys_choice_from_the_match_seed() -> None:
    """Every chance outcome of a match is ``rng.choice`` of the outcomes with their probabilities, drawn from one
    generator made of the match seed, in order: the same seed gives the same deals."""
    game = load_game("leduc_poker")
    for seed in range(5):
        bots: list[DeepEvalBot] = [RandomBot(seat, np.random.default_rng([seed, seat]), game=game) for seat in range(2)]
        record = asyncio.run(play_match(game, bots, seed=seed))
        rng, state = np.random.default_rng(seed), game.new_initial_state()
        chances = 0
        for turn in record.turns:
            if turn.seat == -1:
                outcomes, probs = zip(*state.chance_outcomes(), strict=True)
                assert turn.action == int(rng.choice(outcomes, p=np.asarray(probs) / np.sum(probs)))
                chances += 1
            state.apply_action(turn.action)
        assert chances >= 2 and list(state.returns()) == record.returns


# -- classical players that read no view (second pass) -----------------------------------------------------------


def _moves(record: Any) -> list[tuple[int, int]]:
    return [(t.seat, t.action) for t in record.turns]


def test_random_bot_is_openspiels_uniform_random_bot_seeded_from_its_generator() -> None:
    """``random`` moves are OpenSpiel's C++ uniform random bot's, seeded by one draw from the seat's generator:
    the same seed gives the same match, another seed another one."""
    game = load_game("connect_four")
    records: dict[int, list[Any]] = {}
    for seed in (1, 1, 2):
        bots = [RandomBot(seat, np.random.default_rng([seed, seat]), game=game) for seat in range(2)]
        records.setdefault(seed, []).append(asyncio.run(play_match(game, bots, seed=seed)))
    first, again = records[1]
    assert _moves(first) == _moves(again) and first.messages == again.messages
    assert _moves(first) != _moves(records[2][0])
    # the very moves OpenSpiel's own bot makes from the seed the RandomBot drew
    cpp = [
        pyspiel.make_uniform_random_bot(seat, int(np.random.default_rng([1, seat]).integers(0, 2**31 - 1)))
        for seat in range(2)
    ]
    state = game.new_initial_state()
    for turn in first.turns:
        assert cpp[turn.seat].step(state) == turn.action
        state.apply_action(turn.action)
    assert state.is_terminal() and list(state.returns()) == first.returns


def test_random_bot_refuses_a_state_without_a_legal_move_instead_of_crashing() -> None:
    game = load_game("tic_tac_toe")
    bot = RandomBot(1, np.random.default_rng(0), game=game)
    with pytest.raises(ValueError, match="no legal move"):
        bot.choose(game.new_initial_state())  # seat 1 does not move first: OpenSpiel's bot would crash here
    assert bot.step(game.new_initial_state().child(4)) in range(9)


class _Recorder(SyncBot):
    """The first legal move; keeps what it was shown (messages without their pool index)."""

    def __init__(self, player_id: int) -> None:
        super().__init__(player_id, np.random.default_rng(0))
        self.shown: list[Any] = []

    def respond(self, observation: Observation) -> Decision:
        inbox = [(m.round, m.sender, m.recipients, m.kind, m.text, m.action, m.fields) for m in observation.inbox]
        names = [observation.action_to_string(a) for a in observation.legal_actions]
        self.shown.append((observation.round, observation.text, dict(observation.fields), names, inbox))
        return Decision.move(observation.legal_actions[0], names[0])


class _ViewingMCTS(MCTSPlayer):
    reads_views = True  # the engine before the lean path: a view each turn, an Observation built


class _ViewingRandom(RandomBot):
    reads_views = True


@pytest.mark.parametrize(
    ("game_string", "lean", "viewing"),
    [
        ("kuhn_poker", MCTSPlayer, _ViewingMCTS),
        ("tic_tac_toe", MCTSPlayer, _ViewingMCTS),
        ("deepeval_public_goods(players=3,rounds=3)", RandomBot, _ViewingRandom),  # simultaneous moves
    ],
)
def test_a_seat_that_reads_no_view_changes_nothing_another_seat_is_shown(
    game_string: str, lean: type, viewing: type
) -> None:
    """Against a classical player sent no views, a viewing seat (an LLM's prompt is built from exactly this) is
    shown the same, move for move; the pool shows the lean seat the rules and its final view only."""
    game = load_game(game_string)
    n = game.num_players()
    params: dict[str, Any] = {"simulations": 20} if lean is MCTSPlayer else {}
    played = {}
    for cls in (lean, viewing):
        seats: list[DeepEvalBot] = [_Recorder(seat) for seat in range(n - 1)]
        seats.append(cls(n - 1, np.random.default_rng(7), game=game, **params))
        record = asyncio.run(play_match(game, seats, seed=4))
        played[cls] = (record, [bot.shown for bot in seats[:-1]])
    (lean_record, lean_shown), (view_record, view_shown) = played[lean], played[viewing]
    assert _moves(lean_record) == _moves(view_record) and lean_record.returns == view_record.returns
    assert lean_shown == view_shown and lean_shown[0]
    told = [m for m in lean_record.messages if n - 1 in m["recipients"]]
    assert [m["kind"] for m in told] == ["rules", "observation"]
    final = [m for m in view_record.messages if m["kind"] == "observation" and m["recipients"] == [n - 1]][-1]
    assert told[1]["text"] == final["text"]  # its view at the end (the viewing seat may have had it earlier)
    assert told[1]["round"] == max(t.round for t in lean_record.turns)  # delivered when the game was over
    unchanged = [m for m in view_record.messages if not (m["kind"] == "observation" and n - 1 in m["recipients"])]
    kept = [m for m in lean_record.messages if not (m["kind"] == "observation" and n - 1 in m["recipients"])]
    strip = lambda ms: [{k: v for k, v in m.items() if k != "index"} for m in ms]  # noqa: E731
    assert strip(kept) == strip(unchanged)


class _IllegalPicker(StateBot):
    reads_views = False

    def choose(self, state: pyspiel.State) -> int:
        return 10_000


def test_an_illegal_pick_of_a_lean_seat_is_the_penalty_path_recorded() -> None:
    game = load_game("tic_tac_toe")
    record = asyncio.run(play_match(game, [_IllegalPicker(0), RandomBot(1, np.random.default_rng(0))], seed=0))
    mine = [t for t in record.turns if t.seat == 0]
    assert mine and all(t.outcome == "invalid" and "illegal action 10000" in (t.error or "") for t in mine)
    assert all(t.action in range(9) for t in mine)


@pytest.mark.parametrize(
    "game_string",
    [
        "python_iterated_prisoners_dilemma(max_game_length=6)",
        "deepeval_public_goods(players=3,rounds=3)",
        "deepeval_idiom_solitaire(start=一马当先,max_turns=4)",
        "python_tic_tac_toe",
    ],
)
def test_a_python_games_own_legal_actions_are_what_openspiel_returns_for_a_seat_to_move(game_string: str) -> None:
    """The referee calls a Python game's ``_legal_actions`` directly for a seat to move; OpenSpiel's
    ``legal_actions`` reaches the same method through C++: the same moves (as ints), node after node."""
    game = load_game(game_string)
    rng = np.random.default_rng(0)
    for _ in range(5):
        state = game.new_initial_state()
        while not state.is_terminal():
            if state.is_chance_node():
                outcomes = [a for a, _ in state.chance_outcomes()]
                state.apply_action(outcomes[int(rng.integers(len(outcomes)))])
                continue
            seats = range(game.num_players()) if state.is_simultaneous_node() else [state.current_player()]
            chosen = []
            for seat in seats:
                ours = [int(a) for a in state._legal_actions(seat)]
                assert ours == state.legal_actions(seat)
                names = [state._action_to_string(seat, a) for a in ours]
                assert names == [state.action_to_string(seat, a) for a in ours]
                chosen.append(ours[int(rng.integers(len(ours)))] if ours else 0)
            if state.is_simultaneous_node():
                state.apply_actions(chosen)
            else:
                state.apply_action(chosen[0])


# -- third pass: the pool's record form, the lean match loop, the record filled in place -------------------------


def test_the_pool_keeps_each_message_in_its_record_form_and_hands_readers_copies() -> None:
    """The pool's records are what ``[m.to_dict() for m in pool]`` gives (keys in the dataclass's order); a
    :class:`Message` is made of a record when read, once, with its own ``fields``: a reader cannot change the
    record; an inbox read earlier stays what it was while messages keep arriving."""
    pool = MessagePool()
    pool.tell(0, 0, "rules", "the rules", {"seat_label": "Player 1"})
    pool.add_move(1, 0, "x(1,1)", 4)
    pool.add(round=1, sender=REFEREE, recipients=(0, 1), kind="x", text="both", fields={"k": [1]})
    earlier = pool.visible_to(0)
    pool.tell(2, 0, "observation", "a view", {"coins": 3})
    pool.add_move(2, 1, "o(0,0)", 0)
    assert pool.records() == [m.to_dict() for m in pool]
    names = list(Message.__struct_fields__)
    assert all(list(record) == names for record in pool.records())
    now = pool.visible_to(0)
    assert len(earlier) == 3 and len(now) == 4 and all(a is b for a, b in zip(earlier, now, strict=False))
    assert [m.text for m in pool.visible_to(1)] == ["both", "o(0,0)"]
    earlier[0].fields["seat_label"] = "changed"  # a reader's copy of the fields
    assert pool.records()[0]["fields"] == {"seat_label": "Player 1"}
    assert [m.index for m in pool] == list(range(5)) and len(pool) == 5


class _Viewing(RandomBot):
    """``random`` asked with its observation and a copy of the state (as MCTS with views is), not picked."""

    reads_views = True
    copies_state = True

    def choose(self, state: pyspiel.State) -> int:
        return self.pick(state, state.legal_actions())


@pytest.mark.parametrize("game_string", ["tic_tac_toe", "connect_four", "kuhn_poker"])
def test_a_seat_asked_by_pick_plays_as_when_asked_with_its_observation(
    game_string: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Classical players that read no view are asked through ``pick`` with no observation made; the same bots asked
    with their observations make the same moves, turns and returns (kuhn_poker: its chance deals too); only the
    views they were sent differ."""
    from deepeval_games.core import referee

    game = load_game(game_string)
    observed: list[int] = []
    observe = referee._Match.observation

    def counting(self: Any, seat: int, legal: tuple[int, ...]) -> Observation:
        observed.append(seat)
        return observe(self, seat, legal)

    monkeypatch.setattr(referee._Match, "observation", counting)
    played = []
    for cls in (RandomBot, _Viewing):
        bots: list[DeepEvalBot] = [cls(seat, np.random.default_rng([3, seat]), game=game) for seat in range(2)]
        played.append(asyncio.run(play_match(game, bots, seed=3)))
        if cls is RandomBot:
            assert observed == []
    picked, viewing = played
    moves = lambda r: [(t.round, t.seat, t.action, t.action_string, t.outcome) for t in r.turns]  # noqa: E731
    assert moves(picked) == moves(viewing) and picked.returns == viewing.returns and len(picked.turns) > 2
    assert observed and len(picked.messages) < len(viewing.messages)


def test_a_random_seat_plays_legal_moves_and_a_misseated_one_fails_clearly() -> None:
    """``random``'s C++ bot draws from its seat's legal moves; a random bot seated where it was not made for fails
    with a clear error (its C++ bot, asked for another seat, would crash the process)."""
    game = load_game("connect_four")
    for seed in range(20):
        bots: list[DeepEvalBot] = [RandomBot(seat, np.random.default_rng([seed, seat]), game=game) for seat in range(2)]
        record = asyncio.run(play_match(game, bots, seed=seed))
        state = game.new_initial_state()
        for turn in record.turns:
            assert turn.action in state.legal_actions() and turn.outcome == "ok"
            state.apply_action(turn.action)
        assert state.is_terminal() and list(state.returns()) == record.returns
    swapped: list[DeepEvalBot] = [RandomBot(1, np.random.default_rng(1), game=game), RandomBot(0, None, game=game)]
    with pytest.raises(ValueError, match="seat 1 has no legal move"):
        asyncio.run(play_match(game, swapped, seed=0))


def test_a_played_record_is_the_record_pydantic_builds_of_its_values() -> None:
    """``play_match`` keeps a match's moves as plain tuples and validates its record once, at the end (no
    ``model_construct``, no copies of a plain turn): the record pydantic validates from its JSON is equal, with the
    same JSON, turn by turn, recorded in full or as its moves; no list is shared between two records."""
    from deepeval_games.core.records import MatchRecord

    for game_string, bots in (
        ("tic_tac_toe", [RandomBot(seat, np.random.default_rng(seat)) for seat in range(2)]),
        ("deepeval_public_goods(players=2,rounds=2)", None),
    ):
        game = load_game(game_string)
        if bots is None:
            bots = [make_bot("pgg_full_contributor", game, seat, np.random.default_rng(seat)) for seat in range(2)]
        for transcript in ("full", "moves"):
            record = asyncio.run(play_match(game, bots, seed=2, match_id="m", transcript=transcript))
            other = asyncio.run(play_match(game, bots, seed=2, match_id="m", transcript=transcript))
            assert record.transcript == transcript and (record.moves is None) == (transcript == "full")
            rebuilt = MatchRecord.model_validate_json(record.to_json())
            assert rebuilt.to_json() == record.to_json()
            assert record.metrics is not other.metrics and record.messages is not other.messages
            for turn in record.turns:
                validated = TurnRecord.model_validate(turn.model_dump())
                assert validated == turn and validated.model_dump_json() == turn.model_dump_json()


def test_an_observations_inbox_is_read_when_first_asked_for_as_it_was_when_made() -> None:
    """The referee hands an observation its seat's inbox unread (a scripted baseline never reads it): read later,
    after more messages reached the seat, it holds the messages the seat had when the observation was made; equal,
    ``repr``, ``msgspec.structs.replace``, a copy and a pickle see the messages."""
    pool = MessagePool()
    pool.tell(0, 0, "rules", "the rules", {})
    pool.add_move(1, 0, "a", 1)
    values: dict[str, Any] = dict(
        seat=0, num_seats=2, game="g", params={}, round=1, text="t", fields={}, legal_actions=(1, 2)
    )
    values.update(penalty_action=None, free_text=False, action_to_string=str)
    inbox = pool.inbox_later(0)
    later = make_observation(**values, inbox=inbox)
    assert msgspec.structs.asdict(later)["inbox"] is inbox and inbox.messages is None  # not read yet
    pool.tell(1, 0, "observation", "more", {})
    pool.add_move(2, 0, "b", 2)
    now = make_observation(**values, inbox=pool.visible_to(0)[:2])
    assert [m.text for m in later.inbox] == ["the rules", "a"] and later.inbox is later.inbox is inbox.messages
    assert later == now and repr(later) == repr(now)
    unread = make_observation(**values, inbox=pool.inbox_later(0))
    assert msgspec.structs.replace(unread, round=2).inbox == pool.visible_to(0) == copy.copy(unread).inbox
    values["action_to_string"] = repr  # picklable
    copied = pickle.loads(pickle.dumps(make_observation(**values, inbox=pool.inbox_later(0))))
    assert [m.text for m in copied.inbox] == ["the rules", "a", "more", "b"]
    with pytest.raises(AttributeError):
        later.inbox = ()  # type: ignore[misc]
