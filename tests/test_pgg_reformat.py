"""PGG: with unusable=reformat (preset "paper") the referee rewrites an unusable reply instead of forfeiting. The
phrasings the rewriting reads: tests/test_pgg_reading.py."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import numpy as np
import pytest

from deepeval_games import UnknownGameError, load_game, play_match
from deepeval_games.app.execution.one_match import build_player
from deepeval_games.app.spec.players import PlayerSpec
from deepeval_games.app.spec.presets import apply_preset
from tests.fake_openai_server import Behaviour, FakeOpenAIServer, model_player

PROSE = "After some thought I will put 3 coins into the pool, keeping the rest of my 10."


def test_the_option_is_a_game_parameter_the_paper_preset_selects() -> None:
    plain = "deepeval_public_goods(players=2,rounds=1)"
    assert "unusable" not in str(load_game(plain))  # the default keeps earlier game strings and match ids
    assert str(load_game("deepeval_public_goods(players=2,rounds=1,unusable=forfeit)")) == str(load_game(plain))
    assert "unusable=reformat" in str(load_game(apply_preset(plain, "paper")))
    assert "unusable" not in str(load_game(apply_preset(plain, "project")))
    with pytest.raises(UnknownGameError, match="unusable must be one of"):
        load_game("deepeval_public_goods(unusable=guess)")


def _play(game_string: str) -> Any:
    game = load_game(game_string)
    rng = np.random.default_rng(0)
    with FakeOpenAIServer(default=Behaviour.reply(PROSE), max_hang_s=5) as server:
        entry = model_player("fake-player", server)
        params = {k: v for k, v in entry.items() if k not in ("name", "model")}
        llm = build_player(PlayerSpec(name="p", model=entry["model"], params=params), game, 0, rng)
        other = build_player(PlayerSpec(name="q", bot="pgg_free_rider"), game, 1, rng)
        record = asyncio.run(play_match(game, [llm, other], seed=0))
        return record, server.request_count


@pytest.mark.usefixtures("fake_provider_key")
def test_a_prose_reply_is_forfeited_by_default_and_rewritten_under_reformat() -> None:
    forfeited, asked = _play("deepeval_public_goods(players=2,rounds=1)")
    turn = forfeited.turns[0]
    assert turn.seat == 0 and turn.action == 11 and turn.action_string == "forfeit" and asked > 1  # re-asked first
    rewritten, asked = _play("deepeval_public_goods(players=2,rounds=1,unusable=reformat)")
    turn = rewritten.turns[0]
    assert turn.seat == 0 and turn.action == 3 and asked == 1 and turn.outcome == "ok"
    answer = json.loads(turn.text)
    assert answer == {"reason": PROSE, "coins": 3, "reformatted": True}
    assert rewritten.returns[0] > forfeited.returns[0]
