"""The ``deepeval-games`` command line.

``deepeval-games eval TASK --model M``      evaluate models on a task's default study (baselines, stopping rule)
``deepeval-games init TASK``                write that study as an editable, commented spec
``deepeval-games data [fetch [NAME]]``       list the data files the tasks read; fetch them ahead of time
``deepeval-games run SPEC.toml --out DIR``  play an experiment into a run directory (resumable)
``deepeval-games run SPEC --out DIR --dry-run``  print the match count and an upper estimate of calls, tokens, cost
``deepeval-games report DIR... [--html OUT]``  print every table of one or more run directories (and an HTML report)
``deepeval-games leaderboard DIR... [--task T] [--role R] [--format F]``  one table per task and role over many runs
``deepeval-games view DIR...``              serve the HTML report on 127.0.0.1, updated while a run writes
``deepeval-games export DIR --format F``     write the matches (or turns) as CSV, JSON Lines or Parquet
``deepeval-games export DIR --format inspect --out DIR``  write the runs as inspect_ai eval logs
``deepeval-games rejudge DIR --judge J``    re-score its judged transcripts with another judge; print the judge audit
``deepeval-games rejudge DIR --human``      a person scores the transcripts, blind and in random order
``deepeval-games play GAME [--seat N]``     play a seat yourself at the terminal, against bots or models
``deepeval-games games [--all]``            list the registered tasks and their parameters (--all: OpenSpiel's too)
``deepeval-games bots``                     list the registered scripted bots
``deepeval-games schema [--record]``         print the JSON Schema of the experiment spec (or of a match record)
``deepeval-games sandbox-info``              show which protection bounds the code sandbox's memory here
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import threading
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from deepeval_games.app.execution.runner import run_experiment
from deepeval_games.app.reports.task_tables import table_module, table_names
from deepeval_games.app.spec.spec import RECHECK_RULES, ExperimentSpec, load_spec
from deepeval_games.app.storage.store import DB_NAME, Store, committed_ids
from deepeval_games.core.errors import DeepEvalError, did_you_mean
from deepeval_games.core.quoting import VisibleStream, escape_log_lines, visible
from deepeval_games.core.records import MatchRecord
from deepeval_games.core.registry.bots import registered_bots
from deepeval_games.core.registry.games import game_variant, registered_games

__all__ = ["main", "score_report"]

_MEMORY_MODES = ("auto", "cgroup", "seccomp")
"""The sandbox's memory modes (:data:`deepeval_games.infra.sandbox.MemoryMode`), spelled here so ``--help`` stays
light."""


def _task(record: MatchRecord) -> str:
    return game_variant(record.game)


def score_report(records: Iterable[MatchRecord], *, epsilon: float | None = None) -> str:
    """Per game variant (its data items pooled): Eq. 1 for symmetric games, Eq. 2 (per role) for asymmetric ones, or
    the headline the task's tables module gives
    (:data:`~deepeval_games.app.reports.task_tables.TABLES_ENTRY_POINT_GROUP`).

    Two-seat tasks add Bradley–Terry ratings, symmetric ones also win/draw/loss, NRA, first mover and illegal-move
    rates (:mod:`analysis.tables.two_player`); with ``epsilon`` the stableness check is reported too. When any turn was
    not ``ok`` at the first ask, the turn outcomes per player follow (``invalid``: no valid move, the
    task's penalty or a seeded random legal move was played for the seat). ``records`` are read once, as they
    come (a stream from the store keeps memory flat), and kept slim.
    """
    from deepeval_games.app.reports.report import (
        core_text,  # the report's core sections (deepeval_games.app.reports.report)
    )

    return core_text(records, epsilon=epsilon)


def _cmd_run(args: argparse.Namespace) -> int:
    from deepeval_games.infra.sandbox import MEMORY_MODE_ENV
    from deepeval_games.infra.sandbox.protection import memory_share, requested_mode

    if args.sandbox_memory:  # through the environment, so worker processes get it too
        os.environ[MEMORY_MODE_ENV] = args.sandbox_memory
    try:  # the sandbox settings, checked before anything is written
        requested_mode()
        memory_share()
    except ValueError as exc:
        raise DeepEvalError(str(exc)) from exc
    spec = load_spec(args.spec)
    from deepeval_games.app.reports import estimate

    if args.dry_run:  # plan and price, send nothing, write nothing
        print(estimate.format_dry_run(estimate.dry_run(spec, args.out), spec))
        return 0
    return _play(spec, args.out, args)


def _play(spec: ExperimentSpec, out: str | Path, args: argparse.Namespace) -> int:
    """Play ``spec`` into ``out`` (resuming it) and print the tables, the cost and what was played."""
    from deepeval_games.app.reports import estimate

    before = committed_ids(out)  # with those the JSONL holds and the database lacks: not "played now"
    result = run_experiment(
        spec,
        out,
        progress=not args.no_progress,
        wait_s=args.wait,
        workers=args.workers,
        executor=args.executor,
        ray_address=args.ray_address,
    )
    rule = spec.until_stable  # a half-width target under recheck; under adaptive a margin, and the rule reports itself
    epsilon = rule.epsilon if rule is not None and rule.rule in RECHECK_RULES else None
    # streamed from the store (flat memory), moves records as stored: the summary's slim turns come from their rows
    print(score_report(result.iter_records(rebuild_turns=False), epsilon=epsilon))
    if spec.uses_models():
        played_now = (r for r in result.iter_records() if r.match_id not in before)
        totals = estimate.run_summary(played_now, spec.players, spec.judge)
        print("\n" + estimate.format_run_summary(totals, result.calls_by_model, result.cache_hits))
    if result.stopping is not None:  # the adaptive rule: what stopped it, matches per player, what is unresolved
        from analysis.stats.stopping import format_stopping

        print("\n" + format_stopping(result.stopping))
    else:  # a fixed repeat count, or the old rule: say what the run may not claim
        from analysis.stats.stopping import stopping_rule_note

        note = stopping_rule_note(
            rule.rule if rule else None, result.repeats or spec.repeats, rule.max_repeats if rule else None
        )
        print("\n" + note)
    print(
        f"\n{result.planned} matches planned: {result.played} played now, {result.skipped} already in {out}, "
        f"{len(result.failed)} failed."
    )
    print(f"Results: {Path(out) / DB_NAME} and {Path(out) / 'matches.jsonl'}")
    for match_id, error in result.failed:
        _error(f"  failed {match_id}: {error}")
    return 1 if result.failed else 0


def _model_setting(text: str) -> tuple[str, object]:
    """``-M KEY=VALUE`` of ``eval``: a model setting given to every model player (TOML value)."""
    return _param(text)


def _cmd_eval(args: argparse.Namespace) -> int:
    """``eval TASK --model M``: the task's default study with the models added
    (:mod:`deepeval_games.app.commands.study`)."""
    from deepeval_games.app.commands.study import plan_study, spec_toml
    from deepeval_games.app.reports import estimate

    plan = plan_study(
        args.task,
        args.model or [],
        against=args.against or [],
        judge=args.judge,
        max_matches=args.max_matches,
        budget_usd=args.budget,
        model_settings=dict(args.model_setting or []),
    )
    if args.print_spec:
        print(spec_toml(plan.document), end="")
        return 0
    spec = plan.spec()
    out = Path(args.out) if args.out else Path("runs") / f"{spec.experiment.name}-{spec.content_hash()[:8]}"
    for note in plan.notes:
        print(note)
    players = ", ".join(f"{p.name} ({p.model or p.bot})" for p in spec.players)
    rule = spec.until_stable
    print(f"Players: {players}")
    if rule is not None:
        print(
            f"Stopping: anytime-valid (adaptive), margin {rule.epsilon}, at most {rule.budget_matches} matches; "
            f"it starts with {spec.experiment.repeats} round(s) of every seating"
        )
    print(estimate.format_dry_run(estimate.dry_run(spec, out), spec))
    print(f"Run directory: {out} (the same command again resumes it)\n")
    return _play(spec, out, args)


def _cmd_init(args: argparse.Namespace) -> int:
    """``init TASK``: the study ``eval`` would play, as a commented spec file to edit."""
    from deepeval_games.app.commands.study import plan_study, spec_toml

    plan = plan_study(args.task, args.model or ["openai/gpt-4o-mini"], judge=args.judge)
    out = Path(args.out or f"{plan.document['experiment']['name']}.toml")
    if out.exists() and not args.force:
        raise DeepEvalError(f"{out} exists; choose another --out, or --force to overwrite it")
    header = "\n".join(
        [
            f"The default study of {args.task}, as 'deepeval-games eval' plays it; edit it, then",
            f"  deepeval-games run {out} --out runs/{out.stem}",
            *plan.notes,
            "Every key: 'deepeval-games schema' (JSON Schema) and the spec reference in docs/.",
            "",
        ]
    )
    out.write_text(spec_toml(plan.document, comments=True, header=header), encoding="utf-8")
    print(f"wrote {out}; play it with: deepeval-games run {out} --out runs/{out.stem}")
    return 0


def _cmd_data(args: argparse.Namespace) -> int:
    """``data``: list every data source and where it is; ``data fetch [NAME]``: download and check files."""
    from deepeval_games.app.commands import data

    if args.action == "fetch":
        for line in data.fetch(args.name, into=Path(args.dir) if args.dir else None):
            print(line)
        return 0
    if args.name is not None:
        raise DeepEvalError(f"'data' takes no name (did you mean 'data fetch {args.name}'?)")
    statuses = [data.source_status(source) for source in data.sources()]
    print(data.format_status(statuses))
    return 0 if all(s.verified is not False for s in statuses) else 1


def _workers_arg(text: str) -> int | str:
    """``--workers``: ``auto`` or a number >= 1."""
    if text == "auto":
        return text
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"'auto' or a number of processes >= 1, not {text!r}")
    return value


def _read_run(run_dir: str) -> list[MatchRecord]:
    """Every committed record of a run directory; a clear error when it holds none."""
    if not (Path(run_dir) / DB_NAME).exists():
        raise DeepEvalError(f"no results in {run_dir} (expected {DB_NAME})")
    with Store(run_dir, read_only=True) as store:  # a reader: no lock, never rewrites matches.jsonl
        return list(store.records())


def _cmd_report(args: argparse.Namespace) -> int:
    """Every table of one or more run directories (one layout: :mod:`deepeval_games.app.reports.report`); ``--html``
    also
    writes the browsable report, ``--plots`` the figures as PNG and SVG."""
    from deepeval_games.app.reports.report import load_report, text_report
    from deepeval_games.app.reports.sections import variant_title

    if args.html:
        from deepeval_games.app.reports.html import write_html_report

        page = write_html_report(args.run_dirs, args.html, epsilon=args.epsilon)
        print(f"HTML report: {page} (open it from disk; no server needed)")
        return 0
    data = load_report(args.run_dirs)
    print(text_report(data, epsilon=args.epsilon))
    if args.plots:
        from analysis.plots import convergence_plot, payoff_boxplot

        out = Path(args.plots)
        out.mkdir(parents=True, exist_ok=True)
        variants = list(data.variants)
        for variant, subset in data.variants.items():
            stem = variant.split("(", 1)[0]
            same_task = [v for v in variants if v.split("(", 1)[0] == stem]
            if len(same_task) > 1:
                stem += f"-{same_task.index(variant) + 1}"
            title = variant_title(variant, subset)
            print(f"wrote {payoff_boxplot(subset, out / f'{stem}_payoffs.png', title=title)} (and .svg)")
            print(f"wrote {convergence_plot(subset, out / f'{stem}_convergence.png', title=title)} (and .svg)")
    return 0


def _cmd_leaderboard(args: argparse.Namespace) -> int:
    from deepeval_games.app.reports.leaderboard import build_leaderboard, format_leaderboard

    board = build_leaderboard(args.run_dirs, task=args.task, role=args.role)
    text = format_leaderboard(board, args.format)
    if args.out:
        Path(args.out).write_text(text if text.endswith("\n") else text + "\n", encoding="utf-8")
        print(f"wrote {len(board.rows)} rows to {args.out}")
    else:
        print(text)
    return 0


def _cmd_view(args: argparse.Namespace) -> int:
    """Serve the live HTML report until interrupted (:mod:`deepeval_games.app.reports.view`)."""
    from deepeval_games.app.reports.view import ReportServer

    with ReportServer(args.run_dirs, port=args.port, epsilon=args.epsilon) as server:
        print(
            f"the report of {', '.join(args.run_dirs)}: {server.url} (read-only; updates as matches are "
            "committed; Ctrl-C stops)",
            flush=True,
        )
        try:
            threading.Event().wait()
        except KeyboardInterrupt:
            print("stopped")
    return 0


def _cmd_export(args: argparse.Namespace) -> int:
    from analysis.export import columns_for, match_row, turn_rows, write_rows
    from deepeval_games.app.reports.runs import max_seats, open_runs, player_labels, stream_records

    runs = open_runs(args.run_dirs)
    labels = player_labels(runs)
    if args.format == "inspect":  # inspect_ai logs: a folder of them, one per run, task and player
        from analysis.inspect_logs import write_inspect_logs

        logs = write_inspect_logs(((run.label, record) for run, record in stream_records(runs, labels)), args.out)
        print(f"wrote {len(logs)} inspect_ai logs to {args.out} (open them with: inspect view --log-dir {args.out})")
        return 0
    seats = 0
    if args.level == "match":  # the widest seating fixes the seat columns before the first row is written
        seats = max_seats(runs)
    columns = columns_for(args.level, seats)
    if args.level == "match":
        rows = (match_row(record, seats, run.label) for run, record in stream_records(runs, labels))
    else:
        rows = (row for run, record in stream_records(runs, labels) for row in turn_rows(record, run.label))
    count = write_rows(rows, columns, args.out, args.format, raw_text=args.raw_text)
    print(f"wrote {count} {args.level} rows ({len(columns)} columns) to {args.out}")
    return 0


def _judge_audit_text(run_dir: str, records: Sequence[MatchRecord]) -> str:
    """The judge audit of a run directory that was re-judged ("" when it never was)."""
    with Store(run_dir, read_only=True) as store:
        judgements = list(store.judgements())
    if not judgements:
        return ""
    from analysis.judge_audit import format_audit, judge_audit

    return format_audit(judge_audit(records, judgements))


def _param(text: str) -> tuple[str, object]:
    """``KEY=VALUE`` of ``--param``: the value read as TOML (``bonus=2``, ``scores=[6,6]``), else as a string."""
    import tomllib

    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    try:
        return key.strip(), tomllib.loads(f"v = {value}")["v"]
    except tomllib.TOMLDecodeError:
        return key.strip(), value


def _cmd_rejudge(args: argparse.Namespace) -> int:
    from deepeval_games.app.execution.rejudge import JudgeSource, judge_source, rejudge

    run_dir = args.run_dir
    if not (Path(run_dir) / DB_NAME).exists():
        raise DeepEvalError(f"no results in {run_dir} (expected {DB_NAME})")
    if (args.judge is None) == (args.human is None):
        raise DeepEvalError("name the judge: --judge BOT_OR_MODEL, or --human [NAME] for a person at the terminal")
    source: JudgeSource
    order_seed = None
    if args.human is not None:  # one transcript at a time, in an order the person cannot predict
        import secrets

        from llm_bots.players.human import HumanJudgeSource

        source, order_seed, args.concurrency = HumanJudgeSource(args.human), secrets.randbits(64), 1
    else:
        cache = None
        if not args.no_cache:
            from game_defs.data_files import cache_dir

            cache = cache_dir() / "model-calls.sqlite"
        source = judge_source(args.judge, dict(args.param or []), cache=cache, budget_usd=args.budget_usd)
    result = rejudge(
        run_dir, source, swap=args.swap, repeat=args.repeat, max_concurrency=args.concurrency, order_seed=order_seed
    )
    print(
        f"{result.planned} judgements by {result.judge} planned: {result.judged} made now, {result.skipped} already "
        f"in {run_dir}, {len(result.failed)} failed; the match records are unchanged."
    )
    for match_id, error in result.failed:
        _error(f"  failed {match_id}: {error}")
    print("\n" + _judge_audit_text(run_dir, _read_run(run_dir)))
    return 1 if result.failed else 0


def _cmd_tables(args: argparse.Namespace) -> int:
    """A task's pairwise tables (the tables module it registers:
    :func:`~deepeval_games.app.reports.task_tables.table_module`)."""
    module = table_module(args.table)
    records = _read_run(args.run_dir)
    seen = {name for record in records for name in record.seats}
    for name in args.players or ():
        if name not in seen:
            raise DeepEvalError(
                f"no player {name!r} in {args.run_dir}.{did_you_mean(name, seen)} Players: {', '.join(sorted(seen))}"
            )
    return int(module.print_tables(records, players=args.players, plot=args.plot))


def _cmd_play(args: argparse.Namespace) -> int:
    """A person plays one seat (:mod:`deepeval_games.app.commands.play`); the end shows the seats by anonymous id
    only."""
    from deepeval_games.app.commands.play import HUMAN_NAME, default_out, final_view, play_spec

    spec = play_spec(
        args.game,
        seat=args.seat,
        against=args.against or (),
        judge=args.judge,
        seed=args.seed,
        terminator=args.terminator,
        data_dir=args.data_dir,
    )
    out = Path(args.out) if args.out else default_out(spec)
    result = run_experiment(spec, out, progress=False)
    if result.failed:
        for match_id, error in result.failed:
            _error(f"  failed {match_id}: {error}")
        return 1
    for record in result.records:
        print("\n" + final_view(record, list(record.seats).index(HUMAN_NAME)))
    if result.played == 0:
        print(f"\nThis game was already played in {out}; give --seed N for another one.")
    print(f"\nRecorded in {out / DB_NAME} and {out / 'matches.jsonl'}")
    return 0


def _cmd_games(args: argparse.Namespace) -> int:
    for info in registered_games():
        params = ", ".join(f"{k}={v}" for k, v in sorted(info.parameters.items()))
        players = (
            f"{info.min_players}" if info.min_players == info.max_players else f"{info.min_players}-{info.max_players}"
        )
        print(f"{info.short_name}  ({info.long_name}; {players} players; {info.dynamics})\n    {params}")
    if args.all:  # OpenSpiel's own games: LLM-playable (probed), classical bots that play them
        from llm_bots.players.classical import DEFAULT_NODE_BUDGET, family_listing, openspiel_listing

        print(
            "\nOpenSpiel's games (LLM: playable through the generic adapter, probed by a playout; classical: the "
            f"bots that play it, exact* only up to {DEFAULT_NODE_BUDGET} states, checked when a spec names it):"
        )
        print("\n".join(openspiel_listing()))
        print("\n".join(family_listing()))
    return 0


def _cmd_bots(args: argparse.Namespace) -> int:
    for entry in registered_bots():
        games = ", ".join(entry.games) or "any game"
        print(f"{entry.name}  [{games}]\n    {entry.description}")
    return 0


def _cmd_schema(args: argparse.Namespace) -> int:
    import json

    if args.record:
        from deepeval_games.core.records import SCHEMA_VERSION

        schema = {
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            **MatchRecord.model_json_schema(),
            "x-schema-version": SCHEMA_VERSION,
        }
    else:
        from deepeval_games.app.spec.spec import spec_json_schema

        schema = spec_json_schema()
    print(json.dumps(schema, indent=2, ensure_ascii=False))
    return 0


def _cmd_sandbox_info(args: argparse.Namespace) -> int:
    from deepeval_games.infra.sandbox import MEMORY_MODE_ENV
    from deepeval_games.infra.sandbox.protection import describe

    if args.memory_mode:
        os.environ[MEMORY_MODE_ENV] = args.memory_mode
    rows = describe()
    width = max(len(label) for label, _ in rows)
    for label, value in rows:
        print(f"{label:<{width}}  {value}")
    return 2 if any(value.startswith("UNAVAILABLE") for _, value in rows) else 0


def _eval_parser(sub: Any) -> None:
    """The ``eval`` subcommand's arguments."""
    ev = sub.add_parser("eval", help="evaluate models on a task's default study (baselines, stopping rule) in one go")
    ev.add_argument("task", help="a task or OpenSpiel game name, or a game string (deepeval-games games --all)")
    ev.add_argument("--model", action="append", metavar="M", help="a model to evaluate, e.g. openai/gpt-4o (repeat)")
    ev.add_argument(
        "-M",
        "--model-setting",
        action="append",
        type=_model_setting,
        metavar="KEY=VALUE",
        help="a setting for every model player (temperature=0.2, api_base=URL, max_tokens=200; repeatable)",
    )
    ev.add_argument(
        "--against",
        action="append",
        metavar="NAME",
        help="an opponent instead of the task's baselines: a bot or a model (repeatable)",
    )
    ev.add_argument("--judge", metavar="J", help="the judge of a judged task: a scripted judge or a model")
    ev.add_argument(
        "--max-matches",
        type=int,
        metavar="N",
        help="the stopping rule's budget of matches (whole rounds: at least one round of every seating)",
    )
    ev.add_argument("--budget", type=float, metavar="USD", help="stop sending model calls past this cost")
    ev.add_argument("--out", metavar="DIR", help="run directory (default runs/eval-<task>-<hash>; resumed)")
    ev.add_argument("--print-spec", action="store_true", help="print the spec (TOML for 'run') instead of playing")
    ev.add_argument("--no-progress", action="store_true", help="no progress bar")
    ev.add_argument("--workers", type=_workers_arg, metavar="N", help="processes that play the matches")
    ev.set_defaults(func=_cmd_eval, wait=0.0, executor=None, ray_address=None)


def _run_dirs(parser: argparse.ArgumentParser) -> None:
    """The run directories a reading command takes (one or more)."""
    parser.add_argument("run_dirs", nargs="+", metavar="run_dir", help="a run directory (one or more)")


def command_parser() -> argparse.ArgumentParser:
    """The parser of every command (the docs' CLI reference is generated from it: :mod:`.reference`)."""
    parser = argparse.ArgumentParser(prog="deepeval-games", description="Evaluate LLMs by making them play games.")
    parser.add_argument("-v", "--verbose", action="store_true", help="log progress details")
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser(
        "run",
        help="play an experiment spec into a run directory",
        description="Plays every match of the spec not yet in the run directory, with a progress bar, then prints "
        "the score tables. Exit 0 when every match completed, 1 when some could not be (they are listed), 2 on a bad "
        "spec or input. With --executor ray the same matches are played on a Ray cluster, with the records, ids and "
        "store of a local run. With --dry-run it prints the number of matches and an upper estimate of calls, tokens "
        "and cost per model, and sends nothing.",
    )
    run.add_argument("spec", help="experiment spec (TOML)")
    run.add_argument("--out", required=True, help="run directory (created; an existing one is resumed)")
    run.add_argument("--no-progress", action="store_true", help="no progress bar")
    run.add_argument(
        "--wait",
        type=float,
        default=0.0,
        metavar="SECONDS",
        help="when another run is writing the directory, wait this long for it before refusing (default 0)",
    )
    run.add_argument(
        "--workers",
        type=_workers_arg,
        metavar="N",
        help="processes that play the matches: a number or 'auto' (default: the spec's [experiment] workers, itself "
        "'auto': one per core for a run of many LLM matches, else one); the records do not depend on it",
    )
    run.add_argument(
        "--executor",
        choices=("local", "ray"),
        help="where the matches are played: this machine (local, the default) or actors on a Ray cluster (ray; "
        'pip install "deepeval-games[ray]"; --workers N is then the number of actors, by default one per CPU of '
        "the cluster); overrides [experiment] executor",
    )
    run.add_argument(
        "--ray-address",
        metavar="ADDR",
        help="with --executor ray: the cluster to join (host:port, or 'auto' for the one 'ray start' made here); "
        "default: RAY_ADDRESS, else a local Ray instance for the run",
    )
    run.add_argument(
        "--dry-run",
        action="store_true",
        help="print the number of matches and an upper estimate of calls, tokens and cost; send nothing",
    )
    run.add_argument(
        "--sandbox-memory",
        choices=_MEMORY_MODES,
        help="how the code sandbox bounds memory: a cgroup per sandbox, the seccomp fallback, or auto (default; "
        "also DEEPEVAL_GAMES_SANDBOX_MEMORY)",
    )
    run.set_defaults(func=_cmd_run)
    _eval_parser(sub)
    init = sub.add_parser("init", help="write a task's default study as an editable, commented spec")
    init.add_argument("task", help="a task or OpenSpiel game name (deepeval-games games)")
    init.add_argument("--model", action="append", metavar="M", help="a model to evaluate (default: a placeholder)")
    init.add_argument("--judge", metavar="J", help="the judge of a judged task (a scripted judge or a model)")
    init.add_argument("--out", metavar="FILE", help="the spec file to write (default: eval-<task>.toml)")
    init.add_argument("--force", action="store_true", help="overwrite FILE")
    init.set_defaults(func=_cmd_init)
    data = sub.add_parser("data", help="list the data files the tasks read (where, sha256); 'data fetch' gets them")
    data.add_argument("action", nargs="?", choices=("fetch",), help="fetch: download and check the files")
    data.add_argument("name", nargs="?", help="with fetch: one file or one task's files (default: every file)")
    data.add_argument("--dir", metavar="DIR", help="with fetch: the data folder to fill (default: the user cache)")
    data.set_defaults(func=_cmd_data)
    report = sub.add_parser(
        "report",
        help="print every table of one or more run directories (side by side)",
        description="With --epsilon, the stableness check too; with --plots, figures as PNG and SVG; with --html, a "
        "browsable report folder with every transcript.",
    )
    _run_dirs(report)
    report.add_argument("--html", metavar="OUT", help="write the HTML report (a folder; open OUT/index.html)")
    report.add_argument(
        "--epsilon", type=float, help="also check stableness: every 95%% interval half-width below this"
    )
    report.add_argument("--plots", metavar="DIR", help="write payoff box plots and convergence curves here")
    report.set_defaults(func=_cmd_report)
    board = sub.add_parser(
        "leaderboard", help="merge the matches of run directories by player identity: one table per task and role"
    )
    _run_dirs(board)
    board.add_argument("--task", help="keep one task (a game variant, or the game's name)")
    board.add_argument("--role", help="keep one role (asymmetric tasks; symmetric ones have the role 'player')")
    board.add_argument("--format", choices=("text", "csv", "json"), default="text")
    board.add_argument("--out", metavar="FILE", help="write the table here instead of printing it")
    board.set_defaults(func=_cmd_leaderboard)
    view = sub.add_parser(
        "view",
        help="serve the HTML report on 127.0.0.1, updated while a run writes",
        description="Serves the report read-only on http://127.0.0.1:PORT/ and updates it while a run writes the "
        "directories. Ctrl-C stops it.",
    )
    _run_dirs(view)
    view.add_argument("--port", type=int, default=7676, help="the port on 127.0.0.1 (0: any free one)")
    view.add_argument("--epsilon", type=float, help="also check stableness: every 95%% CI half-width below this")
    view.set_defaults(func=_cmd_view)
    export = sub.add_parser(
        "export", help="write a run's matches or turns as CSV, JSON Lines or Parquet, or its logs for inspect_ai"
    )
    _run_dirs(export)
    export.add_argument(
        "--format",
        choices=("csv", "jsonl", "parquet", "inspect"),
        default="csv",
        help="inspect: inspect_ai eval logs (a folder of them, one per run, task and player; needs inspect-ai)",
    )
    export.add_argument("--level", choices=("match", "turn"), default="match", help="one row per match or per turn")
    export.add_argument("--out", required=True, help="the file to write (with --format inspect: the folder)")
    export.add_argument(
        "--raw-text",
        action="store_true",
        help="CSV: write text cells exactly as recorded (by default a cell that a spreadsheet would run as a formula "
        "gets a leading apostrophe, and control characters are escaped); JSON Lines and Parquet are always exact",
    )
    export.set_defaults(func=_cmd_export)
    rejudge = sub.add_parser(
        "rejudge",
        help="re-score a run's judged transcripts with a judge (no replay); print the judge audit",
        description="Stores the verdicts beside the matches. Exit 0, 1 when some judgements failed (listed), 2 on "
        "bad input.",
    )
    rejudge.add_argument("run_dir", help="the run directory")
    rejudge.add_argument(
        "--judge", help="a registered scripted judge (judge_pass_rate, ...) or a model (openai/gpt-4o)"
    )
    rejudge.add_argument(
        "--human",
        nargs="?",
        const="human",
        metavar="NAME",
        help="a person judges at the terminal, blind to the players, one transcript at a time in random order "
        "(judgements are named human:NAME)",
    )
    rejudge.add_argument(
        "--param", action="append", type=_param, metavar="KEY=VALUE", help="a judge setting (repeatable; TOML value)"
    )
    rejudge.add_argument("--swap", action="store_true", help="also judge with the roles shown in swapped order")
    rejudge.add_argument("--repeat", type=int, default=1, help="judgements per match and presentation (default 1)")
    rejudge.add_argument("--concurrency", type=int, default=8, help="judgements at once (default 8)")
    rejudge.add_argument("--no-cache", action="store_true", help="do not use the model-call cache (LLM judges)")
    rejudge.add_argument("--budget-usd", type=float, help="stop sending model calls past this cost")
    rejudge.set_defaults(func=_cmd_rejudge)
    tables = sub.add_parser(
        "tables",
        help="print a task's pairwise tables (the paper's Tables 1-6) of a run directory",
        description="Each task registers its tables (entry point deepeval_games.tables); --plot saves them as a "
        "figure.",
    )
    tables.add_argument(
        "table", choices=table_names(), help="the tables a task registers (its entry point under deepeval_games.tables)"
    )
    tables.add_argument("run_dir", help="the run directory")
    tables.add_argument("--plot", metavar="FILE", help="save a figure of the tables (PNG, PDF, SVG ...)")
    tables.add_argument("--players", nargs="+", help="row/column order (default: every player, sorted)")
    tables.set_defaults(func=_cmd_tables)
    play = sub.add_parser(
        "play",
        help="play one seat of a game yourself, at the terminal, against bots or models",
        description="The match is recorded like any other. 'rejudge DIR --human [NAME]' lets a person judge instead.",
    )
    play.add_argument("game", help="a game string, e.g. tic_tac_toe or 'kuhn_poker(players=3)'")
    play.add_argument("--seat", type=int, default=1, help="your seat as the players name it: 1 is Player 1 (default)")
    play.add_argument(
        "--against",
        nargs="+",
        metavar="BOT_OR_MODEL",
        help="who plays the other seats: one for all, or one per seat in order (default: a scripted bot of the game)",
    )
    play.add_argument("--judge", metavar="JUDGE", help="judged games: human, a scripted judge or a model")
    play.add_argument("--seed", type=int, default=0, help="the match seed (another seed: another game)")
    play.add_argument("--out", help="run directory (default plays/<game>-<hash>; the same command resumes)")
    play.add_argument("--terminator", default=".", help="the line that ends a multi-line answer (default '.')")
    play.add_argument(
        "--data-dir",
        metavar="DIR",
        help="the folder a game parameter may name a file in (efg_game(filename=...)), as [experiment] data_dir",
    )
    play.set_defaults(func=_cmd_play)
    games = sub.add_parser(
        "games",
        help="list registered tasks (--all: OpenSpiel's games too)",
        description="Lists the registered tasks with their parameters and defaults; --all lists OpenSpiel's games "
        "too, with whether an LLM can play each and which classical bots do.",
    )
    games.add_argument(
        "--all", action="store_true", help="also list OpenSpiel's games: parameters, LLM-playable, classical bots"
    )
    games.set_defaults(func=_cmd_games)
    sub.add_parser("bots", help="list registered scripted bots").set_defaults(func=_cmd_bots)
    schema = sub.add_parser(
        "schema",
        help="print the JSON Schema of the experiment spec (draft 2020-12)",
        description="Every key is described; any JSON Schema validator or schema-aware editor can use it on a spec.",
    )
    schema.add_argument("--record", action="store_true", help="print the schema of a match record instead")
    schema.set_defaults(func=_cmd_schema)
    info = sub.add_parser(
        "sandbox-info",
        help="show which protection bounds the code sandbox's memory here",
        description="Shows bubblewrap, the memory mode (cgroup or seccomp fallback) and why, keyring calls and the "
        "host budget. Exit 2 if a setting is malformed or a forced mode is unavailable.",
    )
    info.add_argument("--memory-mode", choices=_MEMORY_MODES, help="show what this mode would give instead")
    info.set_defaults(func=_cmd_sandbox_info)
    return parser


def _error(text: str) -> None:
    """A line on standard error, its control characters escaped (it may quote a name or a reply)."""
    print(visible(text), file=sys.stderr)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the console script; returns the exit status.

    Run directories, specs and model replies may come from anyone, so everything the commands print to standard
    output, every error line and every log line goes through :func:`~deepeval_games.core.quoting.visible`: an ANSI
    escape or a bidirectional override in a player's name is shown as ``\\x1b`` or ``\\u202e``, never obeyed.
    """
    args = command_parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING, format="%(levelname)s %(message)s")
    escape_log_lines()
    stdout = sys.stdout
    sys.stdout = VisibleStream(stdout)
    try:
        return int(args.func(args))
    except DeepEvalError as exc:
        _error(f"error: {exc}")
        return 2
    except KeyboardInterrupt:
        _error("interrupted: committed matches are kept; rerun the same command to resume")
        return 130
    finally:
        sys.stdout = stdout


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
