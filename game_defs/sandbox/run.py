"""Run a program against its tests: plan them, start the child (in bubblewrap, or unsafely without), decide.

Also the one switch that lets a run go without bubblewrap: :data:`UNSAFE_ENV`, read by :func:`unsafe_opt_in`.
"""

from __future__ import annotations

import logging
import marshal
import math
import os
import secrets
import time

from game_defs.sandbox import bwrap
from game_defs.sandbox.bwrap import SandboxLimits, SandboxUnavailable
from game_defs.sandbox.planning import bound_names, plan_test
from game_defs.sandbox.process import run_child
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
) -> TestReport:
    """Run ``code``, then ``setup`` (MBPP's ``test_setup_code``), then each ``assert`` in ``tests``.

    Args:
        code: the untrusted program.
        tests: ``assert`` statements (MBPP's ``test_list``); a test that is not one raises ``ValueError``.
        setup: trusted code run after ``code`` in the same namespace (it may use the program's classes).
        timeout_s: wall-clock limit for the whole run; CPU time is limited to the same number of seconds.
        limits: resource limits; :class:`SandboxLimits` defaults when None.
        unsafe: run without bubblewrap (rlimits only) when it is unusable, logging a warning.

    Returns:
        A :class:`TestReport`. Its status is ``passed`` only when the parent itself found every test true.

    Raises:
        SandboxUnavailable: bubblewrap is unusable here and ``unsafe`` is False.
    """
    limits = limits or SandboxLimits()
    bound = bound_names([code, setup])
    plans = [plan_test(t, bound) for t in tests]
    reason = bwrap.probe()
    if reason is not None and not unsafe:
        raise SandboxUnavailable(reason + " (pass unsafe=True to run without a sandbox)")
    as_root = os.geteuid() == 0
    uid = bwrap.acquire_uid() if reason is None and as_root else None
    nonce = secrets.token_hex(16).encode()
    result_r, result_w = os.pipe()
    info = os.pipe() if reason is None else None
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
            "RLIMIT_AS": (limits.memory_bytes,) * 2,
            "RLIMIT_NPROC": (limits.max_processes,) * 2,
            "RLIMIT_FSIZE": (limits.file_size_bytes,) * 2,
            "RLIMIT_NOFILE": (limits.open_files,) * 2,
            "RLIMIT_CORE": (0, 0),
        },
    }
    if reason is None:
        assert info is not None
        argv = bwrap.bwrap_argv(as_root, limits, info[1])
    else:
        log.warning("running untrusted code WITHOUT a sandbox (unsafe=True): %s", reason)
        argv = []
    argv += [bwrap.interpreter(), "-I", "-S", "-B", "-c", BOOTSTRAP]
    start = time.monotonic()
    try:
        stdin = marshal.dumps((HARNESS, payload))
        watch = run_child(argv, stdin, result_w, result_r, info, start + timeout_s, limits)
    except OSError as exc:
        not_run = tuple(TestResult(t, "not_run") for t in tests)
        return TestReport("infra_error", not_run, f"could not start the sandbox: {exc}")
    finally:
        if uid is not None:
            bwrap.release_uid(uid)
    return decide(watch, tests, plans, nonce, time.monotonic() - start)
