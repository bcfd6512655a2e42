"""The JSON schema of a verdict, for providers (and local llama.cpp servers) that enforce one."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from deepeval_games.core.bot import Observation
from deepeval_games.core.records import JUDGE_SEAT
from llm_bots.judge.verdict import role_labels

__all__ = ["judge_response_schema", "verdict_response_format"]


def verdict_response_format(roles: Sequence[str], low: int, high: int) -> dict[str, Any]:
    """The JSON schema of a verdict, for providers (and local llama.cpp servers) that enforce one."""
    labels = role_labels(roles)
    entry = {
        "type": "object",
        "properties": {"evaluation": {"type": "string"}, "score": {"type": "integer", "minimum": low, "maximum": high}},
        "required": ["evaluation", "score"],
        "additionalProperties": False,
    }
    return {
        "type": "json_schema",
        "json_schema": {
            "name": "verdict",
            "strict": True,
            "schema": {
                "type": "object",
                "properties": {label: entry for label in labels},
                "required": list(labels),
                "additionalProperties": False,
            },
        },
    }


def judge_response_schema(observation: Observation) -> dict[str, Any] | None:
    """A judged task adapter's ``response_schema``: the verdict's schema for the judge seat, None for the players."""
    if observation.seat != JUDGE_SEAT:
        return None
    fields = observation.fields
    return verdict_response_format(fields["roles"], int(fields["score_min"]), int(fields["score_max"]))
