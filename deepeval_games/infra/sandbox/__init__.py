"""Run untrusted Python (an LLM's MBPP solution) against ``assert`` tests, and decide the verdict here.

How a run works
---------------
Each call to :func:`run_tests` starts one ``bwrap`` (bubblewrap) sandbox running this interpreter's base
``python -I -S`` (standard library only) with the harness :mod:`deepeval_games.infra.sandbox.child`:

* namespaces: new mount, pid, network (just its own loopback), IPC, UTS and cgroup namespaces,
  ``--die-with-parent``, ``--new-session``; a cleared environment (``PATH``, ``HOME``, ``LANG`` only);
* files: read-only binds of ``/usr`` (plus the ``/bin``, ``/lib*`` links), ``/etc/ld.so.cache`` and the
  interpreter's prefix, nothing else: not the repository, the data sets, ``/home``, ``/root`` or the rest
  of ``/etc``; a fresh ``/proc``, bwrap's minimal ``/dev``, a private size-capped tmpfs on ``/tmp``,
  the only place a program can write (the root and ``/dev`` are read-only);
* identity: never root. As an ordinary user, bwrap maps the caller to uid 65534 in a new user namespace
  and forbids nested ones. As root, a uid mapped to host root would be exempt from ``RLIMIT_NPROC``, so
  bwrap runs privileged without a user namespace (keeping only CAP_SETUID/CAP_SETGID) and the harness,
  before anything else, switches to an unused uid/gid from a per-process block, with no groups and no
  capabilities left (no_new_privs is set by bwrap). Nested user namespaces stay possible in that mode;
* limits, set by the harness before the program loads: CPU seconds, address space, processes (per
  sandbox: the uid is the sandbox's own), file size, open files, no core files; here: a wall-clock
  deadline and byte caps on stdout+stderr and on the result channel, whose breach kills the sandbox;
* memory (:mod:`~deepeval_games.infra.sandbox.protection`): a memory cgroup per sandbox bounds everything its
  processes hold (anonymous, shared, tmpfs, memfd, socket buffers) to ``SandboxLimits.memory_bytes``; its
  peak is reported and reaching it is status ``memory``. Where no cgroup works, a seccomp filter refuses
  what no rlimit counts (new namespaces, mounts, memfds, SysV and POSIX IPC, io_uring, sockets, growing a
  pipe) and each process gets its share of the bound as address space; what stays outside it is counted in
  :mod:`~deepeval_games.infra.sandbox.seccomp`. A host-wide budget caps how many sandboxes run at once;
* residue: keyring calls are refused (seccomp, in both modes), and nothing else a program can write
  (``/tmp``, IPC objects, processes) outlives its sandbox, so no run can see an earlier one;
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
stdout, framed with a random per-run nonce given on stdin, and each carries a tag: a keyed BLAKE2b of its place
in the stream and its text, under a second per-run secret given on stdin and never written anywhere. A
malformed, unframed, untagged or mistagged, duplicate, reordered or missing record makes the run ``error``.

Threat model, honestly. What a program can see without attacking the harness's memory: the records themselves,
nonce included, if it puts a pipe of its own in place of the result descriptor and relays what the harness
writes through a process it forked (plain ``os`` calls). That gains nothing: the relay can pass records on
unchanged or break the run (``error``), since changing, making up, dropping or moving one needs the key
(``tests/test_sandbox.py`` runs that attack). What it can forge by attacking the harness's memory (the key and
the nonce through frame introspection, ``gc``, ``ctypes`` or ``/proc/self/mem``, then writing records
itself): any record the child sends, so any value of the sub-expressions the child evaluates. It still cannot
make the parent compare anything else: for ``lhs == <literal>`` tests (all 1,500 asserts of the MBPP test split)
the expected value is computed here and never enters the sandbox, so a forged report passes only if the program
knew the right answer, which is no more than hard-coding it. Sub-expressions that are not literals (both sides
of a non-literal ``==``, a bare ``assert f(x)``) are only as honest as the child. Exception names (``memory``,
per-test errors) are the child's word too, but only choose among failing statuses. Escaping the sandbox is left
to bubblewrap and the kernel.

Without a usable bwrap, :func:`run_tests` raises :class:`SandboxUnavailable`, unless ``unsafe=True``: then
the harness runs in a plain subprocess with the same rlimits (as root, ``RLIMIT_NPROC`` does not apply and
the uid is not changed), and a warning is logged. Once bwrap is usable, a run whose sandbox fails to start
is reported as ``infra_error``, never as a failed test.

Modules, one concern each: :mod:`~deepeval_games.infra.sandbox.planning` (which sub-expressions the parent evaluates
itself), :mod:`~deepeval_games.infra.sandbox.protocol` (starting the child and reading its records),
:mod:`~deepeval_games.infra.sandbox.child` (the harness program, run inside), :mod:`~deepeval_games.infra.sandbox.bwrap`
(limits, the bwrap command line, uids, the probe), :mod:`~deepeval_games.infra.sandbox.process` (feeding, watching
and killing the child), :mod:`~deepeval_games.infra.sandbox.report` (the report and its verdict),
:mod:`~deepeval_games.infra.sandbox.cgroup` (the memory cgroup), :mod:`~deepeval_games.infra.sandbox.seccomp` (the
filter),
:mod:`~deepeval_games.infra.sandbox.protection` (which of them applies, the host budget),
:mod:`~deepeval_games.infra.sandbox.launch` (starting a sandbox, ahead of time in cgroup mode) and
:mod:`~deepeval_games.infra.sandbox.run` (:func:`run_tests` and the unsafe opt-in, :data:`UNSAFE_ENV`).
"""

from deepeval_games.infra.sandbox.bwrap import SandboxLimits, SandboxUnavailable, bubblewrap_usable
from deepeval_games.infra.sandbox.planning import parse_python
from deepeval_games.infra.sandbox.protection import MEMORY_MODE_ENV, MEMORY_SHARE_ENV, MemoryMode
from deepeval_games.infra.sandbox.report import Status, TestReport, TestResult, TestStatus
from deepeval_games.infra.sandbox.run import UNSAFE_ENV, run_tests, unsafe_opt_in

__all__ = [
    "MEMORY_MODE_ENV",
    "MEMORY_SHARE_ENV",
    "UNSAFE_ENV",
    "MemoryMode",
    "SandboxLimits",
    "SandboxUnavailable",
    "Status",
    "TestReport",
    "TestResult",
    "TestStatus",
    "bubblewrap_usable",
    "parse_python",
    "run_tests",
    "unsafe_opt_in",
]
