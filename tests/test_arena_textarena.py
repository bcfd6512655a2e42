"""TextArena environments played as OpenSpiel games (``textarena:<EnvId>``, game_defs/arena/textarena.py)."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pyspiel
import pytest

pytest.importorskip("textarena")

import game_defs.arena.textarena as arena  # noqa: F401  (the entry point's module: registers the family)
from deepeval_games.app.commands.cli import main
from deepeval_games.app.execution.run import run_experiment
from deepeval_games.core import task
from deepeval_games.core.errors import SpecError, UnknownGameError
from deepeval_games.core.registry.games import load_game
from deepeval_games.core.testing import check_game
from deepeval_games.core.transcript import with_messages
from llm_bots.players.classical import MCTSPlayer, RandomBot, mcts_refusal, random_refusal
from tests.arena_play import records, replayed, write_spec
from tests.fake_openai_server import Behaviour, FakeOpenAIServer, last_user_message, model_player

PLAYABLE = [
    "Alquerque-v0",
    "Battleship-v0",
    "Breakthrough-v0",
    "Briscola-v0",
    "Chopsticks-v0",
    "ColonelBlotto-v0",
    "ConnectFour-v0",
    "Crusade-v0",
    "GameOfPureStrategy-v0",
    "GermanWhist-v0",
    "Golf-v0",
    "HighSociety-v0",
    "IndianPoker-v0",
    "IteratedMatchingPennies-v0",
    "IteratedRockPaperScissors-v0",
    "KuhnPoker-v0",
    "LiarsDice-v0",
    "Nim-v0",
    "Othello-v0",
    "PigDice-v0",
    "SimpleNegotiation-v0",
    "SimpleTak-v0",
    "Stratego-v0",
    "TicTacToe-v0",
]
"""Two-player environments that pass the kit (26 of TextArena 0.7.4's base environments do; these are the fast)."""
NAMED = ["KuhnPoker-v0", "TicTacToe-v0", "PigDice-v0", "Crusade-v0"]
"""Environments that name their legal moves: ``random`` plays them."""
TEMPLATES = ["IndianPoker-v0", "ColonelBlotto-v0"]
"""Environments whose move list holds a template (``[bet X]``) or one example (``Format: '[A4 B2 C2]'``)."""


@pytest.mark.parametrize("env_id", PLAYABLE)
def test_two_player_environments_pass_the_conformance_kit(env_id: str) -> None:
    report = check_game(f"textarena:{env_id}", playouts=2)
    assert report.ok and report.checks["serialize"] >= 2


def _random_playout(game: pyspiel.Game, seed: int) -> pyspiel.State:
    rng = np.random.default_rng(seed)
    state = game.new_initial_state()
    while not state.is_terminal():
        if state.is_chance_node():
            state.apply_action(int(rng.integers(len(state.chance_outcomes()))))
        else:
            state.apply_action(int(rng.choice(state.legal_actions())))
    return state


@pytest.mark.parametrize("env_id", NAMED)
def test_random_plays_the_named_moves_to_the_end_and_a_copy_replays_it(env_id: str) -> None:
    game = load_game(f"textarena:{env_id}")
    assert random_refusal(game) is None
    state = _random_playout(game, 3)
    assert sorted(state.returns()) in ([-1.0, 1.0], [0.0, 0.0])
    copy = state.clone()
    assert list(copy.returns()) == list(state.returns()) and str(copy) == str(state)
    assert all("invalid" not in state.observation_string(seat).lower() for seat in (0, 1))


def test_random_is_refused_where_moves_are_free_text() -> None:
    game = load_game("textarena:SimpleNegotiation-v0")
    reason = task.unlisted_moves(game)
    assert reason is not None and "does not name its legal moves" in reason
    assert random_refusal(game) is not None
    with pytest.raises(SpecError, match="random plays listed legal moves"):
        RandomBot(0, np.random.default_rng(0), game=game)


@pytest.mark.parametrize(
    "env_id, why",
    [
        (
            "Checkers-v0",
            r"upstream bug: TextArena 0\.7\.4's textarena/envs/Checkers/env\.py does not compile on Python",
        ),
        ("UsedCarNegotiation-v0", "upstream bug: TextArena 0.7.4 ships without a file it reads"),
        ("CharacterConclave-v0", r"upstream bug: TextArena 0\.7\.4's CharacterConclave-v0 fails in play \(with 3"),
    ],
)
def test_environments_that_cannot_be_adapted_are_refused_with_the_reason(env_id: str, why: str) -> None:
    with pytest.raises(UnknownGameError, match=why):
        load_game(f"textarena:{env_id}")


def test_each_match_draws_from_its_own_generator() -> None:
    game = load_game("textarena:KuhnPoker-v0")
    random.seed(1234)
    expected = [random.random() for _ in range(3)]
    random.seed(1234)
    first, second = game.new_initial_state(), game.new_initial_state()
    first.apply_action(5)
    second.apply_action(5)
    alone = _random_playout(game, 9)
    for state in (first, second):  # interleaved matches from one seed see the same deal as each other
        state.apply_action(state.legal_actions()[0])
    assert first.observation_string(1) == second.observation_string(1)
    assert str(alone)  # played between them
    assert [random.random() for _ in range(3)] == expected  # the global generator was never drawn from


def test_a_finished_match_replays_from_its_record(tmp_path: Path) -> None:
    spec = {
        "experiment": {"name": "replay", "game": "textarena:KuhnPoker-v0", "repeats": 1},
        "players": [{"name": "a", "bot": "random"}, {"name": "b", "bot": "random"}],
    }
    result = run_experiment(spec, tmp_path / "run")
    assert result.played == 2 and not result.failed
    for record in result.records:
        state = load_game(record.game).new_initial_state()
        for turn in record.turns:
            if turn.seat < 0:
                state.apply_action(turn.action)
            else:
                state.apply_action(task.intern_utterance(state, turn.seat, turn.action_string))
        assert state.is_terminal()
        assert list(state.returns()) == list(record.returns)
        assert sorted(record.returns) == [-1.0, 1.0]


def test_rules_come_from_the_environment() -> None:
    rules = task.rules_text(load_game("textarena:KuhnPoker-v0"))
    assert "Kuhn Poker" in rules and "[bet]" in rules
    assert "prompt to the first seat (Player 1)" in rules  # no docstring: the first seat's prompt, said so


def test_a_seat_sees_its_own_number_once_and_no_sender_in_brackets() -> None:
    game = load_game("textarena:KuhnPoker-v0")
    state = game.new_initial_state()
    state.apply_action(7)
    first, second = state.seat_view(0), state.seat_view(1)
    assert "You are Player 2 in a 3 round game" in second and "Player 0" not in second  # the referee's label
    assert "You are Player" not in first  # the first seat's prompt is the rules it was shown: not again
    lines = [line for view in (first, second) for line in view.splitlines() if line.startswith("The game: ")]
    assert lines and not any(line.startswith("[") for view in (first, second) for line in view.splitlines())


def test_llm_seats_are_asked_for_the_bracketed_move_on_one_line() -> None:
    from llm_bots.adapters import adapter_for

    adapter = adapter_for(load_game("textarena:TicTacToe-v0"))
    assert adapter.prompt_version.startswith("textarena-")
    text = adapter.prompts.render("player", "free_text_format", seat_label="Player 1", moves="[]")
    assert "square brackets" in text and "one line" in text


@pytest.mark.slow
def test_games_all_lists_the_environments_with_their_verdicts(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import game_defs.arena.pettingzoo  # noqa: F401  (both families, as their entry points register them)
    import llm_bots.players.classical
    from deepeval_games.app.commands import listing
    from deepeval_games.app.commands.cli import main

    monkeypatch.setattr(
        llm_bots.players.classical, "openspiel_listing", lambda **_: []
    )  # OpenSpiel's own: tested elsewhere
    monkeypatch.setattr(listing, "LISTING_CACHE_NAME", "games-all-textarena-test.json")  # not the others' listing
    assert main(["games", "--all"]) == 0
    out = capsys.readouterr().out
    assert "textarena:KuhnPoker-v0  [playable by LLM, random]\n" in out
    assert "textarena:SimpleNegotiation-v0  [playable by LLM]\n" in out
    assert "textarena:TicTacToe-v0  [playable by LLM, random, mcts] (perfect information)" in out
    assert "textarena:Debate-v0  [playable by LLM] (judged: the spec's judge answers it)" in out
    assert "textarena:FrozenLake-v0  [playable by LLM, random] (1 player)" in out
    assert "textarena:Taboo-v0  [playable by LLM] (4 players, players=4..8)" in out
    assert "textarena:Checkers-v0  [refused: upstream bug: TextArena 0.7.4's" in out
    assert "pettingzoo:classic.connect_four_v3  [playable by LLM, random, mcts]" in out
    assert "pettingzoo:classic.gin_rummy  [refused: PettingZoo" in out


def test_mcts_beats_random_where_the_state_is_public_and_is_refused_where_it_is_hidden() -> None:
    game = load_game("textarena:TicTacToe-v0")
    assert game.get_type().information == pyspiel.GameType.Information.PERFECT_INFORMATION
    total = 0.0
    for match in range(2):
        seat = match % 2
        bots = {
            seat: MCTSPlayer(seat, np.random.default_rng(match), game=game, simulations=60),
            1 - seat: RandomBot(1 - seat, np.random.default_rng(100 + match), game=game),
        }
        state = game.new_initial_state()
        while not state.is_terminal():
            state.apply_action(bots[state.current_player()].choose(state))
        total += state.returns()[seat]
    assert total > 0  # bench/bench_arena.py plays 20 matches on each of three such environments
    kuhn = load_game("textarena:KuhnPoker-v0")
    assert random_refusal(kuhn) is None
    reason = mcts_refusal(kuhn)
    assert reason is not None and "does not implement ResampleFromInfostate" in reason
    with pytest.raises(SpecError, match="ResampleFromInfostate"):
        MCTSPlayer(0, np.random.default_rng(0), game=kuhn)


def test_a_declared_public_state_is_checked_and_the_others_are_hidden() -> None:
    from game_defs.arena.textarena_env import facts

    assert facts("ConnectFour-v0").perfect_information and facts("Othello-v0").perfect_information
    assert not facts("KuhnPoker-v0").perfect_information and facts("KuhnPoker-v0").public_note is None
    reason = mcts_refusal(load_game("textarena:ConnectFour-v0"))  # public, but its moves are free text
    assert reason is not None and reason.startswith("mcts searches listed legal moves")


@pytest.mark.parametrize("env_id", TEMPLATES)
def test_a_move_list_of_templates_or_examples_names_no_moves_and_random_is_refused(env_id: str) -> None:
    game = load_game(f"textarena:{env_id}")
    assert random_refusal(game) == f"random plays listed legal moves; {task.unlisted_moves(game)}"
    assert task.unlisted_moves(game) is not None


def _memory_view(seed: int) -> str:
    """What the second seat is shown after the first seat flips the two top-left cards of MemoryGame from ``seed``."""
    state = load_game("textarena:MemoryGame-v0").new_initial_state()
    state.apply_action(seed)
    state.apply_action(task.intern_utterance(state, 0, "[0 0 0 1]"))
    return str(state.observation_string(1))


def _flip_once(body: dict[str, object]) -> str:
    """The first seat flips the two top-left cards; the second answers off the board (asked again, it loses)."""
    return "[9 9 9 9]" if "[0 0 0 1]" in last_user_message(body) else "[0 0 0 1]"


def test_memory_game_deals_its_layout_from_the_match_seed(tmp_path: Path, fake_provider_key: str) -> None:
    game = load_game("textarena:MemoryGame-v0")
    assert game.get_type().chance_mode == pyspiel.GameType.ChanceMode.EXPLICIT_STOCHASTIC
    assert _memory_view(0) == _memory_view(0)
    assert "are C and G" in _memory_view(0) and "are C and D" in _memory_view(5)  # two seeds, two layouts
    with FakeOpenAIServer(default=Behaviour.responder(_flip_once), max_hang_s=5) as server:
        spec = write_spec(
            tmp_path / "spec.toml",
            {"name": "memory", "game": "textarena:MemoryGame-v0", "repeats": 1, "seed": 3, "pairing": "fixed"},
            [model_player("fake-a", server), model_player("fake-b", server)],
        )
        assert main(["run", str(spec), "--out", str(tmp_path / "run"), "--no-progress"]) == 0
    [record] = records(tmp_path / "run")  # one match: the seed its chance node drew, then 60 moves to the turn limit
    assert record.turns[0].action_string == f"seed {record.turns[0].action}"
    state = replayed(record)
    assert state.is_terminal() and list(state.returns()) == list(record.returns)
    flipped = next(line for line in state.observation_string(1).splitlines() if "[0 0] and [0 1]" in line)
    shown = with_messages(record).messages  # stored as its exchanges: the pool is replayed from the turns
    assert flipped in "\n".join(str(m.get("text", "")) for m in shown)  # the layout the match was shown


def test_a_clone_copies_the_live_environment_and_goes_on_as_a_replayed_copy_does() -> None:
    from game_defs.arena.textarena_env import facts

    assert facts("PigDice-v0").copies and not facts("ScenarioPlanning-v0").copies  # a jury's stand-in is not copied
    game = load_game("textarena:PigDice-v0")  # its dice: the match's own generator, copied with the environment
    rng = np.random.default_rng(5)
    state = game.new_initial_state()
    state.apply_action(11)
    for _ in range(4):
        state.apply_action(int(rng.choice(state.legal_actions())))
    copied = state.clone()
    rebuilt = pyspiel.deserialize_game_and_state(pyspiel.serialize_game_and_state(game, state))[1]
    while not copied.is_terminal():
        assert [copied.observation_string(s) for s in (0, 1)] == [rebuilt.observation_string(s) for s in (0, 1)]
        action = int(rng.choice(copied.legal_actions()))
        copied.apply_action(action)
        rebuilt.apply_action(action)
    assert rebuilt.is_terminal() and list(copied.returns()) == list(rebuilt.returns())
    assert str(state) != str(copied)  # the original stayed where it was
