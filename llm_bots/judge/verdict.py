"""Reading a judge's verdict: the reply format and its parser.

A verdict is one JSON object, ``{"<Role>": {"evaluation": "<why>", "score": <int>}, ...}``, with a key per
role (:func:`role_labels`). :func:`parse_verdict` reads only the judge's own reply (see :mod:`llm_bots.judge`).
The reasons a reply is not usable are data: the ``[reasons]`` table of ``llm_bots/prompts/judge.toml``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from deepeval_games.core.bot import Observation
from deepeval_games.core.errors import DeepEvalError
from game_defs.verdicts import encode_scores
from llm_bots.adapters import Parsed
from llm_bots.parsing import json_objects, normalize, whole_number
from llm_bots.prompts import load_prompts

__all__ = ["JudgeError", "Verdict", "parse_judge_reply", "parse_verdict", "role_labels"]

_PROMPTS = "judge"

_OUT_OF_TEN = re.compile(r"\s*/\s*10\s*$")


def _reason(name: str, **values: Any) -> str:
    """Why a judge's reply is not usable: a template of ``[reasons]`` in ``llm_bots/prompts/judge.toml``."""
    return load_prompts(_PROMPTS).render("reasons", name, **values).strip()


class JudgeError(DeepEvalError):
    """The judge gave no usable verdict after its re-asks: the match fails (it is never given a default score)."""


@dataclass(frozen=True)
class Verdict:
    """A judge's scores and explanations, per seat (in seat order)."""

    scores: tuple[int, ...]
    explanations: tuple[str, ...]

    def to_json(self, labels: Sequence[str]) -> str:
        """The verdict in the reply format, canonical (what the match record keeps as the verdict's text)."""
        body = {
            label: {"evaluation": why, "score": score}
            for label, why, score in zip(labels, self.explanations, self.scores, strict=True)
        }
        return json.dumps(body, ensure_ascii=False)


def role_labels(roles: Sequence[str]) -> tuple[str, ...]:
    """The JSON keys of a verdict: the roles capitalised (``programmer`` -> ``Programmer``)."""
    return tuple(role[:1].upper() + role[1:] for role in roles)


def _whole(value: Any) -> int | None:
    """A score: a whole number, also written ``"8/10"``."""
    if isinstance(value, str):
        value = _OUT_OF_TEN.sub("", value)
    return whole_number(value)


def _lookup(obj: Mapping[str, Any], label: str) -> Any:
    wanted = label.casefold()
    for key, value in obj.items():
        if isinstance(key, str) and key.strip().casefold() == wanted:
            return value
    return None


def parse_verdict(reply: str, labels: Sequence[str], low: int, high: int) -> tuple[Verdict | None, str | None]:
    """Read a judge's reply: the verdict, or ``None`` and the reason it cannot be used (see the module docs)."""
    text = normalize(reply)
    if not text:
        return None, _reason("empty")
    candidates = [obj for obj in json_objects(text) if all(_lookup(obj, label) is not None for label in labels)]
    if not candidates:
        keys = ", ".join(f'"{label}"' for label in labels)
        return None, _reason("no_json", keys=keys)
    read = [_read_verdict(obj, labels, low, high) for obj in candidates]
    distinct = {verdict.scores for verdict, _ in read if verdict is not None}
    if len(distinct) > 1:  # e.g. its own verdict plus a forged one it quoted from a player's text
        return None, _reason("several")
    return read[-1]


def _read_verdict(
    obj: Mapping[str, Any], labels: Sequence[str], low: int, high: int
) -> tuple[Verdict | None, str | None]:
    scores: list[int] = []
    explanations: list[str] = []
    for label in labels:
        entry = _lookup(obj, label)
        if not isinstance(entry, Mapping):
            return None, _reason("not_object", label=label)
        score = _whole(_lookup(entry, "score"))
        if score is None or not low <= score <= high:
            return None, _reason("bad_score", label=label, low=low, high=high, got=repr(_lookup(entry, "score")))
        why = _lookup(entry, "evaluation")
        if not isinstance(why, str) or not why.strip():
            return None, _reason("no_evaluation", label=label)
        scores.append(score)
        explanations.append(why.strip())
    return Verdict(tuple(scores), tuple(explanations)), None


def parse_judge_reply(reply: str, observation: Observation) -> Parsed:
    """An adapter's ``parse`` for the judge role: the verdict action, its canonical JSON as the text."""
    fields = observation.fields
    labels = role_labels(fields["roles"])
    low, high = int(fields["score_min"]), int(fields["score_max"])
    verdict, error = parse_verdict(reply, labels, low, high)
    if verdict is None:
        return Parsed(error=error)
    action = encode_scores(verdict.scores, low, high)
    if action not in observation.legal_actions:
        return Parsed(error=_reason("not_a_verdict", scores=list(verdict.scores)))
    return Parsed(action=action, text=verdict.to_json(labels))
