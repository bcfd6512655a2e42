# mypy: disable-error-code="arg-type, attr-defined, var-annotated"
"""Harness that runs inside the sandbox (trusted code, untrusted company).

Not imported by the host: :mod:`deepeval_games.infra.sandbox.protocol` compiles this file once and sends the code
object, marshalled, with the run's payload on the child's stdin; a short bootstrap (``python -I -S -c``)
unmarshals both, runs this file's top level in a namespace of its own and calls :func:`_harness`. It needs only the
standard library. Everything it relies on after the untrusted program started is bound to a name of that namespace
when the harness is loaded, before the program exists (the program cannot import it), so patching ``builtins``,
``json``, ``os`` or ``__main__`` does not change what it writes; no step that runs once the program exists looks a
builtin up by name (``tests/test_sandbox.py`` checks it). Code in the same process can still reach the harness's
names (frame introspection, ``gc``, ``ctypes``); the host's threat model does not rely on this file.

Payload (a dict): ``nonce``, ``key``, ``code``, ``setup``, ``exprs`` (one list of expression sources per
test), ``rlimits``, ``drop_to`` (a uid/gid to switch to, or None) and ``result_fd``. The harness answers on
``result_fd``, one record a line: ``<nonce> <tag> <repr of a tuple>``, where values are tagged trees whose
leaves are strings, so the host rebuilds them with its own constructors, and ``tag`` is a keyed BLAKE2b of the
record's place in the stream and its text (the key is never written anywhere): a process that reads the records
(a relay the program put in place of ``result_fd``) sees the nonce, but cannot change, make up, drop or reorder a
record without the host noticing. Stdout and stderr belong to the untrusted program.

The steps, in order: :func:`_lock_down` (before the program exists), then :class:`_Channel` says ``ready``,
:func:`_load_program` runs the program and its setup, :func:`_evaluate_tests` reports every sub-expression
(:func:`_encode`, :func:`_describe`), and ``done`` ends the run.

Type checking: builtins are bound to other names and values are told apart by identity (``t is int_``), which
mypy cannot narrow on; hence the error codes turned off on the first line.
"""

import builtins
import posix as os  # what os re-exports, without importing os and its dependencies (~1.5 ms a run)
import resource
import sys

try:
    from _blake2 import blake2b as blake2b_  # the C module itself: importing hashlib costs every run ~2 ms
except ImportError:  # pragma: no cover - an interpreter built without it
    from hashlib import blake2b as blake2b_

# Bound when the harness is loaded, before the program exists: the steps that run after it use only these.
type_, str_, bool_, int_, float_, complex_, bytes_ = type, str, bool, int, float, complex, bytes
list_, tuple_, dict_, set_, frozenset_ = list, tuple, dict, set, frozenset
repr_, hex_, float_hex, enumerate_ = repr, hex, float.hex, enumerate
type_name = type.__dict__["__name__"].__get__
write, exit_, compile_, exec_, eval_ = os.write, os._exit, compile, exec, eval
base_exception, exception_str = BaseException, BaseException.__str__
recursion_error, memory_error, type_error = RecursionError, MemoryError, TypeError
pristine_builtins = dict(vars(builtins))
dict_items, modules, getattr_ = dict.items, sys.modules, getattr
max_depth, max_nodes = 60, 1_000_000
RESULT_FD = 3
"""The result channel's descriptor: the same descriptor table in every run, however the run was started."""


class Unsupported(Exception):
    """The value is not a plain builtin value the host accepts."""


def _plain_dicts() -> tuple[object, ...]:
    """dict, and the collections dict subclasses MBPP solutions return; sent as their plain contents."""
    found = modules.get("collections")  # looked up late: importing it up front costs every run ~3 ms
    try:
        return (dict_, *[getattr_(found, n, dict_) for n in ("Counter", "OrderedDict", "defaultdict")])
    except base_exception:
        return (dict_,)


def _encode(value: object, depth: int, budget: list[int]) -> tuple[object, ...]:
    """Tagged tree of a plain builtin value; exact types only (no subclasses), identity checks only."""
    budget[0] -= 1
    if depth > max_depth or budget[0] < 0:
        raise Unsupported("value too large or too deeply nested")
    t = type_(value)
    if value is None:
        return ("n",)
    if t is bool_:
        return ("b", "1" if value is True else "0")
    if t is int_:
        return ("i", hex_(value))
    if t is float_:
        return ("f", float_hex(value))
    if t is complex_:
        return ("c", float_hex(value.real), float_hex(value.imag))
    if t is str_:
        return ("s", value)
    if t is bytes_:
        return ("y", value.hex())
    for tag, container in (("l", list_), ("t", tuple_), ("S", set_), ("F", frozenset_)):
        if t is container:
            return (tag, *[_encode(item, depth + 1, budget) for item in value])
    for plain in _plain_dicts():
        if t is plain:  # dict's own C method: overrides on the subclass are never called
            pairs = dict_items(value)  # TypeError if a tampered module named a non-dict
            depth += 1
            return ("d", *[(_encode(k, depth, budget), _encode(v, depth, budget)) for k, v in pairs])
    raise Unsupported("unsupported type " + type_name(t))


def _describe(exc: BaseException) -> tuple[str, str]:
    """Exception class name and a short message, never trusting the exception to behave."""
    try:
        message = exception_str(exc)
        message = message if type_(message) is str_ else ""
    except base_exception:
        message = ""
    return type_name(type_(exc)), message[:500]


def _flush_output() -> None:
    """Flush the program's stdout/stderr buffers (os._exit would drop them); whatever they are now."""
    for name in ("stdout", "stderr"):
        try:  # noqa: SIM105 - contextlib would cost every run an import
            getattr_(sys, name).flush()
        except base_exception:
            pass


class _Channel:
    """The result channel: one record a line on :data:`RESULT_FD`, framed with the run's nonce and tagged with its
    key (a keyed BLAKE2b of the record's place in the stream and its text)."""

    def __init__(self, nonce: bytes, key: bytes) -> None:
        self.nonce, self.key, self.sent = nonce, key, 0

    def send(self, *fields: object) -> None:
        """Write the record ``fields`` whole: ``<nonce> <tag> <repr of fields>``."""
        body = repr_(fields).encode("utf-8", "surrogatepass")
        tag = blake2b_(b"%d " % self.sent + body, key=self.key, digest_size=16).hexdigest().encode()
        self.sent += 1
        line = self.nonce + b" " + tag + b" " + body + b"\n"
        while line:
            line = line[write(RESULT_FD, line) :]


def _lock_down(payload: dict) -> None:
    """Before the program exists: the result channel on :data:`RESULT_FD` and no descriptor above it, the sandbox's
    own uid and gid (``drop_to``, as root), the rlimits, a deeper recursion limit, ``/tmp`` as working directory."""
    fd = payload["result_fd"]
    if fd != RESULT_FD:
        os.dup2(fd, RESULT_FD)
        os.close(fd)
    os.closerange(RESULT_FD + 1, 1 << 16)
    if payload["drop_to"] is not None:
        ident = payload["drop_to"]
        os.setgroups([])
        os.setresgid(ident, ident, ident)
        os.setresuid(ident, ident, ident)
    for name, (soft, hard) in payload["rlimits"].items():
        resource.setrlimit(getattr(resource, name), (soft, hard))
    sys.setrecursionlimit(5000)
    os.chdir("/tmp")


def _load_program(payload: dict, channel: _Channel) -> dict[str, object]:
    """The namespace of the program and its setup, run with pristine builtins; a ``load_error`` ends the run."""
    namespace: dict[str, object] = {"__name__": "__main__", "__builtins__": dict_(pristine_builtins)}
    for stage in ("code", "setup"):
        try:
            exec_(compile_(payload[stage], "<" + stage + ">", "exec"), namespace)
        except base_exception as exc:
            _flush_output()
            channel.send("load_error", stage, *_describe(exc))
            exit_(0)
    return namespace


def _evaluate_tests(payload: dict, namespace: dict[str, object], channel: _Channel) -> None:
    """Every test's sub-expressions, each in a copy of the program's namespace with pristine builtins: one record
    each, its value (``value``), what it raised (``raised``) or why its value cannot be sent (``unsupported``)."""
    for index, sources in enumerate_(payload["exprs"]):
        for position, source in enumerate_(sources):
            env = dict_(namespace)
            env["__builtins__"] = dict_(pristine_builtins)
            try:
                value = eval_(compile_(source, "<test>", "eval"), env)
            except base_exception as exc:
                channel.send("raised", index, position, *_describe(exc))
                continue
            try:
                encoded = _encode(value, 0, [max_nodes])
            except (Unsupported, recursion_error, memory_error, type_error) as exc:
                channel.send("unsupported", index, position, *_describe(exc))
                continue
            channel.send("value", index, position, encoded)


def _harness(payload: dict) -> None:
    """Lock the process down, run the program and report every sub-expression's value."""
    channel = _Channel(payload.pop("nonce").encode(), payload.pop("key"))
    _lock_down(payload)
    channel.send("ready")
    namespace = _load_program(payload, channel)
    _evaluate_tests(payload, namespace, channel)
    _flush_output()
    channel.send("done")
    exit_(0)
