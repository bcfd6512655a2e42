"""The LLM bot: any litellm model as an OpenSpiel bot.

One :class:`LLMBot` class serves every provider. Per match it keeps the chat the paper describes: its
own past replies as ``assistant`` messages, everything the referee delivered as ``user`` messages (or,
for completion-style models, one transcript with ``Human:/Assistant:`` or ``User:/Bot:`` tags). Each
turn it asks the model for a move through the task's adapter; a reply that is not a valid move is
re-asked with the reason, at most ``max_reasks`` times, then the task's penalty applies. Every turn
ends with one outcome: ok, reasked, invalid, refusal or context_overflow; infrastructure failures
abort the match (it is rescheduled, never scored).
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import litellm
import numpy as np
import pyspiel

from deepeval_games.bot import Decision, DeepEvalBot, Observation, Outcome
from deepeval_games.errors import SpecError
from deepeval_games.records import JUDGE_SEAT
from deepeval_games.spec import PlayerSpec
from llm_bots.adapters import Parsed, TaskAdapter, adapter_for
from llm_bots.call_cache import CallCache, call_key
from llm_bots.model_config import ModelConfig
from llm_bots.parsing import looks_like_refusal
from llm_bots.transport import Budget, Completion, complete, supports_json_schema
from llm_bots.transport import Outcome as CallOutcome

__all__ = ["PROMPT_STYLES", "BotSettings", "LLMBot", "ModelRuntime", "TurnLog", "make_llm_bot"]

log = logging.getLogger(__name__)

PROMPT_STYLES = {"chat": None, "human_assistant": ("Human", "Assistant"), "user_bot": ("User", "Bot")}
_BOT_KEYS = ("max_reasks", "prompt_style", "json_mode")


@dataclass(frozen=True)
class BotSettings:
    """How the bot talks to its model (spec keys beside the model settings)."""

    max_reasks: int = 2
    """Re-asks after a reply that is not a valid move, before the task's penalty applies."""
    prompt_style: str = "chat"
    """``chat`` (role messages), ``human_assistant`` or ``user_bot`` (one tagged transcript)."""
    json_mode: str = "auto"
    """``auto``: use JSON-schema mode for local models and where litellm reports provider support; ``on``; ``off``."""

    def __post_init__(self) -> None:
        if not isinstance(self.max_reasks, int) or self.max_reasks < 0:
            raise SpecError(f"max_reasks must be a whole number >= 0, got {self.max_reasks!r}")
        if self.prompt_style not in PROMPT_STYLES:
            raise SpecError(f"prompt_style must be one of {', '.join(PROMPT_STYLES)}, got {self.prompt_style!r}")
        if self.json_mode not in ("auto", "on", "off"):
            raise SpecError(f"json_mode must be auto, on or off, got {self.json_mode!r}")


@dataclass
class ModelRuntime:
    """What all LLM bots of a run share: the call cache and the budget."""

    cache: CallCache | None = None
    budget: Budget | None = None
    calls: int = 0
    """Model calls actually sent (cache misses)."""
    call_log: list[str] = field(default_factory=list, repr=False)

    @classmethod
    def open(cls, cache_path: str | Path | None, budget_usd: float | None) -> ModelRuntime:
        """A runtime with a cache at ``cache_path`` (None: no cache) and an optional budget."""
        return cls(
            cache=CallCache(cache_path) if cache_path else None,
            budget=Budget(budget_usd) if budget_usd is not None else None,
        )

    def close(self) -> None:
        """Close the cache and stop the local model servers this run started."""
        if self.cache is not None:
            self.cache.close()
        local = sys.modules.get("llm_bots.local_server")  # imported only if a local model was used
        if local is not None:
            local.shutdown_all()


def _render(messages: Sequence[Mapping[str, str]], style: str) -> list[dict[str, str]]:
    tags = PROMPT_STYLES[style]
    if tags is None:
        return [dict(m) for m in messages]
    human, assistant = tags
    parts = [f"\n\n{human if m['role'] == 'user' else assistant}: {m['content']}" for m in messages]
    return [{"role": "user", "content": "".join(parts) + f"\n\n{assistant}:"}]


class LLMBot(DeepEvalBot):
    """A seat played by a language model."""

    def __init__(
        self,
        player_id: int,
        rng: np.random.Generator | None = None,
        *,
        game: pyspiel.Game,
        config: ModelConfig,
        adapter: TaskAdapter,
        settings: BotSettings | None = None,
        runtime: ModelRuntime | None = None,
        match_id: str = "",
    ) -> None:
        super().__init__(player_id, rng)
        self.game = game
        if config.seed is None:  # a sampling seed from the match seed: reruns ask the same question
            config = replace(config, seed=int(self.rng.integers(0, 2**31 - 1)))
        self.config = config
        self.adapter = adapter
        self.settings = settings or BotSettings()
        self.runtime = runtime or ModelRuntime()
        self.match_id = match_id
        self.history: list[dict[str, str]] = []
        self.turn = 0

    def identity(self) -> dict[str, Any]:
        return {
            "kind": "llm",
            "model": self.config.model,
            "prompt_version": self.adapter.prompt_version,
            "prompt_style": self.settings.prompt_style,
            "sampling": self.config.sampling_params(),
        }

    def _response_format(self, observation: Observation) -> Mapping[str, Any] | None:
        schema = self.adapter.response_schema(observation)
        if schema is None or self.settings.json_mode == "off":
            return None
        if self.settings.json_mode == "on":
            return schema
        # llama.cpp servers (local/...) enforce a JSON schema as a grammar; for others ask litellm
        return schema if self.config.is_local or supports_json_schema(self.config.model) else None

    async def _call(self, response_format: Mapping[str, Any] | None, ask: int) -> Completion:
        messages = _render(self.history, self.settings.prompt_style)
        cache = self.runtime.cache
        key = ""
        if cache is not None:
            key = call_key(
                self.config,
                messages,
                response_format=response_format,
                match_id=self.match_id,
                seat=self.player_id,
                turn=self.turn,
                ask=ask,
            )
            cached = cache.get(key)
            if cached is not None:
                return cached
        self.runtime.calls += 1
        completion = await complete(self.config, messages, response_format=response_format, budget=self.runtime.budget)
        if cache is not None:
            cache.put(key, completion)
        return completion

    async def act(self, observation: Observation) -> Decision:
        """Ask the model for this turn's move, re-asking on invalid replies."""
        self.history.append({"role": "user", "content": self.adapter.turn_prompt(observation, self.turn == 0)})
        turn = TurnLog(prompt=tuple(_render(self.history, self.settings.prompt_style)))
        response_format = self._response_format(observation)
        error = "no reply"
        refusals = 0
        try:
            for ask in range(self.settings.max_reasks + 1):
                completion = await self._call(response_format, ask)
                turn.add(completion, ask)
                if completion.outcome is CallOutcome.CONTEXT_OVERFLOW:
                    return self._penalty(observation, Outcome.CONTEXT_OVERFLOW, "the prompt exceeds the context", turn)
                turn.replies.append(completion.text)
                # some providers reject an empty assistant message on the next call: keep a placeholder
                self.history.append({"role": "assistant", "content": completion.text or "(no reply)"})
                if completion.outcome is CallOutcome.REFUSAL:
                    refusals += 1
                    error = "the provider refused to answer (content filter)"
                else:
                    parsed = _safe_parse(self.adapter, completion.text, observation)
                    if parsed.ok:
                        outcome = Outcome.OK if ask == 0 else Outcome.REASKED
                        return turn.decision(parsed.action, parsed.text or completion.text, outcome)
                    error = parsed.error or "invalid reply"
                    if looks_like_refusal(completion.text):
                        refusals += 1
                if ask < self.settings.max_reasks:
                    self.history.append({"role": "user", "content": self.adapter.reask_prompt(observation, error)})
            outcome = Outcome.REFUSAL if refusals == len(turn.replies) else Outcome.INVALID
            return self._penalty(observation, outcome, error, turn)
        finally:
            self.turn += 1

    def _penalty(self, observation: Observation, outcome: Outcome, error: str, turn: TurnLog) -> Decision:
        """No valid move this turn: the task's penalty move, with what happened on record."""
        if observation.penalty_action is not None:
            action: int | None = observation.penalty_action
        elif observation.free_text:
            action = None
        else:
            action = observation.legal_actions[0]
        log.info("seat %d: %s (%s); the task's penalty applies", self.player_id, outcome.value, error)
        return turn.decision(action, turn.replies[-1] if turn.replies else "", outcome, error=error)


@dataclass
class TurnLog:
    """What one turn of an LLM bot cost and produced, across its asks."""

    prompt: tuple[Mapping[str, str], ...]
    replies: list[str] = field(default_factory=list)
    retries: int = 0
    model: str | None = None
    tokens_in: int = 0
    tokens_out: int = 0
    cost_usd: float = 0.0

    def add(self, completion: Completion, ask: int) -> None:
        """Account for one finished call (the ``ask``-th of the turn)."""
        self.retries = ask
        self.model = completion.model or self.model
        self.tokens_in += completion.prompt_tokens
        self.tokens_out += completion.completion_tokens
        self.cost_usd += completion.cost_usd

    def decision(self, action: int | None, text: str, outcome: Outcome, *, error: str | None = None) -> Decision:
        """The turn's :class:`Decision`."""
        return Decision(
            action=action,
            text=text,
            outcome=outcome,
            raw_replies=tuple(self.replies),
            prompt=self.prompt,
            retries=self.retries,
            model=self.model,
            tokens_in=self.tokens_in,
            tokens_out=self.tokens_out,
            cost_usd=self.cost_usd,
            error=error,
        )


def _safe_parse(adapter: TaskAdapter, reply: str, observation: Observation) -> Parsed:
    """The adapter's reading of a reply; a reply that makes the parser fail is an invalid reply, never a crash."""
    try:
        return adapter.parse(reply, observation)
    except Exception as exc:  # a model can send anything: no reply may stop a tournament
        log.warning("parser %s failed on a reply (%s); treated as invalid", type(adapter).__name__, exc)
        return Parsed(error="the reply could not be read.")


def split_player_params(params: Mapping[str, Any]) -> tuple[BotSettings, dict[str, Any]]:
    """Separate the bot's own settings from the model settings of a ``[[players]]`` entry."""
    settings = BotSettings(**{k: params[k] for k in _BOT_KEYS if k in params})
    return settings, {k: v for k, v in params.items() if k not in _BOT_KEYS}


def check_model_string(model: str) -> None:
    """A clear error for a model string litellm cannot route."""
    if model.startswith("local/"):
        return
    try:
        litellm.get_llm_provider(model)
    except Exception as exc:
        raise SpecError(
            f"unknown model {model!r}: litellm cannot tell its provider ({str(exc).splitlines()[0][:200]}). "
            "Write it as provider/model, e.g. 'openai/gpt-4o', 'anthropic/claude-3-5-sonnet-20241022', "
            "'ollama/llama3', "
            "or 'local/smollm2'."
        ) from exc


def make_llm_bot(
    player: PlayerSpec,
    game: pyspiel.Game,
    seat: int,
    rng: np.random.Generator,
    *,
    match_id: str = "",
    runtime: ModelRuntime | None = None,
) -> LLMBot:
    """Build the LLM bot of a ``[[players]]`` (or ``[judge]``) entry for one seat."""
    assert player.model is not None
    if seat == JUDGE_SEAT:  # the judge: temperature 0, no default verdict (llm_bots.judge)
        from llm_bots.judge import make_llm_judge

        return make_llm_judge(player, game, rng, match_id=match_id, runtime=runtime)
    settings, model_params = split_player_params(player.params)
    config = ModelConfig.from_mapping({"model": player.model, **model_params})
    check_model_string(config.model)
    adapter = adapter_for(game.get_type().short_name)
    return LLMBot(
        seat, rng, game=game, config=config, adapter=adapter, settings=settings, runtime=runtime, match_id=match_id
    )
