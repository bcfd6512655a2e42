"""Hosted models, for real: marked ``live`` and skipped unless the provider's API key is set."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from deepeval_games import parse_spec, run_experiment

pytestmark = [
    pytest.mark.live,
    pytest.mark.skipif(not os.environ.get("OPENAI_API_KEY"), reason="set OPENAI_API_KEY to run live-model tests"),
]


def test_hosted_model_plays_one_round_of_public_goods(tmp_path: Path) -> None:
    spec = parse_spec(
        {
            "experiment": {"name": "live", "game": "deepeval_public_goods(players=2,rounds=1)", "cache": False},
            "players": [
                {
                    "name": "gpt",
                    "model": os.environ.get("DEEPEVAL_LIVE_MODEL", "openai/gpt-4o-mini"),
                    "max_tokens": 200,
                },
                {"name": "free-rider", "bot": "pgg_free_rider"},
            ],
        }
    )
    result = run_experiment(spec, tmp_path / "run")
    assert result.played == 1
    turn = next(t for t in result.records[0].turns if t.seat == result.records[0].seats.index("gpt"))
    assert turn.outcome in ("ok", "reasked") and turn.tokens_in > 0
