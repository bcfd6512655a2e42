"""Scripted judges, for tests and baselines: ``judge_fixed`` here, and the decision any scripted judge returns.

The code-review ``judge_pass_rate`` lives in :mod:`llm_bots.scripted_code_review`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pyspiel

from deepeval_games import task
from deepeval_games.bot import Decision, DeepEvalBot, Observation
from deepeval_games.registry import register_bot
from game_defs.verdicts import encode_scores
from llm_bots.judge.verdict import Verdict, role_labels

__all__ = ["FixedJudge", "verdict_decision"]


def verdict_decision(fields: Mapping[str, Any], scores: Sequence[int], explanations: Sequence[str]) -> Decision:
    """A scripted judge's decision from the judge fields: the verdict action, the verdict JSON as its text.

    Scores are clipped to ``score_min..score_max``.
    """
    low, high = int(fields["score_min"]), int(fields["score_max"])
    clipped = [min(max(int(s), low), high) for s in scores]
    labels = role_labels(fields["roles"])
    text = Verdict(tuple(clipped), tuple(explanations)).to_json(labels)
    return Decision(action=encode_scores(clipped, low, high), text=text)


@register_bot("judge_fixed")
class FixedJudge(DeepEvalBot):
    """Scripted judge: the same scores every match (``scores``, one per seat; default 7 each)."""

    def __init__(
        self,
        player_id: int,
        rng: np.random.Generator | None = None,
        *,
        game: pyspiel.Game,
        scores: Sequence[int] | None = None,
    ) -> None:
        super().__init__(player_id, rng)
        if not task.is_judged(game):
            raise ValueError(f"{game.get_type().short_name} has no verdict to give")
        self.scores = tuple(int(s) for s in (scores if scores is not None else [7] * game.num_players()))
        if len(self.scores) != game.num_players():
            raise ValueError(f"scores needs one value per seat ({game.num_players()}), got {list(self.scores)}")

    async def act(self, observation: Observation) -> Decision:
        """The fixed verdict."""
        return verdict_decision(observation.fields, self.scores, ["fixed score (scripted judge)"] * len(self.scores))

    def identity(self) -> dict[str, Any]:
        return {"kind": "scripted_judge", "class": type(self).__name__, "scores": list(self.scores)}
