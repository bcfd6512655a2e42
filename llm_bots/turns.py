"""What a text seat is shown each turn, and how its answer is read: shared by model and human seats.

A seat played through text (an :class:`~llm_bots.llm_bot.LLMBot`, a :class:`~llm_bots.players.human.HumanBot`)
is shown, each turn, the pool messages the referee delivered since its last turn (the referee's verbatim,
another seat's quoted) followed by the task's answer format (:func:`turn_message`); its answer is read by
the task adapter, and a parser that fails is an invalid answer, never a crash (:func:`safe_parse`).
This module imports no model client, so a human seat does not load litellm.
"""

from __future__ import annotations

import logging

from deepeval_games.core.bot import Observation
from deepeval_games.core.message_pool import REFEREE, seat_label
from deepeval_games.core.quoting import quote_player_text
from llm_bots.adapters import Parsed, TaskAdapter

__all__ = ["delivered_text", "safe_parse", "turn_message"]

log = logging.getLogger(__name__)


def delivered_text(observation: Observation, seen: int) -> tuple[list[str], int]:
    """The pool messages delivered since the first ``seen`` ones, as shown, and the number now shown.

    Pool messages are taken as delivered: the referee's verbatim, another seat's quoted (it can never pass for
    the referee's words); the seat's own moves are left out (a model has them in its chat as its replies, a
    person typed them).
    """
    parts = []
    for message in observation.inbox[seen:]:
        if message.sender == observation.seat:
            continue
        parts.append(
            message.text if message.sender == REFEREE else quote_player_text(seat_label(message.sender), message.text)
        )
    return parts, len(observation.inbox)


def turn_message(adapter: TaskAdapter, observation: Observation, seen: int) -> tuple[str, int]:
    """This turn's message and the number of pool messages it has now shown.

    ``seen`` counts the messages of ``observation.inbox`` shown at earlier turns. The message is what the
    referee delivered since then (:func:`delivered_text`), then the adapter's answer format.
    """
    parts, shown = delivered_text(observation, seen)
    parts.append(adapter.format_text(observation))
    return "\n\n".join(parts), shown


def safe_parse(adapter: TaskAdapter, reply: str, observation: Observation) -> Parsed:
    """The adapter's reading of an answer; one that makes the parser fail is invalid, never a crash."""
    try:
        return adapter.parse(reply, observation)
    except Exception as exc:  # a seat can send anything: no answer may stop a tournament
        log.warning("parser %s failed on a reply (%s); treated as invalid", type(adapter).__name__, exc)
        return Parsed(error="the reply could not be read.")
