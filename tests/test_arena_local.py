"""A real language model plays a TextArena environment in both seats, offline (SmolLM2 served by llama.cpp).

One short run (two matches of Kuhn poker, one per seating); skipped without the local model.
"""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("textarena")

import game_defs.arena_textarena  # noqa: F401  (the entry point's module: registers the family)
from deepeval_games import parse_spec, run_experiment
from llm_bots.local_server import local_model_available

_REASON = local_model_available("local/smollm2")
pytestmark = [pytest.mark.local_model, pytest.mark.slow, pytest.mark.skipif(_REASON is not None, reason=_REASON or "")]


def test_smollm2_plays_kuhn_poker_in_both_seats(tmp_path: Path) -> None:
    model = {"model": "local/smollm2", "temperature": 0.7, "max_tokens": 60, "timeout_s": 120}
    spec = parse_spec(
        {
            "experiment": {
                "name": "arena-local",
                "game": "textarena:KuhnPoker-v0",
                "seed": 1,
                "cache": False,
                "max_concurrency": 1,
                "repeats": 1,
            },
            "players": [{"name": "smol-a", **model}, {"name": "smol-b", **model}],
        }
    )
    result = run_experiment(spec, tmp_path / "run")
    assert not result.failed, result.failed
    assert result.played == 2 and result.model_calls >= 4
    for record in result.records:
        assert sorted(record.returns) in ([-1.0, 1.0], [0.0, 0.0])
        assert all("smol" not in m.get("text", "") for m in record.messages)  # no player name reaches a seat
