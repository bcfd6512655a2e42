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

Here is :func:`main`; the parser is :mod:`.parser`, the handlers :mod:`.playing`, :mod:`.reading` and :mod:`.listing`.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import sys
from collections.abc import Sequence

from deepeval_games.app.commands.console import print_error
from deepeval_games.app.commands.parser import command_parser
from deepeval_games.app.storage.index import unreadable
from deepeval_games.app.storage.store import DB_NAME, JSONL_NAME
from deepeval_games.core.errors import DeepEvalError
from deepeval_games.core.quoting import VisibleStream, escape_log_lines

__all__ = ["main"]


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
        status = int(args.func(args))
        stdout.flush()  # a reader that closed the pipe is found here, not at the interpreter's exit
        return status
    except BrokenPipeError:  # `deepeval-games games --all | head`: the reader has what it wanted
        os.dup2(os.open(os.devnull, os.O_WRONLY), stdout.fileno())  # nothing more to write at exit
        return 141  # 128 + SIGPIPE, as a shell reports a command ended by a closed pipe
    except DeepEvalError as exc:
        print_error(f"error: {exc}")
        return 2
    except sqlite3.DatabaseError as exc:
        if not unreadable(exc):  # locked, read-only, out of space: not a run directory's damaged file
            raise
        print_error(  # a damaged page found while reading (opening found the file whole)
            f"error: a run directory's {DB_NAME} cannot be read ({exc}): run the same `deepeval-games run` command "
            f"again to build it from its {JSONL_NAME}"
        )
        return 2
    except KeyboardInterrupt:
        print_error("interrupted: committed matches are kept; rerun the same command to resume")
        return 130
    finally:
        sys.stdout = stdout


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
