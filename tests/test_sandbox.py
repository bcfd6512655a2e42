"""The code sandbox: hostile programs fail safely, honest ones pass, and the host stays untouched."""

from __future__ import annotations

import dis
import json
import logging
import os
import socket
import sys
import tempfile
import time
import types
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from deepeval_games.infra import sandbox
from deepeval_games.infra.sandbox import (
    MEMORY_MODE_ENV,
    SandboxLimits,
    SandboxUnavailable,
    bwrap,
    cgroup,
    launch,
    run_tests,
    seccomp,
)

needs_bwrap = pytest.mark.skipif(not sandbox.bubblewrap_usable(), reason=f"bubblewrap unusable here: {bwrap.probe()}")
HARNESS_MARK = "_deepeval_sandbox_boot"  # in the argv of every harness process, forked copies included


def sandbox_processes() -> list[int]:
    """Live harness processes started by this test process (other sessions may be sandboxing too).

    Ours are descendants of this process (a pid namespace's orphans are reparented to its init, which
    is) or, as root, run with a uid from this process's block; forked copies keep the harness's argv.
    """
    uids = bwrap.uid_block()
    procs: dict[int, tuple[int, int, bool]] = {}  # pid -> (ppid, uid, is a live harness process)
    for entry in Path("/proc").iterdir():
        try:
            cmdline = (entry / "cmdline").read_bytes()
            fields = dict(line.split(":", 1) for line in (entry / "status").read_text().splitlines() if ":" in line)
            procs[int(entry.name)] = (
                int(fields["PPid"]),
                int(fields["Uid"].split()[0]),
                HARNESS_MARK.encode() in cmdline and "zombie" not in fields["State"],
            )
        except (OSError, ValueError, KeyError):
            continue

    def ours(pid: int) -> bool:
        while pid > 1 and pid in procs:
            if pid == os.getpid():
                return True
            pid = procs[pid][0]
        return False

    spares = launch.spare_pids()  # started ahead, waiting for a program: not a run's leftovers
    return [pid for pid, (_, uid, live) in procs.items() if live and (uid in uids or ours(pid)) and pid not in spares]


MODES = [
    pytest.param("cgroup", marks=pytest.mark.skipif(cgroup.probe() is not None, reason=f"{cgroup.probe()}")),
    pytest.param("seccomp", marks=pytest.mark.skipif(seccomp.unsupported() is not None, reason="no seccomp here")),
]


@pytest.fixture(autouse=True, params=MODES)
def memory_mode(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Every test in both memory protections (tests/test_sandbox_memory.py has the memory hoards)."""
    if request.param == "seccomp" and "mbpp" in request.node.name:
        pytest.skip("the 500 MBPP solutions run once, in cgroup mode (seccomp mode: DEEPEVAL_GAMES_SANDBOX_MEMORY)")
    monkeypatch.setenv(MEMORY_MODE_ENV, str(request.param))
    return str(request.param)


@pytest.fixture
def no_leftovers() -> Iterator[None]:
    """Fail the test if any sandbox process outlives ``run_tests``."""
    yield
    assert sandbox_processes() == []


def run(code: str, tests: list[str], **kwargs: object) -> sandbox.TestReport:
    report = run_tests(code, tests, **kwargs)  # type: ignore[arg-type]
    assert report.status != "infra_error", report
    return report


# ---------------------------------------------------------------------------------------------------------
# Honest programs.


@needs_bwrap
def test_a_correct_program_passes_and_a_wrong_one_fails(no_leftovers: None) -> None:
    code = "def double(x):\n    return 2 * x\n"
    good = run(code, ["assert double(2) == 4", "assert double(-1) == -2"])
    assert good.status == "passed" and good.pass_rate == 1.0
    bad = run(code, ["assert double(2) == 4", "assert double(3) == 7"])
    assert bad.status == "failed" and bad.pass_rate == 0.5
    assert [t.status for t in bad.tests] == ["passed", "failed"] and "6" in bad.tests[1].detail


@needs_bwrap
def test_non_literal_and_bare_asserts_are_judged_in_the_parent() -> None:
    code = "import math\ndef f(x):\n    return [x, x / 3]\ndef g(x):\n    return {'a': x}\n"
    tests = [
        "assert f(1)",
        "assert not f(0)[0]",
        "assert math.isclose(f(1)[1], 0.3333, rel_tol=0.001)",
        "assert set(f(3)) == set([3, 1.0])",
        "assert sorted(f(3), reverse=True) == [3, 1.0]",
        "assert f(2) != f(3)",
        "assert 2 in f(2) and len(g(1)) == 1",
        "assert g(1) == dict(a=1)",
    ]
    report = run(code, tests)
    assert report.status == "passed", report


@needs_bwrap
def test_setup_runs_after_the_program_and_counter_results_compare_as_dicts() -> None:
    code = "from collections import Counter\nclass Box:\n    def __init__(self, v):\n        self.v = v\n"
    code += "def count(s):\n    return Counter(s)\n"
    report = run(code, ["assert box.v == 3", "assert count('aab') == {'a': 2, 'b': 1}"], setup="box = Box(3)")
    assert report.status == "passed", report


@needs_bwrap
def test_a_program_may_shadow_a_builtin_the_tests_call() -> None:
    report = run("def sum(a, b):\n    return a - b\n", ["assert sum(10, 4) == 6"])  # MBPP task 126 does this
    assert report.status == "passed", report


@needs_bwrap
def test_exceptions_and_load_errors() -> None:
    assert run("def f(:\n", ["assert f() == 1"]).status == "error"
    assert run("raise ValueError('boom')", ["assert 1 == 1"]).status == "error"
    raised = run("def f():\n    return 1 // 0\n", ["assert f() == 1", "assert 1 == 1"])
    assert raised.status == "failed"
    assert raised.tests[0].status == "error" and "ZeroDivisionError" in raised.tests[0].detail
    assert raised.tests[1].status == "passed"


def test_a_test_that_is_not_an_assert_is_rejected() -> None:
    with pytest.raises(ValueError, match="single assert"):
        run_tests("x = 1", ["x == 1"])


def mbpp_records() -> list[dict[str, object]]:
    default = Path(__file__).resolve().parents[2] / "shared" / "data"  # ../shared/data from the repo root
    root = Path(os.environ.get("DEEPEVAL_GAMES_DATA", default))
    path = root / "mbpp" / "mbpp.jsonl"
    if not path.exists():
        pytest.skip(f"MBPP data not found at {path} (set DEEPEVAL_GAMES_DATA)")
    records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [r for r in records if 11 <= int(r["task_id"]) <= 510]


@needs_bwrap
def test_all_500_mbpp_reference_solutions_pass(no_leftovers: None) -> None:
    records = mbpp_records()
    assert len(records) == 500

    def check(record: dict[str, object]) -> tuple[object, sandbox.TestReport]:
        return record["task_id"], run_tests(
            str(record["code"]),
            list(record["test_list"]),  # type: ignore
            str(record["test_setup_code"]),
            timeout_s=30,
        )

    with ThreadPoolExecutor(max_workers=2 * (os.cpu_count() or 1)) as pool:
        reports = list(pool.map(check, records))
    failures = [(task, r.status, r.detail, r.tests) for task, r in reports if r.status != "passed"]
    assert failures == []


# ---------------------------------------------------------------------------------------------------------
# Hostile programs.


@needs_bwrap
def test_infinite_loop_times_out(no_leftovers: None) -> None:
    start = time.monotonic()
    report = run("while True:\n    pass\n", ["assert 1 == 1"], timeout_s=1.5)
    assert report.status == "timeout"
    assert time.monotonic() - start < 5


@needs_bwrap
def test_fork_bomb_is_contained(no_leftovers: None) -> None:
    bomb = "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass\n"
    report = run(bomb + "def f():\n    return 1\n", ["assert f() == 1"], timeout_s=3)
    assert report.status == "timeout"


@needs_bwrap
def test_process_limit_really_bounds_forks(no_leftovers: None) -> None:
    code = """
import os, time
def forks():
    made = 0
    for _ in range(200):
        try:
            pid = os.fork()
        except OSError:
            break
        if pid == 0:
            time.sleep(60)
            os._exit(0)
        made += 1
    return made
"""
    limits = SandboxLimits(max_processes=6)
    report = run(code, ["assert forks() == -1"], limits=limits)
    assert report.status == "failed"
    made = int(report.tests[0].detail.removeprefix("child values: "))
    assert 0 < made < limits.max_processes, made


@needs_bwrap
def test_rm_rf_of_host_paths_leaves_them_alone(tmp_path: Path, no_leftovers: None) -> None:
    victims = [tmp_path / "victim"]  # invisible in the sandbox (its /tmp is private)
    prefix = Path(os.path.realpath(sys.base_prefix))
    if os.access(prefix, os.W_OK):  # visible in the sandbox, but mounted read-only
        victims.append(Path(tempfile.mkdtemp(prefix="deepeval-sandbox-victim-", dir=prefix)))
    for victim in victims:
        victim.mkdir(exist_ok=True)
        (victim / "precious.txt").write_text("keep me")
    code = "import os, shutil, subprocess\ndef wipe(paths):\n    out = []\n    for p in paths:\n"
    code += "        shutil.rmtree(p, ignore_errors=True)\n"
    code += "        subprocess.run(['rm', '-rf', p], capture_output=True)\n"
    code += "        out.append(os.path.exists(p))\n    return out\n"
    try:
        report = run(code, [f"assert wipe({[str(v) for v in victims]!r}) == {[False] * len(victims)!r}"])
        assert report.status == "failed", report
        for victim in victims:
            assert (victim / "precious.txt").read_text() == "keep me"
    finally:
        for victim in victims[1:]:
            (victim / "precious.txt").unlink()
            victim.rmdir()


@needs_bwrap
def test_huge_allocation_hits_the_memory_limit(no_leftovers: None) -> None:
    report = run("x = bytearray(50 * 1024 ** 3)\ndef f():\n    return 1\n", ["assert f() == 1"])
    assert report.status == "memory", report
    in_test = run("def f():\n    return len(b' ' * (50 * 1024 ** 3))\n", ["assert f() == 1"])
    assert in_test.status == "memory", in_test


@needs_bwrap
def test_flooding_stdout_hits_the_output_limit(no_leftovers: None) -> None:
    start = time.monotonic()
    code = "import sys\nchunk = 'x' * (1 << 20)\nfor _ in range(10 * 1024):\n    sys.stdout.write(chunk)\n"
    report = run(code + "def f():\n    return 1\n", ["assert f() == 1"])
    assert report.status == "output_limit", report
    assert time.monotonic() - start < 10


@needs_bwrap
def test_no_network_not_even_loopback(no_leftovers: None) -> None:
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        server.setblocking(False)
        port = server.getsockname()[1]
        code = "import socket\ndef connect(port):\n    try:\n"
        code += "        socket.create_connection(('127.0.0.1', port), timeout=2).close()\n"
        code += "        return 'connected'\n    except OSError as exc:\n        return type(exc).__name__\n"
        report = run(code, [f"assert connect({port}) == 'connected'"])
        assert report.status == "failed", report
        with pytest.raises(BlockingIOError):
            server.accept()


@needs_bwrap
def test_environment_secrets_are_not_visible(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-fake-secret")
    code = "import os\ndef secret():\n    return os.environ.get('OPENAI_API_KEY')\n"
    code += "def anywhere():\n    seen = repr(dict(os.environ))\n    for pid in os.listdir('/proc'):\n"
    code += "        try:\n            seen += open(f'/proc/{pid}/environ').read()\n"
    code += "        except OSError:\n            pass\n    return 'sk-fake' in seen\n"
    assert run(code, ["assert secret() == None", "assert anywhere() == False"]).status == "passed"
    assert run(code, ["assert secret() == 'sk-fake-secret'"]).status == "failed"


@needs_bwrap
def test_exiting_before_the_asserts_does_not_pass(no_leftovers: None) -> None:
    for exit_call in ("import sys\nsys.exit(0)", "import os\nos._exit(0)", "raise SystemExit"):
        report = run(exit_call + "\ndef f():\n    return 1\n", ["assert f() == 1"])
        assert report.status == "error", (exit_call, report)
    in_test = run("import sys\ndef f():\n    sys.exit(0)\n", ["assert f() == 1"])
    assert in_test.status == "failed"


@needs_bwrap
def test_rigged_eq_and_int_subclasses_fail() -> None:
    rigged = "class Yes:\n    def __eq__(self, other):\n        return True\n    __hash__ = None\n"
    rigged += "class Int(int):\n    def __eq__(self, other):\n        return True\n"
    rigged += "def f():\n    return Yes()\ndef g():\n    return Int(5)\ndef h():\n    return [Int(7)]\n"
    tests = ["assert f() == 1", "assert g() == 7", "assert h() == [7]", "assert f()", "assert g()"]
    report = run(rigged, tests)
    assert report.status == "failed"
    assert [t.status for t in report.tests] == ["failed"] * 5


@needs_bwrap
def test_patching_builtins_and_the_harness_does_not_pass() -> None:
    patches = [
        "import builtins\nbuiltins.AssertionError = type('Never', (Exception,), {})",
        "import builtins\nbuiltins.print = lambda *a, **k: None\nbuiltins.repr = lambda x: 'True'",
        "import builtins\nbuiltins.isinstance = lambda *a: True\nbuiltins.type = lambda *a: int",
        'import json\njson.dumps = lambda *a, **k: \'{"status": "passed"}\'\njson.loads = lambda *a: {}',
        "import os\nos.write = lambda fd, data: len(data)\nos._exit = lambda code: None",
        "import __main__\n__main__.__dict__.clear()",
        "__builtins__['int'] = str",
        "import sys\nsys.modules['collections'] = type(sys)('collections')",
    ]
    for patch in patches:
        report = run(patch + "\ndef f():\n    return 2\n", ["assert f() == 3", "assert f() == 2"])
        assert report.status == "failed", (patch, report)
        assert [t.status for t in report.tests] == ["failed", "passed"], patch


def test_the_harness_looks_no_builtin_up_once_the_program_exists() -> None:
    """Every step of the harness but the lock-down (which runs before the program exists) uses only names the harness
    bound when it was loaded: a builtin looked up by name later could be one the program replaced."""
    from deepeval_games.infra.sandbox.protocol import HARNESS

    bound = {i.argval for i in dis.get_instructions(HARNESS) if i.opname == "STORE_NAME"}
    pending, looked_up = [HARNESS], set()
    while pending:
        code = pending.pop()
        looked_up |= {(code.co_name, i.argval) for i in dis.get_instructions(code) if i.opname == "LOAD_GLOBAL"}
        pending += [c for c in code.co_consts if isinstance(c, types.CodeType) and c.co_name != "_lock_down"]
    assert {"_harness", "_load_program", "_evaluate_tests", "_encode", "send"} <= {name for name, _ in looked_up}
    assert {(name, global_) for name, global_ in looked_up if global_ not in bound} == set()


@needs_bwrap
def test_forged_records_on_any_fd_do_not_pass() -> None:
    code = "import os\nfor fd in range(1, 64):\n    try:\n"
    code += "        os.write(fd, b'0' * 32 + b\" ('value', 0, 0, ('i', '0x3'))\\n('done',)\\n\")\n"
    code += "    except OSError:\n        pass\ndef f():\n    return 2\n"
    report = run(code, ["assert f() == 3"])
    assert report.status == "error" and "tampered" in report.detail, report


RELAY = """
import os

def double(x):
    return -1  # wrong: only the relay below could make it pass

# The result channel relayed: fd 3 (the harness's write end) is saved, a pipe of the program's own takes its place,
# and a forked relay reads what the harness writes, keeps its framing and writes its own records on the real channel.
_real = os.dup(3)
_read, _write = os.pipe()
_go_read, _go_write = os.pipe()
os.dup2(_write, 3)
os.close(_write)


class _Held:
    # the harness flushes stdout before its last record: held there until the relay has written its own
    def write(self, text):
        return len(text)

    def flush(self):
        os.read(_go_read, 1)


if os.fork() == 0:
    os.close(3)
    forged = [repr(("value", i, 0, ("i", hex(2 * x)))).encode() for i, x in enumerate((1, 2, 3))]
    forged.append(repr(("done",)).encode())
    line = b""
    while not line.endswith(b"\\n"):
        chunk = os.read(_read, 1)
        if not chunk:
            os._exit(0)
        line += chunk
    framing = line.split(b" (", 1)[0]  # everything before the record itself: the nonce, and whatever follows it
    for body in forged:
        os.write(_real, framing + b" " + body + b"\\n")
    os.write(_go_write, b"x" * 64)  # every later flush returns at once
    while os.read(_read, 1 << 16):  # what the harness writes from now on goes nowhere
        pass
    os._exit(0)
os.close(_read)
import sys
sys.stdout = _Held()
"""


@needs_bwrap
def test_a_relay_of_the_result_channel_gains_nothing() -> None:
    """Replacing fd 3 with a pipe of its own and relaying the harness's records through a forked process (no
    introspection needed to see the nonce in them) is seen: every record carries a MAC over its place in the
    stream and its content, keyed by a secret the harness never writes, so a relayed record that is changed,
    made up, dropped or moved makes the run ``error``."""
    tests = ["assert double(1) == 2", "assert double(2) == 4", "assert double(3) == 6"]
    report = run(RELAY, tests)
    assert report.status == "error" and "tampered" in report.detail, report
    assert all(t.status != "passed" for t in report.tests), report
    assert run(RELAY.split("# The result channel")[0], tests).status == "failed"  # the program alone


@needs_bwrap
def test_killing_its_parent_leaves_the_host_alone(no_leftovers: None) -> None:
    for kill in ("os.kill(os.getppid(), 9)", "os.kill(1, 9)", "os.kill(-1, 9)", f"os.kill({os.getpid()}, 9)"):
        code = f"import os\ntry:\n    {kill}\nexcept OSError:\n    pass\ndef f():\n    return 1\n"
        report = run_tests(code, ["assert f() == 2"])
        assert report.status in ("failed", "error"), (kill, report)
    assert os.getppid() > 1  # and this process is, evidently, still alive


# ---------------------------------------------------------------------------------------------------------
# Infrastructure.


@needs_bwrap
def test_bwrap_failing_at_run_time_is_an_infra_error(monkeypatch: pytest.MonkeyPatch) -> None:
    real = bwrap.bwrap_argv
    monkeypatch.setattr(bwrap, "bwrap_argv", lambda *a: [*real(*a)[:-1], "--no-such-option", "--"])
    launch.discard_spares()  # made with the real command line
    report = run_tests("def f():\n    return 1\n", ["assert f() == 1"])
    assert report.status == "infra_error" and "no-such-option" in report.detail


def test_without_bubblewrap_it_refuses_unless_unsafe(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(bwrap, "probe", lambda: "bubblewrap (bwrap) is not installed")
    with pytest.raises(SandboxUnavailable, match="not installed"):
        run_tests("def f():\n    return 1\n", ["assert f() == 1"])
    with caplog.at_level(logging.WARNING, logger="deepeval_games.infra.sandbox"):
        report = run_tests("def f():\n    return 1\n", ["assert f() == 1", "assert f() == 2"], unsafe=True)
    assert report.status == "failed" and [t.status for t in report.tests] == ["passed", "failed"]
    assert "WITHOUT a sandbox" in caplog.text


def test_limits_are_a_frozen_dataclass() -> None:
    limits = SandboxLimits()
    with pytest.raises(AttributeError):
        limits.memory_bytes = 1  # type: ignore[misc]


@needs_bwrap
def test_a_value_too_large_to_print_is_a_failed_test_not_a_crash() -> None:
    report = run_tests("def f(x):\n    return 10 ** 5000\n", ["assert f(1) == 2"], timeout_s=30)
    assert report.status == "failed" and report.tests[0].status == "failed"
    assert "bits>" in report.tests[0].detail
