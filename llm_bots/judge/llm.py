"""The LLM judge: an LLM bot at temperature 0 that never falls back to a default verdict.

Built by :func:`make_llm_judge` from a ``[judge]`` table with ``model = ...``. Where a player's turn would
end in the task's penalty, :class:`LLMJudge` raises :class:`~llm_bots.judge.JudgeError` instead. This
module imports litellm (through :mod:`llm_bots.llm_bot`), which is slow: :mod:`llm_bots.judge` loads it
only when one of its names is used.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

import numpy as np
import pyspiel

from deepeval_games.core.bot import Decision, Observation, Outcome
from deepeval_games.core.errors import SpecError
from deepeval_games.core.records import JUDGE_SEAT
from llm_bots.adapters import adapter_for
from llm_bots.judge.independence import ALLOW_PLAYER_MODEL
from llm_bots.judge.verdict import JudgeError
from llm_bots.llm_bot import LLMBot, ModelRuntime, check_model_string, split_player_params
from llm_bots.model_config import JUDGE_DEFAULTS, ModelConfig

__all__ = ["LLMJudge", "make_llm_judge"]

log = logging.getLogger(__name__)


def make_llm_judge(
    model: str,
    params: Mapping[str, Any],
    game: pyspiel.Game,
    rng: np.random.Generator,
    *,
    match_id: str = "",
    runtime: ModelRuntime | None = None,
) -> LLMJudge:
    """The LLM judge of a ``[judge]`` table with ``model = ...`` (see :mod:`llm_bots.judge`).

    ``model`` is the table's model string and ``params`` its other keys (model and bot settings;
    ``allow_player_model`` is left out, :func:`~llm_bots.judge.check_judge` reads it).
    """
    settings, model_params = split_player_params({k: v for k, v in params.items() if k != ALLOW_PLAYER_MODEL})
    config = ModelConfig.from_mapping({"model": model, **JUDGE_DEFAULTS, **model_params})
    check_model_string(config.model)
    adapter = adapter_for(game)
    if "judge" not in adapter.prompts.roles:
        raise SpecError(f"LLM judges cannot judge {game.get_type().short_name}: its prompts have no judge role")
    return LLMJudge(
        JUDGE_SEAT,
        rng,
        game=game,
        config=config,
        adapter=adapter,
        settings=settings,
        runtime=runtime,
        match_id=match_id,
    )


class LLMJudge(LLMBot):
    """The judge played by a language model (see :mod:`llm_bots.judge`)."""

    def identity(self) -> dict[str, Any]:
        return {**super().identity(), "kind": "llm_judge"}

    def _penalty(self, observation: Observation, outcome: Outcome, error: str, turn: Decision) -> Decision:
        last = turn.raw_replies[-1][:300] if turn.raw_replies else ""
        reason = (
            f"the judge ({self.config.model}) gave no usable verdict: {outcome.value} after {turn.retries} re-ask(s): "
            f"{error} Last reply: {last!r}"
        )
        log.error("%s; the match fails (no default score is ever given)", reason)
        raise JudgeError(reason)
