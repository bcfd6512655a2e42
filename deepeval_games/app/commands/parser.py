"""The parser of the ``deepeval-games`` command line: a table of the commands (:data:`_COMMANDS`: name, handler,
help), one small builder a command for its arguments, and one helper an option that several commands share (``--out``,
``--judge``, ``--workers`` ...), so each such option is declared in one place.

The handlers live by theme (:mod:`.playing`, :mod:`.reading`, :mod:`.listing`); the docs' CLI reference is generated
from this parser (:mod:`.reference`).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import NamedTuple, get_args

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
from deepeval_games.app.reports.task_tables import table_names
from deepeval_games.app.spec.experiment import IntervalsVersion

__all__ = ["command_parser"]

_MEMORY_MODES = ("auto", "cgroup", "seccomp")
"""The sandbox's memory modes (:data:`deepeval_games.infra.sandbox.MemoryMode`), spelled here so ``--help`` stays
light."""


class _Command(NamedTuple):
    """One command of the command line."""

    name: str
    """What the command line calls it (``deepeval-games NAME``)."""
    handler: Callable[[argparse.Namespace], int]
    """What runs the command, given the parsed arguments; returns the exit status."""
    arguments: Callable[[argparse.ArgumentParser], None]
    """The builder that adds the command's arguments and options to its parser."""
    help: str
    """Its line in the list of commands (``deepeval-games --help``)."""
    description: str | None = None
    """The text atop its own ``--help``."""


# -- argument types -----------------------------------------------------------------------------------------------


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
        raise argparse.ArgumentTypeError(f"must be 'auto' or a number of processes at least 1, got {text!r}")
    return value


def _bounded(kind: type[int] | type[float], low: float, *, above: bool = False) -> Callable[[str], float]:
    """The type of a numeric flag: a ``kind`` (int or float) at least ``low`` (``above``: more than ``low``), checked
    as the command line is read, so the error names the flag (``argument --max-matches: must be at least 1, got
    -5``) and argparse exits 2."""
    bound = f"more than {low:g}" if above else f"at least {low:g}"

    def parse(text: str) -> float:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"must be {'a whole number' if kind is int else 'a number'} {bound}, got {text!r}"
            ) from None
        if value != value or value < low or (above and value == low):  # value != value: NaN
            raise argparse.ArgumentTypeError(f"must be {bound}, got {text}")
        return value

    parse.__name__ = kind.__name__  # what argparse calls the type in its other messages
    return parse


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


# -- the options several commands share ---------------------------------------------------------------------------


def _task(parser: argparse.ArgumentParser, help: str, *, optional: bool = False) -> None:
    """The task a study is made of (``eval``, ``init``; ``optional``: the command lists the tasks when none is
    named)."""
    parser.add_argument("task", nargs="?" if optional else None, help=help)


def _run_dir(parser: argparse.ArgumentParser) -> None:
    """The one run directory a command reads (``rejudge``, ``tables``)."""
    parser.add_argument("run_dir", help="the run directory")


def _run_dirs(parser: argparse.ArgumentParser) -> None:
    """The run directories a reading command takes (one or more)."""
    parser.add_argument("run_dirs", nargs="+", metavar="run_dir", help="a run directory (one or more)")


def _out(parser: argparse.ArgumentParser, help: str, *, metavar: str | None = None, required: bool = False) -> None:
    """``--out``: where a command writes (a run directory, a spec, a table, an export)."""
    parser.add_argument("--out", required=required, metavar=metavar, help=help)


def _model(parser: argparse.ArgumentParser, help: str) -> None:
    """``--model M`` (repeatable): a model to evaluate."""
    parser.add_argument("--model", action="append", metavar="M", help=help)


def _against(parser: argparse.ArgumentParser, help: str, *, metavar: str, action: str, nargs: str | None) -> None:
    """``--against``: who plays the other seats (repeated as ``action="append"``, or ``nargs="+"``)."""
    parser.add_argument("--against", action=action, nargs=nargs, metavar=metavar, help=help)


def _judge(parser: argparse.ArgumentParser, help: str, *, metavar: str | None = None) -> None:
    """``--judge``: the judge of a judged task (a scripted judge or a model)."""
    parser.add_argument("--judge", metavar=metavar, help=help)


def _no_progress(parser: argparse.ArgumentParser) -> None:
    """``--no-progress``: no progress bar while matches are played."""
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")


def _workers(parser: argparse.ArgumentParser, help: str) -> None:
    """``--workers N``: the processes that play the matches (a number or ``auto``)."""
    parser.add_argument("--workers", type=_workers_arg, metavar="N", help=help)


def _epsilon(parser: argparse.ArgumentParser, help: str) -> None:
    """``--epsilon``: also check stableness against this half-width."""
    parser.add_argument("--epsilon", type=_bounded(float, 0, above=True), help=help)


def _format(parser: argparse.ArgumentParser, choices: tuple[str, ...], default: str, help: str | None = None) -> None:
    """``--format``: the format a command writes its table or rows in."""
    parser.add_argument("--format", choices=choices, default=default, help=help)


# -- one builder a command ----------------------------------------------------------------------------------------


def _add_run(parser: argparse.ArgumentParser) -> None:
    """The arguments of ``run SPEC --out DIR``."""
    parser.add_argument("spec", help="experiment spec (TOML)")
    _out(parser, "run directory (created; an existing one is resumed)", required=True)
    _no_progress(parser)
    parser.add_argument(
        "--wait",
        type=_bounded(float, 0),
        default=0.0,
        metavar="SECONDS",
        help="when another run is writing the directory, wait this long for it before refusing (default 0)",
    )
    _workers(
        parser,
        "processes that play the matches: a number or 'auto' (default: the spec's [experiment] workers, itself "
        "'auto': one per core for a run of many LLM matches, else one); the records do not depend on it",
    )
    parser.add_argument(
        "--executor",
        choices=("local", "ray"),
        help="where the matches are played: this machine (local, the default) or actors on a Ray cluster (ray; "
        'pip install "deepeval-games[ray]"; --workers N is then the number of actors, by default one per CPU of '
        "the cluster); overrides [experiment] executor",
    )
    parser.add_argument(
        "--ray-address",
        metavar="ADDR",
        help="with --executor ray: the cluster to join (host:port, or 'auto' for the one 'ray start' made here); "
        "default: RAY_ADDRESS, else a local Ray instance for the run",
    )
    parser.add_argument(
        "--dry-run",
        action="store_true",
        help="print the number of matches and an upper estimate of calls, tokens and cost; send nothing",
    )
    parser.add_argument(
        "--sandbox-memory",
        choices=_MEMORY_MODES,
        help="how the code sandbox bounds memory: a cgroup per sandbox, the seccomp fallback, or auto (default; "
        "also DEEPEVAL_GAMES_SANDBOX_MEMORY)",
    )


def _add_eval(parser: argparse.ArgumentParser) -> None:
    """The arguments of ``eval TASK --model M``."""
    _task(parser, "a task or OpenSpiel game name, or a game string (deepeval-games games --all)")
    _model(parser, "a model to evaluate, e.g. openai/gpt-4o (repeat)")
    parser.add_argument(
        "-M",
        "--model-setting",
        action="append",
        type=_model_setting,
        metavar="KEY=VALUE",
        help="a setting for every model player (temperature=0.2, api_base=URL, max_tokens=200; repeatable)",
    )
    _against(
        parser,
        "an opponent instead of the task's baselines: a bot or a model (repeatable)",
        metavar="NAME",
        action="append",
        nargs=None,
    )
    _judge(parser, "the judge of a judged task: a scripted judge or a model", metavar="J")
    parser.add_argument(
        "--max-matches",
        type=_bounded(int, 1),
        metavar="N",
        help="the stopping rule's budget of matches (whole rounds: at least one round of every seating)",
    )
    parser.add_argument(
        "--budget",
        type=_bounded(float, 0),
        metavar="USD",
        help="stop sending model calls past this cost (a model litellm cannot price needs -M input_cost_per_token=... "
        "-M output_cost_per_token=...)",
    )
    _out(parser, "run directory (default runs/eval-<task>-<hash>; resumed)", metavar="DIR")
    parser.add_argument("--print-spec", action="store_true", help="print the spec (TOML for 'run') instead of playing")
    _no_progress(parser)
    _workers(parser, "processes that play the matches")
    parser.set_defaults(wait=0.0, executor=None, ray_address=None)


def _add_init(parser: argparse.ArgumentParser) -> None:
    """The arguments of ``init TASK``."""
    _task(parser, "a task or OpenSpiel game name (deepeval-games games; none: list the tasks)", optional=True)
    _model(parser, "a model to evaluate (default: a placeholder)")
    _judge(parser, "the judge of a judged task (a scripted judge or a model)", metavar="J")
    _out(parser, "the spec file to write (default: eval-<task>.toml)", metavar="FILE")
    parser.add_argument("--force", action="store_true", help="overwrite FILE")


def _add_data(parser: argparse.ArgumentParser) -> None:
    """The arguments of ``data [fetch [NAME]]``."""
    parser.add_argument("action", nargs="?", choices=("fetch",), help="fetch: download and check the files")
    parser.add_argument("name", nargs="?", help="with fetch: one file or one task's files (default: every file)")
    parser.add_argument("--dir", metavar="DIR", help="with fetch: the data folder to fill (default: the user cache)")


def _add_report(parser: argparse.ArgumentParser) -> None:
    """The arguments of ``report DIR...``."""
    _run_dirs(parser)
    parser.add_argument("--html", metavar="OUT", help="write the HTML report (a folder; open OUT/index.html)")
    _epsilon(parser, "also check stableness: every 95%% interval half-width below this")
    parser.add_argument("--plots", metavar="DIR", help="write payoff box plots and convergence curves here")
    parser.add_argument(
        "--intervals",
        choices=get_args(IntervalsVersion),
        help="the interval methods to print, by version: 3 exact where the game declares its payoff values (at "
        "every number of matches), 2 the same with win/draw/loss exact up to 40 matches, 1 the betting intervals of "
        "old runs (default: the version each run recorded; 1 for a run that records none)",
    )
    parser.add_argument(
        "--interval",
        choices=("fixed", "anytime"),
        help="print this kind of interval instead of the one valid for how the runs were collected (default: "
        "anytime-valid where a stopping rule decided when a run stopped, fixed-n where the number of matches was "
        "fixed in advance)",
    )


def _add_leaderboard(parser: argparse.ArgumentParser) -> None:
    """The arguments of ``leaderboard DIR...``."""
    _run_dirs(parser)
    parser.add_argument("--task", help="keep one task (a game variant, or the game's name)")
    parser.add_argument("--role", help="keep one role (asymmetric tasks; symmetric ones have the role 'player')")
    _format(parser, ("text", "csv", "json"), "text")
    _out(parser, "write the table here instead of printing it", metavar="FILE")


def _add_view(parser: argparse.ArgumentParser) -> None:
    """The arguments of ``view DIR...``."""
    _run_dirs(parser)
    parser.add_argument("--port", type=int, default=7676, help="the port on 127.0.0.1 (0: any free one)")
    _epsilon(parser, "also check stableness: every 95%% CI half-width below this")


def _add_export(parser: argparse.ArgumentParser) -> None:
    """The arguments of ``export DIR... --out OUT``."""
    _run_dirs(parser)
    _format(
        parser,
        ("csv", "jsonl", "parquet", "inspect"),
        "csv",
        "inspect: inspect_ai eval logs (a folder of them, one per run, task and player; needs inspect-ai)",
    )
    parser.add_argument("--level", choices=("match", "turn"), default="match", help="one row per match or per turn")
    _out(
        parser,
        "the file to write (with --format inspect: the folder; '-': standard output, for csv and jsonl)",
        required=True,
    )
    parser.add_argument(
        "--raw-text",
        action="store_true",
        help="CSV: write text cells exactly as recorded (by default a cell that a spreadsheet would run as a formula "
        "gets a leading apostrophe, and control characters are escaped); JSON Lines and Parquet are always exact",
    )


def _add_rejudge(parser: argparse.ArgumentParser) -> None:
    """The arguments of ``rejudge DIR --judge J`` or ``rejudge DIR --human [NAME]``."""
    _run_dir(parser)
    _judge(parser, "a registered scripted judge (judge_pass_rate, ...) or a model (openai/gpt-4o)")
    parser.add_argument(
        "--human",
        nargs="?",
        const="human",
        metavar="NAME",
        help="a person judges at the terminal, blind to the players, one transcript at a time in random order "
        "(judgements are named human:NAME)",
    )
    parser.add_argument(
        "--param", action="append", type=_param, metavar="KEY=VALUE", help="a judge setting (repeatable; TOML value)"
    )
    parser.add_argument("--swap", action="store_true", help="also judge with the roles shown in swapped order")
    parser.add_argument("--repeat", type=int, default=1, help="judgements per match and presentation (default 1)")
    parser.add_argument("--concurrency", type=int, default=8, help="judgements at once (default 8)")
    parser.add_argument("--no-cache", action="store_true", help="do not use the model-call cache (LLM judges)")
    parser.add_argument(
        "--budget-usd",
        type=float,
        help="stop sending model calls past this cost (a model judge litellm cannot price needs --param "
        "input_cost_per_token=... --param output_cost_per_token=...)",
    )


def _add_tables(parser: argparse.ArgumentParser) -> None:
    """The arguments of ``tables TABLE DIR``."""
    parser.add_argument(
        "table", choices=table_names(), help="the tables a task registers (its entry point under deepeval_games.tables)"
    )
    _run_dir(parser)
    parser.add_argument("--plot", metavar="FILE", help="save a figure of the tables (PNG, PDF, SVG ...)")
    parser.add_argument("--players", nargs="+", help="row/column order (default: every player, sorted)")


def _add_play(parser: argparse.ArgumentParser) -> None:
    """The arguments of ``play GAME [--seat N]``."""
    parser.add_argument("game", help="a game string, e.g. tic_tac_toe or 'kuhn_poker(players=3)'")
    parser.add_argument("--seat", type=int, default=1, help="your seat as the players name it: 1 is Player 1 (default)")
    _against(
        parser,
        "who plays the other seats: one for all, or one per seat in order (default: a scripted bot of the game)",
        metavar="BOT_OR_MODEL",
        action="store",
        nargs="+",
    )
    _judge(parser, "judged games: human, a scripted judge or a model", metavar="JUDGE")
    parser.add_argument("--seed", type=int, default=0, help="the match seed (another seed: another game)")
    _out(parser, "run directory (default plays/<game>-<hash>; the same command resumes)")
    parser.add_argument("--terminator", default=".", help="the line that ends a multi-line answer (default '.')")
    parser.add_argument(
        "--data-dir",
        metavar="DIR",
        help="the folder a game parameter may name a file in (efg_game(filename=...)), as [experiment] data_dir",
    )


def _add_games(parser: argparse.ArgumentParser) -> None:
    """The arguments of ``games [--all]``."""
    parser.add_argument(
        "--all", action="store_true", help="also list OpenSpiel's games: parameters, LLM-playable, classical bots"
    )


def _add_bots(parser: argparse.ArgumentParser) -> None:
    """``bots`` takes no arguments."""


def _add_schema(parser: argparse.ArgumentParser) -> None:
    """The arguments of ``schema [--record]``."""
    parser.add_argument("--record", action="store_true", help="print the schema of a match record instead")


def _add_sandbox_info(parser: argparse.ArgumentParser) -> None:
    """The arguments of ``sandbox-info [--memory-mode MODE]``."""
    parser.add_argument("--memory-mode", choices=_MEMORY_MODES, help="show what this mode would give instead")


_COMMANDS: tuple[_Command, ...] = (
    _Command(
        "run",
        cmd_run,
        _add_run,
        help="play an experiment spec into a run directory",
        description="Plays every match of the spec not yet in the run directory, with a progress bar, then prints "
        "the score tables. Exit 0 when every match completed, 1 when some could not be (they are listed), 2 on a bad "
        "spec or input. With --executor ray the same matches are played on a Ray cluster, with the records, ids and "
        "store of a local run. With --dry-run it prints the number of matches and an upper estimate of calls, tokens "
        "and cost per model, and sends nothing.",
    ),
    _Command(
        "eval",
        cmd_eval,
        _add_eval,
        help="evaluate models on a task's default study (baselines, stopping rule) in one go",
    ),
    _Command("init", cmd_init, _add_init, help="write a task's default study as an editable, commented spec"),
    _Command(
        "data", cmd_data, _add_data, help="list the data files the tasks read (where, sha256); 'data fetch' gets them"
    ),
    _Command(
        "report",
        cmd_report,
        _add_report,
        help="print every table of one or more run directories (side by side)",
        description="With --epsilon, the stableness check too; with --plots, figures as PNG and SVG; with --html, a "
        "browsable report folder with every transcript.",
    ),
    _Command(
        "leaderboard",
        cmd_leaderboard,
        _add_leaderboard,
        help="merge the matches of run directories by player identity: one table per task and role",
    ),
    _Command(
        "view",
        cmd_view,
        _add_view,
        help="serve the HTML report on 127.0.0.1, updated while a run writes",
        description="Serves the report read-only on http://127.0.0.1:PORT/ and updates it while a run writes the "
        "directories. Ctrl-C stops it.",
    ),
    _Command(
        "export",
        cmd_export,
        _add_export,
        help="write a run's matches or turns as CSV, JSON Lines or Parquet, or its logs for inspect_ai",
    ),
    _Command(
        "rejudge",
        cmd_rejudge,
        _add_rejudge,
        help="re-score a run's judged transcripts with a judge (no replay); print the judge audit",
        description="Stores the verdicts beside the matches. Exit 0, 1 when some judgements failed (listed), 2 on "
        "bad input.",
    ),
    _Command(
        "tables",
        cmd_tables,
        _add_tables,
        help="print a task's pairwise tables (the paper's Tables 1-6) of a run directory",
        description="Each task registers its tables (entry point deepeval_games.tables); --plot saves them as a "
        "figure.",
    ),
    _Command(
        "play",
        cmd_play,
        _add_play,
        help="play one seat of a game yourself, at the terminal, against bots or models",
        description="The match is recorded like any other. 'rejudge DIR --human [NAME]' lets a person judge instead.",
    ),
    _Command(
        "games",
        cmd_games,
        _add_games,
        help="list registered tasks (--all: OpenSpiel's games too)",
        description="Lists the registered tasks with their parameters and defaults; --all lists OpenSpiel's games "
        "too, with whether an LLM can play each and which classical bots do.",
    ),
    _Command("bots", cmd_bots, _add_bots, help="list registered scripted bots"),
    _Command(
        "schema",
        cmd_schema,
        _add_schema,
        help="print the JSON Schema of the experiment spec (draft 2020-12)",
        description="Every key is described; any JSON Schema validator or schema-aware editor can use it on a spec.",
    ),
    _Command(
        "sandbox-info",
        cmd_sandbox_info,
        _add_sandbox_info,
        help="show which protection bounds the code sandbox's memory here",
        description="Shows bubblewrap, the memory mode (cgroup or seccomp fallback) and why, keyring calls and the "
        "host budget. Exit 2 if a setting is malformed or a forced mode is unavailable.",
    ),
)
"""Every command, in the order ``--help`` lists them."""


def command_parser() -> argparse.ArgumentParser:
    """The parser of every command (the docs' CLI reference is generated from it: :mod:`.reference`)."""
    parser = argparse.ArgumentParser(prog="deepeval-games", description="Evaluate LLMs by making them play games.")
    parser.add_argument("-v", "--verbose", action="store_true", help="log progress details")
    commands = parser.add_subparsers(dest="command", required=True)
    for command in _COMMANDS:
        sub = commands.add_parser(command.name, help=command.help, description=command.description)
        command.arguments(sub)
        sub.set_defaults(func=command.handler)
    return parser
