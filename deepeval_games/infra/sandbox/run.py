"""Run a program against its tests: plan them, start the child (in bubblewrap, or unsafely without), decide.

Also the one switch that lets a run go without bubblewrap: :data:`UNSAFE_ENV`, read by :func:`unsafe_opt_in`.
"""

from __future__ import annotations

import dataclasses
import logging
import marshal
import math
import os
import secrets
import time

from deepeval_games.infra.sandbox import bwrap, protection
from deepeval_games.infra.sandbox.bwrap import SandboxLimits, SandboxUnavailable
from deepeval_games.infra.sandbox.launch import LaunchKey, take
from deepeval_games.infra.sandbox.planning import Plan, bound_names, plan_test
from deepeval_games.infra.sandbox.process import watch_child
from deepeval_games.infra.sandbox.protection import MemoryMode
from deepeval_games.infra.sandbox.protocol import HARNESS
from deepeval_games.infra.sandbox.report import TestReport, TestResult, decide

__all__ = ["UNSAFE_ENV", "run_tests", "unsafe_opt_in"]

log = logging.getLogger(__name__)

UNSAFE_ENV = "DEEPEVAL_GAMES_UNSAFE_SANDBOX"
"""Set to ``1`` (or ``true``, ``yes``) to run programs without bubblewrap (rlimits only) where it is unusable."""


def unsafe_opt_in() -> bool:
    """Whether the environment opts in to running untrusted code without a sandbox (:data:`UNSAFE_ENV`)."""
    return os.environ.get(UNSAFE_ENV, "").strip().lower() in ("1", "true", "yes")


def run_tests(
    code: str,
    tests: list[str],
    setup: str = "",
    timeout_s: float = 10.0,
    *,
    limits: SandboxLimits | None = None,
    unsafe: bool = False,
    memory_mode: MemoryMode | None = None,
) -> TestReport:
    """Run ``code``, then ``setup`` (MBPP's ``test_setup_code``), then each ``assert`` in ``tests``.

    Args:
        code: the untrusted program.
        tests: ``assert`` statements (MBPP's ``test_list``); a test that is not one raises ``ValueError``.
        setup: trusted code run after ``code`` in the same namespace (it may use the program's classes).
        timeout_s: wall-clock limit for the whole run; CPU time is limited to the same number of seconds.
        limits: resource limits; :class:`SandboxLimits` defaults when None.
        unsafe: run without bubblewrap (rlimits only) when it is unusable, logging a warning.
        memory_mode: how memory is bounded (:data:`~deepeval_games.infra.sandbox.protection.MemoryMode`); None reads
            :data:`~deepeval_games.infra.sandbox.protection.MEMORY_MODE_ENV`.

    Returns:
        A :class:`TestReport`. Its status is ``passed`` only when the parent itself found every test true;
        ``memory`` when the program reached its memory bound: a test ran out of memory, or the kernel killed
        a process of the sandbox at its bound and the run then failed, crashed or ran out of time.

    Raises:
        SandboxUnavailable: bubblewrap is unusable here and ``unsafe`` is False, or a forced memory mode
            cannot be had here.
        ValueError: a test is not an ``assert``, or the memory mode setting is malformed.
    """
    limits = limits or SandboxLimits()
    bound = bound_names([code, setup])
    plans = [plan_test(t, bound) for t in tests]
    reason = bwrap.probe()
    if reason is not None and not unsafe:
        raise SandboxUnavailable(reason + " (pass unsafe=True to run without a sandbox)")
    guard = protection.select(memory_mode, bubblewrap=reason is None)
    try:
        with protection.slot(protection.bound_bytes(limits)):
            return _run_in_slot(code, setup, tests, plans, timeout_s, limits, guard, reason)
    except TimeoutError as exc:
        return TestReport("infra_error", tuple(TestResult(t, "not_run") for t in tests), str(exc))


def _run_in_slot(
    code: str,
    setup: str,
    tests: list[str],
    plans: list[tuple[Plan, list[str]]],
    timeout_s: float,
    limits: SandboxLimits,
    guard: protection.Protection,
    reason: str | None,
) -> TestReport:
    """One run, holding a slot of the host's budget: launch (cgroup, process), uid, payload, verdict, cleanup."""
    not_run = tuple(TestResult(t, "not_run") for t in tests)
    if reason is not None:
        log.warning("running untrusted code WITHOUT a sandbox (unsafe=True): %s", reason)
    key = LaunchKey(limits, guard, bubblewrap=reason is None, as_root=os.geteuid() == 0)
    try:
        started = take(key)
    except OSError as exc:
        return TestReport("infra_error", not_run, f"could not start the sandbox: {exc}", protection=guard.memory)
    uid = bwrap.acquire_uid() if key.bubblewrap and key.as_root else None
    nonce, secret = secrets.token_hex(16).encode(), secrets.token_bytes(32)
    cpu = max(1, math.ceil(timeout_s))
    payload = {
        "nonce": nonce.decode(),
        "key": secret,
        "code": code,
        "setup": setup,
        "exprs": [s for _, s in plans],
        "result_fd": started.result_fd,
        "drop_to": uid,
        "rlimits": {
            "RLIMIT_CPU": (cpu, cpu + 1),
            "RLIMIT_AS": (guard.address_space(limits),) * 2,
            "RLIMIT_NPROC": (limits.max_processes,) * 2,
            "RLIMIT_FSIZE": (limits.file_size_bytes,) * 2,
            "RLIMIT_NOFILE": (limits.open_files,) * 2,
            "RLIMIT_CORE": (0, 0),
        },
    }
    start = time.monotonic()
    peak: int | None = None
    oom_kills = 0
    try:
        stdin = (b"\n" if started.gated else b"") + marshal.dumps((HARNESS, payload))
        watch = watch_child(started.proc, stdin, started.result_r, started.info_r, start + timeout_s, limits)
    finally:
        if started.cgroup is not None:
            peak, oom_kills = started.cgroup.peak_bytes(), started.cgroup.oom_kills()
        started.release()
        if uid is not None:
            bwrap.release_uid(uid)
    report = decide(watch, tests, plans, nonce, secret, time.monotonic() - start)
    report = dataclasses.replace(report, peak_memory_bytes=peak, protection=guard.memory)
    if oom_kills and report.status in ("error", "failed", "timeout"):  # e.g. a parent left waiting on a killed child
        detail = f"the sandbox reached its memory bound ({oom_kills} process(es) killed); {report.detail}"
        report = dataclasses.replace(report, status="memory", detail=detail)
    return report
