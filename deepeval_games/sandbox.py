"""Run untrusted Python (an LLM's MBPP solution) against ``assert`` tests, and decide the verdict here.

How a run works
---------------
Each call to :func:`run_tests` starts one ``bwrap`` (bubblewrap) sandbox running this interpreter's base
``python -I -S`` (standard library only) with the harness :mod:`deepeval_games._sandbox_child`:

* namespaces: new mount, pid, network (just its own loopback), IPC, UTS and cgroup namespaces,
  ``--die-with-parent``, ``--new-session``; a cleared environment (``PATH``, ``HOME``, ``LANG`` only);
* files: read-only binds of ``/usr`` (plus the ``/bin``, ``/lib*`` links), ``/etc/ld.so.cache`` and the
  interpreter's prefix, nothing else: not the repository, the data sets, ``/home``, ``/root`` or the rest
  of ``/etc``; a fresh ``/proc``, bwrap's minimal ``/dev``, a private size-capped tmpfs on ``/tmp``;
* identity: never root. As an ordinary user, bwrap maps the caller to uid 65534 in a new user namespace
  and forbids nested ones. As root, a uid mapped to host root would be exempt from ``RLIMIT_NPROC``, so
  bwrap runs privileged without a user namespace (keeping only CAP_SETUID/CAP_SETGID) and the harness,
  before anything else, switches to an unused uid/gid from a per-process block, with no groups and no
  capabilities left (no_new_privs is set by bwrap). Nested user namespaces stay possible in that mode;
* limits, set by the harness before the program loads: CPU seconds, address space, processes (per
  sandbox: the uid is the sandbox's own), file size, open files, no core files; here: a wall-clock
  deadline and byte caps on stdout+stderr and on the result channel, whose breach kills the sandbox;
* cleanup: the sandbox's pid 1 is killed on every early exit (the kernel then kills its whole pid
  namespace) and bwrap is reaped, so no process it started outlives :func:`run_tests`.

Verdicts, and what is guaranteed
--------------------------------
The parent never reads the child's exit code or any claim of success. Each test is parsed here with
:mod:`ast`: literals (``ast.literal_eval``), comparisons, ``not``, ``and``/``or`` and calls to a few pure
functions (``sorted``, ``set``, ``len``, ``math.isclose``, ...; only if the program never binds the name)
are evaluated *here*, and a test passes if the result is truthy. The child evaluates only the remaining
sub-expressions (in MBPP, the call to the candidate's function) with pristine builtins, and reports each
value as a tagged tree of strings, built only for exact builtin types (no subclasses, so no custom
``__eq__``/``__bool__``; ``Counter``/``OrderedDict``/``defaultdict`` are sent as their plain dict
contents), which the parent rebuilds with its own constructors. Records travel on an inherited pipe, not
stdout, framed with a random per-run nonce given on stdin; a malformed, unframed, duplicate or missing
record makes the run ``error``.

Threat model, honestly: the program shares its process with the harness, so a program written *to attack
the harness* (finding the nonce through frame introspection, ``gc`` or ``ctypes`` and writing records
itself) can make the child report any values it likes. It still cannot make the parent compare anything
else: for ``lhs == <literal>`` tests (all 1,500 asserts of the MBPP test split) the expected value is
computed here and never enters the sandbox, so a forged report passes only if the program knew the right
answer, which is no more than hard-coding it. Sub-expressions that are not literals (both sides of a
non-literal ``==``, a bare ``assert f(x)``) are only as honest as the child. Exception names (``memory``,
per-test errors) are the child's word too, but only choose among failing statuses. Escaping the sandbox
is left to bubblewrap and the kernel. Memory is bounded per process (address space) times the process
limit, not by a cgroup.

Without a usable bwrap, :func:`run_tests` raises :class:`SandboxUnavailable`, unless ``unsafe=True``: then
the harness runs in a plain subprocess with the same rlimits (as root, ``RLIMIT_NPROC`` does not apply and
the uid is not changed), and a warning is logged. Once bwrap is usable, a run whose sandbox fails to start
is reported as ``infra_error``, never as a failed test.
"""

from __future__ import annotations

import ast
import contextlib
import json
import logging
import marshal
import math
import operator
import os
import secrets
import select
import selectors
import shutil
import signal
import subprocess
import sys
import threading
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Literal, Union

__all__ = [
    "SandboxLimits",
    "SandboxUnavailable",
    "Status",
    "TestReport",
    "TestResult",
    "bubblewrap_usable",
    "parse_python",
    "run_tests",
]

log = logging.getLogger(__name__)

Status = Literal["passed", "failed", "error", "timeout", "memory", "output_limit", "infra_error"]
TestStatus = Literal["passed", "failed", "error", "not_run"]


@dataclass(frozen=True)
class SandboxLimits:
    """Resource limits of one sandboxed run (the wall-clock limit is ``run_tests(timeout_s=...)``)."""

    memory_bytes: int = 1 << 30
    """``RLIMIT_AS`` of every process in the sandbox."""
    max_processes: int = 8
    """``RLIMIT_NPROC``: processes and threads of the sandbox uid, harness included."""
    file_size_bytes: int = 16 << 20
    """``RLIMIT_FSIZE``: largest file the program may write (only ``/tmp`` is writable)."""
    tmpfs_bytes: int = 32 << 20
    """Size of the private ``/tmp``."""
    open_files: int = 64
    """``RLIMIT_NOFILE``."""
    output_bytes: int = 1 << 20
    """Cap on stdout plus stderr; more kills the run with status ``output_limit``."""
    result_bytes: int = 4 << 20
    """Cap on the result channel (the reported values); more is also ``output_limit``."""


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

    @property
    def passed(self) -> bool:
        """Whether every test passed."""
        return self.status == "passed"

    @property
    def pass_rate(self) -> float:
        """Fraction of tests that passed (0.0 when there are none)."""
        return sum(t.status == "passed" for t in self.tests) / len(self.tests) if self.tests else 0.0


class SandboxUnavailable(RuntimeError):
    """Bubblewrap is missing or cannot create namespaces here, and ``unsafe=True`` was not given."""


# ---------------------------------------------------------------------------------------------------------
# Test plans: what the parent evaluates itself, and which sub-expressions the child must report.

_COMPARE: dict[type[ast.cmpop], Callable[[object, object], object]] = {
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
    ast.In: lambda a, b: operator.contains(b, a),
    ast.NotIn: lambda a, b: not operator.contains(b, a),
}
_PURE_FUNCTIONS = (abs, all, any, bool, dict, float, frozenset, int, len, list, max, min, round, set, sorted)
_PURE_BUILTINS: dict[str, Callable[..., object]] = {f.__name__: f for f in (*_PURE_FUNCTIONS, str, sum, tuple)}
_PURE_MATH: dict[str, Callable[..., object]] = {
    f.__name__: f for f in (math.isclose, math.fabs, math.floor, math.ceil, math.sqrt)
}


@dataclass(frozen=True)
class _Lit:
    value: object


@dataclass(frozen=True)
class _Child:
    slot: int


@dataclass(frozen=True)
class _Compare:
    operands: tuple[_Plan, ...]
    ops: tuple[Callable[[object, object], object], ...]


@dataclass(frozen=True)
class _Not:
    operand: _Plan


@dataclass(frozen=True)
class _BoolOp:
    is_and: bool
    values: tuple[_Plan, ...]


@dataclass(frozen=True)
class _Call:
    function: Callable[..., object]
    args: tuple[_Plan, ...]
    kwargs: tuple[tuple[str, _Plan], ...]


_Plan = Union[_Lit, _Child, _Compare, _Not, _BoolOp, _Call]  # noqa: UP007 - a runtime alias on 3.10


_AST_LOCK = threading.Lock()


def parse_python(source: str) -> ast.Module:
    """``ast.parse`` behind a lock.

    CPython 3.11's AST builder keeps its recursion depth in module state shared by all threads; when a
    garbage collection inside one parse lets another thread parse too, the first fails with
    ``SystemError: AST constructor recursion depth mismatch`` (seen in the full test suite, where the 500
    reference solutions are sandboxed from a thread pool; several matches scored at once do the same).
    """
    with _AST_LOCK:
        return ast.parse(source)


def _literal(text: str) -> object:
    with _AST_LOCK:
        return ast.literal_eval(text)


def _bound_names(sources: Sequence[str]) -> frozenset[str]:
    """Every name the program might bind (over-approximated; ``import math`` does not count for math)."""
    names: set[str] = set()
    for source in sources:
        try:
            with warnings.catch_warnings():  # e.g. invalid escape sequences: the child will warn, if anyone
                warnings.simplefilter("ignore")
                tree = parse_python(source)
        except (SyntaxError, ValueError, MemoryError, RecursionError):
            return frozenset(_PURE_BUILTINS) | {"math"}
        for node in ast.walk(tree):
            if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
                names.add(node.id)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(node.name)
            elif isinstance(node, (ast.Global, ast.Nonlocal)):
                names.update(node.names)
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                for alias in node.names:
                    bound = alias.asname or alias.name.split(".")[0]
                    if not (isinstance(node, ast.Import) and bound == alias.name == "math"):
                        names.add(bound)
    return frozenset(names)


@dataclass
class _Planner:
    bound: frozenset[str]
    sources: list[str] = field(default_factory=list)

    def plan(self, node: ast.expr) -> _Plan:
        try:
            return _Lit(ast.literal_eval(node))
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            pass
        if isinstance(node, ast.Compare) and all(type(op) in _COMPARE for op in node.ops):
            operands = tuple(self.plan(n) for n in (node.left, *node.comparators))
            return _Compare(operands, tuple(_COMPARE[type(op)] for op in node.ops))
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            return _Not(self.plan(node.operand))
        if isinstance(node, ast.BoolOp):
            return _BoolOp(isinstance(node.op, ast.And), tuple(self.plan(v) for v in node.values))
        function = self._pure_function(node)
        if isinstance(node, ast.Call) and function is not None:
            args = tuple(self.plan(a) for a in node.args)
            kwargs = tuple((k.arg, self.plan(k.value)) for k in node.keywords if k.arg is not None)
            return _Call(function, args, kwargs)
        self.sources.append(ast.unparse(node))
        return _Child(len(self.sources) - 1)

    def _pure_function(self, node: ast.expr) -> Callable[..., object] | None:
        if not isinstance(node, ast.Call) or any(isinstance(a, ast.Starred) for a in node.args):
            return None
        if any(k.arg is None for k in node.keywords):
            return None
        func = node.func
        if isinstance(func, ast.Name) and func.id not in self.bound:
            return _PURE_BUILTINS.get(func.id)
        if (
            isinstance(func, ast.Attribute)
            and isinstance(func.value, ast.Name)
            and func.value.id == "math"
            and "math" not in self.bound
        ):
            return _PURE_MATH.get(func.attr)
        return None


def _plan_test(test: str, bound: frozenset[str]) -> tuple[_Plan, list[str]]:
    """Parse ``assert <expr>``; return the parent's plan and the sources the child must evaluate."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            statements = parse_python(test).body
    except SyntaxError as exc:
        raise ValueError(f"test is not valid Python: {test!r}") from exc
    if len(statements) != 1 or not isinstance(statements[0], ast.Assert):
        raise ValueError(f"a test must be a single assert statement: {test!r}")
    planner = _Planner(bound)
    return planner.plan(statements[0].test), planner.sources


def _evaluate(plan: _Plan, values: list[object]) -> object:
    if isinstance(plan, _Lit):
        return plan.value
    if isinstance(plan, _Child):
        return values[plan.slot]
    if isinstance(plan, _Not):
        return not _evaluate(plan.operand, values)
    if isinstance(plan, _BoolOp):
        result: object = plan.is_and
        for sub in plan.values:
            result = _evaluate(sub, values)
            if bool(result) is not plan.is_and:
                break
        return result
    if isinstance(plan, _Compare):
        left = _evaluate(plan.operands[0], values)
        for op, sub in zip(plan.ops, plan.operands[1:], strict=True):
            right = _evaluate(sub, values)
            if not op(left, right):
                return False
            left = right
        return True
    args = [_evaluate(a, values) for a in plan.args]
    return plan.function(*args, **{k: _evaluate(v, values) for k, v in plan.kwargs})


# ---------------------------------------------------------------------------------------------------------
# Decoding the child's records. Everything is checked for exact types; anything else is a protocol error.


class _ProtocolError(Exception):
    """The result channel carried something the harness does not write."""


def _leaf(tree: tuple[object, ...], size: int) -> tuple[str, ...]:
    if len(tree) != size or any(type(x) is not str for x in tree):
        raise _ProtocolError("malformed leaf")
    return tree  # type: ignore[return-value]


def _decode(tree: object) -> object:
    """Rebuild a value from the harness's tagged tree, with the parent's own constructors."""
    if type(tree) is not tuple or not tree or type(tree[0]) is not str:
        raise _ProtocolError("malformed value")
    tag, items = tree[0], tree[1:]
    try:
        if tag == "n":
            _leaf(tree, 1)
            return None
        if tag == "b" and _leaf(tree, 2)[1] in ("0", "1"):
            return tree[1] == "1"
        if tag == "i":
            return int(_leaf(tree, 2)[1], 16)
        if tag == "f":
            return float.fromhex(_leaf(tree, 2)[1])
        if tag == "c":
            _, real, imag = _leaf(tree, 3)
            return complex(float.fromhex(real), float.fromhex(imag))
        if tag == "s":
            return _leaf(tree, 2)[1]
        if tag == "y":
            return bytes.fromhex(_leaf(tree, 2)[1])
        if tag == "l":
            return [_decode(x) for x in items]
        if tag == "t":
            return tuple(_decode(x) for x in items)
        if tag == "S":
            return {_decode(x) for x in items}
        if tag == "F":
            return frozenset(_decode(x) for x in items)
        if tag == "d":
            pairs = [x if type(x) is tuple and len(x) == 2 else () for x in items]
            return {_decode(k): _decode(v) for k, v in pairs}
    except (ValueError, TypeError, OverflowError) as exc:
        raise _ProtocolError(f"malformed value: {exc}") from exc
    raise _ProtocolError(f"unknown tag {tag!r}")


def _int_field(value: object) -> int:
    if type(value) is not int:
        raise _ProtocolError("malformed index")
    return value


@dataclass
class _Results:
    """The child's records, validated."""

    ready: bool = False
    done: bool = False
    load_error: tuple[str, str, str] | None = None
    slots: dict[tuple[int, int], tuple[str, object]] = field(default_factory=dict)


def _parse_records(data: bytes, nonce: bytes, slots_per_test: list[int]) -> _Results:
    results = _Results()
    lines = data.split(b"\n")
    if lines[-1]:
        raise _ProtocolError("unterminated record")
    for line in lines[:-1]:
        head, sep, body = line.partition(b" ")
        if head != nonce or not sep:
            raise _ProtocolError("record without this run's framing")
        if results.done or results.load_error:
            raise _ProtocolError("record after the harness finished")
        try:
            record = _literal(body.decode("utf-8", "surrogatepass"))
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError, UnicodeDecodeError) as exc:
            raise _ProtocolError("undecodable record") from exc
        if type(record) is not tuple or not record or type(record[0]) is not str:
            raise _ProtocolError("malformed record")
        kind = record[0]
        if kind == "ready" and len(record) == 1 and not results.ready:
            results.ready = True
            continue
        if not results.ready:
            raise _ProtocolError("record before the harness was ready")
        if kind == "done" and len(record) == 1:
            results.done = True
        elif kind == "load_error" and len(record) == 4:
            results.load_error = _leaf(record[1:], 3)  # type: ignore[assignment]
        elif kind in ("value", "raised", "unsupported") and len(record) in (4, 5):
            key = (_int_field(record[1]), _int_field(record[2]))
            expected = 0 <= key[0] < len(slots_per_test) and 0 <= key[1] < slots_per_test[key[0]]
            if key in results.slots or not expected:
                raise _ProtocolError("duplicate or unexpected result")
            if kind == "value" and len(record) == 4:
                results.slots[key] = ("value", _decode(record[3]))
            elif kind != "value" and len(record) == 5:
                results.slots[key] = (kind, _leaf(record[3:], 2))
            else:
                raise _ProtocolError("malformed result")
        else:
            raise _ProtocolError(f"unexpected record {kind!r}")
    if results.done and len(results.slots) != sum(slots_per_test):
        raise _ProtocolError("results missing")
    return results


def _short(value: object, limit: int = 300) -> str:
    """A bounded description of a child's value; never raises, whatever the child sent."""
    try:
        text = repr(value)
    except (ValueError, RecursionError, MemoryError):  # e.g. an int of more than 4,300 digits
        size = f"{value.bit_length()} bits" if isinstance(value, int) else "too large to print"
        text = f"<{type(value).__name__}, {size}>"
    return text if len(text) <= limit else text[:limit] + "..."


def _judge_test(test: str, plan: _Plan, n_slots: int, index: int, results: _Results) -> TestResult:
    values: list[object] = []
    for slot in range(n_slots):
        entry = results.slots.get((index, slot))
        if entry is None:
            return TestResult(test, "not_run")
        kind, payload = entry
        if kind == "raised":
            name, message = payload  # type: ignore[misc]
            return TestResult(test, "error", f"{name}: {message}")
        if kind == "unsupported":
            return TestResult(test, "failed", f"not a plain builtin value ({payload[1]})")  # type: ignore[index]
        values.append(payload)
    try:
        ok = bool(_evaluate(plan, values))  # plain values only: truthiness cannot be rigged
    except Exception as exc:  # comparing plain values can still raise (e.g. 1 < "a")
        return TestResult(test, "error", f"{type(exc).__name__} while comparing: {exc}")
    if ok:
        return TestResult(test, "passed")
    got = ", ".join(_short(v) for v in values)
    return TestResult(test, "failed", f"child values: {got}")


# ---------------------------------------------------------------------------------------------------------
# Starting and watching the sandbox.

_HARNESS_PATH = Path(__file__).with_name("_sandbox_child.py")
_HARNESS = compile(_HARNESS_PATH.read_text(encoding="utf-8"), str(_HARNESS_PATH), "exec")
# Reads (harness code, payload) from stdin, which is then at EOF. Compiling the harness here once saves
# every run ~2 ms; the child is the same interpreter version (the base of this one), so marshal fits.
_BOOTSTRAP = """\
import marshal, posix
def _deepeval_sandbox_boot():
    data = b""
    while chunk := posix.read(0, 1 << 16):
        data += chunk
    code, payload = marshal.loads(data)
    namespace = {"__name__": "_deepeval_sandbox_harness"}
    exec(code, namespace)
    namespace["_harness"](payload)
_deepeval_sandbox_boot()
"""
_UID_BASE = 1_900_000_000
_uid_lock = threading.Lock()
_uids_in_use: set[int] = set()


def _interpreter() -> str:
    """The base interpreter (a venv's python is a symlink whose venv the sandbox does not mount)."""
    return os.path.realpath(getattr(sys, "_base_executable", None) or sys.executable)


def _mounts() -> list[str]:
    args = ["--ro-bind", "/usr", "/usr"]
    for top in ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"):
        if os.path.islink(top):
            args += ["--symlink", os.readlink(top), top]
        elif os.path.isdir(top):
            args += ["--ro-bind", top, top]
    if os.path.exists("/etc/ld.so.cache"):
        args += ["--perms", "0755", "--dir", "/etc", "--ro-bind", "/etc/ld.so.cache", "/etc/ld.so.cache"]
    mounted = ["/usr"]
    for path in (os.path.realpath(sys.base_prefix), os.path.dirname(_interpreter())):
        if any(path == m or path.startswith(m + "/") for m in mounted):
            continue
        mounted.append(path)
        parts = Path(path).parts
        for depth in range(2, len(parts)):  # directories bwrap would otherwise create with the host's modes
            args += ["--perms", "0755", "--dir", str(Path(*parts[:depth]))]
        args += ["--ro-bind", path, path]
    return args


def _bwrap_argv(as_root: bool, limits: SandboxLimits, info_fd: int) -> list[str]:
    identity = (
        ["--cap-drop", "ALL", "--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID"]
        if as_root
        else ["--unshare-user", "--uid", "65534", "--gid", "65534", *_disable_userns()]
    )
    return [
        shutil.which("bwrap") or "bwrap",
        *identity,
        "--unshare-pid",
        "--unshare-net",
        "--unshare-ipc",
        "--unshare-uts",
        "--unshare-cgroup-try",
        "--die-with-parent",
        "--new-session",
        "--info-fd",
        str(info_fd),
        *_mounts(),
        "--proc",
        "/proc",
        "--dev",
        "/dev",
        "--perms",
        "1777",
        "--size",
        str(limits.tmpfs_bytes),
        "--tmpfs",
        "/tmp",
        "--clearenv",
        "--setenv",
        "PATH",
        "/usr/bin:/bin",
        "--setenv",
        "HOME",
        "/tmp",
        "--setenv",
        "LANG",
        "C.UTF-8",
        "--chdir",
        "/tmp",
        "--",
    ]


@cache
def _disable_userns() -> list[str]:
    """``--disable-userns`` where bwrap has it (0.8+): no nested user namespaces inside the sandbox."""
    try:
        usage = subprocess.run(["bwrap", "--help"], capture_output=True, text=True, timeout=10, check=False)
    except (OSError, subprocess.SubprocessError):
        return []
    return ["--disable-userns"] if "--disable-userns" in usage.stdout + usage.stderr else []


def _uid_block() -> range:
    """The uids this process hands to sandboxes in root mode (a block per pid, so sessions rarely share)."""
    start = _UID_BASE + (os.getpid() % 65536) * 128
    return range(start, start + 128)


def _acquire_uid() -> int:
    """A uid no other sandbox of this process uses now (RLIMIT_NPROC counts per uid in root mode)."""
    block = _uid_block()
    with _uid_lock:
        uid = next((u for u in block if u not in _uids_in_use), block[0])
        _uids_in_use.add(uid)
        return uid


def _release_uid(uid: int) -> None:
    with _uid_lock:
        _uids_in_use.discard(uid)


@cache
def _probe() -> str | None:
    """None if bwrap can run the harness interpreter in the namespaces we use, else the reason."""
    if shutil.which("bwrap") is None:
        return "bubblewrap (bwrap) is not installed; Debian/Ubuntu: apt-get install bubblewrap"
    argv = _bwrap_argv(os.geteuid() == 0, SandboxLimits(), 2)
    try:
        proc = subprocess.run(
            [*argv, _interpreter(), "-I", "-S", "-c", "pass"],
            capture_output=True,
            timeout=30,
            env={"PATH": "/usr/bin:/bin"},
            check=False,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        return f"bwrap could not start: {exc}"
    if proc.returncode != 0:
        return f"bwrap cannot create the sandbox here: {proc.stderr.decode(errors='replace').strip()}"
    return None


def bubblewrap_usable() -> bool:
    """Whether bubblewrap is installed and can create the sandbox on this machine (probed once)."""
    return _probe() is None


@dataclass
class _Watch:
    """What the parent saw while the sandbox ran."""

    results: bytearray = field(default_factory=bytearray)
    stdout: bytearray = field(default_factory=bytearray)
    stderr: bytearray = field(default_factory=bytearray)
    info: bytearray = field(default_factory=bytearray)
    timed_out: bool = False
    overflow: str = ""
    returncode: int | None = None


def _sandbox_pid(info: bytes) -> int | None:
    try:
        pid = json.loads(info.decode()).get("child-pid")
    except (ValueError, UnicodeDecodeError, AttributeError):
        return None
    return pid if type(pid) is int and pid > 1 else None


def _run_child(
    argv: list[str],
    payload: bytes,
    result_fd_w: int,
    result_fd_r: int,
    info_fds: tuple[int, int] | None,
    deadline: float,
    limits: SandboxLimits,
) -> _Watch:
    watch = _Watch()
    pass_fds = (result_fd_w,) + ((info_fds[1],) if info_fds else ())
    try:
        proc = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            pass_fds=pass_fds,
            start_new_session=True,
            env={"PATH": "/usr/bin:/bin"},
        )
    except OSError:
        for fd in (*pass_fds, result_fd_r, *(info_fds[:1] if info_fds else ())):
            os.close(fd)
        raise
    try:
        for fd in pass_fds:
            os.close(fd)
        assert proc.stdin and proc.stdout and proc.stderr
        stdin_fd = proc.stdin.fileno()
        os.set_blocking(stdin_fd, False)
        buffers = {proc.stdout.fileno(): watch.stdout, proc.stderr.fileno(): watch.stderr}
        buffers[result_fd_r] = watch.results
        if info_fds:
            buffers[info_fds[0]] = watch.info
        with selectors.DefaultSelector() as selector:
            for fd in buffers:
                selector.register(fd, selectors.EVENT_READ)
            selector.register(stdin_fd, selectors.EVENT_WRITE)
            pending = memoryview(payload)
            while selector.get_map():
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    watch.timed_out = True
                    break
                for key, _ in selector.select(remaining):
                    if key.fd == stdin_fd:
                        try:
                            pending = pending[os.write(stdin_fd, pending[: 1 << 16]) :]
                        except BlockingIOError:
                            continue
                        except BrokenPipeError:
                            pending = pending[:0]
                        if not pending:
                            selector.unregister(stdin_fd)
                            proc.stdin.close()
                        continue
                    chunk = os.read(key.fd, 1 << 16)
                    if not chunk:
                        selector.unregister(key.fd)
                        continue
                    buffers[key.fd] += chunk
                if len(watch.stdout) + len(watch.stderr) > limits.output_bytes:
                    watch.overflow = "stdout/stderr"
                elif len(watch.results) > limits.result_bytes:
                    watch.overflow = "result channel"
                if watch.overflow:
                    break
        if not watch.timed_out and not watch.overflow:
            watch.returncode = _wait(proc, deadline)
            watch.timed_out = watch.returncode is None
    finally:
        _kill(proc, _sandbox_pid(bytes(watch.info)))
        for stream in (proc.stdin, proc.stdout, proc.stderr):
            if stream and not stream.closed:
                stream.close()
        os.close(result_fd_r)
        if info_fds:
            os.close(info_fds[0])
    return watch


def _wait(proc: subprocess.Popen[bytes], deadline: float) -> int | None:
    """Exit status, or None at the deadline; a pidfd avoids ``Popen.wait(timeout)``'s sleep-polling."""
    remaining = max(0.0, deadline - time.monotonic())
    try:
        pidfd = os.pidfd_open(proc.pid)
    except (AttributeError, OSError):
        try:
            return proc.wait(timeout=remaining)
        except subprocess.TimeoutExpired:
            return None
    try:
        ready, _, _ = select.select([pidfd], [], [], remaining)
    finally:
        os.close(pidfd)
    return proc.wait() if ready else None


def _kill(proc: subprocess.Popen[bytes], sandbox_pid: int | None) -> None:
    """Kill the sandbox's pid 1 (the kernel then kills its whole pid namespace), then bwrap; reap."""
    if proc.poll() is None:
        if sandbox_pid is not None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(sandbox_pid, signal.SIGKILL)
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=5)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


def _verdict(
    watch: _Watch,
    tests: list[str],
    plans: list[tuple[_Plan, list[str]]],
    nonce: bytes,
    duration: float,
    cap: int = 4000,
) -> TestReport:
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
        results = _parse_records(data, nonce, [len(sources) for _, sources in plans])
    except _ProtocolError as exc:
        if watch.timed_out or watch.overflow:
            results = _Results(ready=True)
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
    bound = _bound_names([code, setup])
    plans = [_plan_test(t, bound) for t in tests]
    reason = _probe()
    if reason is not None and not unsafe:
        raise SandboxUnavailable(reason + " (pass unsafe=True to run without a sandbox)")
    as_root = os.geteuid() == 0
    uid = _acquire_uid() if reason is None and as_root else None
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
        argv = _bwrap_argv(as_root, limits, info[1])
    else:
        log.warning("running untrusted code WITHOUT a sandbox (unsafe=True): %s", reason)
        argv = []
    argv += [_interpreter(), "-I", "-S", "-B", "-c", _BOOTSTRAP]
    start = time.monotonic()
    try:
        stdin = marshal.dumps((_HARNESS, payload))
        watch = _run_child(argv, stdin, result_w, result_r, info, start + timeout_s, limits)
    except OSError as exc:
        not_run = tuple(TestResult(t, "not_run") for t in tests)
        return TestReport("infra_error", not_run, f"could not start the sandbox: {exc}")
    finally:
        if uid is not None:
            _release_uid(uid)
    return _verdict(watch, tests, plans, nonce, time.monotonic() - start)
