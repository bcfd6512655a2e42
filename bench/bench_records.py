"""Benchmark: memory and disk of long scripted and classical runs (issue 41, item 4).

Run on demand (not a test): ``python bench/bench_records.py [--matches N] [--small M] [--runner-only]``.

For two runs, scripted PGG (four scripted seats, permuted every repeat) and random against random on tic-tac-toe,
``deepeval-games run --workers 1`` (``--runner-only``: :func:`~deepeval_games.run_experiment`, no summary) plays
``--small`` matches, then ``--matches`` matches, each in a fresh interpreter (:func:`bench.run_all.cli`); printed:
each run's peak RSS, the growth from the small run to the large one (target: within 50 MB), its wall time, and the
bytes per match on disk (``matches.jsonl`` and ``results.sqlite``). Run it from two checkouts for before and after.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.run_all import api_run_mb, cli, scripted_spec, toml

TARGET_MB = 50.0


def ttt_spec(matches: int, name: str) -> dict[str, Any]:
    """Random against random on tic-tac-toe: ``matches`` matches (both seatings, ``matches / 2`` repeats)."""
    settings = {"name": name, "game": "tic_tac_toe", "repeats": max(matches // 2, 1), "seed": 0}
    settings["max_matches"] = max(matches, 1000)
    players = [{"name": "random-a", "bot": "random"}, {"name": "random-b", "bot": "random"}]
    return {"experiment": settings, "players": players}


def measure(kind: str, matches: int, work: Path, runner_only: bool = False) -> dict[str, Any]:
    """One CLI run of ``matches`` matches of ``kind`` (``runner_only``: :func:`run_experiment` in a fresh interpreter,
    no summary printed after the matches): its wall time, peak RSS and bytes per match on disk."""
    spec = scripted_spec(matches, f"bench-records-{kind}-{matches}") if kind == "pgg" else ttt_spec(matches, kind)
    path = work / f"{kind}-{matches}.toml"
    path.write_text(toml(spec))
    out = work / f"{kind}-{matches}"
    if runner_only:
        start = time.perf_counter()
        spec["experiment"]["workers"] = 1
        run: dict[str, Any] = {"rss_mb": api_run_mb(spec, out)}
        run["wall"] = time.perf_counter() - start
    else:
        run = cli(["run", str(path), "--out", str(out), "--no-progress", "--workers", "1"], work)
    played = sum(1 for _ in (out / "matches.jsonl").open("rb"))
    run["played"] = played
    run["jsonl_b"] = (out / "matches.jsonl").stat().st_size / played
    run["sqlite_b"] = (out / "results.sqlite").stat().st_size / played
    shutil.rmtree(out, ignore_errors=True)
    return run


def main(argv: list[str] | None = None) -> int:
    """Print one line per run and the growth of each kind; 1 when a growth misses its target."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--matches", type=int, default=100_000)
    parser.add_argument("--small", type=int, default=1_000)
    parser.add_argument("--kinds", nargs="+", choices=["pgg", "ttt"], default=["pgg", "ttt"])
    parser.add_argument(
        "--runner-only", action="store_true", help="run_experiment, not the CLI: no end-of-run summary measured"
    )
    args = parser.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="dg-bench-records-"))
    missed = False
    try:
        for kind in args.kinds:
            runs = {size: measure(kind, size, work, args.runner_only) for size in (args.small, args.matches)}
            for run in runs.values():
                print(
                    f"{kind} {run['played']:>7} matches: peak RSS {run['rss_mb']:6.1f} MB, {run['wall']:6.1f} s, "
                    f"{run['jsonl_b']:7.1f} B/match in matches.jsonl, {run['sqlite_b']:7.1f} B/match in results.sqlite",
                    flush=True,
                )
            growth = runs[args.matches]["rss_mb"] - runs[args.small]["rss_mb"]
            missed |= growth > TARGET_MB
            print(f"{kind}: peak RSS grows {growth:.1f} MB from {args.small} to {args.matches} (<= {TARGET_MB:.0f})")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
