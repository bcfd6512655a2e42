"""A seat's generator is made only when its bot draws (``SeatSeed``), and it is the same generator either way."""

from __future__ import annotations

import numpy as np
import pytest

import llm_bots  # noqa: F401  (registers the scripted bots)
from deepeval_games.app.execution.one_match import seat_rng
from deepeval_games.core.bot import DeepEvalBot, SeatSeed
from deepeval_games.core.registry.bots import bot_factory
from deepeval_games.core.registry.games import load_game

PGG = "deepeval_public_goods(players=4,mode=1)"


def test_a_seat_seed_makes_the_generator_of_the_seat() -> None:
    for seed, seat in ((0, 0), (2**62 + 12345, 3), (7, 4)):
        made, spawned = (
            SeatSeed(seed, seat).generator(),
            np.random.default_rng(np.random.SeedSequence(seed).spawn(5)[seat]),
        )
        assert made.integers(0, 2**62, size=8).tolist() == spawned.integers(0, 2**62, size=8).tolist()
        assert seat_rng(seed, seat).random() == SeatSeed(seed, seat).generator().random()


def test_a_bot_that_takes_seat_seeds_makes_its_generator_on_first_draw() -> None:
    game = load_game(PGG)
    build = bot_factory("pgg_random", game)
    bot = build(2, SeatSeed(99, 2))
    assert "rng" not in vars(bot)  # nothing made yet
    draws = [bot.rng.integers(0, 1000) for _ in range(5)]  # made here, then kept
    assert "rng" in vars(bot) and bot.rng is bot.rng
    expected = seat_rng(99, 2)
    assert draws == [expected.integers(0, 1000) for _ in range(5)]
    free_rider = bot_factory("pgg_free_rider", game)(0, SeatSeed(99, 0))
    assert "rng" not in vars(free_rider)
    with pytest.raises(AttributeError, match="no attribute 'nothing_here'"):
        free_rider.nothing_here  # noqa: B018  (other names are not made up)


class _ReadsItsArgument(DeepEvalBot):
    """A bot that draws from the ``rng`` argument itself (takes_seat_seed stays False)."""

    def __init__(self, player_id: int, rng: np.random.Generator | None = None, *, game: object = None) -> None:
        super().__init__(player_id, rng)
        assert isinstance(rng, np.random.Generator)
        self.first = int(rng.integers(0, 10**9))


def test_a_bot_that_does_not_take_seat_seeds_is_given_the_generator(monkeypatch: pytest.MonkeyPatch) -> None:
    from deepeval_games.core.registry import bots as registry

    entry = registry.BotEntry("test_reads_rng_argument", _ReadsItsArgument, (), "")
    monkeypatch.setitem(registry._BOTS, entry.name, entry)
    bot = bot_factory(entry.name, load_game(PGG))(1, SeatSeed(5, 1))
    assert isinstance(bot, _ReadsItsArgument) and bot.first == int(seat_rng(5, 1).integers(0, 10**9))
