"""LLM adapter of Code Review: the answer texts per role (programmer, reviewer, judge) and the reply parsers.

The rules, the roles' instructions and the problem, every move of the other seat (quoted) and the judge's
rubric with the quoted dialogue reach the models through the message pool (the game's rules text,
observations and judge brief); the prompt file (``llm_bots/code_review/prompts.toml``) holds, per role, the
answer format and the re-ask text, and the reasons a reply is not usable.

* Programmer: the program is the *last* fenced code block tagged ``python``/``py``/``python3`` in the
  reply; else the last untagged fenced block; else the whole reply (stripped). A block left open at the
  end of the reply (a reply cut by ``max_tokens``) counts up to the end. Code is not Unicode-normalised
  (string literals must stay as written). A reply with no code at all is re-asked.
* Reviewer: the whole reply, stripped; an empty one is re-asked. Whether it is ``over`` is for the game to
  decide (:func:`game_defs.code_review.game.is_over`).
* Judge (seat -2): :func:`llm_bots.judge.parse_judge_reply`; a JSON schema is offered to providers that
  enforce one.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, cast

from deepeval_games.core.bot import Observation
from deepeval_games.core.records import JUDGE_SEAT
from game_defs.code_review.game import CodeReviewFields
from llm_bots.adapters import Parsed, TaskAdapter, register_adapter
from llm_bots.judge import judge_response_schema, parse_judge_reply
from llm_bots.prompts import load_prompts

__all__ = ["CodeReviewAdapter", "extract_code"]

_TASK = "code_review"
_BLOCK = re.compile(r"```[ \t]*([A-Za-z0-9_+.-]*)[^\n]*\n(.*?)(?:```|\Z)", re.DOTALL)
_PYTHON_TAGS = ("python", "py", "python3")


def _reason(name: str) -> str:
    return load_prompts(_TASK).render("reasons", name).strip()


def extract_code(reply: str) -> str:
    """The program in a programmer's reply (see the module docs); "" when the reply is blank."""
    blocks = [(tag.lower(), body) for tag, body in _BLOCK.findall(reply or "")]
    tagged = [body for tag, body in blocks if tag in _PYTHON_TAGS]
    untagged = [body for tag, body in blocks if not tag]
    chosen = tagged[-1] if tagged else untagged[-1] if untagged else (reply or "")
    return chosen.strip("\n").rstrip() if chosen.strip() else ""


@register_adapter("deepeval_code_review")
class CodeReviewAdapter(TaskAdapter):
    """Answer texts and parsers for ``deepeval_code_review``."""

    task = _TASK

    def role(self, observation: Observation) -> str:
        """``judge`` for the judge seat, else the seat's role (``programmer`` or ``reviewer``)."""
        if observation.seat == JUDGE_SEAT:
            return "judge"
        return cast(CodeReviewFields, observation.fields)["role"]

    def _suffix(self, observation: Observation) -> str:
        """``_first`` for a review that may not end the dialogue (no ``over`` offered), else ""."""
        if self.role(observation) != "reviewer":
            return ""
        return "" if cast(CodeReviewFields, observation.fields)["over_allowed"] else "_first"

    def format_text(self, observation: Observation) -> str:
        """The answer format; a review that may not end the dialogue is not offered ``over``."""
        name = "format" + self._suffix(observation)
        return self.prompts.render(self.role(observation), name, **self.values(observation)).strip()

    def reask_text(self, observation: Observation, error: str) -> str:
        """The re-ask; a review that may not end the dialogue is not offered ``over``."""
        name = "reask" + self._suffix(observation)
        return self.prompts.render(self.role(observation), name, reason=error, **self.values(observation)).strip()

    def parse(self, reply: str, observation: Observation) -> Parsed:
        role = self.role(observation)
        if role == "judge":
            return parse_judge_reply(reply, observation)
        if role == "programmer":
            code = extract_code(reply)
            return Parsed(text=code) if code else Parsed(error=_reason("no_code"))
        review = (reply or "").strip()
        return Parsed(text=review) if review else Parsed(error=_reason("empty_review"))

    def response_schema(self, observation: Observation) -> Mapping[str, Any] | None:
        return judge_response_schema(observation)
