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

import msgspec
import numpy as np
import pyspiel

from deepeval_games.core import task
from deepeval_games.core.bot import CallAttempt, Decision, DeepEvalBot, Observation, Outcome, Usage
from deepeval_games.core.errors import SpecError
from llm_bots import gc_policy, model_info
from llm_bots.adapters import TaskAdapter, adapter_for, cut_off_reason
from llm_bots.context import (
    DEFAULT_WINDOW_ROUNDS,
    POLICIES,
    context_window,
    count_tokens,
    policy_text,
    reply_reserve,
    select,
    skipped_attempt,
    smaller,
    surely_fits,
)
from llm_bots.live import LiveCalls
from llm_bots.local.grammar import bounded_schema
from llm_bots.model_config import BOT_SETTING_KEYS, DEFAULT_MAX_TOKENS, ModelConfig, resolve_max_tokens
from llm_bots.parsing import looks_like_refusal, strip_reasoning
from llm_bots.transport.call import complete
from llm_bots.transport.call_cache import CallCache, call_key
from llm_bots.transport.errors import Outcome as CallOutcome
from llm_bots.transport.limits import PROCESS_LIMITER, Limiter
from llm_bots.transport.results import Budget, Completion
from llm_bots.turns import safe_parse, turn_message

__all__ = ["PROMPT_STYLES", "BotSettings", "LLMBot", "ModelRuntime", "make_llm_bot"]

log = logging.getLogger(__name__)

PROMPT_STYLES = {"chat": None, "human_assistant": ("Human", "Assistant"), "user_bot": ("User", "Bot")}


@dataclass(frozen=True)
class BotSettings:
    """How the bot talks to its model (spec keys beside the model settings)."""

    max_reasks: int = 2
    """Re-asks after a reply that is not a valid move, before the task's penalty applies."""
    prompt_style: str = "chat"
    """``chat`` (role messages), ``human_assistant`` or ``user_bot`` (one tagged transcript)."""
    json_mode: str = "auto"
    """Where the task asks for a JSON answer (its adapter gives a schema): ``auto`` uses JSON-schema mode for local
    models and where litellm reports provider support; ``on``; ``off``. A turn asked in free text has no schema."""
    context: str | None = None
    """The context policy (:mod:`llm_bots.context`); None: the task's default."""
    context_window_rounds: int | None = None
    """Rounds of pool messages a ``window`` shows (None: :data:`~llm_bots.context.DEFAULT_WINDOW_ROUNDS`)."""

    def __post_init__(self) -> None:
        if not isinstance(self.max_reasks, int) or self.max_reasks < 0:
            raise SpecError(f"max_reasks must be a whole number >= 0, got {self.max_reasks!r}")
        if self.prompt_style not in PROMPT_STYLES:
            raise SpecError(f"prompt_style must be one of {', '.join(PROMPT_STYLES)}, got {self.prompt_style!r}")
        if self.json_mode not in ("auto", "on", "off"):
            raise SpecError(f"json_mode must be auto, on or off, got {self.json_mode!r}")
        if self.context is not None and self.context not in POLICIES:
            raise SpecError(f"context must be one of {', '.join(POLICIES)}, got {self.context!r}")
        rounds = self.context_window_rounds
        if rounds is not None and (not isinstance(rounds, int) or isinstance(rounds, bool) or rounds < 1):
            raise SpecError(f"context_window_rounds must be a whole number >= 1, got {rounds!r}")


@dataclass
class ModelRuntime:
    """What all LLM bots of a run share, handed to each of their calls: the call cache, the budget and the limiter."""

    cache: CallCache | None = None
    budget: Budget | None = None
    limiter: Limiter = field(default_factory=lambda: PROCESS_LIMITER, repr=False)
    """The per-model limits every call of the run goes through (:mod:`llm_bots.transport.limits`): this process's
    (:data:`~llm_bots.transport.limits.PROCESS_LIMITER`, shared with every other run and call of the process), or a
    worker's proxy of the one its driver hosts."""
    calls: int = 0
    """Model calls actually sent (cache misses)."""
    sent: dict[str, int] = field(default_factory=dict)
    """Per configured model string, the calls actually sent."""
    hits: dict[str, int] = field(default_factory=dict)
    """Per configured model string, the asks answered from the cache."""
    call_log: list[str] = field(default_factory=list, repr=False)
    reported: dict[str, dict[str, set[str]]] = field(default_factory=dict, repr=False)
    """Per configured model string: the model ids (``models``) and ``system_fingerprints`` its replies reported,
    cache hits included (for the run manifest)."""
    holds_gc: bool = field(default=False, repr=False)
    live: LiveCalls = field(default_factory=LiveCalls, repr=False)
    """The calls in flight and each model's recent speed, for the run's progress line (:mod:`llm_bots.live`)."""
    """Whether this runtime holds the run's collector setting (:mod:`llm_bots.gc_policy`) until :meth:`close`."""

    def note(self, model: str, completion: Completion) -> None:
        """Remember what a reply of ``model`` reported about the model behind it."""
        seen = self.reported.get(model)
        if seen is None:
            seen = self.reported[model] = {"models": set(), "system_fingerprints": set()}
        if completion.model:
            seen["models"].add(completion.model)
        if completion.system_fingerprint:
            seen["system_fingerprints"].add(completion.system_fingerprint)

    @classmethod
    def open(cls, cache_path: str | Path | None, budget_usd: float | None) -> ModelRuntime:
        """A runtime with a cache at ``cache_path`` (None: no cache) and an optional budget.

        While it is open the cyclic garbage collector runs less often (:mod:`llm_bots.gc_policy`); :meth:`close`
        puts the process's setting back.
        """
        runtime = cls(
            cache=CallCache(cache_path) if cache_path else None,
            budget=Budget(budget_usd) if budget_usd is not None else None,
        )
        gc_policy.hold()
        runtime.holds_gc = True
        return runtime

    def close(self) -> None:
        """Close the cache, stop the local model servers this run started and put the collector's setting back."""
        if self.holds_gc:
            self.holds_gc = False
            gc_policy.release()
        if self.cache is not None:
            self.cache.close()
        local = sys.modules.get("llm_bots.local.server")  # imported only if a local model was used
        if local is not None:
            local.shutdown_all()


def _render(messages: Sequence[dict[str, str]], style: str) -> list[dict[str, str]]:
    """The messages sent for a chat so far: the chat's own messages (never changed once added: they are shared
    with the turn's record, which copies them, and the transport copies what it hands to litellm), or one tagged
    transcript."""
    tags = PROMPT_STYLES[style]
    if tags is None:
        return list(messages)
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
            config = config.with_valid(seed=int(self.rng.integers(0, 2**31 - 1)))
        self.config = config
        self.adapter = adapter
        self.settings = settings or BotSettings()
        self.runtime = runtime or ModelRuntime()
        self.match_id = match_id
        self.history: list[dict[str, str]] = []
        self.turn = 0
        self.round = 0
        """The match's round of the turn being played (what the progress line shows while the model answers)."""
        self._seen = 0  # pool messages already put in the chat
        self._by_role: dict[str, ModelConfig] = {}  # the config of a turn, per role
        self._max_chars: int | None = None  # the task's longest reply, read at the first call
        self._json_schema: bool | None = None  # whether the model takes a JSON schema, asked once
        self.policy = self.settings.context or adapter.context_policy
        """The context policy asked for (:mod:`llm_bots.context`); a turn may fall back to a smaller one."""
        self.window_rounds = self.settings.context_window_rounds or DEFAULT_WINDOW_ROUNDS

    def identity(self) -> dict[str, Any]:
        identity: dict[str, Any] = {
            "kind": "llm",
            "model": self.config.model,
            "prompt_version": self.adapter.prompt_version,
            "prompt_style": self.settings.prompt_style,
            "sampling": self.config.sampling_params(),
        }
        if self.policy != "full":  # absent under the paper's policy: records of full-pool players are unchanged
            identity["context"] = self.policy
            if self.policy == "window":
                identity["context_window_rounds"] = self.window_rounds
        return identity

    def _response_format(self, observation: Observation, config: ModelConfig | None = None) -> Mapping[str, Any] | None:
        """The turn's JSON schema when the model is held to one (not made again once the model is known not to be).
        For a local model, with the turn's settings ``config``, its free strings are bounded to fit the reply cap
        (:func:`llm_bots.local.grammar.bounded_schema`)."""
        mode = self.settings.json_mode
        if mode == "off" or self._json_schema is False:
            return None
        schema = self.adapter.response_schema(observation)
        if schema is not None and config is not None and config.is_local:
            schema = bounded_schema(schema, config.max_tokens)
        if schema is None or mode == "on":
            return schema
        # llama.cpp servers (local/...) enforce a JSON schema as a grammar; for others ask litellm (once a bot)
        if self._json_schema is None:
            self._json_schema = model_info.supports_json_schema(self.config.model)
        return schema if self._json_schema else None

    def turn_config(self, observation: Observation) -> ModelConfig:
        """The model settings of this turn: the player's, with ``max_tokens`` resolved against the task's reply
        limit for this seat's role (:func:`deepeval_games.core.task.reply_limit`, :func:`resolve_max_tokens`)."""
        role = self.adapter.role(observation)
        config = self._by_role.get(role)
        if config is None:  # once per role: the game's reply limit for a role is fixed, a config validates itself
            cap = resolve_max_tokens(self.config.max_tokens, task.reply_limit(self.game, role))
            config = self.config if cap == self.config.max_tokens else self.config.with_valid(max_tokens=cap)
            self._by_role[role] = config
        return config

    async def _call(
        self,
        messages: list[dict[str, str]],
        response_format: Mapping[str, Any] | None,
        ask: int,
        config: ModelConfig | None = None,
    ) -> Completion:
        config = config or self.config
        cache = self.runtime.cache
        key = ""
        if cache is not None:
            key = call_key(
                config,
                messages,
                response_format=response_format,
                match_id=self.match_id,
                seat=self.player_id,
                turn=self.turn,
                ask=ask,
            )
            cached = cache.get(key)
            if cached is not None:
                self.runtime.note(config.model, cached)
                self.runtime.hits[config.model] = self.runtime.hits.get(config.model, 0) + 1
                return cached
        self.runtime.calls += 1
        self.runtime.sent[config.model] = self.runtime.sent.get(config.model, 0) + 1
        live, answered = self.runtime.live, None
        handle = live.start(config.model, self.round)
        try:
            completion = await complete(
                config,
                messages,
                response_format=response_format,
                budget=self.runtime.budget,
                limiter=self.runtime.limiter,
            )
            answered = (completion.completion_tokens, completion.latency_s)
        finally:
            live.end(handle, answered)
        # cut before the reply is kept anywhere (cache, record, chat history): a huge reply is never sent back
        if self._max_chars is None:
            self._max_chars = task.max_reply_chars(self.game)
        completion = cut_reply(completion, self._max_chars)
        self.runtime.note(config.model, completion)
        if cache is not None:
            cache.put(key, completion)
        return completion

    def turn_message(self, observation: Observation) -> str:
        """This turn's user message: what the referee delivered since the last turn, then the answer format.

        See :func:`llm_bots.turns.turn_message`; the seat's own moves are already in the chat as its replies.
        """
        text, self._seen = turn_message(self.adapter, observation, self._seen)
        return text

    async def _fit(
        self,
        observation: Observation,
        config: ModelConfig,
        policies: tuple[str, ...],
        start: int,
        turn: _Exchange,
        ask: int,
        refused: list[dict[str, str]] | None = None,
    ) -> tuple[list[dict[str, str]] | None, tuple[str, ...]]:
        """The prompt of this ask under the first of ``policies`` whose prompt fits the model's context with room
        for the reply, and the policies left from it on; each one that does not fit is recorded as a skipped
        attempt. None (the smallest prompt recorded, unsent) when none fits. ``start``: where the turn's
        exchange begins in :attr:`history` (the full chat up to this turn comes before it); ``refused``: a prompt the
        provider just found too long (a policy that makes the same one is skipped)."""
        window = context_window(config)
        tail = self.history[start:]
        messages: list[dict[str, str]] = []
        for at, policy in enumerate(policies):
            if policy == "full":
                chat = self.history
            else:
                selected = select(observation, policy, self.window_rounds)
                chat = [{"role": "user", "content": policy_text(selected, self.adapter.format_text(observation))}]
                chat.extend(tail)
            messages = _render(chat, self.settings.prompt_style)
            if messages == refused:
                turn.attempts.append(skipped_attempt(policy, -1, reply_reserve(config), -1, ask))
                continue
            if window is None:  # unknown window: nothing to count against (the provider says if it overflows)
                return messages, policies[at:]
            reserve = reply_reserve(config)
            if surely_fits(messages, window - reserve):
                return messages, policies[at:]
            tokens = await count_tokens(config, messages)
            if tokens + reserve <= window:
                return messages, policies[at:]
            turn.attempts.append(skipped_attempt(policy, tokens, reserve, window, ask))
        if messages != refused:  # the smallest prompt, on record though never sent (the refused one is already)
            turn.prompts.append(tuple(messages))
        return None, policies[-1:]

    async def act(self, observation: Observation) -> Decision:
        """Ask the model for this turn's move, re-asking on invalid replies; each ask under the largest context
        policy that fits (:meth:`_fit`)."""
        self.history.append({"role": "user", "content": self.turn_message(observation)})
        self.round = observation.round
        start = len(self.history)
        turn = _Exchange()
        config = self.turn_config(observation)
        response_format = self._response_format(observation, config)
        policies = smaller(self.policy)
        refused: list[dict[str, str]] | None = None
        error = "no reply"
        refusals = 0
        cut = False
        try:
            ask = 0
            while ask <= self.settings.max_reasks:
                messages, policies = await self._fit(observation, config, policies, start, turn, ask, refused)
                if messages is None:
                    return self._penalty(observation, Outcome.CONTEXT_OVERFLOW, _OVERFLOW, turn.decision())
                completion = await self._call(messages, response_format, ask, config)
                turn.add(messages, completion, ask)
                if completion.outcome is CallOutcome.CONTEXT_OVERFLOW:
                    if len(policies) > 1:  # the provider found it too long after all: the same ask, smaller
                        policies, refused = policies[1:], messages
                        continue
                    return self._penalty(observation, Outcome.CONTEXT_OVERFLOW, _OVERFLOW, turn.decision())
                answer = strip_reasoning(completion.text)  # the record keeps the raw reply, thinking included
                said = answer if answer != completion.text.strip() else completion.text
                # some providers reject an empty assistant message on the next call: keep a placeholder
                self.history.append({"role": "assistant", "content": said or "(no reply)"})
                cut = completion.finish_reason == "length" and completion.outcome is not CallOutcome.REFUSAL
                if completion.outcome is CallOutcome.REFUSAL:
                    refusals += 1
                    error = "the provider refused to answer (content filter)"
                elif cut:  # never read a cut reply as a move: its last answer may not be the model's last word
                    error = cut_off_reason(config.max_tokens or DEFAULT_MAX_TOKENS)
                else:
                    parsed = safe_parse(self.adapter, answer, observation)
                    if parsed.ok:
                        outcome = Outcome.OK if ask == 0 else Outcome.REASKED
                        return turn.decision(parsed.action, parsed.text or answer, outcome)
                    error = parsed.error or "invalid reply"
                    if looks_like_refusal(answer):
                        refusals += 1
                if ask < self.settings.max_reasks:
                    self.history.append({"role": "user", "content": self.adapter.reask_text(observation, error)})
                ask += 1
            if cut:
                outcome = Outcome.TRUNCATED
            else:
                outcome = Outcome.REFUSAL if refusals == len(turn.raw_replies) else Outcome.INVALID
            return self._penalty(observation, outcome, error, turn.decision())
        finally:
            self.turn += 1

    def _penalty(self, observation: Observation, outcome: Outcome, error: str, decision: Decision) -> Decision:
        """No valid move this turn: no action, so the referee applies the task's penalty (or a random legal move)."""
        log.info("seat %d: %s (%s); the penalty applies", self.player_id, outcome.value, error)
        last = decision.raw_replies[-1] if decision.raw_replies else ""
        return msgspec.structs.replace(decision, action=None, text=last, outcome=outcome, error=error)


_OVERFLOW = "the prompt exceeds the context"


def cut_reply(completion: Completion, max_chars: int) -> Completion:
    """``completion`` with its reply (and any reasoning text) cut to ``max_chars`` characters, the number of
    characters cut from the reply in ``cut_chars``; unchanged when it fits."""
    if len(completion.text) <= max_chars and len(completion.reasoning) <= max_chars:
        return completion
    over = max(0, len(completion.text) - max_chars)
    log.warning("a reply of %d characters was cut to the task's maximum of %d", len(completion.text), max_chars)
    return replace(
        completion,
        text=completion.text[:max_chars],
        reasoning=completion.reasoning[:max_chars],
        cut_chars=completion.cut_chars + over,
    )


class _Exchange:
    """A turn's exchange with the model so far, one finished call (ask) at a time; :meth:`decision` makes the
    turn's :class:`Decision` once, when the turn ends."""

    __slots__ = (
        "attempts",
        "cut_chars",
        "finish_reasons",
        "model",
        "prompts",
        "raw_replies",
        "reasoning",
        "retries",
        "usage",
    )

    def __init__(self) -> None:
        self.attempts: list[CallAttempt] = []
        self.cut_chars: list[int] = []
        self.prompts: list[tuple[dict[str, str], ...]] = []
        self.raw_replies: list[str] = []
        self.finish_reasons: list[str | None] = []
        self.reasoning: list[str] = []
        self.retries = 0
        self.model: str | None = None
        self.usage = Usage()

    def add(self, messages: Sequence[dict[str, str]], completion: Completion, ask: int) -> None:
        """One finished call (the ``ask``-th): its prompt, reply, model, tokens and cost, its transport attempts
        (retries included) and what was cut from its reply. A context overflow sent nothing and got no reply."""
        self.attempts.extend(a if a.ask == ask else replace(a, ask=ask) for a in completion.attempt_log)
        self.prompts.append(tuple(messages))
        if completion.outcome is not CallOutcome.CONTEXT_OVERFLOW:
            self.cut_chars.append(completion.cut_chars)
            self.raw_replies.append(completion.text)
            self.finish_reasons.append(completion.finish_reason)
            self.reasoning.append(completion.reasoning)
        self.retries = ask
        self.model = completion.model or self.model
        self.usage += completion.spent

    def decision(
        self, action: int | None = None, text: str = "", outcome: Outcome = Outcome.OK, error: str | None = None
    ) -> Decision:
        """The turn's decision: ``action`` and ``text`` (no action: the text of the last reply is filled in by the
        caller), with everything asked so far."""
        return Decision(
            action=action,
            text=text,
            outcome=outcome,
            raw_replies=tuple(self.raw_replies),
            prompts=tuple(self.prompts),
            retries=self.retries,
            model=self.model,
            error=error,
            attempts=tuple(self.attempts),
            cut_chars=tuple(self.cut_chars),
            finish_reasons=tuple(self.finish_reasons),
            reasoning=tuple(self.reasoning),
            **self.usage.fields(),
        )


def split_player_params(params: Mapping[str, Any]) -> tuple[BotSettings, dict[str, Any]]:
    """Separate the bot's own settings from the model settings of a ``[[players]]`` entry."""
    settings = BotSettings(**{k: params[k] for k in BOT_SETTING_KEYS if k in params})
    return settings, {k: v for k, v in params.items() if k not in BOT_SETTING_KEYS}


def check_model_string(model: str) -> None:
    """A clear error for a model string litellm cannot route."""
    error = model_info.provider_error(model)  # looked up once per model string (and remembered across runs)
    if error is not None:
        raise SpecError(
            f"unknown model {model!r}: litellm cannot tell its provider ({error}). "
            "Write it as provider/model, e.g. 'openai/gpt-4o', 'anthropic/claude-3-5-sonnet-20241022', "
            "'ollama/llama3', "
            "or 'local/smollm2'."
        )


_configs: dict[tuple[str, tuple[tuple[str, type, Any], ...]], tuple[BotSettings, ModelConfig]] = {}
"""The bot settings and checked model config of a ``[[players]]`` entry, by its model string and keys (an LLM
seat is built for every match; its entry is read and checked once)."""


def _player_config(model: str, params: Mapping[str, Any]) -> tuple[BotSettings, ModelConfig]:
    """The bot settings and model config of an entry (checked: a clear error for a bad value or model string)."""
    try:
        entries = ((k, type(v), tuple(v) if isinstance(v, list) else v) for k, v in params.items())
        key = (model, tuple(sorted(entries, key=lambda entry: entry[0])))
        hash(key)
    except TypeError:  # a value that is no plain setting: checked every time (and refused by the checks)
        key = None
    known = _configs.get(key) if key is not None else None
    if known is not None:
        return known
    settings, model_params = split_player_params(params)
    config = ModelConfig.from_mapping({"model": model, **model_params})
    check_model_string(config.model)
    if key is not None and len(_configs) < 1024:
        _configs[key] = (settings, config)
    return settings, config


def make_llm_bot(
    model: str,
    params: Mapping[str, Any],
    game: pyspiel.Game,
    seat: int,
    rng: np.random.Generator,
    *,
    match_id: str = "",
    runtime: ModelRuntime | None = None,
) -> LLMBot:
    """Build the LLM bot of a ``[[players]]`` (or ``[judge]``) entry for one seat.

    ``model`` is the entry's model string and ``params`` its other keys (model and bot settings).
    """
    settings, config = _player_config(model, params)
    adapter = adapter_for(game)
    return LLMBot(
        seat, rng, game=game, config=config, adapter=adapter, settings=settings, runtime=runtime, match_id=match_id
    )
