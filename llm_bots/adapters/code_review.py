"""LLM adapter of Code Review: prompts per role (programmer, reviewer, judge) and reply parsers.

* Programmer: the program is the *last* fenced code block tagged ``python``/``py``/``python3`` in the
  reply; else the last untagged fenced block; else the whole reply (stripped). A block left open at the
  end of the reply (a reply cut by ``max_tokens``) counts up to the end. Code is not Unicode-normalised
  (string literals must stay as written). A reply with no code at all is re-asked.
* Reviewer: the whole reply, stripped; an empty one is re-asked. Whether it is ``over`` is for the game to
  decide (:func:`game_defs.code_review.is_over`).
* Judge (seat -2): :func:`llm_bots.judge.parse_judge_reply`; a JSON schema is offered to providers that
  enforce one.

The other seat's words (code shown to the reviewer, a review shown to the programmer, the whole dialogue
shown to the judge) are always quoted with :func:`llm_bots.parsing.quote_player_text`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from deepeval_games.bot import Observation
from deepeval_games.records import JUDGE_SEAT
from llm_bots.adapters import Parsed, TaskAdapter, register_adapter
from llm_bots.judge import parse_judge_reply, quote_dialogue, verdict_response_format
from llm_bots.parsing import quote_player_text

__all__ = ["CodeReviewAdapter", "extract_code"]

_BLOCK = re.compile(r"```[ \t]*([A-Za-z0-9_+.-]*)[^\n]*\n(.*?)(?:```|\Z)", re.DOTALL)
_PYTHON_TAGS = ("python", "py", "python3")


def extract_code(reply: str) -> str:
    """The program in a programmer's reply (see the module docs); "" when the reply is blank."""
    blocks = [(tag.lower(), body) for tag, body in _BLOCK.findall(reply or "")]
    tagged = [body for tag, body in blocks if tag in _PYTHON_TAGS]
    untagged = [body for tag, body in blocks if not tag]
    chosen = tagged[-1] if tagged else untagged[-1] if untagged else (reply or "")
    return chosen.strip("\n").rstrip() if chosen.strip() else ""


def _tests(fields: Mapping[str, Any]) -> str:
    return "\n".join(fields["tests"])


@register_adapter("deepeval_code_review")
class CodeReviewAdapter(TaskAdapter):
    """Prompts and parsers for ``deepeval_code_review``."""

    task = "code_review"

    def role(self, observation: Observation) -> str:
        return "judge" if observation.seat == JUDGE_SEAT else str(observation.fields["role"])

    def values(self, observation: Observation) -> dict[str, Any]:
        fields = observation.fields
        if observation.seat == JUDGE_SEAT:
            return {"problem": fields["problem"], "tests": _tests(fields)}
        code, review = fields.get("code"), fields.get("review")
        return {
            "seat_label": self.seat_label(observation),
            "problem": fields["problem"],
            "tests": _tests(fields),
            "round": fields["round"],
            "max_rounds": fields["max_rounds"],
            "code": quote_player_text("Programmer", code if code and code.strip() else "(empty submission)"),
            "review": quote_player_text("Reviewer", review if review and review.strip() else "(empty review)"),
        }

    def turn_prompt(self, observation: Observation, first_turn: bool) -> str:
        role = self.role(observation)
        values = self.values(observation)
        if role == "judge":
            fields = observation.fields
            ended = (
                "The reviewer ended the conversation by answering over."
                if fields.get("ended_by") == "consensus"
                else f"The conversation ended after {fields['max_rounds']} round(s) without the reviewer's over."
            )
            return self.prompts.render(
                "judge", "verdict", dialogue=quote_dialogue(fields["dialogue"]), ended=ended, **values
            ).strip()
        name = "first" if first_turn else ("revise" if role == "programmer" else "next")
        return self.prompts.render(role, name, **values).strip()

    def parse(self, reply: str, observation: Observation) -> Parsed:
        role = self.role(observation)
        if role == "judge":
            return parse_judge_reply(reply, observation)
        if role == "programmer":
            code = extract_code(reply)
            return Parsed(text=code) if code else Parsed(error="no Python code was found in the reply.")
        review = (reply or "").strip()
        return Parsed(text=review) if review else Parsed(error="the review was empty.")

    def reask_prompt(self, observation: Observation, error: str) -> str:
        role = self.role(observation)
        values = self.values(observation)
        return self.prompts.render(role, "reask", reason=error, **values).strip()

    def response_schema(self, observation: Observation) -> Mapping[str, Any] | None:
        if observation.seat != JUDGE_SEAT:
            return None
        fields = observation.fields
        return verdict_response_format(fields["roles"], int(fields["score_min"]), int(fields["score_max"]))
