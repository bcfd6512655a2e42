"""Bots that move from their observation fields alone (:class:`~deepeval_games.core.bot.FieldsBot`, the scripted
Public Goods players): the referee's ask step hands them their fields, with no observation made, and a match plays
exactly as it plays with the same bots asked through ``respond`` with a whole observation: moves, pool, turn records,
returns, the penalty path of an illegal answer included. That the seeded records of the scripted cases are still the
old engine's is ``tests/test_engine_records.py``."""

from __future__ import annotations

import asyncio
import pickle
from collections.abc import Mapping
from typing import Any

import numpy as np
import pytest

from deepeval_games import Decision, Observation, load_game, play_match
from deepeval_games.core.bot import DeepEvalBot, FieldsBot, SyncBot, reads_fields_only
from llm_bots.public_goods.scripted import (
    ConditionalCooperator,
    FreeRider,
    FullContributor,
    GrimTrigger,
    RandomInvestor,
)

PGG1 = "deepeval_public_goods(players=4,rounds=5,mode=1,alpha=1.6)"
PGG2 = "deepeval_public_goods(players=4,rounds=5,mode=2,alpha=1.6)"


def _through_respond(cls: type[FieldsBot]) -> type[FieldsBot]:
    """``cls`` asked through ``respond`` (which it overrides with the very same method): the general loop."""
    return type(cls.__name__, (cls,), {"respond": lambda self, obs: FieldsBot.respond(self, obs)})


class Illegal(FieldsBot):
    """Answers from its fields, but illegally every other turn: out of range, the referee-only forfeit, None."""

    answers = (99, 11, None, 3, -1, np.int64(4), True)

    def move_from_fields(self, fields: Mapping[str, Any]) -> int:
        self.turn = getattr(self, "turn", -1) + 1
        return self.answers[self.turn % len(self.answers)]  # type: ignore[return-value]


def _play(game_string: str, classes: list[type[FieldsBot]], seed: int, *, general: bool, **params: Any) -> Any:
    game = load_game(game_string)
    bots: list[DeepEvalBot] = []
    for seat, cls in enumerate(classes):
        made = _through_respond(cls) if general else cls
        extra = params if cls is not Illegal else {}
        bots.append(made(seat, np.random.default_rng([seed, seat]), game=game, **extra))
    assert all(reads_fields_only(bot) != general for bot in bots)
    return asyncio.run(play_match(game, bots, seed=seed, match_id=f"m{seed}"))


@pytest.mark.parametrize("game_string", [PGG1, PGG2])
@pytest.mark.parametrize("noise", [0.0, 0.3])
def test_a_match_of_fields_bots_plays_as_the_general_loop_plays_it(
    game_string: str, noise: float, monkeypatch: pytest.MonkeyPatch
) -> None:
    from deepeval_games.core import referee

    classes: list[type[FieldsBot]] = [FreeRider, ConditionalCooperator, GrimTrigger, RandomInvestor]
    played = []
    for seed in range(3):
        asked: list[int] = []
        with monkeypatch.context() as patch:  # no observation is made for a seat asked through its fields
            patch.setattr(referee._Match, "observation", _counting(asked))
            fast = _play(game_string, classes, seed, general=False, noise=noise)
        assert asked == []
        general = _play(game_string, classes, seed, general=True, noise=noise)
        assert fast.canonical() == general.canonical()
        assert len(fast.turns) == 20 and len(fast.messages) == 4 + 4 * 6 + 20
        assert fast.model_fields_set == general.model_fields_set
        assert all(a.model_fields_set == b.model_fields_set for a, b in zip(fast.turns, general.turns, strict=True))
        played.append([t.action for t in fast.turns])
    assert len({tuple(p) for p in played}) > 1  # the seeds matter (the random seat, the noise)


def test_an_illegal_answer_of_a_fields_bot_takes_the_penalty_path_as_before() -> None:
    classes: list[type[FieldsBot]] = [Illegal, FullContributor, Illegal, RandomInvestor]
    game_string = "deepeval_public_goods(players=4,rounds=7,mode=1,alpha=1.6)"  # every answer of Illegal's
    fast = _play(game_string, classes, 7, general=False)
    general = _play(game_string, classes, 7, general=True)
    assert fast.canonical() == general.canonical()
    assert all(type(turn.action) is int for turn in fast.turns)  # numpy's and bool answers recorded as ints
    outcomes = [(t.seat, t.action, t.outcome.value, t.text) for t in fast.turns if t.seat in (0, 2)]
    assert (0, 11, "invalid", "invest 99") in outcomes  # the forfeit played for an out-of-range answer
    assert any(outcome == "ok" for _, _, outcome, _ in outcomes)


class Awaited(DeepEvalBot):
    """A bot the referee awaits, as it awaits a model: its move from its round, its fields and its inbox."""

    async def act(self, observation: Observation) -> Decision:
        await asyncio.sleep(0)
        legal = observation.legal_actions
        pick = (observation.round + len(observation.inbox) + len(observation.fields)) % len(legal)
        return Decision(action=legal[pick], text=f"move {legal[pick]} ({observation.text[:12]})")


def _counting(asked: list[int]) -> Any:
    """``_Match.observation`` that notes the seat of each observation made in ``asked``."""
    from deepeval_games.core import referee

    observe = referee._Match.observation

    def observation(self: Any, seat: int, legal: tuple[int, ...] | None = None) -> Observation:
        asked.append(seat)
        return observe(self, seat, legal)

    return observation


@pytest.mark.parametrize("game_string", [PGG1, PGG2])
def test_fields_bots_among_awaited_seats_play_as_the_general_loop_plays_them(game_string: str) -> None:
    """A model's seat among scripted ones: the scripted seats are asked through their fields (no observation, no
    decision) in the same round as the awaited seat, and the match is the one the general loop plays."""
    from deepeval_games.core import referee

    game = load_game(game_string)
    cases: list[list[type[FieldsBot]]] = [
        [FreeRider, ConditionalCooperator, RandomInvestor],
        [Illegal, GrimTrigger, Illegal],  # the penalty path of an illegal answer among awaited seats
    ]
    for seed, classes in enumerate(cases):
        records, viewed = [], []
        for general in (False, True):
            bots: list[DeepEvalBot] = []
            for seat, cls in zip((0, 2, 3), classes, strict=True):
                made = _through_respond(cls) if general else cls
                extra = {"noise": 0.3} if cls is not Illegal else {}
                bots.append(made(seat, np.random.default_rng([seed, seat]), game=game, **extra))
            bots.insert(1, Awaited(1))
            assert [reads_fields_only(bot) for bot in bots] == [not general, False, not general, not general]
            asked: list[int] = []
            with pytest.MonkeyPatch.context() as patch:  # the seats the referee made an observation for
                patch.setattr(referee._Match, "observation", _counting(asked))
                records.append(asyncio.run(play_match(game, bots, seed=seed, match_id=f"m{seed}")))
            viewed.append(set(asked))
        if seed == 0:  # legal answers only: no observation made for a fields seat
            assert viewed == [{1}, {0, 1, 2, 3}]
        fast, slow = records
        assert fast.canonical() == slow.canonical()
        assert fast.model_fields_set == slow.model_fields_set
        assert all(a.model_fields_set == b.model_fields_set for a, b in zip(fast.turns, slow.turns, strict=True))
        assert {t.text[:4] for t in fast.turns if t.seat == 1} == {"move"}


def test_a_bot_patched_on_its_instance_is_asked_through_it_after_matches_of_its_class() -> None:
    """What the referee remembers of a seating of bot classes does not hold for a bot given its own ``respond``."""
    game = load_game(PGG1)

    def seats(first: DeepEvalBot, awaited: bool) -> list[DeepEvalBot]:
        rest: list[DeepEvalBot] = [FullContributor(seat, game=game) for seat in range(1, 4)]
        if awaited:
            rest[0] = Awaited(1)
        return [first, *rest]

    for awaited in (False, True):  # all scripted seats, and a model's seat among them
        asyncio.run(play_match(game, seats(FreeRider(0, game=game), awaited), seed=1))  # remembered for these classes
        patched = FreeRider(0, game=game)
        patched.respond = lambda observation: Decision.move(7, "invest 7")  # type: ignore[method-assign]
        record = asyncio.run(play_match(game, seats(patched, awaited), seed=1))
        assert [t.action for t in record.turns if t.seat == 0] == [7] * 5, awaited
        record = asyncio.run(play_match(game, seats(FreeRider(0, game=game), awaited), seed=1))
        assert [t.action for t in record.turns if t.seat == 0] == [0] * 5, awaited


class PassOrBet(FieldsBot):
    """kuhn_poker from no fields at all (the game has none): pass, then bet, then pass..."""

    def move_from_fields(self, fields: Mapping[str, Any]) -> int:
        assert fields == {}
        self.turn = getattr(self, "turn", 0) + 1
        return self.turn % 2


def test_fields_bots_in_a_sequential_game_with_chance_nodes() -> None:
    for seed in range(4):
        fast = _play("kuhn_poker", [PassOrBet, PassOrBet], seed, general=False)
        general = _play("kuhn_poker", [PassOrBet, PassOrBet], seed, general=True)
        assert fast.canonical() == general.canonical()
        assert [t.seat for t in fast.turns][:2] == [-1, -1]  # the deal, then the seats


def test_a_pgg_rule_that_returns_a_float_is_clipped_to_an_int_as_before() -> None:
    class Halves(FreeRider):
        def amount(self, fields: Mapping[str, Any]) -> int:
            return 3.7 if fields["round"] % 2 else -2.5  # type: ignore[return-value]

    game = load_game(PGG1)
    bot = Halves(0, game=game)
    assert bot.move_from_fields({"round": 1}) == 3 and type(bot.move_from_fields({"round": 1})) is int
    assert bot.move_from_fields({"round": 2}) == 0 and type(bot.move_from_fields({"round": 2})) is int
    record = asyncio.run(play_match(game, [Halves(s, game=game) for s in range(4)], seed=2))
    assert [t.text for t in record.turns if t.seat == 0] == ["invest 3", "invest 0"] * 2 + ["invest 3"]


def test_only_bots_that_keep_fieldsbots_respond_are_asked_through_their_fields() -> None:
    game = load_game(PGG1)

    class Viewing(FreeRider):
        def respond(self, observation: Observation) -> Decision:
            return Decision.move(1, "invest 1")

    class Awaiting(FreeRider):
        async def act(self, observation: Observation) -> Decision:
            return self.respond(observation)

    assert reads_fields_only(FreeRider(0, game=game))
    assert not reads_fields_only(Viewing(0, game=game))
    assert not reads_fields_only(Awaiting(0, game=game))
    assert not isinstance(SyncBot(0), FieldsBot) and not reads_fields_only(SyncBot(0))
    # a seat of a viewing bot among fields bots: the general loop, its answers as it gives them
    bots = [Viewing(0, game=game), *(FullContributor(seat, game=game) for seat in range(1, 4))]
    record = asyncio.run(play_match(game, bots, seed=1))
    assert [t.action for t in record.turns if t.seat == 0] == [1] * 5
    # a bot whose own respond was patched in is asked through it too
    patched = FreeRider(0, game=game)
    patched.respond = lambda observation: Decision.move(7, "invest 7")  # type: ignore[method-assign]
    assert not reads_fields_only(patched)
    bots = [patched, *(FullContributor(seat, game=game) for seat in range(1, 4))]
    record = asyncio.run(play_match(game, bots, seed=1))
    assert [t.action for t in record.turns if t.seat == 0] == [7] * 5
    # a copy of the game (pickled: its Python attributes are gone) still gives the bots its endowment
    assert FreeRider(0, game=pickle.loads(pickle.dumps(game))).endowment == FreeRider(0, game=game).endowment == 10
    # respond of a fields bot is its move, named as the seat names it
    observation = asyncio.run(_first_observation(game))
    decision = ConditionalCooperator(0, game=game, first=4).respond(observation)
    assert decision == Decision(action=4, text="invest 4")


async def _first_observation(game: Any) -> Observation:
    from deepeval_games.core.bot import observe

    return observe(game.new_initial_state(), 0)
