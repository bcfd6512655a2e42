"""LLM adapter of Machine Translation: the answer texts per role (translator, proofreader, judge) and the parsers.

The rules, the roles' instructions and the source paragraph, the translation (quoted) and the judge's rubric
with both texts quoted reach the models through the message pool (the game's rules text, observations and
judge brief); the prompt file (``llm_bots/translation/prompts.toml``) holds, per role, the answer format and
the re-ask text, and the reasons a reply is not usable.

* Translator and proofreader: the text is the whole reply, stripped, with a fence around the whole reply
  removed and one leading label (``Translation:``, ``Polished translation:``, ``Proofread text:``...)
  dropped. The text is not Unicode-normalised (full-width punctuation must stay as written for chrF). An
  empty reply is re-asked.
* Judge (seat -2): :func:`llm_bots.judge.parse_judge_reply`; a JSON schema is offered to providers that
  enforce one.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, cast

from deepeval_games.core.bot import Observation
from deepeval_games.core.records import JUDGE_SEAT
from game_defs.translation.game import TranslationFields
from llm_bots.adapters import Parsed, TaskAdapter, register_adapter
from llm_bots.judge import judge_response_schema, parse_judge_reply
from llm_bots.prompts import load_prompts

__all__ = ["TranslationAdapter", "extract_text"]

_TASK = "translation"
_FENCED = re.compile(r"^```[^\n]*\n(.*?)\n?```$", re.DOTALL)
_LABEL = re.compile(
    r"^(?:\*\*)?(?:the\s+)?(?:final\s+|polished\s+|proofread\s+|corrected\s+|revised\s+|improved\s+)?"
    r"(?:translation|text|version)(?:\s*\([^)\n]{0,20}\))?\s*[:：](?:\*\*)?[ \t]*\n?",
    re.IGNORECASE,
)


def _reason(name: str) -> str:
    return load_prompts(_TASK).render("reasons", name).strip()


def extract_text(reply: str) -> str:
    """The translation or proofread text in a reply (see the module docs); "" when there is none."""
    text = (reply or "").strip()
    fenced = _FENCED.match(text)
    if fenced:
        text = fenced.group(1).strip()
    return _LABEL.sub("", text, count=1).strip()


@register_adapter("deepeval_translation")
class TranslationAdapter(TaskAdapter):
    """Answer texts and parsers for ``deepeval_translation``."""

    task = _TASK

    def role(self, observation: Observation) -> str:
        """``judge`` for the judge seat, else the seat's role (``translator`` or ``proofreader``)."""
        if observation.seat == JUDGE_SEAT:
            return "judge"
        return cast(TranslationFields, observation.fields)["role"]

    def values(self, observation: Observation) -> dict[str, Any]:
        """The target language, for the translator's and the proofreader's answer texts."""
        if observation.seat == JUDGE_SEAT:
            return {}
        return {"target": cast(TranslationFields, observation.fields)["target_language"]}

    def parse(self, reply: str, observation: Observation) -> Parsed:
        if self.role(observation) == "judge":
            return parse_judge_reply(reply, observation)
        text = extract_text(reply)
        return Parsed(text=text) if text else Parsed(error=_reason("empty_text"))

    def response_schema(self, observation: Observation) -> Mapping[str, Any] | None:
        return judge_response_schema(observation)
