"""The report of a run, and how the parent decides it.

The parent never reads the child's exit code or any claim of success: each test passes only if the
parent, evaluating its :mod:`plan <deepeval_games.infra.sandbox.planning>` on the values the child reported, finds it
true. A malformed, unframed, duplicate or missing record makes the run ``error``; a sandbox that never
started is ``infra_error``, never a failed test.
"""

from __future__ import annotations

import signal
from dataclasses import dataclass
from typing import Literal, cast

from deepeval_games.infra.sandbox.planning import Plan, evaluate
from deepeval_games.infra.sandbox.process import Watch
from deepeval_games.infra.sandbox.protocol import ProtocolError, Results, parse_records

__all__ = ["Status", "TestReport", "TestResult", "TestStatus", "decide"]

Status = Literal["passed", "failed", "error", "timeout", "memory", "output_limit", "infra_error"]
"""Outcome of a whole run (``passed`` only if every test passed)."""
TestStatus = Literal["passed", "failed", "error", "not_run"]
"""Outcome of one test."""


@dataclass(frozen=True)
class TestResult:
    """Outcome of one ``assert`` test."""

    __test__ = False  # not a pytest test class, whatever its name
    test: str
    status: TestStatus
    detail: str = ""


@dataclass(frozen=True)
class TestReport:
    """Outcome of one program against its tests. ``status`` is ``passed`` only if every test passed."""

    __test__ = False
    status: Status
    tests: tuple[TestResult, ...]
    detail: str = ""
    stdout: str = ""
    stderr: str = ""
    duration_s: float = 0.0
    peak_memory_bytes: int | None = None
    """Most memory the sandbox held at once (its cgroup's peak usage); None where no cgroup measured it."""
    protection: str = ""
    """What bounded its memory: ``cgroup``, ``seccomp`` (the fallback) or ``rlimits`` (unsafe, no bwrap)."""

    @property
    def passed(self) -> bool:
        """Whether every test passed."""
        return self.status == "passed"

    @property
    def pass_rate(self) -> float:
        """Fraction of tests that passed (0.0 when there are none)."""
        return sum(t.status == "passed" for t in self.tests) / len(self.tests) if self.tests else 0.0


def _short(value: object, limit: int = 300) -> str:
    """A bounded description of a child's value; never raises, whatever the child sent."""
    try:
        text = repr(value)
    except (ValueError, RecursionError, MemoryError):  # e.g. an int of more than 4,300 digits
        size = f"{value.bit_length()} bits" if isinstance(value, int) else "too large to print"
        text = f"<{type(value).__name__}, {size}>"
    return text if len(text) <= limit else text[:limit] + "..."


def _judge_test(test: str, plan: Plan, n_slots: int, index: int, results: Results) -> TestResult:
    values: list[object] = []
    for slot in range(n_slots):
        entry = results.slots.get((index, slot))
        if entry is None:
            return TestResult(test, "not_run")
        kind, payload = entry
        if kind == "raised":
            name, message = cast("tuple[str, str]", payload)  # see Results.slots
            return TestResult(test, "error", f"{name}: {message}")
        if kind == "unsupported":
            return TestResult(test, "failed", f"not a plain builtin value ({cast('tuple[str, str]', payload)[1]})")
        values.append(payload)
    try:
        ok = bool(evaluate(plan, values))  # plain values only: truthiness cannot be rigged
    except Exception as exc:  # comparing plain values can still raise (e.g. 1 < "a")
        return TestResult(test, "error", f"{type(exc).__name__} while comparing: {exc}")
    if ok:
        return TestResult(test, "passed")
    got = ", ".join(_short(v) for v in values)
    return TestResult(test, "failed", f"child values: {got}")


def decide(
    watch: Watch,
    tests: list[str],
    plans: list[tuple[Plan, list[str]]],
    nonce: bytes,
    key: bytes,
    duration: float,
    cap: int = 4000,
) -> TestReport:
    """The report of one run from what the parent saw (``nonce`` and ``key``: the run's framing and the secret of its
    records' tags; ``cap``: bytes of stdout/stderr kept in it)."""

    def report(status: Status, detail: str, results: tuple[TestResult, ...] | None = None) -> TestReport:
        results = results or tuple(TestResult(t, "not_run") for t in tests)
        return TestReport(
            status,
            results,
            detail,
            watch.stdout[-cap:].decode(errors="replace"),
            watch.stderr[-cap:].decode(errors="replace"),
            duration,
        )

    data = bytes(watch.results)
    if watch.timed_out or watch.overflow:  # a killed child may leave half a line
        data = data[: data.rfind(b"\n") + 1]
    try:
        results = parse_records(data, nonce, key, [len(sources) for _, sources in plans])
    except ProtocolError as exc:
        if watch.timed_out or watch.overflow:
            results = Results(ready=True)
        else:
            return report("error", f"result channel tampered with or corrupt: {exc}")
    if not results.ready:
        if watch.timed_out:
            return report("infra_error", "the sandbox did not start before the deadline")
        return report(
            "infra_error",
            f"the sandbox did not start (exit {watch.returncode}): "
            f"{watch.stderr[-cap:].decode(errors='replace').strip()}",
        )
    per_test = tuple(
        _judge_test(t, plan, len(sources), i, results)
        for i, (t, (plan, sources)) in enumerate(zip(tests, plans, strict=True))
    )
    if watch.timed_out:
        return report("timeout", "wall-clock limit reached", per_test)
    if watch.overflow:
        return report("output_limit", f"{watch.overflow} exceeded its byte cap", per_test)
    if results.load_error:
        stage, name, message = results.load_error
        status: Status = "memory" if name == "MemoryError" else "error"
        return report(status, f"{stage} raised {name}: {message}", per_test)
    if not results.done:
        code = watch.returncode
        if code in (128 + signal.SIGXCPU, -signal.SIGXCPU):
            return report("timeout", "CPU-time limit reached", per_test)
        return report("error", f"the program ended before all tests were evaluated (exit {code})", per_test)
    if all(t.status == "passed" for t in per_test):
        return report("passed", "", per_test)
    if any(t.detail.startswith("MemoryError") for t in per_test):
        return report("memory", "a test ran out of memory", per_test)
    failing = sum(t.status != "passed" for t in per_test)
    return report("failed", f"{failing} of {len(tests)} tests did not pass", per_test)
