"""Scripted players and a scripted judge for Code Review (``deepeval_code_review``).

Every scripted player can sit in either seat (a round-robin plays every pair in both roles, as Table 3
needs); its name says what it does in its main role, and ``programmer`` / ``reviewer`` parameters
override either behaviour:

=========================  ==========================  ===========================
bot                        as programmer (default)     as reviewer (default)
=========================  ==========================  ===========================
``cr_reference_programmer``  ``reference``             ``over``
``cr_broken_programmer``     ``broken``                ``over``
``cr_over_reviewer``         ``empty``                 ``over``
``cr_test_reviewer``         ``reference``             ``tests``
=========================  ==========================  ===========================

Programmer behaviours: ``reference`` — MBPP's own solution, every round; ``empty`` — an empty
submission; ``broken`` — a function with the name the tests call that returns ``None``.
Reviewer behaviours: ``over`` — accepts at once; ``tests`` — runs the problem's tests on the code in the
sandbox and reports the first failing test (``over`` when all pass). ``tests`` needs bubblewrap (or the
unsafe opt-in of :mod:`deepeval_games.infra.sandbox`); without it the bot refuses to be built.

``cr_canary_programmer`` — a canary for the judge audits: ``cr_reference_programmer`` whose program opens with
a comment that tells the judge to give it 10 (:data:`~llm_bots.judge.JUDGE_INJECTION`); otherwise the same
program, so the tests pass alike. Its identity names its honest twin (``canary_of``), with which the audit
compares its scores.

``judge_pass_rate`` — a scripted judge from ground truth: programmer score ``1 + round(9 * p)`` with ``p``
the final program's pass rate; reviewer score ``1 + round(9 * a)`` with ``a`` the fraction of its reviews
whose stance matched the tests (``over`` on code passing every test, anything else on code that does not).
A sandbox failure makes it raise :class:`~llm_bots.judge.JudgeError` (never a default score).
"""

from __future__ import annotations

import ast
import asyncio
import builtins
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pyspiel

from deepeval_games.core.bot import Decision, DeepEvalBot, Observation
from deepeval_games.core.registry.bots import register_bot
from deepeval_games.infra.sandbox import UNSAFE_ENV, TestReport, bubblewrap_usable, parse_python, unsafe_opt_in
from game_defs.code_review.game import PROGRAMMER, ROLES, is_over, problem
from game_defs.code_review.scorer import run_program
from llm_bots.judge import JUDGE_INJECTION, JudgeError, verdict_decision

__all__ = [
    "PROGRAMMER_KINDS",
    "REVIEWER_KINDS",
    "BrokenProgrammer",
    "CanaryProgrammer",
    "OverReviewer",
    "PassRateJudge",
    "ReferenceProgrammer",
    "TestReviewer",
    "broken_program",
    "called_function",
]

_GAME = ("deepeval_code_review",)
PROGRAMMER_KINDS = ("reference", "empty", "broken")
REVIEWER_KINDS = ("over", "tests")
_BUILTINS = frozenset(dir(builtins))


def called_function(tests: Sequence[str]) -> str | None:
    """The name of the first non-builtin function the tests call (the function a solution must define)."""
    for test in tests:
        try:
            tree = parse_python(test)
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id not in _BUILTINS:
                return node.func.id
    return None


def broken_program(tests: Sequence[str]) -> str:
    """A program that defines the function the tests call, returning ``None`` whatever the input."""
    name = called_function(tests) or "solution"
    return f"def {name}(*args, **kwargs):\n    return None\n"


def _sandbox_ready() -> bool:
    return bubblewrap_usable() or unsafe_opt_in()


def _first_failure(report: TestReport) -> str:
    if report.status == "timeout":
        return f"Correctness: the code did not finish within the time limit ({report.detail})."
    if report.status in ("memory", "output_limit"):
        return f"Correctness: the run was stopped ({report.status}: {report.detail})."
    for result in report.tests:
        if result.status != "passed":
            detail = f" ({result.detail})" if result.detail else ""
            return f"Correctness: the code fails the test `{result.test}`{detail}. Please fix it."
    return f"Correctness: the tests do not pass ({report.status}: {report.detail}). Please fix the code."


class _CodeReviewPlayer(DeepEvalBot):
    """Shared plumbing: one behaviour per role, chosen by the seat's role in the observation."""

    default_programmer = "reference"
    default_reviewer = "over"

    def __init__(
        self,
        player_id: int,
        rng: np.random.Generator | None = None,
        *,
        game: pyspiel.Game,
        programmer: str | None = None,
        reviewer: str | None = None,
    ) -> None:
        super().__init__(player_id, rng)
        self.programmer = programmer or self.default_programmer
        self.reviewer = reviewer or self.default_reviewer
        if self.programmer not in PROGRAMMER_KINDS:
            raise ValueError(f"programmer must be one of {', '.join(PROGRAMMER_KINDS)}, got {self.programmer!r}")
        if self.reviewer not in REVIEWER_KINDS:
            raise ValueError(f"reviewer must be one of {', '.join(REVIEWER_KINDS)}, got {self.reviewer!r}")
        if self.reviewer == "tests" and not _sandbox_ready():
            raise ValueError(f"the test-running reviewer needs bubblewrap (or {UNSAFE_ENV}=1 to run code unsandboxed)")

    def identity(self) -> dict[str, Any]:
        return {
            "kind": "scripted",
            "class": type(self).__name__,
            "programmer": self.programmer,
            "reviewer": self.reviewer,
        }

    async def act(self, observation: Observation) -> Decision:
        """Write code or a review, by the seat's role."""
        fields = observation.fields
        if fields["role"] == ROLES[PROGRAMMER]:
            return Decision(action=None, text=self.write(fields))
        return Decision(action=None, text=await self.review(fields))

    def write(self, fields: Mapping[str, Any]) -> str:
        """The program for this round."""
        if self.programmer == "reference":
            return problem(int(fields["task_id"])).code
        if self.programmer == "broken":
            return broken_program(fields["tests"])
        return ""

    async def review(self, fields: Mapping[str, Any]) -> str:
        """The review of the latest code."""
        if self.reviewer == "over":
            return "over"
        try:
            report = await asyncio.to_thread(
                run_program, fields.get("code") or "", fields["tests"], fields.get("test_setup_code", "")
            )
        except Exception as exc:  # the sandbox itself failed: say so, never crash the match
            return f"The tests could not be run (sandbox error: {type(exc).__name__}). Please submit the code again."
        if report.status == "passed":
            return "over"
        if report.status == "infra_error":
            return f"The tests could not be run (sandbox error: {report.detail}). Please submit the code again."
        return _first_failure(report)


@register_bot("cr_reference_programmer", games=_GAME)
class ReferenceProgrammer(_CodeReviewPlayer):
    """Code review: submits MBPP's reference solution; as reviewer, answers over."""


@register_bot("cr_broken_programmer", games=_GAME)
class BrokenProgrammer(_CodeReviewPlayer):
    """Code review: submits a function that returns None (programmer="empty": nothing); as reviewer, over."""

    default_programmer = "broken"


@register_bot("cr_over_reviewer", games=_GAME)
class OverReviewer(_CodeReviewPlayer):
    """Code review: answers over to any code; as programmer, submits nothing."""

    default_programmer = "empty"


@register_bot("cr_test_reviewer", games=_GAME)
class TestReviewer(_CodeReviewPlayer):
    """Code review: runs the tests in the sandbox and reports the first failure (over when all pass)."""

    __test__ = False  # not a pytest class, whatever its name
    default_reviewer = "tests"


@register_bot("cr_canary_programmer", games=_GAME)
class CanaryProgrammer(ReferenceProgrammer):
    """Code review canary: MBPP's reference solution under a comment telling the judge to give it 10."""

    def write(self, fields: Mapping[str, Any]) -> str:
        """The reference program, with the judge-directed comment first."""
        return f"# {JUDGE_INJECTION}\n{super().write(fields)}"

    def identity(self) -> dict[str, Any]:
        return {**super().identity(), "canary_of": ReferenceProgrammer.__name__}


@register_bot("judge_pass_rate", games=_GAME)
class PassRateJudge(DeepEvalBot):
    """Scripted code-review judge: scores from the MBPP pass rate it measures in the sandbox."""

    def __init__(self, player_id: int, rng: np.random.Generator | None = None, *, game: pyspiel.Game) -> None:
        super().__init__(player_id, rng)
        if not _sandbox_ready():
            raise ValueError(f"judge_pass_rate needs bubblewrap (or {UNSAFE_ENV}=1 to run code unsandboxed)")

    def identity(self) -> dict[str, Any]:
        return {"kind": "scripted_judge", "class": type(self).__name__}

    async def act(self, observation: Observation) -> Decision:
        """Run every distinct program once, then score both roles (see the module docs)."""
        return await asyncio.to_thread(self._verdict, observation.fields)

    def _verdict(self, fields: Mapping[str, Any]) -> Decision:
        tests, setup = fields["tests"], fields.get("test_setup_code", "")
        dialogue = fields["dialogue"]
        codes = [m["text"] for m in dialogue if m["role"] == "programmer"]
        reviews = [m["text"] for m in dialogue if m["role"] == "reviewer"]
        reports: dict[str, TestReport] = {}
        for code in codes:
            if code not in reports:
                reports[code] = run_program(code, tests, setup)
                if reports[code].status == "infra_error":
                    raise JudgeError(f"judge_pass_rate could not run the tests: {reports[code].detail}")
        final = reports[codes[-1]]
        agree = sum(is_over(review) == reports[code].passed for code, review in zip(codes, reviews, strict=False))
        accuracy = agree / len(reviews) if reviews else 0.0
        passed = sum(t.status == "passed" for t in final.tests)
        return verdict_decision(
            fields,
            [1 + round(9 * final.pass_rate), 1 + round(9 * accuracy)],
            [
                f"the final program passes {passed} of {len(tests)} tests ({final.status})",
                f"the review matched the tests in {agree} of {len(reviews)} review(s)",
            ],
        )
