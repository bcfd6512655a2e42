"""Algorithm 1: anonymity, synchronous rounds, per-seat delivery, penalties, chance nodes."""

from __future__ import annotations

import asyncio

import numpy as np
import open_spiel.python.games  # noqa: F401  (registers the python_ games)
import pyspiel
import pytest
from open_spiel.python.algorithms import evaluate_bots

from deepeval_games import Decision, DeepEvalBot, Observation, Outcome, load_game, make_bot, play_match
from deepeval_games.core.message_pool import REFEREE

NAMES = ["free-rider", "full-contributor", "conditional", "random"]
BOTS = ["pgg_free_rider", "pgg_full_contributor", "pgg_conditional_cooperator", "pgg_random"]


class Recorder(DeepEvalBot):
    """Remembers every observation it got; invests the round number."""

    def __init__(self, player_id: int, rng: np.random.Generator | None = None) -> None:
        super().__init__(player_id, rng)
        self.seen: list[Observation] = []

    async def act(self, observation: Observation) -> Decision:
        self.seen.append(observation)
        await asyncio.sleep(0.001 * (3 - self.player_id))  # finish in reverse seat order
        return Decision(action=min(observation.fields["round"], 10), text="my move")


def _match(game_string: str, bots: list[DeepEvalBot], **kwargs):
    return asyncio.run(play_match(load_game(game_string), bots, **kwargs))


def _pgg_bots(game, seed: int = 0) -> list[DeepEvalBot]:
    return [make_bot(b, game, i, np.random.default_rng([seed, i])) for i, b in enumerate(BOTS)]


def test_no_identity_reaches_any_seat() -> None:
    game = load_game("deepeval_public_goods(players=4,mode=2)")
    record = asyncio.run(play_match(game, _pgg_bots(game), seat_names=NAMES, seed=3))
    delivered = [m for m in record.messages if m["recipients"]]
    assert delivered, "the referee delivered nothing"
    identities = [*NAMES, *BOTS, "FreeRider", "pgg_", "scripted"]
    for message in delivered:
        for word in identities:
            assert word not in message["text"], (word, message)
            assert word not in repr(message["fields"]), (word, message)
    rules = [m for m in record.messages if m["kind"] == "rules"]
    assert [m["text"].rsplit("You are ", 1)[1] for m in rules] == ["Player 1.", "Player 2.", "Player 3.", "Player 4."]


def test_simultaneous_round_hides_same_round_moves() -> None:
    bots = [Recorder(i) for i in range(4)]
    record = _match("deepeval_public_goods(players=4,rounds=3,mode=2)", bots)
    for bot in bots:
        for observation in bot.seen:
            moves_seen = [m for m in observation.inbox if m.kind == "move"]
            # a seat's inbox holds only its own earlier moves, never another seat's move of any round
            assert all(m.sender == bot.player_id and m.round < observation.round for m in moves_seen)
    # all seats of a round were asked from the same state
    for r in range(3):
        assert {b.seen[r].text.split("\n")[-1].split(":")[0] for b in bots} == {f"Round {r + 1} of 3"}
    moves = [t for t in record.turns]
    assert [t.round for t in moves] == [1] * 4 + [2] * 4 + [3] * 4
    assert [t.seat for t in moves[:4]] == [0, 1, 2, 3]  # recorded in seat order, not finishing order


def test_each_seat_gets_only_its_own_feedback() -> None:
    bots = [Recorder(i) for i in range(3)]
    record = _match("deepeval_public_goods(players=3,rounds=2,mode=1)", bots)
    for message in record.messages:
        if message["kind"] in ("observation", "rules"):
            assert message["sender"] == REFEREE and len(message["recipients"]) == 1
        if message["kind"] == "move":
            assert message["recipients"] == []


class Illegal(DeepEvalBot):
    async def act(self, observation: Observation) -> Decision:
        return Decision(action=99, text="ninety-nine")


def test_illegal_action_gets_the_task_penalty_and_is_recorded() -> None:
    game = load_game("deepeval_public_goods(players=2,rounds=1,alpha=1.5)")
    record = asyncio.run(
        play_match(game, [Illegal(0), make_bot("pgg_full_contributor", game, 1, np.random.default_rng())])
    )
    turn = record.turns[0]
    assert turn.outcome == Outcome.INVALID.value and turn.action == 11 and turn.action_string == "forfeit"
    assert "illegal action 99" in turn.error
    assert record.returns == pytest.approx([7.5, 7.5])


def test_same_seed_same_record_and_bots_work_with_openspiel() -> None:
    game = load_game("deepeval_public_goods(players=4,mode=1)")
    first = asyncio.run(play_match(game, _pgg_bots(game, 7), seed=7))
    second = asyncio.run(play_match(game, _pgg_bots(game, 7), seed=7))
    assert first.canonical() == second.canonical()
    returns = evaluate_bots.evaluate_bots(game.new_initial_state(), _pgg_bots(game), np.random)
    assert returns[0] > returns[1]  # free rider beats full contributor


class FirstLegal(DeepEvalBot):
    async def act(self, observation: Observation) -> Decision:
        return Decision(action=observation.legal_actions[0])


def test_chance_nodes_are_sampled_from_the_match_seed() -> None:
    game = pyspiel.load_game("python_iterated_prisoners_dilemma(max_game_length=30)")
    lengths = {len(asyncio.run(play_match(game, [FirstLegal(0), FirstLegal(1)], seed=s)).turns) for s in range(8)}
    assert len(lengths) > 1  # the continuation coin depends on the seed
    a = asyncio.run(play_match(game, [FirstLegal(0), FirstLegal(1)], seed=5))
    b = asyncio.run(play_match(game, [FirstLegal(0), FirstLegal(1)], seed=5))
    assert a.canonical() == b.canonical()
    assert any(t.seat == -1 for t in a.turns)


def test_wrong_number_of_bots_is_a_clear_error() -> None:
    from deepeval_games import SpecError

    with pytest.raises(SpecError, match="has 3 seats, got 2 bots"):
        _match("deepeval_public_goods(players=3)", [FirstLegal(0), FirstLegal(1)])


class SlowSeat(DeepEvalBot):
    """Stands for a model call that takes long."""

    finished = 0
    cancelled = 0

    async def act(self, observation: Observation) -> Decision:
        try:
            await asyncio.sleep(5)
        except asyncio.CancelledError:
            SlowSeat.cancelled += 1
            raise
        SlowSeat.finished += 1
        return Decision(action=0)


class FailingSeat(DeepEvalBot):
    async def act(self, observation: Observation) -> Decision:
        from deepeval_games import InfrastructureError

        await asyncio.sleep(0.01)
        raise InfrastructureError("injected 503")


def test_a_failing_seat_cancels_the_other_calls_of_its_round() -> None:
    from deepeval_games import InfrastructureError

    game = load_game("deepeval_public_goods(players=3,rounds=1)")
    SlowSeat.finished = SlowSeat.cancelled = 0

    async def scenario() -> None:
        with pytest.raises(InfrastructureError):
            await play_match(game, [SlowSeat(0), FailingSeat(1), SlowSeat(2)])
        await asyncio.sleep(0.05)

    asyncio.run(scenario())
    assert (SlowSeat.cancelled, SlowSeat.finished) == (2, 0)


def test_a_seat_gets_its_view_before_each_of_its_moves_and_at_the_end() -> None:
    game = load_game("deepeval_idiom_solitaire(start=一马当先,max_turns=6)")
    bots = [make_bot("idiom_dictionary", game, i, np.random.default_rng(i)) for i in range(2)]
    record = asyncio.run(play_match(game, bots, seed=3))
    for seat in (0, 1):
        views = [m for m in record.messages if m["kind"] == "observation" and m["recipients"] == [seat]]
        moves = [t for t in record.turns if t.seat == seat]
        # one view before every move (never an intermediate one), and the final view
        assert len(views) == len(moves) + 1
        rounds_moved = {t.round for t in moves}
        assert all(v["round"] + 1 in rounds_moved for v in views[:-1])
        assert "Game over" in views[-1]["text"] or "draw" in views[-1]["text"].lower()
