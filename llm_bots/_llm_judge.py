"""The LLM judge bot (kept apart from :mod:`llm_bots.judge` because it imports litellm, which is slow).

An :class:`~llm_bots.llm_bot.LLMBot` for the judge seat that never falls back to a default verdict: where a
player's turn would end in the task's penalty, the judge raises :class:`~llm_bots.judge.JudgeError`.
"""

from __future__ import annotations

import logging
from typing import Any

from deepeval_games.bot import Decision, Observation, Outcome
from llm_bots.judge import JudgeError
from llm_bots.llm_bot import LLMBot

__all__ = ["LLMJudge"]

log = logging.getLogger(__name__)


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
