"""Text crossing the model boundary is valid: a reply or a prompt holding code points UTF-8 cannot encode (a lone
surrogate) has them replaced by U+FFFD, and the call's last attempt records what was replaced (``error`` starting
with :data:`UNENCODABLE`)."""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Mapping, Sequence
from typing import Any

from deepeval_games.core.bot import CallAttempt
from deepeval_games.core.quoting import surrogate_escapes, valid_text
from llm_bots.transport.results import Completion

__all__ = ["UNENCODABLE", "replacement_note", "valid_completion", "valid_messages", "valid_reply"]

logger = logging.getLogger(__name__)


def valid_reply(text: str, reasoning: str, attempt: CallAttempt) -> tuple[str, str, CallAttempt]:
    """A reply and its reasoning made encodable (:func:`~deepeval_games.core.quoting.valid_text`), and the attempt that
    brought them, with what was replaced in its ``error`` when anything was: a lone surrogate would otherwise fail
    every later request of the match (it is sent back as chat history) and the record itself."""
    text, in_text = valid_text(text)
    reasoning, in_reasoning = valid_text(reasoning)
    escaped = surrogate_escapes(text)  # kept in the reply as written; a JSON reader makes them U+FFFD
    if not (in_text or in_reasoning or escaped):
        return text, reasoning, attempt
    note = replacement_note(in_text, in_reasoning, escaped)
    logger.warning("a model reply held unencodable code points: %s", note)
    return text, reasoning, dataclasses.replace(attempt, error=note)


def replacement_note(in_text: Sequence[str], in_reasoning: Sequence[str] = (), escaped: Sequence[str] = ()) -> str:
    """How a call's attempt records the code points replaced in its reply (``in_text``) and reasoning, and the lone
    surrogates the reply's JSON escapes stand for (read as U+FFFD by :func:`llm_bots.parsing.json_objects`)."""
    places = (("reply", in_text), ("reasoning", in_reasoning), ("reply's JSON escapes", escaped))
    parts = [f"{where}: {', '.join(codes)}" for where, codes in places if codes]
    return f"{UNENCODABLE}: replaced by U+FFFD in the {'; '.join(parts)}"


UNENCODABLE = "UnencodableText"
"""The ``error`` of a call attempt whose reply held code points UTF-8 cannot encode, followed by what was replaced
(the attempt's ``status`` stays ``ok``: the reply was used)."""


def valid_completion(completion: Completion) -> Completion:
    """``completion`` with its reply and reasoning made encodable, and the replacement noted on its last attempt
    (the same object when nothing needed replacing): for completions that did not come through
    :func:`~llm_bots.transport.call.complete` just now, such as those the call cache kept before replies were
    checked."""
    text, reasoning = completion.text, completion.reasoning
    if text.isascii() and reasoning.isascii() and "\\u" not in text:
        return completion
    log = completion.attempt_log
    last = log[-1] if log else CallAttempt(status=completion.outcome.value)
    text, reasoning, attempt = valid_reply(text, reasoning, last)
    if attempt is last:
        return completion
    return dataclasses.replace(completion, text=text, reasoning=reasoning, attempt_log=(*log[:-1], attempt))


def valid_messages(messages: Sequence[Mapping[str, Any]]) -> Sequence[Mapping[str, Any]]:
    """``messages`` with every text content encodable (the same list when it already is: nearly always)."""
    fixed: list[Mapping[str, Any]] | None = None
    for index, message in enumerate(messages):
        content = message.get("content")
        if not isinstance(content, str) or content.isascii():
            continue
        valid, replaced = valid_text(content)
        if replaced:
            logger.warning("a prompt message held unencodable code points (%s); sent with U+FFFD", ", ".join(replaced))
            if fixed is None:
                fixed = list(messages)
            fixed[index] = {**message, "content": valid}
    return messages if fixed is None else fixed
