"""Context policies: which of a seat's pool messages an LLM is shown each turn, and whether a prompt fits.

The paper shows a seat its whole pool, as one growing chat (the ``full`` policy, every task's default unless its
adapter says otherwise). A long game outgrows any context window that way, and re-sends every earlier turn at every
call. Two smaller policies select from the same pool, so the prompt is still exactly pool messages plus the task's
answer texts:

* ``window``: the rules, the pool messages of the last ``k`` rounds (``context_window_rounds``) and the current
  observation, in pool order;
* ``state``: the rules and the current observation (enough where the observation has perfect recall, or the game
  has perfect information).

Under ``window`` and ``state`` a turn's first ask is one ``user`` message: the selected messages' texts (the
referee's verbatim, a seat's quoted, the seat's own moves too, quoted under its own label), then the answer format.
Re-asks append the reply and the re-ask text, as under ``full``.

**Fit before calling.** Before every ask the bot counts the prompt's tokens (:func:`count_tokens`) against the
model's window (:func:`context_window`) minus what the reply may take (:func:`reply_reserve`); a policy that does
not fit gives way to the next smaller one (:data:`POLICIES` order), and each one skipped is recorded as a
``context_overflow`` transport attempt that sent nothing (:func:`skipped_attempt`). Only when even ``state`` does
not fit is the turn a ``context_overflow`` with the task's stand-in move.
"""

from __future__ import annotations

import asyncio
import json
import logging
import urllib.request
from collections.abc import Mapping, Sequence
from typing import Any

from deepeval_games.core.bot import CallAttempt, Observation
from deepeval_games.core.message_pool import REFEREE, Message, seat_label
from deepeval_games.core.quoting import quote_player_text
from llm_bots import model_info
from llm_bots.model_config import ModelConfig

__all__ = [
    "DEFAULT_WINDOW_ROUNDS",
    "POLICIES",
    "SKIP_PREFIX",
    "context_window",
    "count_tokens",
    "policy_text",
    "reply_reserve",
    "select",
    "skipped_attempt",
    "smaller",
]

log = logging.getLogger(__name__)

POLICIES = ("full", "window", "state")
"""The context policies, largest first: the order a prompt that does not fit falls back in."""

DEFAULT_WINDOW_ROUNDS = 4
"""Rounds of pool messages a ``window`` keeps when the player sets no ``context_window_rounds``."""

SKIP_PREFIX = "context "
"""How the error of a skipped attempt starts: ``context <policy> does not fit (...)``."""

REASONING_RESERVE = {"minimal": 1024, "low": 2048, "medium": 8192, "high": 16384}
"""Tokens reserved for a reasoning model's thinking, by ``reasoning_effort`` (on top of ``max_tokens``): thinking
tokens take room in the context like the reply does."""

_PER_MESSAGE = 8
"""Tokens a chat template adds around each message (role markers), where the count is not the server's own."""


def smaller(policy: str) -> tuple[str, ...]:
    """``policy`` and the smaller policies after it, in fallback order."""
    return POLICIES[POLICIES.index(policy) :]


def select(observation: Observation, policy: str, rounds: int = DEFAULT_WINDOW_ROUNDS) -> list[Message]:
    """The pool messages of ``observation.inbox`` that ``policy`` shows, in pool order (``full``: all of them).

    The rules are always kept, and so is the current observation (the last ``observation`` message delivered);
    a ``window`` adds every message of the last ``rounds`` rounds (an observation delivered before the move of
    round ``r`` is written in round ``r - 1``, so ``rounds = 1`` is the previous round's moves and the current
    observation).
    """
    inbox = observation.inbox
    if policy == "full":
        return list(inbox)
    current = next((m.index for m in reversed(inbox) if m.kind == "observation"), None)
    since = observation.round - rounds if policy == "window" else None
    return [m for m in inbox if m.kind == "rules" or m.index == current or (since is not None and m.round >= since)]


def _shown(message: Message) -> str:
    """A pool message as the seat is shown it: the referee's verbatim, a seat's (its own too) quoted."""
    if message.sender == REFEREE:
        return message.text
    return quote_player_text(seat_label(message.sender), message.text)


def policy_text(messages: Sequence[Message], answer: str) -> str:
    """The first ask's one user message under ``window`` or ``state``: the selected messages, then ``answer``."""
    return "\n\n".join([*(_shown(m) for m in messages), answer])


def reply_reserve(config: ModelConfig) -> int:
    """Tokens kept free for the reply: its cap, and a reasoning model's thinking budget."""
    return (config.max_tokens or 0) + REASONING_RESERVE.get(config.reasoning_effort or "", 0)


def context_window(config: ModelConfig) -> int | None:
    """The model's context window in tokens: ``context_tokens``, else the local server's, else litellm's model info
    (``max_input_tokens``, else ``max_tokens``); None when unknown (then nothing is counted)."""
    return model_info.context_window(config.model, config.context_tokens)  # a cached rerun imports no litellm


def surely_fits(messages: Sequence[Mapping[str, str]], room: int) -> bool:
    """Whether ``messages`` fit ``room`` tokens without counting them: no tokenizer makes more tokens than a text
    has UTF-8 bytes, plus a few a message for its role and framing. Only a prompt near the limit is counted."""
    size = sum(len(m["content"].encode("utf-8", "replace")) + _PER_MESSAGE for m in messages)
    return size + _PER_MESSAGE <= room


async def count_tokens(config: ModelConfig, messages: Sequence[Mapping[str, str]]) -> int:
    """The prompt's tokens: the local server's own template and tokenizer for a ``local/`` model (a generous
    estimate if it cannot say), else litellm's token counter."""
    if config.is_local:
        counted = await asyncio.to_thread(_local_count, config, messages)
        if counted is not None:
            return counted
        return sum(len(m["content"]) // 3 + _PER_MESSAGE for m in messages)
    return model_info.token_count(config.model, messages, _PER_MESSAGE)


def _post(url: str, body: Mapping[str, Any]) -> Any:
    request = urllib.request.Request(
        url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}, method="POST"
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.loads(response.read())


def _local_count(config: ModelConfig, messages: Sequence[Mapping[str, str]]) -> int | None:
    """The local server's count of the prompt as it templates it; None if the server cannot tell."""
    from llm_bots.local.server import get_shared_server

    try:
        server = get_shared_server(config.model, seed=config.seed)
        prompt = _post(server.address + "/apply-template", {"messages": list(messages)})["prompt"]
        return len(_post(server.address + "/tokenize", {"content": prompt})["tokens"])
    except Exception as exc:  # an older server without these endpoints: the caller estimates
        log.info("the local server could not count a prompt (%s); estimated", exc)
        return None


def skipped_attempt(policy: str, tokens: int, reserve: int, window: int, ask: int) -> CallAttempt:
    """The record of a policy whose prompt did not fit: a ``context_overflow`` attempt that sent nothing (``tokens``
    -1: the very prompt the provider had just found too long)."""
    if tokens < 0:
        error = f"{SKIP_PREFIX}{policy} does not fit (the prompt the provider found too long)"
    else:
        error = f"{SKIP_PREFIX}{policy} does not fit ({tokens} prompt tokens + {reserve} for the reply > {window})"
    return CallAttempt(ask=ask, status="context_overflow", error=error)
