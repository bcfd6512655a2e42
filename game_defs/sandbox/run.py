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

from game_defs.sandbox import bwrap, cgroup, protection
from game_defs.sandbox.bwrap import SandboxLimits, SandboxUnavailable
from game_defs.sandbox.planning import Plan, bound_names, plan_test
from game_defs.sandbox.process import run_child
from game_defs.sandbox.protection import MemoryMode
from game_defs.sandbox.protocol import BOOTSTRAP, HARNESS
from game_defs.sandbox.report import TestReport, TestResult, decide

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
        memory_mode: how memory is bounded (:data:`~game_defs.sandbox.protection.MemoryMode`); None reads
            :data:`~game_defs.sandbox.protection.MEMORY_MODE_ENV`.

    Returns:
        A :class:`TestReport`. Its status is ``passed`` only when the parent itself found every test true;
        ``memory`` when the program reached its memory bound.

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
    """One run, holding a slot of the host's budget: cgroup, child, verdict, cleanup."""
    not_run = tuple(TestResult(t, "not_run") for t in tests)
    cgroup_: cgroup.MemoryCgroup | None = None
    if guard.memory == "cgroup":
        try:
            cgroup_ = cgroup.create(limits.memory_bytes)
        except OSError as exc:
            return TestReport("infra_error", not_run, f"could not create the sandbox's memory cgroup: {exc}")
    as_root = os.geteuid() == 0
    uid = bwrap.acquire_uid() if reason is None and as_root else None
    nonce = secrets.token_hex(16).encode()
    result_r, result_w = os.pipe()
    info = os.pipe() if reason is None else None
    filter_fds = os.pipe() if reason is None and guard.seccomp_filter else None
    cpu = max(1, math.ceil(timeout_s))
    payload = {
        "nonce": nonce.decode(),
        "code": code,
        "setup": setup,
        "exprs": [s for _, s in plans],
        "result_fd": result_w,
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
    argv = cgroup.join_argv(cgroup_) if cgroup_ is not None else []
    extra_fds: tuple[int, ...] = ()
    if reason is None:
        assert info is not None
        if filter_fds is not None and guard.seccomp_filter is not None:
            os.write(filter_fds[1], guard.seccomp_filter)  # a few hundred bytes: fits the pipe's buffer
            os.close(filter_fds[1])
            extra_fds = (filter_fds[0],)
        argv += bwrap.bwrap_argv(as_root, limits, info[1], extra_fds[0] if extra_fds else None)
    else:
        log.warning("running untrusted code WITHOUT a sandbox (unsafe=True): %s", reason)
    argv += [bwrap.interpreter(), "-I", "-S", "-B", "-c", BOOTSTRAP]
    start = time.monotonic()
    peak: int | None = None
    oom_kills = 0
    try:
        stdin = marshal.dumps((HARNESS, payload))
        watch = run_child(argv, stdin, result_w, result_r, info, start + timeout_s, limits, extra_fds)
    except OSError as exc:
        return TestReport("infra_error", not_run, f"could not start the sandbox: {exc}", protection=guard.memory)
    finally:
        if uid is not None:
            bwrap.release_uid(uid)
        if cgroup_ is not None:
            peak, oom_kills = cgroup_.peak_bytes(), cgroup_.oom_kills()
            if not cgroup_.remove():
                log.error("could not remove the sandbox's memory cgroup %s", cgroup_.path)
    report = decide(watch, tests, plans, nonce, time.monotonic() - start)
    report = dataclasses.replace(report, peak_memory_bytes=peak, protection=guard.memory)
    if oom_kills and report.status in ("error", "failed"):
        detail = f"the sandbox reached its memory bound ({oom_kills} process(es) killed); {report.detail}"
        report = dataclasses.replace(report, status="memory", detail=detail)
    return report
