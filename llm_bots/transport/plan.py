"""The call plan: what every call of one model config sends and checks the same way (`CallPlan`, made once per config
object by `call_plan`), the keyword arguments of one call (`plan_kwargs`, the prompt marked for the provider's cache
where it caches only what is marked), and the models litellm cannot price (`learn_unpriced`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from llm_bots import inline_setup, model_info
from llm_bots.model_config import ModelConfig
from llm_bots.transport import limits
from llm_bots.transport.responses import read_field

__all__ = ["CallPlan", "call_plan", "learn_unpriced", "plan_kwargs"]

_GUARD_GRACE_S = 2.0  # the asyncio guard fires this long after litellm's own timeout should have


def plan_kwargs(
    plan: CallPlan,
    api_key: str | None,
    messages: Sequence[Mapping[str, Any]],
    response_format: Any,
    mock_response: Any,
) -> dict[str, Any]:
    """The keyword arguments of ``litellm.acompletion`` for one call from the config's call plan, in this order: model,
    messages, timeout, retries off, ``drop_params``, ``api_base``, ``api_key``, the sampling settings that are set,
    then ``response_format`` and ``mock_response`` when given."""
    sent = list(map(dict, messages))
    if plan.marks_cache and sent:
        sent[-1] = _cache_marked(sent[-1])
    kwargs = {**plan.head, "messages": sent, **plan.tail}
    if api_key is not None:
        kwargs["api_key"] = api_key
    kwargs.update(plan.sampling)
    if response_format is not None:
        kwargs["response_format"] = response_format
    if mock_response is not None:
        kwargs["mock_response"] = mock_response
    return kwargs


_CACHE_MARK: Mapping[str, str] = {"type": "ephemeral"}


def _cache_marked(message: dict[str, Any]) -> dict[str, Any]:
    """``message`` with its text as one content block marked for Anthropic's prompt cache (``cache_control``): the
    prompt up to its end is cached, and the seat's next prompt, which starts with it, reads it from the cache."""
    content = message.get("content")
    if not isinstance(content, str):
        return message
    return {**message, "content": [{"type": "text", "text": content, "cache_control": dict(_CACHE_MARK)}]}


def _marks_cache(config: ModelConfig) -> bool:
    """Whether a call of ``config`` marks its prompt for the provider's cache: ``cache_control`` set, and an
    Anthropic (Claude) model, the providers that cache only what is marked."""
    if not config.cache_control:
        return False
    return model_info.provider(config.model) == "anthropic" or "claude" in config.model.lower()


class CallPlan:
    """What every call of one model config sends and checks the same way, made once per config object (a turn's
    config serves every call of its seat and role in a match).

    Attributes:
        config: the config itself (kept alive, so its ``id`` is not reused while the plan is remembered).
        head: ``model`` (the arguments before ``messages``).
        tail: ``timeout``, retries off, ``drop_params`` and ``api_base`` (the arguments after ``messages``); once
            litellm has answered a call of this model and endpoint without a price (:func:`learn_unpriced`), also a
            price of 0.0 a token, so that it does not look the model up in its price table again on every call; a
            config that gives a price (``input_cost_per_token``, ``output_cost_per_token``) passes that one instead,
            so each call is priced, and a budget charged, at it.
        sampling: the sampling settings that are set (:meth:`ModelConfig.sampling_params` without the None ones).
        limit_key: the limiter's key of the model (:func:`limits.limit_key`).
        call_limits: its limits (:func:`limits.limits_of`).
        counts_tokens: whether the model has a tokens-per-minute limit (each call's tokens are then estimated).
        guard_s: how long the asyncio guard lets a call run (litellm's timeout plus :data:`_GUARD_GRACE_S`).
        marks_cache: whether each prompt's last message is marked for the provider's prompt cache
            (:func:`_marks_cache`).
    """

    __slots__ = (
        "call_limits",
        "config",
        "counts_tokens",
        "guard_s",
        "head",
        "limit_key",
        "marks_cache",
        "sampling",
        "tail",
    )
    config: ModelConfig
    head: Mapping[str, Any]
    tail: dict[str, Any]
    sampling: Mapping[str, Any]
    limit_key: str
    call_limits: limits.Limits
    counts_tokens: bool
    guard_s: float
    marks_cache: bool

    def __init__(self, config: ModelConfig, fixed: CallPlan | None = None) -> None:
        self.config = config
        self.sampling = {name: value for name, value in config.sampling_params().items() if value is not None}
        self.marks_cache = _marks_cache(config)
        if fixed is not None:  # another config with the same endpoint, timeout and limits: its parts are shared
            self.head, self.tail, self.limit_key = fixed.head, fixed.tail, fixed.limit_key
            self.call_limits, self.counts_tokens, self.guard_s = fixed.call_limits, fixed.counts_tokens, fixed.guard_s
            return
        tail: dict[str, Any] = {
            "timeout": config.timeout_s,
            "num_retries": 0,  # litellm's own retry wrapper: off
            "max_retries": 0,  # the OpenAI/Azure SDK client's retries: off
            "drop_params": True,  # providers without e.g. `seed` ignore it rather than fail the run
        }
        if config.api_base is not None:
            tail["api_base"] = config.api_base
        if (config.model, config.api_base) in _unpriced:
            tail.update(_NO_PRICE)
        given = config.given_price
        if given is not None:  # the config's own price: litellm prices each call with it, not from its table
            tail["input_cost_per_token"], tail["output_cost_per_token"] = given
        if model_info.provider(config.model) in inline_setup.INLINE_PROVIDERS:
            inline_setup.allow(config.model)  # its set-up does no I/O: on the loop's thread (module documentation)
        self.head = {"model": config.model}
        self.tail = tail
        self.limit_key = limits.limit_key(config)
        self.call_limits = limits.limits_of(config)
        self.counts_tokens = self.call_limits.tpm is not None
        self.guard_s = config.timeout_s + _GUARD_GRACE_S


_plans: dict[int, CallPlan] = {}
"""Call plans by ``id`` of their config (each plan holds its config, so the id stays its own); cleared when full."""
_PLANS_MAX = 256

_fixed: dict[tuple[Any, ...], CallPlan] = {}
"""A plan by what its fixed parts are made of (every LLM seat of every match has a config of its own, with its
match's seed, whose plan shares them); cleared with :data:`_plans`."""


_unpriced: set[tuple[str, str | None]] = set()
"""The (model, api_base) pairs litellm answered without a price in this process (:func:`learn_unpriced`)."""

_NO_PRICE: Mapping[str, float] = {"input_cost_per_token": 0.0, "output_cost_per_token": 0.0}
"""litellm's per-call price arguments: with them a call is priced at 0.0 without looking the model up."""


def learn_unpriced(plan: CallPlan, response: Any) -> None:
    """Remember that litellm could not price ``response`` (its ``response_cost`` is None): a model it has no price
    for, such as a local or self-hosted one.

    litellm then searched its price table on every call, and again when logging it, to end with no price: about
    0.4 ms of CPU a call (bench/README.md). The plan's later calls, and every plan of the same model and endpoint,
    pass a price of 0.0 a token instead, which litellm applies without a lookup; such a call costs 0.0 either way
    (:func:`llm_bots.transport.responses._cost_usd`). Only a reply whose price litellm itself left unknown is learned
    from, so a model that it prices is never given these arguments, and neither is one answered only by litellm's
    mock.
    """
    hidden = read_field(response, "_hidden_params")
    if type(hidden) is dict and "response_cost" in hidden and hidden["response_cost"] is None:
        config = plan.config
        _unpriced.add((config.model, config.api_base))
        plan.tail.update(_NO_PRICE)  # shared by every plan of this model, endpoint and limits (``_fixed``)


def call_plan(config: ModelConfig) -> CallPlan:
    """The call plan of ``config`` (made on its first call, then looked up)."""
    plan = _plans.get(id(config))
    if plan is not None and plan.config is config:
        return plan
    key = (
        config.model,
        config.api_base,
        config.timeout_s,
        config.max_concurrency,
        config.rpm,
        config.tpm,
        config.adaptive_concurrency,
        config.retry_after_max_s,
        config.cache_control,
        config.given_price,
        limits.RATE_WINDOW_S,
        _GUARD_GRACE_S,
    )
    fixed = _fixed.get(key)
    plan = CallPlan(config, fixed)
    if len(_plans) >= _PLANS_MAX:
        _plans.clear()
        _fixed.clear()
    _plans[id(config)] = plan
    if fixed is None:
        _fixed[key] = plan
    return plan
