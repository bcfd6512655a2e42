"""Benchmark: the 500 MBPP test-split reference solutions, sandboxed vs a plain subprocess per program.

Run on demand (not a test): ``python bench/bench_sandbox.py [--workers N] [--repeats R]``. Both sides use
the same base interpreter with ``-I -S`` and one fresh process per program; the plain side simply runs
``code + setup + tests`` with ``python -c`` and takes exit status 0 as a pass. The two are interleaved
program by program (alternating which goes first), so a machine whose load drifts, as a shared CI box
does, slows both alike; each side's time is the sum of its per-program latencies. Issue 5's goal is a
sandboxed/plain ratio of at most 2. ``--memory-mode cgroup|seccomp`` measures one memory protection
(default: what ``auto`` picks here; see ``deepeval-games sandbox-info``).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from deepeval_games.infra.sandbox import MEMORY_MODE_ENV, bubblewrap_usable, run_tests
from deepeval_games.infra.sandbox.bwrap import interpreter
from deepeval_games.infra.sandbox.protection import select

Record = dict[str, object]
TIMEOUT_S = 30.0  # task 123 alone needs a few CPU seconds; both sides get the same limit


def load_records() -> list[Record]:
    """MBPP test split (task ids 11-510) from ``$DEEPEVAL_GAMES_DATA`` or ``../shared/data``."""
    default = Path(__file__).resolve().parents[2] / "shared" / "data"
    path = Path(os.environ.get("DEEPEVAL_GAMES_DATA", default)) / "mbpp" / "mbpp.jsonl"
    records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [r for r in records if 11 <= int(r["task_id"]) <= 510]


def sandboxed(record: Record) -> bool:
    tests = [str(t) for t in record["test_list"]]  # type: ignore[attr-defined]
    return run_tests(str(record["code"]), tests, str(record["test_setup_code"]), timeout_s=TIMEOUT_S).passed


def plain(record: Record) -> bool:
    tests = "\n".join(record["test_list"])  # type: ignore[arg-type]
    program = f"{record['code']}\n{record['test_setup_code']}\n{tests}\n"
    argv = [interpreter(), "-I", "-S", "-c", program]
    try:
        return subprocess.run(argv, capture_output=True, timeout=TIMEOUT_S).returncode == 0
    except subprocess.TimeoutExpired:
        return False


def both(indexed: tuple[int, Record]) -> dict[str, tuple[float, bool]]:
    """Seconds and pass/fail of each side on one program, in alternating order."""
    index, record = indexed
    sides: list[tuple[str, Callable[[Record], bool]]] = [("sandboxed", sandboxed), ("plain", plain)]
    out = {}
    for name, run in sides if index % 2 else sides[::-1]:
        start = time.perf_counter()
        ok = run(record)
        out[name] = (time.perf_counter() - start, ok)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=1, help="programs in flight at once")
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--memory-mode", choices=("auto", "cgroup", "seccomp"), help="force a memory protection")
    args = parser.parse_args()
    if args.memory_mode:
        os.environ[MEMORY_MODE_ENV] = args.memory_mode
    if not bubblewrap_usable():
        sys.exit("bubblewrap is not usable here; nothing to compare")
    records = load_records()
    for _ in range(args.repeats):
        start = time.perf_counter()
        with ThreadPoolExecutor(max_workers=args.workers) as pool:
            results = list(pool.map(both, enumerate(records)))
        wall = time.perf_counter() - start
        total = {name: sum(r[name][0] for r in results) for name in ("sandboxed", "plain")}
        passed = {name: sum(r[name][1] for r in results) for name in ("sandboxed", "plain")}
        print(
            f"{len(records)} programs, {args.workers} worker(s), memory protection {select().memory}, "
            f"wall {wall:.1f} s: "
            f"sandboxed {total['sandboxed']:.2f} s ({passed['sandboxed']} passed), "
            f"plain {total['plain']:.2f} s ({passed['plain']} passed), "
            f"ratio {total['sandboxed'] / total['plain']:.2f}x (goal <= 2x)",
            flush=True,
        )


if __name__ == "__main__":
    main()
