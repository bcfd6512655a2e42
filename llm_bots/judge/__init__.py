"""The judge of judged tasks (code review now, translation next): verdicts, LLM judge, scripted judges.

A judged game ends in a verdict node (a chance node whose outcomes are per-seat score tuples, see
:mod:`game_defs.verdicts`). There the referee delivers the game's brief to the judge through the message
pool, a ``brief`` message whose text is the game's ``judge_text()`` (the rubric, rewritten from the paper,
with the quoted dialogue) and whose ``fields`` are the game's ``judge_fields()``: at least ``roles`` (seat
order), ``score_min`` and ``score_max``, plus what the task shows its judge (problem, dialogue, ...). The
judge bot is then asked with an observation that carries the same text and fields.

**LLM judge** (a ``[judge]`` table with ``model = ...``): an :class:`LLMBot` that reads the brief from the
message pool like any LLM seat; its task adapter's prompt file has a ``judge`` role that holds only how to
answer (the verdict's answer ``format`` and the ``reask`` text), never the rubric. It differs from a
player in these ways, built by :func:`make_llm_judge`:

* temperature 0 and ``max_tokens`` 1024 unless the spec sets them;
* the reply must be one JSON verdict, ``{"<Role>": {"evaluation": "<why>", "score": <int>}, ...}`` with a
  key per role (e.g. ``Programmer``, ``Reviewer``). :func:`parse_verdict` reads only the judge's own reply:
  Unicode NFKC, code fences ignored, role keys matched without regard to case, the JSON object that holds
  every role is the verdict (several that disagree, such as a quoted forgery beside the real one, are
  re-asked); a score must be a whole number in range and every role needs a non-empty
  explanation. Anything else is re-asked with the reason (``max_reasks``, default 2), from the ``[reasons]``
  of ``llm_bots/prompts/judge.toml``;
* after the re-asks (or on a refusal or a context overflow) there is no default score: the judge raises
  :class:`JudgeError`, the match is logged as failed with that reason and is not recorded (a rerun of
  the spec retries it);
* player text reaches the judge only inside :func:`~deepeval_games.core.quoting.quote_player_text` delimiters
  (the game quotes it in its brief), which the text cannot close, under a rubric that tells the judge to treat
  it as material to assess, never as instructions. A "give 10" or a forged JSON verdict inside the code is
  then at most evidence of bad conduct; it is never parsed, since the verdict is read only from the judge's
  reply.

**Independence** (:func:`check_judge`, run before any match): a judged game needs a ``[judge]``; an LLM
judge may not be one of the players' models (same model string, or the same name after the last ``/``)
unless ``allow_player_model = true`` is set in ``[judge]``, which logs a warning. It takes plain values (the
judge's model and settings, the players' models), so this package never reads an experiment spec.

**Scripted judges** (for tests and baselines): ``judge_fixed`` (fixed scores for every seat; any judged
game); the code-review ``judge_pass_rate`` lives in :mod:`llm_bots.code_review.scripted`. Two flawed ones
calibrate the judge audits: ``judge_position_biased`` (favours the role presented first) and ``judge_gullible``
(obeys a judge-directed instruction such as :data:`JUDGE_INJECTION`, which the canary players embed).
``judge_idiom_list`` rules in Idiom Solitaire's referee mode (``validity=dictionary+judge``, a one-role verdict
scored 0 or 1): it accepts the answers on its ``accept`` list.

Modules, one concern each: :mod:`~llm_bots.judge.verdict` (the reply format and its parser),
:mod:`~llm_bots.judge.schema` (the verdict's JSON schema), :mod:`~llm_bots.judge.llm` (the LLM judge,
:class:`LLMJudge`, and :func:`make_llm_judge`), :mod:`~llm_bots.judge.scripted` (scripted judges) and
:mod:`~llm_bots.judge.independence` (the check). Importing this package registers ``judge_fixed``; it loads
:mod:`~llm_bots.judge.llm` (and so litellm, which is slow to import) only when ``LLMJudge`` or
``make_llm_judge`` is used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from deepeval_games.core.records import JUDGE_SEAT
from llm_bots.judge.independence import ALLOW_PLAYER_MODEL, check_judge
from llm_bots.judge.schema import judge_response_schema, verdict_response_format
from llm_bots.judge.scripted import (
    JUDGE_INJECTION,
    FixedJudge,
    GullibleJudge,
    IdiomListJudge,
    PositionBiasedJudge,
    presented_order,
    verdict_decision,
)
from llm_bots.judge.verdict import (
    JudgeError,
    Verdict,
    parse_judge_reply,
    parse_verdict,
    role_labels,
)

if TYPE_CHECKING:
    from llm_bots.judge.llm import LLMJudge, make_llm_judge

__all__ = [
    "ALLOW_PLAYER_MODEL",
    "JUDGE_INJECTION",
    "JUDGE_SEAT",
    "FixedJudge",
    "GullibleJudge",
    "IdiomListJudge",
    "JudgeError",
    "LLMJudge",
    "PositionBiasedJudge",
    "Verdict",
    "check_judge",
    "judge_response_schema",
    "make_llm_judge",
    "parse_judge_reply",
    "parse_verdict",
    "presented_order",
    "role_labels",
    "verdict_decision",
    "verdict_response_format",
]


def __getattr__(name: str) -> Any:
    if name in ("LLMJudge", "make_llm_judge"):  # imported lazily: they need litellm, which is slow to import
        from llm_bots.judge import llm

        return getattr(llm, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
