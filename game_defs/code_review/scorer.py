"""Ground truth for Code Review: the final program's MBPP pass rate, measured in the sandbox.

Registered as a scorer of ``deepeval_code_review``: after every match the engine runs
:func:`mbpp_pass_rate` (in a worker thread) and adds its metrics to ``record.metrics``, beside the judge's
scores (``judge_scores``), so the judge can be checked against the tests.

Metrics:

* ``pass_rate`` — fraction of the problem's ``test_list`` asserts that pass, or ``None`` when it could not
  be measured (sandbox infrastructure failure, or no sandbox here);
* ``tests_passed`` / ``tests_total`` — the counts (``tests_passed`` is ``None`` with ``pass_rate``);
* ``sandbox_status`` — :data:`deepeval_games.infra.sandbox.Status` (``passed``, ``failed``, ``error``,
  ``timeout``, ``memory``, ``output_limit``, ``infra_error``), or ``unavailable`` when bubblewrap cannot run
  here; ``sandbox_detail`` says why.

An ``infra_error`` is never a failed test: its pass rate is ``None``. Without a usable bubblewrap the scorer
runs no untrusted code at all (pass rate ``None``, status ``unavailable``, the reason logged), unless the
environment variable ``DEEPEVAL_GAMES_UNSAFE_SANDBOX=1`` explicitly opts in to running it in a plain
subprocess with resource limits only (a warning is logged on every run).

Importing this module registers the game too (it imports :mod:`game_defs.code_review.game`).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

import pyspiel

from deepeval_games.core.records import MatchRecord
from deepeval_games.core.registry.bots import register_scorer
from deepeval_games.infra.sandbox import UNSAFE_ENV, SandboxUnavailable, TestReport, run_tests, unsafe_opt_in
from game_defs.code_review.game import SHORT_NAME, CodeReviewState

__all__ = ["TIMEOUT_S", "mbpp_pass_rate", "run_program", "score_program"]

log = logging.getLogger(__name__)

TIMEOUT_S = 30.0
"""Wall-clock (and CPU) limit of one sandboxed run: generous, as a few MBPP tasks are slow under load."""


def run_program(code: str, tests: Sequence[str], setup: str = "", *, timeout_s: float = TIMEOUT_S) -> TestReport:
    """Run ``code`` against ``tests`` in the sandbox (honouring :data:`UNSAFE_ENV`).

    Raises :class:`~deepeval_games.infra.sandbox.SandboxUnavailable` when bubblewrap is unusable and the unsafe
    opt-in is not set.
    """
    return run_tests(code, list(tests), setup, timeout_s=timeout_s, unsafe=unsafe_opt_in())


def score_program(code: str, tests: Sequence[str], setup: str = "", *, timeout_s: float = TIMEOUT_S) -> dict[str, Any]:
    """The pass-rate metrics of one program (see the module docs); never raises."""
    total = len(tests)
    try:
        report = run_program(code, tests, setup, timeout_s=timeout_s)
    except SandboxUnavailable as exc:
        log.warning("MBPP pass rate not measured: no sandbox here (%s); set %s=1 to run unsandboxed", exc, UNSAFE_ENV)
        return _metrics(None, None, total, "unavailable", str(exc))
    except Exception as exc:  # the sandbox itself failed: infrastructure, never a failed test
        log.error("MBPP pass rate not measured: the sandbox failed: %r", exc)
        return _metrics(None, None, total, "infra_error", f"{type(exc).__name__}: {exc}")
    if report.status == "infra_error":
        log.error("MBPP pass rate not measured: sandbox infrastructure error: %s", report.detail)
        return _metrics(None, None, total, "infra_error", report.detail)
    passed = sum(t.status == "passed" for t in report.tests)
    return _metrics(report.pass_rate, passed, total, report.status, report.detail)


def _metrics(rate: float | None, passed: int | None, total: int, status: str, detail: str) -> dict[str, Any]:
    return {
        "pass_rate": rate,
        "tests_passed": passed,
        "tests_total": total,
        "sandbox_status": status,
        "sandbox_detail": detail[:500],
    }


@register_scorer(SHORT_NAME)
def mbpp_pass_rate(state: pyspiel.State, record: MatchRecord) -> dict[str, Any]:
    """Scorer: the final program of a finished code review against its MBPP tests."""
    assert isinstance(state, CodeReviewState)
    problem = state.problem()
    return score_program(state.final_code(), problem.test_list, problem.test_setup_code)
