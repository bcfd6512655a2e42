"""The task contract: the hooks' documented defaults (read one by one, and bound once a state by the engine), the
explicit bot constructor, the referee's penalty."""

from __future__ import annotations

import ast
import asyncio
from pathlib import Path

import numpy as np
import pyspiel
import pytest

from deepeval_games import Decision, DeepEvalBot, Observation, Outcome, load_game, make_bot, play_match
from deepeval_games.core import binding, task
from deepeval_games.core.registry.bots import register_bot


@register_bot("test_contract_first_legal")
class FirstLegal(DeepEvalBot):
    """A registered bot with no __init__ of its own: built through the explicit constructor contract."""

    async def act(self, observation: Observation) -> Decision:
        return Decision(action=observation.legal_actions[0])


class NoAnswer(DeepEvalBot):
    """A player that never gives a valid move (like a model answering "I'm not sure")."""

    async def act(self, observation: Observation) -> Decision:
        return Decision(action=None, text="I am not sure", outcome=Outcome.INVALID, error="no move in the reply")


def test_a_registered_bot_without_init_is_built_with_the_game() -> None:
    game = load_game("tic_tac_toe")
    bot = make_bot("test_contract_first_legal", game, 1, np.random.default_rng(0))
    assert bot.player_id == 1 and bot.game is game


def test_defaults_of_a_game_without_hooks() -> None:
    game = load_game("tic_tac_toe")
    state = game.new_initial_state()
    assert task.seat_roles(game) == ["player", "player"]
    assert not task.is_judged(game) and task.prompt_file(game) is None
    assert "Tic-tac-toe" in task.rules_text(game)  # its rules card (game_defs/rules_cards)
    assert task.penalty_action(state, 0) is None and not task.is_free_text_turn(state, 0)
    assert task.observation_fields(state, 0) == {} and task.match_metrics(state) == {}
    assert not task.can_intern(state) and not task.is_judge_turn(state)
    assert binding.observation_text(state, 0) == "...\n...\n..."


def test_hooks_of_a_task_are_used() -> None:
    game = load_game("deepeval_public_goods(players=2,rounds=1)")
    state = game.new_initial_state()
    assert task.penalty_action(state, 0) == 11  # forfeit, referee-only
    assert task.observation_fields(state, 0)["endowment"] == 10
    assert task.rules_text(game) == game.rules_text()


def test_the_engine_binds_the_same_hooks_with_the_same_defaults() -> None:
    plain = load_game("tic_tac_toe").new_initial_state()
    hooks = binding.state_hooks(plain)
    assert hooks.penalty(0) is None and not hooks.free_text(0) and hooks.intern(0, "hi") is None
    assert hooks.observation_fields(0) == {} and hooks.match_metrics() == {}
    assert not hooks.may_combine and not hooks.may_judge and not hooks.judge_turn()
    assert hooks.legal_actions(0) == tuple(plain.legal_actions(0)) and hooks.observation_text(0) == "...\n...\n..."
    game = load_game("deepeval_public_goods(players=2,rounds=1)")
    state = game.new_initial_state()
    bound = binding.state_hooks(state, game)
    assert bound.penalty(0) == task.penalty_action(state, 0) == 11
    assert bound.observation_fields(0)["endowment"] == 10
    assert {hook.slot for hook in task.OPTIONAL_STATE_HOOKS} < set(binding.StateHooks._fields)


def test_no_cache_is_keyed_by_an_objects_id() -> None:
    """``id()`` of an object is reused once the object dies: the engine's caches are keyed by values, or carried."""
    root = Path(__file__).resolve().parents[1]
    paths = [*sorted((root / "deepeval_games" / "core").rglob("*.py")), root / "llm_bots" / "llm_bot.py"]
    found = [
        f"{path.relative_to(root)}:{node.lineno}"
        for path in paths
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "id"
    ]
    assert found == [], f"id() used: {found}"


def test_playability_is_probed_not_read_from_flags() -> None:
    liars = load_game("liars_dice")
    assert not liars.get_type().provides_observation_string
    assert binding.playability(liars).observation == "information_state"
    assert binding.playability(load_game("kuhn_poker")).ok


def _play(seed: int) -> list[int]:
    game = load_game("tic_tac_toe")
    record = asyncio.run(play_match(game, [NoAnswer(0), FirstLegal(1, game=game)], seed=seed))
    turns = [t for t in record.turns if t.seat == 0]
    assert turns and all(t.outcome == "invalid" for t in turns)
    assert all("random legal move" in (t.error or "") for t in turns)
    return [t.action for t in turns]


def test_a_game_without_penalty_gets_seeded_random_legal_moves() -> None:
    moves = {seed: _play(seed) for seed in range(4)}
    assert moves[0] == _play(0)  # the same seed, the same moves
    assert len({tuple(m) for m in moves.values()}) > 1  # drawn, not always the same
    first_legal = [0, 2, 4, 6, 8]  # what "the first legal move" would have played against FirstLegal
    assert any(m != first_legal[: len(m)] for m in moves.values())
    assert pyspiel.load_game("tic_tac_toe").num_players() == 2


def test_match_ids_carry_the_prompt_version_the_bot_uses() -> None:
    pytest.importorskip("deepeval_ultimatum", reason="pip install -e examples/ultimatum")
    from deepeval_games.app.spec.players import PlayerSpec
    from deepeval_games.app.spec.schedule import _identity
    from llm_bots.adapters import adapter_for

    player = PlayerSpec(name="m", model="openai/x")
    for name, version in (("deepeval_ultimatum", "ultimatum-2"), ("deepeval_public_goods", "public_goods-2")):
        game = load_game(name)
        assert _identity(player, game)["prompt_version"] == adapter_for(game).prompt_version == version
