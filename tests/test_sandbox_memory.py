"""The sandbox's memory bound and its residue, against hostile programs, in both protection modes.

``cgroup`` mode: a memory cgroup per sandbox; every hoard ends ``memory``/``timeout``/``failed`` and the
cgroup's peak usage stays within the bound (and near it: the hoard was charged to the sandbox). ``seccomp``
mode (the fallback, forced here): the calls that hold memory no rlimit counts are refused, and what the
processes hold together stays within the bound. Bounds are small (128 MiB) so the suite stays fast.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from deepeval_games.infra import sandbox
from deepeval_games.infra.sandbox import (
    SandboxLimits,
    SandboxUnavailable,
    bwrap,
    cgroup,
    launch,
    protection,
    run_tests,
    seccomp,
)

BOUND = 128 << 20
LIMITS = SandboxLimits(memory_bytes=BOUND, max_processes=6)
ENDINGS = ("memory", "timeout", "failed")

needs_bwrap = pytest.mark.skipif(not sandbox.bubblewrap_usable(), reason=f"bubblewrap unusable here: {bwrap.probe()}")
CGROUP = pytest.param(
    "cgroup", marks=pytest.mark.skipif(cgroup.probe() is not None, reason=f"no memory cgroup here: {cgroup.probe()}")
)
SECCOMP = pytest.param(
    "seccomp", marks=pytest.mark.skipif(seccomp.unsupported() is not None, reason=f"{seccomp.unsupported()}")
)


@pytest.fixture(params=[CGROUP, SECCOMP])
def mode(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Each protection mode, forced through the setting a user would use (the environment variable)."""
    monkeypatch.setenv(protection.MEMORY_MODE_ENV, request.param)
    return str(request.param)


@pytest.fixture(autouse=True)
def no_cgroups_left(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Every test: a private slot directory, and no cgroup of this process left behind afterwards."""
    monkeypatch.setenv(protection.SLOTS_DIR_ENV, str(tmp_path / "slots"))
    yield
    parent = cgroup.own_memory_cgroup()
    if parent is not None and parent.is_dir():
        spares = {s.name for s in spare_cgroups()}
        mine = [p.name for p in parent.iterdir() if p.name.startswith(f"deepeval-sandbox-{os.getpid()}-")]
        assert [name for name in mine if name not in spares] == []


def spare_cgroups() -> list[Path]:
    """Cgroups of the spares waiting now (made ahead of a run, no program in them)."""
    with launch._lock:
        return [s.cgroup.path for waiting in launch._spares.values() for s in waiting if s.cgroup is not None]


def hostile(code: str, test: str, timeout_s: float = 8) -> sandbox.TestReport:
    report = run_tests(code, [test], limits=LIMITS, timeout_s=timeout_s)
    assert report.status in ENDINGS, report
    return report


def mem_available() -> int:
    """The host's MemAvailable, in bytes."""
    with open("/proc/meminfo", encoding="ascii") as meminfo:
        for line in meminfo:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no MemAvailable in /proc/meminfo")


class HostMemory:
    """How far the host's MemAvailable falls while a block runs: sampled every 10 ms from a thread, against the
    median of a few samples taken just before."""

    def __init__(self) -> None:
        self.samples: list[int] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self.baseline = 0

    def _sample(self) -> None:
        while not self._stop.wait(0.01):
            self.samples.append(mem_available())

    def __enter__(self) -> HostMemory:
        before = []
        for _ in range(5):
            before.append(mem_available())
            time.sleep(0.01)
        self.baseline = sorted(before)[2]
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    @property
    def fall(self) -> int:
        """The deepest fall below the baseline seen (bytes; 0 when it never fell)."""
        return max(0, self.baseline - min(self.samples, default=self.baseline))


HOST_BOUND = protection.bound_bytes(LIMITS)
"""All one sandbox may make the host hold: its memory bound and its ``/tmp``."""


def hostile_measured(code: str, test: str, mode: str, timeout_s: float = 8) -> sandbox.TestReport:
    """:func:`hostile`; in ``seccomp`` mode also the host's MemAvailable, which may fall by at most the sandbox's
    bound plus 10 %. Other processes of a shared host move MemAvailable too, so a fall over it is measured once
    more before it fails the test (a broken protection falls by 4x the bound every time)."""
    if mode != "seccomp":
        return hostile(code, test, timeout_s)
    falls = []
    for _ in range(2):
        with HostMemory() as host:
            report = hostile(code, test, timeout_s)
        falls.append(host.fall)
        if host.fall <= HOST_BOUND * 1.1:
            return report
    raise AssertionError(f"MemAvailable fell by {[f >> 20 for f in falls]} MiB, over {HOST_BOUND >> 20} MiB + 10 %")


def within_bound(report: sandbox.TestReport, mode: str) -> None:
    """cgroup: the peak is at most the bound and the hoard reached it (it was charged to the sandbox)."""
    assert report.protection == mode
    if mode == "cgroup":
        assert report.peak_memory_bytes is not None
        assert BOUND // 2 <= report.peak_memory_bytes <= BOUND, report.peak_memory_bytes
        assert report.status == "memory", report
    else:
        assert report.peak_memory_bytes is None


# ---------------------------------------------------------------------------------------------------------
# Hostile programs. Each stops hoarding at 4x the bound so a broken protection cannot take the host down.

MEMFD_HOARD = """
import os, time
def hoard(n_procs):
    try:
        os.close(os.memfd_create("probe"))
    except OSError as exc:
        return "refused", exc.errno
    for _ in range(n_procs):
        if os.fork() == 0:
            fds = []
            try:
                while len(fds) < 64:
                    fd = os.memfd_create("hoard")
                    os.write(fd, b"m" * (8 << 20))
                    fds.append(fd)
            except OSError:
                pass
            time.sleep(30)
            os._exit(0)
    time.sleep(1)
    return "held"
"""


@needs_bwrap
def test_memfd_hoard_from_four_processes(mode: str) -> None:
    report = hostile_measured(MEMFD_HOARD, "assert hoard(4) == 1", mode)
    within_bound(report, mode)
    if mode == "seccomp":
        assert report.tests[0].detail == "child values: ('refused', 1)", report  # EPERM


NESTED_TMPFS_HOARD = """
import ctypes, os
def hoard():
    libc = ctypes.CDLL(None, use_errno=True)
    uid, gid = os.geteuid(), os.getegid()
    libc.prctl(4, 1, 0, 0, 0)  # PR_SET_DUMPABLE, so this uid may write its own uid_map
    if libc.unshare(0x10000000 | 0x00020000) != 0:  # CLONE_NEWUSER | CLONE_NEWNS
        return "unshare refused", ctypes.get_errno()
    for name, text in (("setgroups", "deny"), ("uid_map", f"0 {uid} 1"), ("gid_map", f"0 {gid} 1")):
        with open("/proc/self/" + name, "w") as f:
            f.write(text)
    os.makedirs("/tmp/hoard", exist_ok=True)
    if libc.mount(b"none", b"/tmp/hoard", b"tmpfs", 0, b"size=1g") != 0:
        return "mount refused", ctypes.get_errno()
    for i in range(64):
        with open(f"/tmp/hoard/{i}", "wb") as f:
            f.write(b"t" * (8 << 20))
    return "held"
"""


@needs_bwrap
def test_nested_namespace_tmpfs_hoard(mode: str) -> None:
    report = hostile_measured(NESTED_TMPFS_HOARD, "assert hoard() == 1", mode)
    if mode == "cgroup" and os.geteuid() != 0:  # bwrap --disable-userns already refuses nested namespaces
        assert "unshare refused" in report.tests[0].detail
        return
    within_bound(report, mode)
    if mode == "seccomp":
        assert report.tests[0].detail == "child values: ('unshare refused', 1)", report


SYSV_SHM_HOARD = """
import ctypes, os
def hoard():
    libc = ctypes.CDLL(None, use_errno=True)
    libc.shmat.restype = ctypes.c_void_p
    held = 0
    while held < 512:
        shmid = libc.shmget(0, 8 << 20, 0o1600)  # IPC_PRIVATE, IPC_CREAT | 0600
        if shmid < 0:
            return "refused", ctypes.get_errno()
        address = libc.shmat(shmid, None, 0)
        ctypes.memset(address, 1, 8 << 20)
        libc.shmdt(ctypes.c_void_p(address))  # detached: no process maps it, the segment stays
        held += 8
    return "held"
"""


@needs_bwrap
def test_sysv_shared_memory_hoard(mode: str) -> None:
    report = hostile_measured(SYSV_SHM_HOARD, "assert hoard() == 1", mode)
    within_bound(report, mode)
    if mode == "seccomp":
        assert report.tests[0].detail == "child values: ('refused', 1)", report


MALLOC_HOARD = """
import os, time
def fill():
    keep = []
    try:
        while len(keep) < 128:
            keep.append(bytearray(4 << 20))
    except MemoryError:
        pass
    return keep
def hoard(n_procs):
    read_end, write_end = os.pipe()
    for _ in range(n_procs - 1):
        if os.fork() == 0:
            os.write(write_end, len(fill()).to_bytes(4, "little"))
            time.sleep(30)
            os._exit(0)
    total = len(fill())
    for _ in range(n_procs - 1):
        total += int.from_bytes(os.read(read_end, 4), "little")
    return total * 4
"""


@needs_bwrap
def test_plain_malloc_hoard_from_four_processes(mode: str) -> None:
    report = hostile_measured(MALLOC_HOARD, "assert hoard(4) == 1", mode)
    within_bound(report, mode)
    if mode == "seccomp":  # each process's address space is its share of the bound
        held_mib = int(report.tests[0].detail.removeprefix("child values: "))
        assert 0 < held_mib <= BOUND >> 20, held_mib


SOCKET_HOARD = """
import os, socket, time
def hoard(n_procs, pairs_each):
    try:
        socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
    except OSError as exc:
        return "refused", exc.errno
    for _ in range(n_procs):
        if os.fork() == 0:
            keep = []
            try:
                for _ in range(pairs_each):
                    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
                    keep.append((a, b))
                    a.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4 << 20)  # the kernel makes it 8 MiB
                    a.setblocking(False)
                    try:
                        while True:  # queued on b, charged to a's send buffer: no rlimit counts it
                            a.send(b"s" * (1 << 20))
                    except OSError:
                        pass
            except OSError:
                pass
            time.sleep(30)
            os._exit(0)
    time.sleep(1.5)
    return "held"
"""


@needs_bwrap
def test_socket_buffer_hoard_from_four_processes(mode: str) -> None:
    """Unix datagram socketpairs queue up to 8 MiB each in the kernel: 4 x 16 pairs would be 4x the bound."""
    report = hostile_measured(SOCKET_HOARD, "assert hoard(4, 16) == 1", mode)
    assert report.protection == mode
    if mode == "seccomp":  # no sockets in the fallback: MBPP's programs need none
        assert report.tests[0].detail == "child values: ('refused', 1)", report  # EPERM
    else:  # charged to the cgroup: sends fail (ENOBUFS) at the bound rather than a process being killed
        assert report.peak_memory_bytes is not None and BOUND // 2 <= report.peak_memory_bytes <= BOUND, report


PIPE_HOARD = """
import fcntl, os, time
def hoard(n_procs, pipes_each):
    grown = []
    for _ in range(n_procs):
        if os.fork() == 0:
            keep = []
            try:
                for _ in range(pipes_each):
                    read_end, write_end = os.pipe()
                    keep.append((read_end, write_end))
                    try:
                        fcntl.fcntl(write_end, 1031, 1 << 20)  # F_SETPIPE_SZ: 1 MiB instead of 64 KiB
                    except OSError:
                        pass
                    os.set_blocking(write_end, False)
                    try:
                        while True:
                            os.write(write_end, b"p" * 65536)
                    except OSError:
                        pass
            except OSError:
                pass
            time.sleep(30)
            os._exit(0)
    read_end, write_end = os.pipe()
    try:
        fcntl.fcntl(write_end, 1031, 1 << 20)
        grown.append("grown")
    except OSError as exc:
        grown.append(exc.errno)
    time.sleep(1.5)
    return grown
"""


@needs_bwrap
def test_pipe_buffer_hoard_from_four_processes(mode: str) -> None:
    """Pipes grown to 1 MiB hold what no rlimit counts; the fallback keeps them at 64 KiB, so what stays is bounded
    by the open-file and process limits (the module docs of deepeval_games.infra.sandbox.seccomp count it)."""
    report = hostile_measured(PIPE_HOARD, "assert hoard(4, 28) == 1", mode)
    assert report.protection == mode and report.status == "failed", report
    if mode == "seccomp":
        assert report.tests[0].detail == "child values: [1]", report  # F_SETPIPE_SZ: EPERM


FILES_HOARD = """
def hoard():
    out = {}
    for path in ("/hoard", "/dev/hoard", "/dev/shm/hoard", "/tmp/hoard"):
        try:
            with open(path, "wb") as f:
                f.write(b"f" * (1 << 20))
            out[path] = "written"
        except OSError as exc:
            out[path] = exc.errno
    return out
"""
ONLY_TMP = "child values: {'/hoard': 30, '/dev/hoard': 30, '/dev/shm/hoard': 30, '/tmp/hoard': 'written'}"  # EROFS


@needs_bwrap
def test_only_the_capped_tmp_holds_files(mode: str) -> None:
    """bwrap's root and /dev are uncapped tmpfs (writable by a non-root user's mapped uid): read-only here."""
    report = hostile(FILES_HOARD, "assert hoard() == 1")
    assert report.tests[0].detail == ONLY_TMP, report


FORK_BOMB = "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass\n"
FORK_BOMB += "def f():\n    return 1\n"


@needs_bwrap
def test_fork_bomb(mode: str) -> None:
    start = time.monotonic()
    report = hostile(FORK_BOMB, "assert f() == 1", timeout_s=2)
    assert report.status in ("timeout", "memory"), report
    assert time.monotonic() - start < 8
    assert report.protection == mode


NAMESPACES_AND_MOUNTS = """
import ctypes, os
def calls():
    libc = ctypes.CDLL(None, use_errno=True)
    def errno_of(result):
        return 0 if result >= 0 else ctypes.get_errno()
    return [
        errno_of(libc.unshare(0x40000000)),  # CLONE_NEWNET
        errno_of(libc.syscall(435, None, 0)),  # clone3: ENOSYS makes the C library fall back to clone
        errno_of(libc.mount(b"none", b"/tmp", b"tmpfs", 0, None)),
        errno_of(libc.syscall(430, b"tmpfs", 0)),  # fsopen
    ]
"""


@needs_bwrap
@pytest.mark.skipif(seccomp.unsupported() is not None, reason=f"{seccomp.unsupported()}")
def test_fallback_refuses_namespaces_mounts_and_clone3(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(protection.MEMORY_MODE_ENV, "seccomp")
    report = run_tests(NAMESPACES_AND_MOUNTS, ["assert calls() == 1"], limits=LIMITS)
    assert report.tests[0].detail == "child values: [1, 38, 1, 1]", report  # EPERM, ENOSYS, EPERM, EPERM
    honest = "import os\ndef f():\n    pid = os.fork()\n    if pid == 0:\n        os._exit(7)\n"
    honest += "    return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])\n"
    assert run_tests(honest, ["assert f() == 7"], limits=LIMITS).status == "passed"  # plain fork still works
    threads = "import threading\ndef g():\n    out = []\n    t = threading.Thread(target=lambda: out.append(7))\n"
    threads += "    t.start()\n    t.join()\n    return out\n"
    assert run_tests(threads, ["assert g() == [7]"], limits=LIMITS).passed  # clone3 refused: the C library falls back


# ---------------------------------------------------------------------------------------------------------
# No residue.

RESIDUE = """
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
def keyring():
    found = []
    for ring in (-3, -4, -5):  # session, user and user-session keyrings
        if libc.syscall(250, 10, ring, b"user", b"deepeval-residue", 0) >= 0:  # keyctl(KEYCTL_SEARCH)
            found.append(ring)
    try:
        with open("/proc/keys") as keys:
            if "deepeval-residue" in keys.read():
                found.append("/proc/keys")
    except OSError:
        pass
    refused = [ctypes.get_errno() for ring in (-3, -4, -5)
               if libc.syscall(248, b"user", b"deepeval-residue", b"was here", 8, ring) < 0]  # add_key
    return found, refused
def traces():
    seen = []
    for path in ("/tmp/deepeval-residue", "/dev/shm/deepeval-residue"):
        if os.path.exists(path):
            seen.append(path)
        try:
            open(path, "w").close()
        except OSError:
            pass
    if libc.shmget(0x5EED, 4096, 0) >= 0:
        seen.append("sysv")
    libc.shmget(0x5EED, 4096, 0o1600)
    return seen
"""


@needs_bwrap
def test_a_later_program_cannot_read_what_an_earlier_one_wrote(mode: str) -> None:
    tests = ["assert keyring() == ([], [1, 1, 1])", "assert traces() == []"]
    for _ in range(2):
        report = run_tests(RESIDUE, tests, limits=LIMITS)
        assert report.status == "passed", report
    assert b"deepeval-residue" not in Path("/proc/keys").read_bytes()  # nothing reached the host's keyrings


@needs_bwrap
def test_the_judge_and_the_scorer_see_the_same_program() -> None:
    """A program that behaves one way the first time and another the next cannot tell the two runs apart."""
    from game_defs.code_review.scorer import run_program, score_program

    two_faced = RESIDUE + "def answer():\n    return 1 if keyring()[0] or traces() else 2\n"
    tests = ["assert answer() == 2"]
    judged = run_program(two_faced, tests)  # what judge_pass_rate runs
    scored = score_program(two_faced, tests)  # what the mbpp_pass_rate scorer runs
    assert judged.status == "passed" and judged.pass_rate == 1.0, judged
    assert scored["pass_rate"] == 1.0 and scored["sandbox_status"] == "passed", scored
    # Nor by what it can see of itself: descriptors, ids and names are the same whichever way a run started.
    looks = "import os, socket\ndef looks():\n    return (sorted(os.listdir('/proc/self/fd')), os.getuid(),"
    looks += " os.getgid(), os.getpid(), os.getppid(), socket.gethostname(), open('/proc/self/cgroup').read())\n"
    seen = {run_program(looks, ["assert looks() == None"]).tests[0].detail for _ in range(4)}
    assert len(seen) == 1, seen


# ---------------------------------------------------------------------------------------------------------
# Settings, the host budget, and the cgroup's own bookkeeping.


def test_the_memory_mode_setting_is_validated(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(protection.MEMORY_MODE_ENV, "tmpfs")
    with pytest.raises(ValueError, match="expected one of auto, cgroup, seccomp"):
        protection.requested_mode()
    monkeypatch.setenv(protection.MEMORY_MODE_ENV, "cgroup")
    monkeypatch.setattr(cgroup, "probe", lambda: "no cgroup-v1 memory controller is mounted")
    with pytest.raises(SandboxUnavailable, match="memory cgroup was required"):
        protection.select()
    monkeypatch.setenv(protection.MEMORY_MODE_ENV, "auto")
    if seccomp.unsupported() is None:
        chosen = protection.select()
        assert chosen.memory == "seccomp" and "no cgroup-v1" in chosen.detail
        assert chosen.address_space(LIMITS) == BOUND // LIMITS.max_processes
    assert protection.select(bubblewrap=False).memory == "rlimits"


def test_memory_share_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    for bad in ("0", "1.5", "nan", "-1", "half"):
        monkeypatch.setenv(protection.MEMORY_SHARE_ENV, bad)
        with pytest.raises(ValueError, match="above 0 and at most 1"):
            protection.memory_share()
    monkeypatch.setenv(protection.MEMORY_SHARE_ENV, "0.25")
    assert protection.memory_share() == 0.25
    assert protection.budget_slots(1 << 30, share=0.5, total_bytes=24 << 30) == 12
    assert protection.budget_slots(1 << 30, share=0.5, total_bytes=1 << 30) == 1  # never zero


def test_the_host_budget_caps_concurrent_sandboxes(monkeypatch: pytest.MonkeyPatch) -> None:
    """With room for two, five holders at once never exceed two, across threads and another process."""
    bound = 3 * protection.UNIT_BYTES
    monkeypatch.setattr(protection, "budget_units", lambda share=None, total_bytes=None: 7)  # two fit, not three
    running, peak = [0], [0]

    def hold(_: int) -> None:
        with protection.slot(bound) as units:
            assert units == 3
            running[0] += 1
            peak[0] = max(peak[0], running[0])
            time.sleep(0.1)
            running[0] -= 1

    start = time.monotonic()
    with ThreadPoolExecutor(max_workers=5) as pool:
        list(pool.map(hold, range(5)))
    assert peak[0] == 2 and time.monotonic() - start >= 0.3
    # Another process holding all seven units blocks this one until it lets go.
    slots = os.environ[protection.SLOTS_DIR_ENV]
    holder = (
        "import fcntl, os, sys, time\n"
        "fds = [os.open(f'{sys.argv[1]}/unit-{i}', os.O_RDWR | os.O_CREAT) for i in range(7)]\n"
        "[fcntl.flock(fd, fcntl.LOCK_EX) for fd in fds]\nprint('held', flush=True)\ntime.sleep(0.6)\n"
    )
    with subprocess.Popen([sys.executable, "-c", holder, slots], stdout=subprocess.PIPE) as other:
        assert other.stdout is not None and other.stdout.readline() == b"held\n"
        start = time.monotonic()
        with pytest.raises(TimeoutError), protection.slot(bound, wait_s=0.1):
            pass
        with protection.slot(bound, wait_s=10):
            assert time.monotonic() - start > 0.3
    assert other.returncode == 0


def test_the_memory_controller_is_found_from_mountinfo() -> None:
    v1 = "35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n"
    v2 = "41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n"
    own = "4:memory:/process_api/abc\n0::/\n"
    assert cgroup.own_memory_cgroup(v2 + v1, own) == Path("/sys/fs/cgroup/memory/process_api/abc")
    assert cgroup.own_memory_cgroup(v2, own) is None  # a cgroup2 mount without a memory controller
    nested = "35 31 0:32 /process_api /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory,nosuid\n"
    assert cgroup.own_memory_cgroup(nested, own) == Path("/sys/fs/cgroup/memory/abc")  # a container's view


def test_the_seccomp_filter_is_well_formed() -> None:
    if seccomp.unsupported() is not None:
        pytest.skip(f"{seccomp.unsupported()}")
    program = seccomp.filter_program(seccomp.KEYRING | seccomp.UNBOUNDED, namespaces=True, pipe_growth=False)
    assert len(program) % 8 == 0 and len(program) // 8 < 64
    assert len(seccomp.filter_program(seccomp.KEYRING, namespaces=False)) < len(program)
    with pytest.raises(ValueError, match="unknown system calls"):
        seccomp.filter_program(frozenset({"no_such_call"}), namespaces=False)


@pytest.mark.skipif(cgroup.probe() is not None, reason=f"no memory cgroup here: {cgroup.probe()}")
def test_a_dead_processs_cgroups_are_swept() -> None:
    parent = cgroup.own_memory_cgroup()
    assert parent is not None
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    stale = parent / f"deepeval-sandbox-{int(dead.stdout)}-0"
    stale.mkdir()
    monkey = cgroup._swept
    monkey.clear()
    made = cgroup.create(16 << 20)
    try:
        assert not stale.exists()
    finally:
        assert made.remove()


@needs_bwrap
@pytest.mark.skipif(seccomp.unsupported() is not None, reason=f"{seccomp.unsupported()}")
def test_sandbox_info_shows_the_active_protection(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(protection.MEMORY_MODE_ENV, "seccomp")
    rows = dict(protection.describe())
    assert rows["memory protection"].startswith("seccomp")
    assert rows["keyring calls"].startswith("refused")
    assert "sandboxes at once" in rows["host budget"]


def test_cli_sandbox_info_and_run_setting(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    from deepeval_games.app.commands.cli import main

    monkeypatch.delenv(protection.MEMORY_MODE_ENV, raising=False)
    main(["sandbox-info", "--memory-mode", "seccomp"])
    out = capsys.readouterr().out
    assert "memory mode requested      seccomp" in out and "host budget" in out
    monkeypatch.setenv(protection.MEMORY_MODE_ENV, "bogus")
    assert main(["sandbox-info"]) == 2
    assert "UNAVAILABLE" in capsys.readouterr().out
    assert main(["run", "no-such-spec.toml", "--out", str(tmp_path / "out")]) == 2  # refused before the spec is read
    assert "DEEPEVAL_GAMES_SANDBOX_MEMORY='bogus'" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


@needs_bwrap
@pytest.mark.skipif(cgroup.probe() is not None, reason=f"no memory cgroup here: {cgroup.probe()}")
def test_spares_wait_in_their_cgroup_and_leave_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    """Launches made ahead (cgroup mode) sit gated in their own cgroup; discarding them removes everything."""
    monkeypatch.setenv(protection.MEMORY_MODE_ENV, "cgroup")
    assert run_tests("def f():\n    return 1\n", ["assert f() == 1"], limits=LIMITS).passed
    deadline = time.monotonic() + 10
    while not launch.spare_pids() and time.monotonic() < deadline:
        time.sleep(0.01)
    pids, groups = launch.spare_pids(), spare_cgroups()
    assert pids and len(groups) == len(pids)
    for pid in pids:
        assert (Path("/proc") / str(pid) / "comm").read_text().strip() == "sh"  # not yet bwrap: gated
        assert any(str(pid) in (group / "cgroup.procs").read_text().split() for group in groups)
    launch.discard_spares()
    assert launch.spare_pids() == set() and not any(group.exists() for group in groups)
    assert all(not (Path("/proc") / str(pid)).exists() for pid in pids)


@needs_bwrap
@pytest.mark.skipif(cgroup.probe() is not None, reason=f"no memory cgroup here: {cgroup.probe()}")
def test_a_forked_child_does_not_hold_a_spare_open(monkeypatch: pytest.MonkeyPatch) -> None:
    """A fork (a worker pool, say) must not keep a spare's stdin open: the harness would wait for its end."""
    monkeypatch.setenv(protection.MEMORY_MODE_ENV, "cgroup")
    code = "def f():\n    return 1\n"
    assert run_tests(code, ["assert f() == 1"], limits=LIMITS).passed
    deadline = time.monotonic() + 10
    while not launch.spare_pids() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert launch.spare_pids()
    child = os.fork()
    if child == 0:  # pragma: no cover - the child only waits
        time.sleep(4)
        os._exit(0)
    try:
        report = run_tests(code, ["assert f() == 1"], limits=LIMITS, timeout_s=3)
        assert report.passed, report
    finally:
        os.kill(child, 9)
        os.waitpid(child, 0)


NON_ROOT_RUNNER = """
import json, sys, types
for name in ("deepeval_games", "deepeval_games.infra"):  # the sandbox needs only the standard library: skip the
    package = types.ModuleType(name)  # packages' __init__ (the engine's imports pyspiel)
    package.__path__ = [sys.argv[1] + "/" + name.replace(".", "/")]
    sys.modules[name] = package
from deepeval_games.infra.sandbox import SandboxLimits, run_tests
limits = SandboxLimits(memory_bytes=int(sys.argv[2]), max_processes=6)
out = {}
for name, code in json.loads(sys.stdin.read()).items():
    for mode in ("cgroup", "seccomp"):
        report = run_tests(code, ["assert hoard() == 1"], limits=limits, memory_mode=mode, timeout_s=8)
        out[name + " " + mode] = [report.status, report.peak_memory_bytes, report.tests[0].detail]
print(json.dumps(out))
"""


def _system_python() -> str | None:
    """An interpreter an unprivileged user can run (this one may live under a private home)."""
    import shutil

    for name in (f"python{sys.version_info.major}.{sys.version_info.minor}", "python3"):
        found = shutil.which(name, path="/usr/bin:/bin")
        if found:
            return found
    return None


@needs_bwrap
@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to delegate a cgroup to an unprivileged user")
@pytest.mark.skipif(cgroup.probe() is not None, reason=f"no memory cgroup here: {cgroup.probe()}")
@pytest.mark.skipif(_system_python() is None, reason="no system python an unprivileged user can run")
def test_non_root_mode_in_both_protections() -> None:
    """As an ordinary user with a delegated cgroup: the memfd hoard is bounded (cgroup) or refused (seccomp)."""
    import json
    import shutil
    import tempfile

    if shutil.which("setpriv") is None:
        pytest.skip("setpriv (util-linux) is not installed")
    parent = cgroup.own_memory_cgroup()
    assert parent is not None
    delegated = parent / f"deepeval-delegated-{os.getpid()}"
    delegated.mkdir()
    for path in (delegated, delegated / "cgroup.procs", delegated / "tasks"):
        os.chown(path, 65534, 65534)
    tmp_path = Path(tempfile.mkdtemp(prefix="deepeval-non-root-"))  # pytest's own is private to root
    tmp_path.chmod(0o777)
    (tmp_path / "runner.py").write_text(NON_ROOT_RUNNER)
    hoards = {"memfd": MEMFD_HOARD.replace("def hoard(n_procs)", "def hoard(n_procs=4)"), "tmpfs": NESTED_TMPFS_HOARD}
    hoards["files"] = FILES_HOARD
    command = 'echo $$ >"$0" && exec setpriv --reuid=65534 --regid=65534 --clear-groups "$@"'
    argv = ["/bin/sh", "-c", command, str(delegated / "cgroup.procs"), str(_system_python()), "-I"]
    argv += [str(tmp_path / "runner.py"), str(Path(__file__).resolve().parents[1]), str(BOUND)]
    env = {"PATH": "/usr/bin:/bin", protection.SLOTS_DIR_ENV: str(tmp_path / "slots")}
    try:
        done = subprocess.run(argv, input=json.dumps(hoards), capture_output=True, text=True, timeout=120, env=env)
        assert done.returncode == 0, done.stderr
        results = json.loads(done.stdout)
    finally:
        shutil.rmtree(tmp_path, ignore_errors=True)
        assert cgroup._remove(delegated, 10.0)
    status, peak, _ = results["memfd cgroup"]
    assert status == "memory" and BOUND // 2 <= peak <= BOUND, results
    assert results["memfd seccomp"][::2] == ["failed", "child values: ('refused', 1)"], results
    for mode in ("cgroup", "seccomp"):  # bwrap --disable-userns (ENOSPC) or the filter (EPERM)
        assert results[f"tmpfs {mode}"][0] == "failed" and "unshare refused" in results[f"tmpfs {mode}"][2], results
        assert results[f"files {mode}"][2] == ONLY_TMP, results


@needs_bwrap
def test_runs_wait_for_the_host_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    """With a budget that fits one sandbox, three runs started at once take turns."""
    need = protection.units_needed(protection.bound_bytes(LIMITS), 1 << 20)
    monkeypatch.setattr(protection, "budget_units", lambda share=None, total_bytes=None: need)
    code = "import time\ndef f():\n    time.sleep(0.4)\n    return 1\n"
    start = time.monotonic()
    with ThreadPoolExecutor(max_workers=3) as pool:
        reports = list(pool.map(lambda _: run_tests(code, ["assert f() == 1"], limits=LIMITS), range(3)))
    assert all(r.passed for r in reports), reports
    assert time.monotonic() - start >= 3 * 0.4


CHILD_KILLED_PARENT_WAITS = """
import os, time
def hoard():
    read_end, write_end = os.pipe()
    for _ in range(3):  # 3 x 64 MiB: more than the bound together, within each process's own share
        if os.fork() == 0:
            try:
                keep = [bytearray(4 << 20) for _ in range(16)]
                time.sleep(30)
            finally:
                os._exit(0)
    return os.read(read_end, 1)  # nobody writes and the write end stays open here: this waits out the clock
"""


@needs_bwrap
@pytest.mark.skipif(cgroup.probe() is not None, reason=f"no memory cgroup here: {cgroup.probe()}")
def test_a_run_that_times_out_after_the_kernel_killed_a_process_at_the_bound_ends_memory(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The kernel kills a hoarding child; the parent then waits out the clock: the bound is why, not time."""
    monkeypatch.setenv(protection.MEMORY_MODE_ENV, "cgroup")
    report = run_tests(CHILD_KILLED_PARENT_WAITS, ["assert hoard() == 1"], limits=LIMITS, timeout_s=2)
    assert report.status == "memory", report
    assert "process(es) killed" in report.detail and "wall-clock limit reached" in report.detail, report
