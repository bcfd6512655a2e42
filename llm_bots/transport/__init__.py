"""Calling a model: litellm calls with retries and error classes, the model-call cache, rate limits.

Modules:

- :mod:`~llm_bots.transport.call`: :func:`~llm_bots.transport.call.complete`, the one way a model is called (what it
  guarantees is written there), and the prompt's size against the model's context;
- :mod:`~llm_bots.transport.errors`: a call's outcomes, how a failed attempt is handled, the exceptions;
- :mod:`~llm_bots.transport.results`: a finished call (``Completion``) and the shared spending limit (``Budget``);
- :mod:`~llm_bots.transport.model_ids`: whether a reported model id is the configured one; JSON-schema support;
- :mod:`~llm_bots.transport.retries`: error classification, Retry-After, backoff, fatal messages;
- :mod:`~llm_bots.transport.session`: the aiohttp session shared by a loop's calls;
- :mod:`~llm_bots.transport.plan`: what every call of one config sends (its call plan), unpriced models;
- :mod:`~llm_bots.transport.responses`: reading a response (text, usage, tokens, cost);
- :mod:`~llm_bots.transport.unencodable`: replies and prompts made encodable (lone surrogates);
- :mod:`~llm_bots.transport.watchdog`: the asyncio guard behind litellm's own timeout;
- :mod:`~llm_bots.transport.call_cache`: the model-call cache;
- :mod:`~llm_bots.transport.limits`: the run's limiter (concurrency, requests and tokens per minute), which its
  model runtime carries.

Importing any of them sets ``LITELLM_LOCAL_MODEL_COST_MAP=True`` (unless already set), so litellm, imported only when
a call is made, prices calls from its installed price table instead of fetching one from the internet.
"""

import os

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
