"""PettingZoo environments played as OpenSpiel games (``pettingzoo:<module>``, game_defs/arena/pettingzoo.py)."""

from __future__ import annotations

import numpy as np
import pyspiel
import pytest

pytest.importorskip("pettingzoo")
pytest.importorskip("pygame")  # PettingZoo's classic games import it (the [arena] extra installs it)

import game_defs.arena.pettingzoo  # noqa: F401  (the entry point's module: registers the family)
from deepeval_games.core.errors import UnknownGameError
from deepeval_games.core.registry.games import game_families, load_game
from deepeval_games.core.testing import check_game
from llm_bots.players.classical import MCTSPlayer, RandomBot

CONNECT_FOUR = "pettingzoo:classic.connect_four_v3"


@pytest.mark.parametrize(
    "name",
    [
        CONNECT_FOUR,
        "pettingzoo:classic.tictactoe_v3",
        "pettingzoo:classic.rps_v2",
        "pettingzoo:classic.leduc_holdem_v4",
        "pettingzoo:classic.texas_holdem_v4",
        "pettingzoo:classic.texas_holdem_no_limit_v6",
    ],
)
def test_adapted_environments_pass_the_conformance_kit(name: str) -> None:
    report = check_game(name, playouts=4)
    assert report.ok and report.checks["serialize"] > 4


def test_the_family_is_registered_and_lists_classic_environments() -> None:
    family = next(f for f in game_families() if f.prefix == "pettingzoo:")
    rows = dict(family.listing())
    assert rows[CONNECT_FOUR] is None
    assert "pettingzoo:classic.chess_v6" in rows


def test_an_unknown_module_is_refused_with_the_reason() -> None:
    with pytest.raises(UnknownGameError, match="cannot be imported"):
        load_game("pettingzoo:classic.no_such_game_v0")


def _play(game: pyspiel.Game, columns: list[int]) -> pyspiel.State:
    state = game.new_initial_state()
    for column in columns:
        state.apply_action(column)
    return state


@pytest.mark.parametrize(
    "columns",
    [
        [3, 3, 4, 4, 5, 5, 6],  # the first player's row
        [0, 1, 0, 1, 0, 1, 2, 1],  # the second player's column
        [0, 1, 1, 2, 3, 2, 2, 3, 3, 6, 3],  # the first player's diagonal
    ],
)
def test_connect_four_matches_openspiel_for_the_same_moves(columns: list[int]) -> None:
    ours, theirs = _play(load_game(CONNECT_FOUR), columns), _play(pyspiel.load_game("connect_four"), columns)
    assert ours.is_terminal() and theirs.is_terminal()
    assert list(ours.returns()) == list(theirs.returns())


def test_connect_four_random_playouts_match_openspiel() -> None:
    rng = np.random.default_rng(7)
    game, reference = load_game(CONNECT_FOUR), pyspiel.load_game("connect_four")
    for _ in range(5):
        ours, theirs = game.new_initial_state(), reference.new_initial_state()
        while not theirs.is_terminal():
            assert not ours.is_terminal() and sorted(ours.legal_actions()) == sorted(theirs.legal_actions())
            action = int(rng.choice(theirs.legal_actions()))
            ours.apply_action(action)
            theirs.apply_action(action)
        assert ours.is_terminal() and list(ours.returns()) == list(theirs.returns())


def test_mcts_beats_random_on_adapted_connect_four() -> None:
    game = load_game(CONNECT_FOUR)
    mcts_total = 0.0
    for match in range(2):
        mcts_seat = match % 2
        bots = {
            mcts_seat: MCTSPlayer(mcts_seat, np.random.default_rng(match), game=game, simulations=40),
            1 - mcts_seat: RandomBot(1 - mcts_seat, np.random.default_rng(100 + match), game=game),
        }
        state = game.new_initial_state()
        while not state.is_terminal():
            state.apply_action(bots[state.current_player()].choose(state))
        mcts_total += state.returns()[mcts_seat]
    assert mcts_total == 2  # wins both, from either seat


def test_moves_and_views_are_named() -> None:
    state = load_game(CONNECT_FOUR).new_initial_state()
    assert state.action_to_string(0, 3) == "column 3"
    state.apply_action(3)
    assert "...x..." in state.observation_string(1)
    rps = load_game("pettingzoo:classic.rps_v2").new_initial_state()
    assert [rps.action_to_string(0, a) for a in rps.legal_actions(0)] == ["rock", "paper", "scissors"]
    rps.apply_actions([0, 1])
    assert "you played paper, the other player played rock" in rps.observation_string(1)


def test_a_copy_replays_the_seeded_deal() -> None:
    state = load_game("pettingzoo:classic.leduc_holdem_v4").new_initial_state()
    state.apply_action(17)
    copy = state.clone()
    assert copy.observation_string(0) == state.observation_string(0)
    assert copy.observation_string(0) != state.observation_string(1)  # each seat's own hand


@pytest.mark.parametrize("name", ["pettingzoo:classic.leduc_holdem_v4", "pettingzoo:classic.texas_holdem_v4"])
def test_mcts_searches_information_sets_on_the_hidden_card_games(name: str) -> None:
    from llm_bots.players.classical import mcts_refusal

    game = load_game(name)
    assert mcts_refusal(game) is None
    bot = MCTSPlayer(0, np.random.default_rng(0), game=game, simulations=4)
    assert bot.params["search"] == "ismcts-seeded"
    state = game.new_initial_state()
    state.apply_action(17)  # the deal
    world = state.resample_from_infostate(0, pyspiel.UniformProbabilitySampler(3, 0.0, 1.0))
    assert world.observation_string(0) == state.observation_string(0)  # the seat's own cards, as it sees them
    rng = np.random.default_rng(1)
    while not state.is_terminal():
        seat = state.current_player()
        move = bot.choose(state) if seat == 0 else int(rng.choice(state.legal_actions()))
        assert move in state.legal_actions()
        state.apply_action(move)
