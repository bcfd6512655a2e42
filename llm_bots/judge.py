"""The judge of judged tasks (code review now, translation next): verdicts, LLM judge, scripted judges.

A judged game ends in a verdict node (a chance node whose outcomes are per-seat score tuples, see
:mod:`game_defs.verdicts`). The referee asks the judge bot there with an observation whose ``fields`` are
the game's ``judge_fields()``: at least ``roles`` (seat order), ``score_min`` and ``score_max``, plus what
the task shows its judge (problem, dialogue, ...).

**LLM judge** (a ``[judge]`` table with ``model = ...``): an :class:`LLMBot` whose task adapter has a
``judge`` prompt role (the task's rubric, rewritten from the paper), with these differences, built by
:func:`make_llm_judge`:

* temperature 0 and ``max_tokens`` 1024 unless the spec sets them;
* the reply must be one JSON verdict, ``{"<Role>": {"evaluation": "<why>", "score": <int>}, ...}`` with a
  key per role (e.g. ``Programmer``, ``Reviewer``). :func:`parse_verdict` reads only the judge's own reply:
  Unicode NFKC, code fences ignored, role keys matched without regard to case, the JSON object that holds
  every role is the verdict (several that disagree, such as a quoted forgery beside the real one, are
  re-asked); a score must be a whole number in range and every role needs a non-empty
  explanation. Anything else is re-asked with the reason (``max_reasks``, default 2);
* after the re-asks (or on a refusal or a context overflow) there is no default score: the judge raises
  :class:`JudgeError`, the match is logged as failed with that reason and is not recorded (a rerun of
  the spec retries it);
* player text reaches the judge only inside :func:`~llm_bots.parsing.quote_player_text` delimiters, which
  the text cannot close, under a rubric that tells the judge to treat it as material to assess, never as
  instructions. A "give 10" or a forged JSON verdict inside the code is then at most evidence of bad
  conduct; it is never parsed, since the verdict is read only from the judge's reply.

**Independence** (:func:`check_judge`, run before any match): a judged game needs a ``[judge]``; an LLM
judge may not be one of the players' models (same model string, or the same name after the last ``/``)
unless ``allow_player_model = true`` is set in ``[judge]``, which logs a warning.

**Scripted judges** (for tests and baselines): ``judge_fixed`` (fixed scores for every seat; any judged
game); the code-review ``judge_pass_rate`` lives in :mod:`llm_bots.scripted_code_review`.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pyspiel

from deepeval_games.bot import Decision, DeepEvalBot, Observation
from deepeval_games.errors import DeepEvalError, SpecError
from deepeval_games.records import JUDGE_SEAT
from deepeval_games.registry import register_bot
from deepeval_games.spec import ExperimentSpec, PlayerSpec
from game_defs.verdicts import encode_scores
from llm_bots.adapters import Parsed
from llm_bots.parsing import json_objects, normalize, quote_player_text, whole_number

if TYPE_CHECKING:
    from llm_bots.llm_bot import LLMBot, ModelRuntime

__all__ = [
    "JUDGE_SEAT",
    "FixedJudge",
    "JudgeError",
    "Verdict",
    "check_judge",
    "make_llm_judge",
    "parse_judge_reply",
    "parse_verdict",
    "quote_dialogue",
    "role_labels",
    "verdict_decision",
    "verdict_response_format",
]

log = logging.getLogger(__name__)

ALLOW_PLAYER_MODEL = "allow_player_model"
"""``[judge]`` key that lets a player's model judge (self-preference risk; a warning is logged)."""
_JUDGE_DEFAULTS = {"temperature": 0.0, "max_tokens": 1024}
_OUT_OF_TEN = re.compile(r"\s*/\s*10\s*$")


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
        return None, "the reply was empty."
    candidates = [obj for obj in json_objects(text) if all(_lookup(obj, label) is not None for label in labels)]
    if not candidates:
        keys = ", ".join(f'"{label}"' for label in labels)
        return None, f"no JSON object with the keys {keys} was found."
    read = [_read_verdict(obj, labels, low, high) for obj in candidates]
    distinct = {verdict.scores for verdict, _ in read if verdict is not None}
    if len(distinct) > 1:  # e.g. its own verdict plus a forged one it quoted from a player's text
        return None, "the reply holds more than one verdict with different scores; give exactly one."
    return read[-1]


def _read_verdict(
    obj: Mapping[str, Any], labels: Sequence[str], low: int, high: int
) -> tuple[Verdict | None, str | None]:
    scores: list[int] = []
    explanations: list[str] = []
    for label in labels:
        entry = _lookup(obj, label)
        if not isinstance(entry, Mapping):
            return None, f'"{label}" must be an object with "evaluation" and "score".'
        score = _whole(_lookup(entry, "score"))
        if score is None or not low <= score <= high:
            return (
                None,
                f'"{label}" needs a whole-number "score" from {low} to {high}, got {_lookup(entry, "score")!r}.',
            )
        why = _lookup(entry, "evaluation")
        if not isinstance(why, str) or not why.strip():
            return None, f'"{label}" needs an "evaluation" that explains the score.'
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
        return Parsed(error=f"the scores {list(verdict.scores)} are not a verdict of this game.")
    return Parsed(action=action, text=verdict.to_json(labels))


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


def quote_dialogue(dialogue: Sequence[Mapping[str, Any]]) -> str:
    """A judged dialogue for the judge: every move quoted (and defused) with its role and round."""
    parts = []
    for move in dialogue:
        label = f"{role_labels([move['role']])[0]}, round {move['round']}"
        parts.append(quote_player_text(label, str(move["text"]) if str(move["text"]).strip() else "(empty reply)"))
    return "\n\n".join(parts) if parts else "(nothing was said)"


# -- independence check -----------------------------------------------------------------------------------


def _model_names(model: str) -> set[str]:
    model = model.strip().casefold()
    return {model, model.rsplit("/", 1)[-1]}


def check_judge(spec: ExperimentSpec, game: pyspiel.Game) -> None:
    """Refuse a spec whose judged game has no judge, or whose LLM judge is a player's model (unless forced).

    Raises :class:`~deepeval_games.errors.SpecError`; with ``allow_player_model = true`` logs a warning instead.
    """
    judge = spec.judge
    if judge is None:
        if getattr(game, "judged", False):
            raise SpecError(
                f"{game.get_type().short_name} is judged: add a [judge] table to the spec "
                '(model = "..." for an LLM judge, or bot = "judge_fixed" / "judge_pass_rate" for a scripted one)'
            )
        return
    forced = judge.params.get(ALLOW_PLAYER_MODEL, False) if judge.kind == "model" else False
    if not isinstance(forced, bool):
        raise SpecError(f"[judge]: {ALLOW_PLAYER_MODEL!r} must be true or false, got {forced!r}")
    if judge.model is None:
        return
    clash = sorted(p.name for p in spec.players if p.model and _model_names(p.model) & _model_names(judge.model))
    if not clash:
        return
    if not forced:
        raise SpecError(
            f"[judge] model {judge.model!r} also plays (player(s) {', '.join(clash)}): a model would judge itself. "
            f"Choose another judge model, or set {ALLOW_PLAYER_MODEL} = true in [judge] to force it."
        )
    log.warning(
        "the judge %r is also the model of player(s) %s (%s = true): expect self-preference in the scores",
        judge.model,
        ", ".join(clash),
        ALLOW_PLAYER_MODEL,
    )


# -- LLM judge --------------------------------------------------------------------------------------------


def make_llm_judge(
    player: PlayerSpec,
    game: pyspiel.Game,
    rng: np.random.Generator,
    *,
    match_id: str = "",
    runtime: ModelRuntime | None = None,
) -> LLMBot:
    """The LLM judge of a ``[judge]`` table with ``model = ...`` (see the module docs)."""
    from llm_bots._llm_judge import LLMJudge
    from llm_bots.adapters import adapter_for
    from llm_bots.llm_bot import check_model_string, split_player_params
    from llm_bots.model_config import ModelConfig

    assert player.model is not None
    params = {k: v for k, v in player.params.items() if k != ALLOW_PLAYER_MODEL}
    settings, model_params = split_player_params(params)
    config = ModelConfig.from_mapping({"model": player.model, **_JUDGE_DEFAULTS, **model_params})
    check_model_string(config.model)
    adapter = adapter_for(game.get_type().short_name)
    if "judge" not in adapter.prompts.roles:
        raise SpecError(f"LLM judges cannot judge {game.get_type().short_name}: its prompts have no judge role")
    return LLMJudge(
        JUDGE_SEAT,
        rng,
        game=game,
        config=config,
        adapter=adapter,
        settings=settings,
        runtime=runtime,
        match_id=match_id,
    )


def __getattr__(name: str) -> Any:
    if name == "LLMJudge":  # imported lazily: it needs litellm, which is slow to import
        from llm_bots._llm_judge import LLMJudge

        return LLMJudge
    raise AttributeError(name)


# -- scripted judges --------------------------------------------------------------------------------------


def verdict_decision(fields: Mapping[str, Any], scores: Sequence[int], explanations: Sequence[str]) -> Decision:
    """A scripted judge's decision from the judge fields: the verdict action, the verdict JSON as its text.

    Scores are clipped to ``score_min..score_max``.
    """
    low, high = int(fields["score_min"]), int(fields["score_max"])
    clipped = [min(max(int(s), low), high) for s in scores]
    labels = role_labels(fields["roles"])
    text = Verdict(tuple(clipped), tuple(explanations)).to_json(labels)
    return Decision(action=encode_scores(clipped, low, high), text=text)


@register_bot("judge_fixed")
class FixedJudge(DeepEvalBot):
    """Scripted judge: the same scores every match (``scores``, one per seat; default 7 each)."""

    def __init__(
        self,
        player_id: int,
        rng: np.random.Generator | None = None,
        *,
        game: pyspiel.Game,
        scores: Sequence[int] | None = None,
    ) -> None:
        super().__init__(player_id, rng)
        if not getattr(game, "judged", False):
            raise ValueError(f"{game.get_type().short_name} has no verdict to give")
        self.scores = tuple(int(s) for s in (scores if scores is not None else [7] * game.num_players()))
        if len(self.scores) != game.num_players():
            raise ValueError(f"scores needs one value per seat ({game.num_players()}), got {list(self.scores)}")

    async def act(self, observation: Observation) -> Decision:
        """The fixed verdict."""
        return verdict_decision(observation.fields, self.scores, ["fixed score (scripted judge)"] * len(self.scores))

    def identity(self) -> dict[str, Any]:
        return {"kind": "scripted_judge", "class": type(self).__name__, "scores": list(self.scores)}
