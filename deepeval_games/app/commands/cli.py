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
import sys
from collections.abc import Sequence
from typing import Any

from deepeval_games.app.commands.console import print_error
from deepeval_games.app.commands.listing import cmd_bots, cmd_data, cmd_games, cmd_sandbox_info, cmd_schema
from deepeval_games.app.commands.playing import cmd_eval, cmd_init, cmd_play, cmd_run
from deepeval_games.app.commands.reading import (
    cmd_export,
    cmd_leaderboard,
    cmd_rejudge,
    cmd_report,
    cmd_tables,
    cmd_view,
)
from deepeval_games.app.reports.report import table_names
from deepeval_games.core.errors import DeepEvalError
from deepeval_games.core.quoting import VisibleStream, escape_log_lines

__all__ = ["command_parser", "main"]

_MEMORY_MODES = ("auto", "cgroup", "seccomp")
"""The sandbox's memory modes (:data:`deepeval_games.infra.sandbox.MemoryMode`), spelled here so ``--help`` stays
light."""


def _model_setting(text: str) -> tuple[str, object]:
    """``-M KEY=VALUE`` of ``eval``: a model setting given to every model player (TOML value)."""
    return _param(text)


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
    ev.set_defaults(func=cmd_eval, wait=0.0, executor=None, ray_address=None)


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
    run.set_defaults(func=cmd_run)
    _eval_parser(sub)
    init = sub.add_parser("init", help="write a task's default study as an editable, commented spec")
    init.add_argument("task", help="a task or OpenSpiel game name (deepeval-games games)")
    init.add_argument("--model", action="append", metavar="M", help="a model to evaluate (default: a placeholder)")
    init.add_argument("--judge", metavar="J", help="the judge of a judged task (a scripted judge or a model)")
    init.add_argument("--out", metavar="FILE", help="the spec file to write (default: eval-<task>.toml)")
    init.add_argument("--force", action="store_true", help="overwrite FILE")
    init.set_defaults(func=cmd_init)
    data = sub.add_parser("data", help="list the data files the tasks read (where, sha256); 'data fetch' gets them")
    data.add_argument("action", nargs="?", choices=("fetch",), help="fetch: download and check the files")
    data.add_argument("name", nargs="?", help="with fetch: one file or one task's files (default: every file)")
    data.add_argument("--dir", metavar="DIR", help="with fetch: the data folder to fill (default: the user cache)")
    data.set_defaults(func=cmd_data)
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
    report.set_defaults(func=cmd_report)
    board = sub.add_parser(
        "leaderboard", help="merge the matches of run directories by player identity: one table per task and role"
    )
    _run_dirs(board)
    board.add_argument("--task", help="keep one task (a game variant, or the game's name)")
    board.add_argument("--role", help="keep one role (asymmetric tasks; symmetric ones have the role 'player')")
    board.add_argument("--format", choices=("text", "csv", "json"), default="text")
    board.add_argument("--out", metavar="FILE", help="write the table here instead of printing it")
    board.set_defaults(func=cmd_leaderboard)
    view = sub.add_parser(
        "view",
        help="serve the HTML report on 127.0.0.1, updated while a run writes",
        description="Serves the report read-only on http://127.0.0.1:PORT/ and updates it while a run writes the "
        "directories. Ctrl-C stops it.",
    )
    _run_dirs(view)
    view.add_argument("--port", type=int, default=7676, help="the port on 127.0.0.1 (0: any free one)")
    view.add_argument("--epsilon", type=float, help="also check stableness: every 95%% CI half-width below this")
    view.set_defaults(func=cmd_view)
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
    export.set_defaults(func=cmd_export)
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
    rejudge.set_defaults(func=cmd_rejudge)
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
    tables.set_defaults(func=cmd_tables)
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
    play.set_defaults(func=cmd_play)
    games = sub.add_parser(
        "games",
        help="list registered tasks (--all: OpenSpiel's games too)",
        description="Lists the registered tasks with their parameters and defaults; --all lists OpenSpiel's games "
        "too, with whether an LLM can play each and which classical bots do.",
    )
    games.add_argument(
        "--all", action="store_true", help="also list OpenSpiel's games: parameters, LLM-playable, classical bots"
    )
    games.set_defaults(func=cmd_games)
    sub.add_parser("bots", help="list registered scripted bots").set_defaults(func=cmd_bots)
    schema = sub.add_parser(
        "schema",
        help="print the JSON Schema of the experiment spec (draft 2020-12)",
        description="Every key is described; any JSON Schema validator or schema-aware editor can use it on a spec.",
    )
    schema.add_argument("--record", action="store_true", help="print the schema of a match record instead")
    schema.set_defaults(func=cmd_schema)
    info = sub.add_parser(
        "sandbox-info",
        help="show which protection bounds the code sandbox's memory here",
        description="Shows bubblewrap, the memory mode (cgroup or seccomp fallback) and why, keyring calls and the "
        "host budget. Exit 2 if a setting is malformed or a forced mode is unavailable.",
    )
    info.add_argument("--memory-mode", choices=_MEMORY_MODES, help="show what this mode would give instead")
    info.set_defaults(func=cmd_sandbox_info)
    return parser


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
        print_error(f"error: {exc}")
        return 2
    except KeyboardInterrupt:
        print_error("interrupted: committed matches are kept; rerun the same command to resume")
        return 130
    finally:
        sys.stdout = stdout


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
