"""The benchmark suite of issue 14: every speed and memory figure as a ratio measured side by side in one run.

Run on demand (not a test): ``python -m bench`` (or ``python bench/run_all.py``) from the repository root. Options:
``--repeats R`` (default 3), ``--only NAME ...``, ``--scale F`` (scales the match counts; 1.0 is the issue's sizes),
``--sandbox-programs N``. Each figure is a ratio of two things run in the same process or script, alternating, so
a machine whose load drifts slows both sides alike; it prints min/median/max of the repeats and the load average
before and after, and the exit status is 1 when a median misses its target (2 on a usage error).

Model calls go to ``bench/fake_endpoint.py``: a local OpenAI-compatible endpoint in its own process with a
configurable latency (no network, no API key). The figures (targets from issue 14):

========== ====================================================================================== =========
name        ratio                                                                                   target
========== ====================================================================================== =========
llm_move    engine ÷ raw ``litellm.acompletion``, wall time per LLM move, sequential, 0 ms endpoint     ≤ 1.10
scripted    games/s of scripted PGG (4 seats, 5 rounds) through ``deepeval-games run`` (the whole        ≥ 0.40
            command, a fresh interpreter) ÷ a bare pyspiel loop that plays the same moves and reads every
            seat's observation string every round; the notes give ``run_experiment`` in-process beside it
rerun       wall time of an LLM run (PGG, 200 LLM turns, 50 ms endpoint) through the CLI ÷ its rerun      ≥ 10
            into a new directory served from the model-call cache
memory      peak RSS of ``run`` at 10,000 scripted matches minus at 1,000 (MB)                           ≤ 50
report      peak RSS of ``report`` on the 10,000-match directory (MB)                                    ≤ 300
sandbox     sandboxed MBPP reference solutions ÷ a plain subprocess per program                          ≤ 2
concurrency 200 PGG matches of four LLM seats, 50 ms endpoint, concurrency 64: engine ÷ raw litellm      ≤ 1.10
            making the same calls in the same pattern (wall)
workers2    the same with ``--workers 2`` ÷ one process                                                   ≤ 0.65
ttt_random  random against random on tic-tac-toe: ``play_match`` ÷ OpenSpiel's ``evaluate_bots``, the     ≤ 2
            same games and seeds (``classical``; ``c4_random``: connect four); its notes give the floor
            loop's ratio beside it (``bench_classical._floor_game``: the least a recording loop does)
ttt_mcts    MCTS (1,000 simulations) against random, both seat orders, likewise (``c4_mcts``: connect     ≤ 1.05
            four)
summary     the end-of-run summary (score tables, stopping note) ÷ the whole ``deepeval-games run`` of     ≤ 0.15
            10,000 scripted PGG matches, timed inside the one command (issues 31, 41): the summary is fed
            each record as it is committed, so what is timed is what is left after the last match
========== ====================================================================================== =========

The raw litellm sides replay the engine's own calls (messages, sampling settings, seeds) in the engine's pattern;
the sandbox figure takes ``--sandbox-programs`` programs spread over the MBPP test split. The ``scripted`` run stores
its matches as their moves (``transcript = "auto"``, the default since record version 5: its seats read fields, so no
observation text is rendered while it plays); its notes give the same run with ``transcript = "full"`` beside it.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.fake_endpoint import Endpoint  # noqa: E402

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # litellm's price table from disk, never fetched
KEY_ENV = "DEEPEVAL_BENCH_KEY"
PGG = "deepeval_public_goods(players=4,rounds=5,mode=1,alpha=1.6)"
SCRIPTED = ("pgg_free_rider", "pgg_full_contributor", "pgg_conditional_cooperator", "pgg_random")


@dataclass
class Figure:
    """One figure: its ratios over the repeats, the target, and whether lower or higher is better."""

    name: str
    what: str
    target: float
    lower_is_better: bool
    values: list[float] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    skipped: str = ""
    required: bool = True
    """An unmeasured required figure counts as missed; a figure the machine cannot run (no sandbox) does not."""

    @property
    def median(self) -> float:
        """Median of the repeats."""
        return statistics.median(self.values)

    @property
    def met(self) -> bool | None:
        """Whether the median meets the target (None: not measured)."""
        if self.skipped or not self.values:
            return None
        return self.median <= self.target if self.lower_is_better else self.median >= self.target

    def line(self) -> str:
        """One row of the summary table."""
        sign = "<=" if self.lower_is_better else ">="
        if self.met is None:
            return f"{self.name:<12} {'-':>8} {'-':>8} {'-':>8}  {sign} {self.target:<6g} NOT MEASURED: {self.skipped}"
        lo, hi = min(self.values), max(self.values)
        verdict = "met" if self.met else "MISSED"
        return f"{self.name:<12} {lo:8.3f} {self.median:8.3f} {hi:8.3f}  {sign} {self.target:<6g} {verdict}"


def load() -> str:
    """The 1, 5 and 15 minute load averages."""
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def model_player(name: str, api_base: str, **extra: Any) -> dict[str, Any]:
    """A ``[[players]]`` table for a model behind the fake endpoint."""
    return {
        "name": name,
        "model": f"openai/{name}",
        "api_base": api_base,
        "api_key_env": KEY_ENV,
        "max_retries": 0,
        "timeout_s": 30,
        **extra,
    }


def scripted_spec(matches: int, name: str = "bench-scripted", **experiment: Any) -> dict[str, Any]:
    """Scripted PGG, four seats permuted every repeat: ``matches`` matches (``experiment``: more settings)."""
    settings = {"name": name, "game": PGG, "repeats": matches, "seed": 0, "max_matches": max(matches, 1000)}
    return {"experiment": {**settings, **experiment}, "players": [{"name": bot, "bot": bot} for bot in SCRIPTED]}


def toml(spec: dict[str, Any]) -> str:
    """A small TOML writer for the specs above (tables of scalars, arrays of such tables)."""

    def value(v: Any) -> str:
        if isinstance(v, bool):
            return "true" if v else "false"
        if isinstance(v, (int, float)):
            return repr(v)
        return json.dumps(str(v))

    lines = ["[experiment]", *(f"{k} = {value(v)}" for k, v in spec["experiment"].items())]
    for player in spec["players"]:
        lines += ["", "[[players]]", *(f"{k} = {value(v)}" for k, v in player.items())]
    return "\n".join(lines) + "\n"


# -- llm_move -------------------------------------------------------------------------------------------------


def fig_llm_move(args: argparse.Namespace, work: Path) -> Figure:
    """Engine ÷ raw litellm per LLM move: one LLM seat and three scripted ones, one match at a time."""
    figure = Figure("llm_move", "engine ÷ raw litellm.acompletion per LLM move (sequential)", 1.10, True)
    from deepeval_games import run_experiment

    # 100 matches (500 model moves) a run: the run's own start and end (spec checks, plan, store open and close,
    # manifest; about 20 ms, bench/README.md) are not a move's cost, and over 40 matches they were ~2 % of a move
    matches = max(4, round(100 * args.scale))
    with Endpoint(0) as endpoint:
        spec = {
            "experiment": {
                "name": "bench-llm-move",
                "game": PGG,
                "repeats": matches,
                "seed": 0,
                "cache": False,
                "max_concurrency": 1,
            },
            "players": [model_player("llm", endpoint.api_base), *({"name": b, "bot": b} for b in SCRIPTED[:3])],
        }
        prompts: list[tuple[list[dict[str, str]], dict[str, Any]]] = []
        """Every call the engine sent: messages and sampling settings (the raw side replays them)."""

        cpu: dict[str, float] = {}
        """This process's CPU time of the last run of each side (the endpoint's is its own process's)."""

        def engine(n: int) -> tuple[float, int]:
            start, started_cpu = time.perf_counter(), time.process_time()
            result = run_experiment(spec, work / f"llm-move-{n}")
            elapsed = time.perf_counter() - start
            cpu["engine"] = time.process_time() - started_cpu
            if not prompts:
                for record in result.iter_records():
                    for turn in record.turns:
                        if turn.prompts:
                            sampling = record.players[turn.seat]["sampling"]
                            sampling = {k: v for k, v in sampling.items() if v is not None}
                            prompts.extend((ask, sampling) for ask in turn.prompts)
            return elapsed, result.model_calls

        def raw() -> float:
            import litellm

            async def calls() -> None:
                for messages, sampling in prompts:
                    await litellm.acompletion(
                        model="openai/llm",
                        messages=messages,
                        api_base=endpoint.api_base,
                        api_key="x",
                        timeout=30,
                        num_retries=0,
                        max_retries=0,
                        drop_params=True,
                        **sampling,
                    )

            start, started_cpu = time.perf_counter(), time.process_time()
            asyncio.run(calls())
            cpu["raw"] = time.process_time() - started_cpu
            return time.perf_counter() - start

        os.environ[KEY_ENV] = "bench"
        engine(-1)  # warm-up: imports, first connections; also records the prompts the raw side replays
        raw()
        for n in range(args.repeats):
            # a repeat is LLM_MOVE_SLICES engine runs and as many raw replays, in the order E R R E E R R E ...:
            # the box's speed drifts by tens of percent within seconds, and one engine run then one replay let that
            # drift into the ratio; alternating the order cancels a steady drift, and the figure is the ratio of the
            # summed times (each run and each replay exactly as before)
            engine_s = raw_s = engine_cpu = raw_cpu = 0.0
            sent = calls = 0
            for piece in range(LLM_MOVE_SLICES):
                engine_first = piece % 2 == 0
                if not engine_first:
                    raw_s += raw()
                    raw_cpu += cpu["raw"]
                    calls += len(prompts)
                elapsed, made = engine(n * LLM_MOVE_SLICES + piece)
                engine_s += elapsed
                engine_cpu += cpu["engine"]
                sent += made
                if engine_first:
                    raw_s += raw()
                    raw_cpu += cpu["raw"]
                    calls += len(prompts)
            per_engine, per_raw = engine_s / sent * 1000, raw_s / calls * 1000
            figure.values.append(per_engine / per_raw)
            cpu_ratio = (engine_cpu / sent) / (raw_cpu / calls)
            figure.notes.append(
                f"engine {per_engine:.2f} ms/move ({LLM_MOVE_SLICES} runs, {sent} calls), raw {per_raw:.2f} ms/move; "
                f"this process's CPU {engine_cpu / sent * 1000:.2f} vs {raw_cpu / calls * 1000:.2f} ms/move "
                f"(CPU-time ratio {cpu_ratio:.3f}: not the figure, less moved by the machine's drift)"
            )
    return figure


LLM_MOVE_SLICES = 4
"""Engine runs (and raw replays) per repeat of ``llm_move``, alternating which side goes first."""


# -- scripted throughput --------------------------------------------------------------------------------------


def bare_loop(matches: int) -> float:
    """Seconds for ``matches`` PGG matches in plain pyspiel: fixed moves plus every seat's observation each round."""
    import pyspiel

    from deepeval_games.core.registry.games import load_game

    game = load_game(PGG)
    n = game.num_players()
    start = time.perf_counter()
    for m in range(matches):
        state = game.new_initial_state()
        while not state.is_terminal():
            for seat in range(n):
                state.observation_string(seat)
            if state.is_chance_node():
                state.apply_action(state.chance_outcomes()[0][0])
            else:
                state.apply_actions([(m + seat) % 11 for seat in range(n)])
        state.returns()
    del pyspiel
    return time.perf_counter() - start


def fig_scripted(args: argparse.Namespace, work: Path) -> Figure:
    """Games/s through ``deepeval-games run`` (a fresh interpreter, the whole command) ÷ games/s of the bare loop."""
    what = "scripted PGG games/s: deepeval-games run (the CLI) ÷ bare pyspiel loop with observations"
    figure = Figure("scripted", what, 0.40, False)
    import logging

    from deepeval_games import run_experiment

    matches = max(100, round(10000 * args.scale))
    run_experiment(scripted_spec(50), work / "scripted-warm")
    bare_loop(50)
    decisions: list[str] = []  # how "auto" chose to play the run (the probe logs its verdict: placement.run_probe)
    handler = logging.Handler()
    handler.emit = lambda record: decisions.append(record.getMessage())  # type: ignore[method-assign]
    runner_log = logging.getLogger("deepeval_games.app.execution.placement")
    runner_log.addHandler(handler)
    level = runner_log.level
    runner_log.setLevel(logging.INFO)
    try:
        for n in range(args.repeats):
            spec_file = work / f"scripted-cli-{n}.toml"
            spec_file.write_text(toml(scripted_spec(matches)))
            through_cli = cli(["run", str(spec_file), "--out", str(work / f"scripted-cli-{n}"), "--no-progress"], work)
            cli_gps = matches / through_cli["wall"]  # the whole command: interpreter start, imports, summary
            decisions.clear()
            start, cpu = time.perf_counter(), time.process_time()
            run_experiment(scripted_spec(matches), work / f"scripted-{n}")  # the default executor ("auto")
            run_gps, run_cpu = matches / (time.perf_counter() - start), time.process_time() - cpu
            cpu = time.process_time()
            bare_gps = matches / bare_loop(matches)
            bare_cpu = time.process_time() - cpu
            figure.values.append(cli_gps / bare_gps)
            verdict = next((d for d in decisions if "process(es) play" in d), "no probe")
            start = time.perf_counter()  # for comparison, not the figure: the same run in one process
            run_experiment(scripted_spec(matches, workers=1), work / f"scripted-one-{n}")
            one_gps = matches / (time.perf_counter() - start)
            start = time.perf_counter()  # and with every record's whole transcript stored (transcript = "full")
            run_experiment(scripted_spec(matches, transcript="full"), work / f"scripted-full-{n}")
            full_gps = matches / (time.perf_counter() - start)
            figure.notes.append(
                f"{matches} matches: deepeval-games run {cli_gps:.0f} games/s (the figure: the whole command, "
                f"{through_cli['wall']:.1f} s); in-process run_experiment {run_gps:.0f} games/s, ratio "
                f"{run_gps / bare_gps:.3f}; bare loop {bare_gps:.0f} games/s; this process's CPU "
                f"per match {run_cpu / matches * 1e6:.0f} vs {bare_cpu / matches * 1e6:.0f} us; auto: {verdict}; "
                f"in one process (--workers 1) {one_gps:.0f} games/s, ratio {one_gps / bare_gps:.3f}; "
                f'transcript = "full" {full_gps:.0f} games/s, ratio {full_gps / bare_gps:.3f}'
            )
    finally:
        runner_log.removeHandler(handler)
        runner_log.setLevel(level)
    return figure


# -- the end-of-run summary ------------------------------------------------------------------------------------


def fig_summary(args: argparse.Namespace, work: Path) -> Figure:
    """Share of ``deepeval-games run``'s wall time spent after the matches are played: the score tables, the stopping
    note and the closing lines that the command prints, for 10,000 scripted PGG matches (the records were fed to
    the summary as they were committed, while the run played: that part counts as playing)."""
    figure = Figure("summary", "end-of-run summary ÷ the whole run (CLI, 10,000 scripted PGG matches)", 0.15, True)
    import contextlib
    import io

    from deepeval_games.app.commands import cli as cli_module
    from deepeval_games.app.commands import playing

    matches = max(100, round(10000 * args.scale))
    path = work / "summary.toml"
    path.write_text(toml(scripted_spec(matches, "bench-summary")))
    played: list[float] = []
    """When ``run_experiment`` returned inside the command (the summary starts there)."""
    run_experiment = playing.run_experiment

    def timed(*a: Any, **k: Any) -> Any:
        result = run_experiment(*a, **k)
        played.append(time.perf_counter())
        return result

    playing.run_experiment = timed
    try:
        for n in range(-1, args.repeats):  # -1: warm-up (imports, the first store)
            played.clear()
            shown = io.StringIO()
            start = time.perf_counter()
            with contextlib.redirect_stdout(shown):
                code = cli_module.main(["run", str(path), "--out", str(work / f"summary-{n}"), "--no-progress"])
            end = time.perf_counter()
            if code != 0 or len(played) != 1:
                raise RuntimeError(f"deepeval-games run exited {code}: {shown.getvalue()[-2000:]}")
            if n < 0:
                continue
            figure.values.append((end - played[0]) / (end - start))
            figure.notes.append(
                f"{matches} matches: run {end - start:.2f} s, of which playing {played[0] - start:.2f} s and the "
                f"summary {end - played[0]:.2f} s ({len(shown.getvalue().splitlines())} lines)"
            )
    finally:
        playing.run_experiment = run_experiment
    return figure


# -- CLI runs in child processes (wall time, peak memory) --------------------------------------------------------

PEAK = """
def peak_kb():
    # the high-water mark of this interpreter's own memory (VmHWM): ru_maxrss would also count what the bench
    # process held when it forked this child (Linux keeps the pre-exec peak), so every child read as large as it
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    import resource
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
"""
"""Defines ``peak_kb()`` in a child: its own peak resident memory in kB."""

CHILD = (
    PEAK
    + """
import sys, time
start = time.perf_counter()
from deepeval_games.app.commands.cli import main
code = main(sys.argv[2:])
wall = time.perf_counter() - start
print(f"BENCH wall={wall:.4f} maxrss_kb={peak_kb()} "
      f"litellm={'litellm' in sys.modules} code={code}", file=open(sys.argv[1], "w"))
sys.exit(code)
"""
)


API_CHILD = (
    PEAK
    + """
import json, sys
from deepeval_games import run_experiment
result = run_experiment(json.loads(sys.argv[1]), sys.argv[2])
print(f"BENCH played={result.played} maxrss_kb={peak_kb()}")
"""
)


def api_run_mb(spec: dict[str, Any], out: Path) -> float:
    """Peak RSS (MB) of a fresh interpreter that runs ``spec`` through :func:`run_experiment` (no CLI summary)."""
    done = subprocess.run(
        [sys.executable, "-c", API_CHILD, json.dumps(spec), str(out)], cwd=ROOT, capture_output=True, text=True
    )
    if done.returncode != 0:
        raise RuntimeError(f"run_experiment failed: {done.stderr[-2000:]}")
    line = [x for x in done.stdout.splitlines() if x.startswith("BENCH ")][-1]
    return int(line.split("maxrss_kb=")[1]) / 1024


def cli(argv: list[str], work: Path) -> dict[str, Any]:
    """Run ``deepeval-games ARGV`` in a fresh interpreter; its wall time (from interpreter start), peak RSS (MB)
    and whether litellm was imported."""
    report = work / f"child-{time.monotonic_ns()}.txt"
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(report), *argv], cwd=ROOT, capture_output=True, text=True, check=False
    )
    total = time.perf_counter() - start
    if done.returncode != 0 or not report.exists():
        raise RuntimeError(f"deepeval-games {' '.join(argv)} failed ({done.returncode}): {done.stderr[-2000:]}")
    fields = dict(part.split("=") for part in report.read_text().split()[1:])
    return {"wall": total, "rss_mb": int(fields["maxrss_kb"]) / 1024, "litellm": fields["litellm"] == "True"}


def fig_rerun(args: argparse.Namespace, work: Path) -> Figure:
    """First run ÷ rerun from the cache, wall time through the CLI (a fresh interpreter each)."""
    figure = Figure("rerun", "LLM run ÷ its rerun from the cache (CLI wall, 200 LLM turns, 50 ms)", 10.0, False)
    os.environ[KEY_ENV] = "bench"
    matches = max(4, round(40 * args.scale))
    with Endpoint(50) as endpoint:
        for n in range(args.repeats):
            spec = {
                "experiment": {
                    "name": "bench-rerun",
                    "game": PGG,
                    "repeats": matches,
                    "seed": n,
                    "max_concurrency": 1,
                    "cache": str(work / f"rerun-{n}-calls.sqlite"),
                },
                "players": [model_player("llm", endpoint.api_base), *({"name": b, "bot": b} for b in SCRIPTED[:3])],
            }
            path = work / f"rerun-{n}.toml"
            path.write_text(toml(spec))
            first = cli(["run", str(path), "--out", str(work / f"rerun-{n}-a"), "--no-progress"], work)
            again = cli(["run", str(path), "--out", str(work / f"rerun-{n}-b"), "--no-progress"], work)
            figure.values.append(first["wall"] / again["wall"])
            figure.notes.append(
                f"first {first['wall']:.2f} s, rerun {again['wall']:.2f} s (rerun imported litellm: {again['litellm']})"
            )
    return figure


def fig_memory(args: argparse.Namespace, work: Path) -> tuple[Figure, Figure]:
    """Peak RSS of ``run`` at N and 10 N scripted matches, and of ``report`` on the larger directory."""
    memory = Figure("memory", "peak RSS growth of run, 1,000 -> 10,000 scripted matches (MB)", 50.0, True)
    report = Figure("report", "peak RSS of report on 10,000 matches (MB)", 300.0, True)
    small, large = max(100, round(1000 * args.scale)), max(1000, round(10000 * args.scale))
    for n in range(args.memory_repeats):
        runs = {}
        for size in (small, large):
            path = work / f"memory-{size}.toml"
            path.write_text(toml(scripted_spec(size, f"bench-memory-{size}")))
            # one process (--workers 1): every record passes through the process measured (under "auto" a large
            # scripted run may move to worker processes after its probe, and the driver would hold less)
            out = str(work / f"memory-{size}-{n}")
            runs[size] = cli(["run", str(path), "--out", out, "--no-progress", "--workers", "1"], work)
        memory.values.append(runs[large]["rss_mb"] - runs[small]["rss_mb"])
        memory.notes.append(
            f"{small} matches {runs[small]['rss_mb']:.0f} MB ({runs[small]['wall']:.1f} s), "
            f"{large} matches {runs[large]['rss_mb']:.0f} MB ({runs[large]['wall']:.1f} s)"
        )
        api = {
            size: api_run_mb(scripted_spec(size, f"bench-api-{size}", workers=1), work / f"api-{size}-{n}")
            for size in (small, large)
        }
        memory.notes.append(
            f"the runner alone (run_experiment, no CLI summary): {api[small]:.0f} MB -> {api[large]:.0f} MB, "
            f"grows {api[large] - api[small]:.0f} MB"
        )
        shown = cli(["report", str(work / f"memory-{large}-{n}")], work)
        report.values.append(shown["rss_mb"])
        report.notes.append(f"report on {large} matches: {shown['rss_mb']:.0f} MB, {shown['wall']:.1f} s")
    return memory, report


# -- sandbox -------------------------------------------------------------------------------------------------


def fig_sandbox(args: argparse.Namespace, work: Path) -> Figure:
    """Sandboxed ÷ plain subprocess on N MBPP reference solutions spread over the test split (bench_sandbox's sides)."""
    figure = Figure("sandbox", "sandboxed MBPP ÷ plain subprocess per program", 2.0, True, required=False)
    try:
        from bench import bench_sandbox
        from deepeval_games.infra.sandbox import bubblewrap_usable
    except Exception as exc:  # pragma: no cover - depends on the machine
        figure.skipped = f"sandbox not importable ({exc})"
        return figure
    if not bubblewrap_usable():
        figure.skipped = "bubblewrap is not usable on this machine"
        return figure
    try:
        every = bench_sandbox.load_records()
        records = every[:: max(1, len(every) // args.sandbox_programs)][: args.sandbox_programs]  # spread over all
    except OSError as exc:
        figure.skipped = f"MBPP data not found ({exc})"
        return figure
    for _ in range(args.repeats):
        sums = {"sandboxed": 0.0, "plain": 0.0}
        for index, record in enumerate(records):
            for side, (seconds, _ok) in bench_sandbox.both((index, record)).items():
                sums[side] += seconds
        figure.values.append(sums["sandboxed"] / sums["plain"])
        figure.notes.append(
            f"{len(records)} programs: sandboxed {sums['sandboxed']:.2f} s, plain {sums['plain']:.2f} s"
        )
    return figure


# -- concurrency ------------------------------------------------------------------------------------------------


def fig_concurrency(args: argparse.Namespace, work: Path) -> tuple[Figure, Figure]:
    """200 matches of four LLM seats at concurrency 64 against a 50 ms endpoint: engine ÷ raw litellm."""
    figure = Figure("concurrency", "200 LLM matches at concurrency 64: engine ÷ raw litellm (wall)", 1.10, True)
    workers = Figure("workers2", "the same with --workers 2 ÷ one process", 0.65, True)
    from deepeval_games import run_experiment

    matches = max(16, round(args.concurrency_matches * args.scale))
    os.environ[KEY_ENV] = "bench"
    with Endpoint(50) as endpoint:
        names = ("seat-a", "seat-b", "seat-c", "seat-d")
        players = [model_player(name, endpoint.api_base, max_concurrency=256) for name in names]

        calls: list[list[list[tuple[str, list[dict[str, str]], dict[str, Any]]]]] = []
        """Per match, per round, the four calls the engine sent: model, messages, sampling settings."""

        def engine(n: int, processes: int = 1) -> float:
            spec = {
                "experiment": {
                    "name": "bench-concurrency",
                    "game": PGG,
                    "repeats": matches,
                    "seed": n + 1,
                    "cache": False,
                    "max_concurrency": 64,
                },
                "players": players,
            }
            start = time.perf_counter()
            result = run_experiment(spec, work / f"concurrency-{n}-w{processes}", workers=processes)
            elapsed = time.perf_counter() - start
            if result.model_calls != matches * 4 * 5:
                figure.notes.append(f"engine sent {result.model_calls} calls, expected {matches * 20}")
            if not calls:  # the raw side replays exactly these calls (prompts, sampling, seed), in the same pattern
                for record in result.iter_records():
                    rounds: dict[int, list[tuple[str, list[dict[str, str]], dict[str, Any]]]] = {}
                    for turn in record.turns:
                        if turn.seat < 0:
                            continue
                        sampling = {k: v for k, v in record.players[turn.seat]["sampling"].items() if v is not None}
                        for ask in turn.prompts:
                            model = f"openai/{record.seats[turn.seat]}"
                            rounds.setdefault(turn.round, []).append((model, ask, sampling))
                    calls.append([rounds[r] for r in sorted(rounds)])
            return elapsed

        def raw() -> float:
            import litellm

            async def one_match(gate: asyncio.Semaphore, match: list[Any]) -> None:
                async with gate:
                    for round_calls in match:
                        await asyncio.gather(
                            *(
                                litellm.acompletion(
                                    model=model,
                                    messages=messages,
                                    api_base=endpoint.api_base,
                                    api_key="x",
                                    timeout=30,
                                    num_retries=0,
                                    max_retries=0,
                                    drop_params=True,
                                    **sampling,
                                )
                                for model, messages, sampling in round_calls
                            )
                        )

            async def everything() -> None:
                gate = asyncio.Semaphore(64)
                await asyncio.gather(*(one_match(gate, match) for match in calls))

            start = time.perf_counter()
            asyncio.run(everything())
            return time.perf_counter() - start

        engine(-1)
        engine(-1, 2)  # warm-up of the process executor: its fork server imports litellm once per driver process
        raw()
        for n in range(args.repeats):
            engine_s = engine(n) if n % 2 == 0 else None
            two_s = engine(n, 2) if n % 2 == 0 else None
            raw_s = raw()
            if two_s is None:
                two_s = engine(n, 2)
            if engine_s is None:
                engine_s = engine(n)
            workers.values.append(two_s / engine_s)
            workers.notes.append(f"{matches} matches: --workers 2 {two_s:.2f} s, one process {engine_s:.2f} s")
            figure.values.append(engine_s / raw_s)
            ideal = 5 * 0.05 * -(-matches // 64)
            figure.notes.append(f"{matches} matches: engine {engine_s:.2f} s, raw {raw_s:.2f} s (ideal {ideal:.2f} s)")
    return figure, workers


# -- classical players against OpenSpiel's own loop -------------------------------------------------------------


def fig_classical(args: argparse.Namespace, work: Path) -> tuple[Figure, ...]:
    """``play_match`` ÷ OpenSpiel's ``evaluate_bots`` on the same games and seeds (``bench/bench_classical.py``):
    random against random and MCTS against random, on tic-tac-toe and connect four."""
    from bench.bench_classical import GAMES, TARGETS, Side, measure

    figures = []
    for game_string, short in (("tic_tac_toe", "ttt"), ("connect_four", "c4")):
        for kind in ("random", "mcts"):
            what = f"{kind} vs random on {game_string}: play_match ÷ evaluate_bots, same games and seeds"
            figure = Figure(f"{short}_{kind}", what, TARGETS[kind], True)
            games = max(2, round(GAMES[game_string][kind] * args.scale))
            for _ in range(args.repeats):
                floor = Side() if kind == "random" else None
                engine, openspiel = asyncio.run(measure(game_string, kind, games, repeats=3, floor=floor))
                if engine.returns != openspiel.returns:
                    figure.notes.append("the two sides played different games")
                figure.values.append(engine.seconds / openspiel.seconds)
                per_move = [1e6 * side.seconds / max(engine.moves, 1) for side in (engine, openspiel)]
                least = f"; the floor loop {floor.seconds / openspiel.seconds:.2f}x" if floor is not None else ""
                figure.notes.append(f"{games} games: {per_move[0]:.1f} us a move against {per_move[1]:.1f} us{least}")
            figures.append(figure)
    return tuple(figures)


FIGURES: dict[str, Callable[[argparse.Namespace, Path], Figure | tuple[Figure, ...]]] = {
    "llm_move": fig_llm_move,
    "scripted": fig_scripted,
    "rerun": fig_rerun,
    "memory": fig_memory,
    "sandbox": fig_sandbox,
    "concurrency": fig_concurrency,
    "classical": fig_classical,
    "summary": fig_summary,
}


def main(argv: list[str] | None = None) -> int:
    """Run the chosen figures, print each and a summary; 1 when a measured median misses its target."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--memory-repeats", type=int, default=1, help="repeats of the memory and report figures")
    parser.add_argument("--scale", type=float, default=1.0, help="scale the match counts (1.0: the issue's sizes)")
    parser.add_argument("--sandbox-programs", type=int, default=60)
    parser.add_argument("--concurrency-matches", type=int, default=200, help="matches of the concurrency figure")
    parser.add_argument("--only", nargs="+", choices=sorted(FIGURES), help="run only these figures")
    parser.add_argument("--keep", metavar="DIR", help="work in DIR and keep it (default: a temporary folder)")
    args = parser.parse_args(argv)
    work = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="dg-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("XDG_CACHE_HOME", str(work / "xdg-cache"))
    print(
        f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
        f"{platform.platform()}; load average {load()}",
        flush=True,
    )
    results: list[Figure] = []
    try:
        for name in args.only or FIGURES:
            before, start = load(), time.perf_counter()
            out = FIGURES[name](args, work)
            for figure in out if isinstance(out, tuple) else (out,):
                results.append(figure)
                print(f"\n{figure.name}: {figure.what}", flush=True)
                for note in figure.notes:
                    print(f"  {note}")
                print(
                    f"  {figure.line()}  [{time.perf_counter() - start:.0f} s; load {before} -> {load()}]", flush=True
                )
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    print(f"\n{'figure':<12} {'min':>8} {'median':>8} {'max':>8}  target")
    for figure in results:
        print(figure.line())
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
    print(f"load average at the end: {load()}; peak RSS of this script {peak_mb} MB")
    return 1 if any(f.met is False or (f.met is None and f.required) for f in results) else 0


if __name__ == "__main__":
    sys.exit(main())
