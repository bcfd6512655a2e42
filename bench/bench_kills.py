"""The kill battery: scripted PGG runs of 1,000 to 8,000 matches, each killed with ``kill -9`` at random moments
(``--kills`` times) and then resumed to the end; every run must end complete, each planned match id once in
``matches.jsonl``, nothing quarantined (a run's own lines are always admitted).

    python bench/bench_kills.py                    # 8 runs, up to 4 kills each (30 with seed 5)
    python bench/bench_kills.py --runs 2 --kills 2 # a quick pass

A durability check, not a speed figure: it prints one line per run and exits 1 when a run lost or duplicated a match
or quarantined one. It runs the installed command (``python -m deepeval_games``) in child processes.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.run_all import scripted_spec, toml

SIZES = (1000, 2000, 4000, 8000)
"""The runs' sizes, in matches: one drawn per run."""


def _command(spec: Path, out: Path) -> list[str]:
    return [sys.executable, "-m", "deepeval_games", "run", str(spec), "--out", str(out), "--no-progress"]


def one_run(work: Path, case: int, kills: int, rng: random.Random) -> tuple[bool, int, str]:
    """Kill one run up to ``kills`` times (a child that ended first is not killed), resume it to the end; (whether it
    is whole, the kills, its line of the table)."""
    matches = rng.choice(SIZES)
    spec = work / f"spec{case}.toml"
    spec.write_text(toml(scripted_spec(matches, f"kill{case}")), encoding="utf-8")
    out = work / f"out{case}"
    killed = 0
    for _ in range(kills):
        child = subprocess.Popen(_command(spec, out), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(rng.uniform(0.7, 1.6))  # after the imports (about 0.6 s), while it plays
        if child.poll() is None:
            os.kill(child.pid, signal.SIGKILL)
            killed += 1
        child.wait()
    done = subprocess.run(_command(spec, out), capture_output=True, text=True, check=False)
    lines = (out / "matches.jsonl").read_text(encoding="utf-8").splitlines()
    ids = [json.loads(line)["match_id"] for line in lines if line.strip()]
    quarantine = out / "matches.quarantine.jsonl"
    quarantined = len(quarantine.read_text(encoding="utf-8").splitlines()) if quarantine.exists() else 0
    whole = done.returncode == 0 and len(ids) == len(set(ids)) == matches and quarantined == 0
    line = (
        f"run {case}: {matches:>5} matches, {killed} kills, resume rc {done.returncode}, {len(ids):>5} lines, "
        f"{len(set(ids)):>5} ids, {quarantined} quarantined: {'whole' if whole else 'BROKEN'}"
    )
    return whole, killed, line


def main(argv: list[str] | None = None) -> int:
    """Run the battery; 0 when every run ended whole."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--runs", type=int, default=8, help="runs (default 8)")
    parser.add_argument("--kills", type=int, default=4, help="kill -9s a run (default 4)")
    parser.add_argument("--seed", type=int, default=5, help="seed of the sizes and the kill moments (default 5)")
    args = parser.parse_args(argv)
    rng = random.Random(args.seed)
    results = []
    kills = 0
    with tempfile.TemporaryDirectory(prefix="deepeval-games-kills-") as tmp:
        for case in range(args.runs):
            whole, killed, line = one_run(Path(tmp), case, args.kills, rng)
            results.append(whole)
            kills += killed
            print(line, flush=True)
    verdict = "every run whole: nothing lost, nothing twice" if all(results) else "a run was BROKEN"
    print(f"{kills} kill -9s in {args.runs} runs; {verdict}")
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
