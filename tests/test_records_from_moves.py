"""Records from moves (issue 41, item 1): a match stored as its moves reads back as the very record stored in full.

Every match where no seat is awaited is stored as its moves (``transcript = "moves"``, record version 7): the rows of
its actions and chance outcomes, and the seats sent no views (``blind``). Here each match is played twice from the
same seeds, once recorded in full and once as its moves; the moves record is written as a run stores it, read back,
and replayed (:func:`~deepeval_games.core.transcript.with_messages`): its turns and messages must be the full
record's, field for field (timings aside), on tic_tac_toe, connect_four, kuhn_poker, a TextArena and a PettingZoo
game and the Public Goods Game, with classical players (random, MCTS, exact) and scripted baselines in the seats. The
always-on variant plays 40 matches a case; the ``slow`` one 1,000 (with ``DEEPEVAL_GAMES_FULL_RECORDS=1``).
"""

from __future__ import annotations

import asyncio
import os
from typing import Any

import numpy as np
import pytest

from deepeval_games.core.records import SCHEMA_VERSION, MatchRecord
from deepeval_games.core.referee import play_match
from deepeval_games.core.registry.bots import make_bot
from deepeval_games.core.registry.games import load_game
from deepeval_games.core.transcript import with_messages

_MCTS = {"simulations": 8}
CASES: dict[str, tuple[str, tuple[tuple[str, dict[str, Any]], ...]]] = {
    "ttt-random": ("tic_tac_toe", (("random", {}), ("random", {}))),
    "ttt-mcts-exact": ("tic_tac_toe", (("mcts", _MCTS), ("exact", {}))),
    "c4-random": ("connect_four", (("random", {}), ("random", {}))),
    "c4-mcts": ("connect_four", (("random", {}), ("mcts", _MCTS))),
    "kuhn-random": ("kuhn_poker", (("random", {}), ("random", {}))),
    "kuhn-mcts-exact": ("kuhn_poker", (("mcts", _MCTS), ("exact", {}))),
    "textarena-ttt": ("textarena:TicTacToe-v0", (("random", {}), ("random", {}))),
    "pettingzoo-c4": ("pettingzoo:classic.connect_four_v3", (("random", {}), ("random", {}))),
    "pgg-scripted": (
        "deepeval_public_goods(players=4,rounds=5,mode=2,alpha=1.6)",
        (("pgg_free_rider", {}), ("pgg_conditional_cooperator", {}), ("pgg_grim_trigger", {}), ("pgg_random", {})),
    ),
}


def _play(case: str, seed: int, transcript: str) -> MatchRecord:
    game_string, seats = CASES[case]
    game = load_game(game_string)
    bots = [
        make_bot(name, game, seat, np.random.default_rng([seed, seat]), params)
        for seat, (name, params) in enumerate(seats)
    ]
    return asyncio.run(play_match(game, bots, seed=seed, match_id=f"{case}-{seed}", transcript=transcript))  # type: ignore[arg-type]


def _compare(case: str, matches: int) -> None:
    for seed in range(matches):
        full, moves = _play(case, seed, "full"), _play(case, seed, "moves")
        assert full.transcript == "full" and moves.transcript == "moves" and not moves.messages
        stored = MatchRecord.from_json(moves.to_json())
        assert stored.schema_version == SCHEMA_VERSION and stored.moves == moves.moves
        read = with_messages(stored)
        expected = MatchRecord.from_json(full.to_json()).canonical()
        assert read.canonical() == expected, f"{case} seed {seed}"


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_moves_record_reads_back_as_the_full_record(case: str) -> None:
    _compare(case, 40)


@pytest.mark.slow
@pytest.mark.skipif(
    not os.environ.get("DEEPEVAL_GAMES_FULL_RECORDS"),
    reason="1,000 matches a case take about 3 minutes: set DEEPEVAL_GAMES_FULL_RECORDS=1 (40 a case always run)",
)
@pytest.mark.parametrize("case", sorted(CASES))
def test_a_thousand_moves_records_read_back_as_the_full_records(case: str) -> None:
    _compare(case, 1000)


def test_a_game_whose_moves_do_not_replay_fails_the_kit_and_may_say_so() -> None:
    """A game whose move names depend on more than its history fails the kit's ``replays`` check, which says how to
    declare it; declared (``replays_from_moves = False``), the check is left out and its matches are stored in full."""
    import tests.broken_games  # noqa: F401  (registers the testkit_ games)
    from deepeval_games.core.testing import check_game

    report = check_game("testkit_clock_public_goods(players=3,rounds=2)", playouts=1, raise_on_failure=False)
    assert [f for f in report.failures if f.startswith("[replays]")], report.failures
    assert "replays_from_moves = False" in " ".join(report.failures)
    stored = load_game("testkit_stored_clock_public_goods(players=3,rounds=2)")
    report = check_game(stored, playouts=1, raise_on_failure=False)
    assert not [f for f in report.failures if f.startswith("[replays]")] and "replays" not in report.checks
    assert any(note.startswith("replays: not checked") for note in report.notes)
    bots = [make_bot("random", stored, seat, np.random.default_rng(seat), {}) for seat in range(3)]
    record = asyncio.run(play_match(stored, bots, seed=0, transcript="moves"))
    assert record.transcript == "full" and record.moves is None and record.messages
    assert check_game("tic_tac_toe", playouts=1).checks["replays"] == 3
