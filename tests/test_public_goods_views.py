"""The Public Goods Game's views as the seats read them, against a plain reference written from the rules card: the
game computes what every seat shares once per round (the status line, the share's and the amounts' texts, coin
amounts' texts cached by value), and each seat's string and fields must be what the plain construction gives, at
every node of random playouts with forfeits, in both modes, with and without perfect recall, with either feedback
(``feedback=paper``: the observation is the mode's result only, the information state as before)."""

from __future__ import annotations

import pickle

import numpy as np
import pyspiel
import pytest

from deepeval_games import load_game
from game_defs.public_goods import game as public_goods
from game_defs.public_goods.game import _format_coins


def _coins(value: float) -> str:
    text = f"{value:.2f}".rstrip("0").rstrip(".")
    return text if text != "-0" else "0"


def _reference(state: pyspiel.State, player: int, perfect_recall: bool) -> str:
    """The seat's view built line by line from the state's history (the game's code before its round caches)."""
    p = state.get_game().get_parameters()
    paper = p.get("feedback") == "paper" and not perfect_recall
    n, rounds, endowment, alpha, mode = p["players"], p["rounds"], p["endowment"], p["alpha"], p["mode"]
    history = state.history()
    played = [history[i : i + n] for i in range(0, len(history), n)]
    lines, coins = [], 0.0
    for r, joint in enumerate(played):
        paid = [0 if a == endowment + 1 else a for a in joint]
        share = alpha * sum(paid) / n
        coins += (0 if joint[player] == endowment + 1 else endowment - joint[player]) + share
        if not perfect_recall and r < len(played) - 1:
            continue
        if joint[player] == endowment + 1:
            mine = f"you gave no valid answer and forfeited your {endowment} coins"
        else:
            mine = f"you invested {paid[player]} coins"
        amounts = sorted(paid, reverse=True)
        if paper and mode == 1:  # the mode's result only, nothing of the seat's own
            lines.append(f"In round {r + 1} you received {_coins(share)} coins from the pool.")
        elif paper:
            lines.append(f"In round {r + 1} the amounts put into the pool were {amounts} (largest first).")
        elif mode == 1:
            lines.append(f"In round {r + 1} {mine}, and you received {_coins(share)} coins from the pool.")
        else:
            lines.append(f"In round {r + 1} the amounts put into the pool were {amounts} (largest first); {mine}.")
    if played and not paper:
        lines.append(f"You now hold {_coins(coins)} coins.")
    if len(played) >= rounds:
        lines.append("The game is over.")
    else:
        lines.append(f"Round {len(played) + 1} of {rounds}: a new round begins and you receive {endowment} coins.")
    return "\n".join(lines)


@pytest.mark.parametrize("mode", [1, 2])
@pytest.mark.parametrize(
    "players,alpha,feedback", [(4, 1.6, "extended"), (3, 2.2, "extended"), (7, 0.35, "extended"), (3, 1.6, "paper")]
)
def test_every_view_is_the_plain_construction(mode: int, players: int, alpha: float, feedback: str) -> None:
    game = load_game(f"deepeval_public_goods(players={players},rounds=4,mode={mode},alpha={alpha},feedback={feedback})")
    rng = np.random.default_rng([mode, players])
    forfeit = game.get_parameters()["endowment"] + 1
    for _ in range(15):
        state = game.new_initial_state()
        while True:
            for player in range(players):
                assert state.observation_string(player) == _reference(state, player, False)
                assert state.information_state_string(player) == _reference(state, player, True)
                fields = state.observation_fields(player)
                assert fields["coins"] == pytest.approx(state.returns()[player])
            if state.is_terminal():
                break
            joint = [forfeit if rng.random() < 0.15 else int(rng.integers(0, forfeit)) for _ in range(players)]
            copies = (state.clone(), pickle.loads(pickle.dumps(state)))
            views = [state.observation_string(p) for p in range(players)]
            state.apply_actions(joint)
            for copy in copies:  # a copy keeps its own round views, and moves on with its own
                assert [copy.observation_string(p) for p in range(players)] == views
                copy.apply_actions(joint)
                assert copy.observation_string(1) == state.observation_string(1)
                assert copy.observation_fields(1) == state.observation_fields(1)
        assert state.clone().observation_string(0) == state.observation_string(0)
        fields = state.observation_fields(0)
        if mode == 2:  # a list of its own for each reader
            assert fields["last_investments"] is not state.observation_fields(0)["last_investments"]
        assert list(fields)[:7] == ["round", "rounds", "players", "endowment", "alpha", "mode", "coins"]
        assert list(fields)[7:] == ["last_investment", "last_income" if mode == 1 else "last_investments"]


def test_new_states_of_a_game_start_alike_and_apart() -> None:
    """Later states of a game start from the attributes its first state set (shared, never changed in place): each
    still plays on its own."""
    game = load_game("deepeval_public_goods(players=3,rounds=2,mode=2)")
    first = game.new_initial_state()
    first.apply_actions([1, 2, 11])
    second, third = game.new_initial_state(), game.new_initial_state()
    second.apply_actions([5, 5, 5])
    assert third.observation_string(0) == "Round 1 of 2: a new round begins and you receive 10 coins."
    assert list(third.returns()) == [0.0] * 3 and third.history() == [] and third._investments == []
    assert first._investments == [[1, 2, 11]] and second._investments == [[5, 5, 5]]
    assert second.observation_fields(2)["last_investments"] == [5, 5, 5]
    assert first.observation_fields(2)["last_investment"] == 0 and list(second.returns()) == [13.0] * 3


def test_coin_texts_are_the_formatted_amounts_cached_or_not() -> None:
    values = [0.0, -0.0, 0.004, -0.004, 6.4, 12.0, 3.333333, 2.675, 1e9 + 0.5, float("inf"), -2.5]
    values += list(np.random.default_rng(0).uniform(-50, 50, 300))
    for value in values:
        assert _format_coins(value) == _coins(value)
        assert _format_coins(value) == _coins(value)  # from the cache
    public_goods._COIN_TEXTS.clear()
    assert _format_coins(16) == _coins(16) == "16"  # an int shares its float's text
    assert _format_coins(16.0) == "16"
    assert _format_coins(float("nan")) == _coins(float("nan"))


def test_actions_out_of_range_are_refused_as_before() -> None:
    game = load_game("deepeval_public_goods(players=3,rounds=2)")
    state = game.new_initial_state()
    with pytest.raises(ValueError, match=r"action 12 out of range 0\.\.11"):
        state._apply_actions([0, 12, -1])
    with pytest.raises(ValueError, match=r"action -1 out of range 0\.\.11"):
        state._apply_actions([0, 3, -1])
    with pytest.raises(ValueError, match="expected 3 actions"):
        state._apply_actions([0, 3])
    state._apply_actions([11, 3, 0])
    assert state._paid[-1] == [0, 3, 0] and state._investments[-1] == [11, 3, 0]
    assert state._paid[-1] is not state._investments[-1]
