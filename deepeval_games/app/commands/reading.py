"""The commands that read run directories: ``report``, ``leaderboard``, ``view``, ``export``, ``rejudge`` (which
adds judgements beside the matches) and ``tables``."""

from __future__ import annotations

import argparse
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

from deepeval_games.app.commands.console import print_error
from deepeval_games.app.reports.task_tables import table_module
from deepeval_games.app.spec.schedule import stored_admission
from deepeval_games.app.storage.store import Store, require_results
from deepeval_games.core.errors import DeepEvalError, did_you_mean
from deepeval_games.core.quoting import VisibleStream
from deepeval_games.core.records import MatchRecord

__all__ = ["cmd_export", "cmd_leaderboard", "cmd_rejudge", "cmd_report", "cmd_tables", "cmd_view"]


def _read_run(run_dir: str) -> list[MatchRecord]:
    """Every committed record of a run directory; a clear error when it holds none."""
    require_results(run_dir)
    # a reader: no lock, never rewrites matches.jsonl; what admission refuses is skipped (one warning line)
    with Store(run_dir, read_only=True, admission=stored_admission(run_dir)) as store:
        return list(store.records())


def cmd_report(args: argparse.Namespace) -> int:
    """Every table of one or more run directories (one layout: :mod:`deepeval_games.app.reports.report`); ``--html``
    also writes the browsable report, ``--plots`` the figures as PNG and SVG."""
    from deepeval_games.app.reports.report import load_report, text_report
    from deepeval_games.app.reports.sections import variant_title

    if args.html:
        from deepeval_games.app.reports.html import write_html_report

        page = write_html_report(
            args.run_dirs, args.html, epsilon=args.epsilon, intervals=args.intervals, kind=args.interval
        )
        print(f"HTML report: {page} (open it from disk; no server needed)")
        return 0
    data = load_report(args.run_dirs)
    if args.intervals is not None or args.interval is not None:  # asked for: replaces the runs' own, once
        from analysis.stats.intervals import OLD_POLICY

        data.intervals = (data.intervals or OLD_POLICY).requested(args.intervals, args.interval)
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


def cmd_leaderboard(args: argparse.Namespace) -> int:
    """``leaderboard DIR...``: one table per task and role over many runs
    (:mod:`deepeval_games.app.reports.leaderboard`), printed or written to ``--out``."""
    from deepeval_games.app.reports.leaderboard import build_leaderboard, format_leaderboard

    board = build_leaderboard(args.run_dirs, task=args.task, role=args.role)
    text = format_leaderboard(board, args.format)
    if args.out:
        Path(args.out).write_text(text if text.endswith("\n") else text + "\n", encoding="utf-8")
        print(f"wrote {len(board.rows)} rows to {args.out}")
    else:
        print(text)
    return 0


def cmd_view(args: argparse.Namespace) -> int:
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


STDOUT = "-"
"""The ``--out`` of ``export`` that names standard output (CSV and JSON Lines)."""


def cmd_export(args: argparse.Namespace) -> int:
    """``export DIR... --out OUT``: the matches or turns as CSV, JSON Lines or Parquet, or the runs as inspect_ai
    logs; ``--out -``: CSV or JSON Lines on standard output (the count of rows then goes to standard error)."""
    from analysis.export import columns_for, match_row, turn_rows, write_rows, write_text_rows
    from deepeval_games.app.reports.runs import max_seats, open_runs, player_labels, stream_records

    to_stdout = args.out == STDOUT
    if to_stdout and args.format not in ("csv", "jsonl"):
        raise DeepEvalError(
            f"--format {args.format} cannot be written to standard output (--out -): give a "
            f"{'folder' if args.format == 'inspect' else 'file'} to --out, or use --format csv or jsonl"
        )
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
    if to_stdout:
        count = write_text_rows(rows, columns, _data_stdout(), args.format, raw_text=args.raw_text)
        print_error(f"wrote {count} {args.level} rows ({len(columns)} columns) to standard output")
        return 0
    count = write_rows(rows, columns, args.out, args.format, raw_text=args.raw_text)
    print(f"wrote {count} {args.level} rows ({len(columns)} columns) to {args.out}")
    return 0


def _data_stdout() -> TextIO:
    """Where ``export --out -`` writes: standard output as it is when it goes to a file or a pipe (the data exact),
    through :class:`~deepeval_games.core.quoting.VisibleStream` when a terminal shows it (no escape is obeyed)."""
    stream = sys.stdout
    if isinstance(stream, VisibleStream) and not stream.isatty():
        return stream.stream
    return stream


def _judge_audit_text(run_dir: str, records: Sequence[MatchRecord]) -> str:
    """The judge audit of a run directory that was re-judged ("" when it never was)."""
    with Store(run_dir, read_only=True) as store:
        judgements = list(store.judgements())
    if not judgements:
        return ""
    from analysis.judge_audit import format_audit, judge_audit

    return format_audit(judge_audit(records, judgements))


def cmd_rejudge(args: argparse.Namespace) -> int:
    """``rejudge DIR``: re-score the judged transcripts with ``--judge`` (a bot or a model) or ``--human``; print
    the judge audit."""
    from deepeval_games.app.execution.rejudge import JudgeSource, judge_source, rejudge

    run_dir = args.run_dir
    require_results(run_dir)
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
            from deepeval_games.infra.files import cache_dir

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
        print_error(f"  failed {match_id}: {error}")
    print("\n" + _judge_audit_text(run_dir, _read_run(run_dir)))
    return 1 if result.failed else 0


def cmd_tables(args: argparse.Namespace) -> int:
    """A task's pairwise tables (the tables module it registers:
    :func:`~deepeval_games.app.reports.report.table_module`)."""
    module = table_module(args.table)
    records = _read_run(args.run_dir)
    seen = {name for record in records for name in record.seats}
    for name in args.players or ():
        if name not in seen:
            raise DeepEvalError(
                f"no player {name!r} in {args.run_dir}.{did_you_mean(name, seen)} Players: {', '.join(sorted(seen))}"
            )
    return int(module.print_tables(records, players=args.players, plot=args.plot))
