"""Calling a model: litellm calls with retries and error classes, the model-call cache, rate limits."""
