"""The commands that play matches: ``run`` (a spec), ``eval`` (a task's default study), ``init`` (that study written
as a spec to edit) and ``play`` (a person plays a seat); with the score report ``run`` and ``eval`` print."""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import threading
from collections.abc import Iterable, Iterator
from itertools import takewhile
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING

from deepeval_games.app.commands.console import print_error
from deepeval_games.app.execution.run import run_experiment
from deepeval_games.app.spec.extends import stored_intervals
from deepeval_games.app.spec.loading import load_spec
from deepeval_games.app.spec.spec import ExperimentSpec
from deepeval_games.app.spec.stopping import recheck_epsilon, stopping_rule
from deepeval_games.app.storage.store import DB_NAME, committed_ids
from deepeval_games.core.errors import DeepEvalError
from deepeval_games.core.records import MatchRecord

if TYPE_CHECKING:
    from analysis.stats.intervals import IntervalPolicy

__all__ = ["cmd_eval", "cmd_init", "cmd_play", "cmd_run", "init_usage", "score_report", "sigterm_as_interrupt"]


def score_report(
    records: Iterable[MatchRecord], *, epsilon: float | None = None, intervals: IntervalPolicy | None = None
) -> str:
    """Per game variant (its data items pooled): Eq. 1 for symmetric games, Eq. 2 (per role) for asymmetric ones, or
    the headline the task's tables module gives (:data:`~deepeval_games.app.reports.report.TABLES_ENTRY_POINT_GROUP`).

    Two-seat tasks add Bradley–Terry ratings, symmetric ones also win/draw/loss, NRA, first mover and illegal-move
    rates (:mod:`analysis.tables.two_player`); with ``epsilon`` the stableness check is reported too. When any turn was
    not ``ok`` at the first ask, the turn outcomes per player follow (``invalid``: no valid move, the
    task's penalty or a seeded random legal move was played for the seat). ``records`` are read once, as they
    come (a stream from the store keeps memory flat), and kept slim; ``run`` feeds the same summary
    (:class:`~deepeval_games.app.reports.report.CoreSummary`) each record as it is committed.
    """
    from deepeval_games.app.reports.report import core_text  # the report's core sections

    return core_text(records, epsilon=epsilon, intervals=intervals)


def cmd_run(args: argparse.Namespace) -> int:
    """``run SPEC --out DIR``: check the sandbox settings, then play the spec into the run directory (or, with
    ``--dry-run``, print its plan and price)."""
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


@contextlib.contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """While open (in the main thread), SIGTERM stops the command as Ctrl-C does: it runs the SIGINT handler of the
    moment (asyncio's, which cancels the run's task), or raises KeyboardInterrupt. The run then ends as an
    interrupted one (committed matches kept, its manifest entry ``interrupted``) instead of dying unrecorded."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def on_sigterm(signum: int, frame: FrameType | None) -> None:
        handler = signal.getsignal(signal.SIGINT)
        if callable(handler):
            handler(signal.SIGINT, frame)
        else:
            raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, on_sigterm)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _play(spec: ExperimentSpec, out: str | Path, args: argparse.Namespace) -> int:
    """Play ``spec`` into ``out`` (resuming it) and print the tables, the cost and what was played."""
    from deepeval_games.app.reports import estimate
    from deepeval_games.app.reports.report import CoreSummary  # the report's core sections

    before = committed_ids(out)  # with those the JSONL holds and the database lacks: not "played now"
    summary = CoreSummary()  # fed each record as it is committed, while the run plays
    with sigterm_as_interrupt():  # `kill`: the run stops as on Ctrl-C, its manifest saying "interrupted"
        result = run_experiment(
            spec,
            out,
            progress=not args.no_progress,
            wait_s=args.wait,
            workers=args.workers,
            executor=args.executor,
            ray_address=args.ray_address,
            on_commit=summary.add_json,
        )
    before -= result.quarantined  # refused when the run read them back: played again, now
    if before & result.match_ids:  # a resumed run: its earlier records lead the store, in commit order
        summary.put_first(takewhile(lambda r: r.match_id in before, result.iter_records(rebuild_turns=False)))
    rule = stopping_rule(spec)
    epsilon = recheck_epsilon(rule)  # a half-width target under recheck; under adaptive the rule reports itself
    intervals = stored_intervals(out)  # as the run directory records it: a resumed old run keeps its methods
    print(summary.text(epsilon=epsilon, intervals=intervals))
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
    print(f"Results: {Path(out) / DB_NAME} and {Path(out) / 'matches.jsonl'} (the same command again resumes the run)")
    for match_id, error in result.failed:
        print_error(f"  failed {match_id}: {error}")
    return 1 if result.failed else 0


def cmd_eval(args: argparse.Namespace) -> int:
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
    rule = stopping_rule(spec)
    print(f"Players: {players}")
    if rule is not None:
        print(_stopping_header(spec, rule.epsilon, rule.budget_matches))
    print(estimate.format_dry_run(estimate.dry_run(spec, out), spec, before_play=True))
    if out.exists():  # a directory that is not there yet is named once it holds results (the closing lines)
        print(f"Run directory: {out} (resumed: matches already there are not played again)")
    print()
    return _play(spec, out, args)


def _stopping_header(spec: ExperimentSpec, epsilon: float, budget: int | None) -> str:
    """The adaptive rule in words before play: when it stops (its margin and match budget), and how many times it
    first plays every seating, as many as the budget allows."""
    from deepeval_games.app.spec.schedule import plan_matches

    per_round = len(plan_matches(spec.with_experiment(repeats=1)))
    first = spec.experiment.repeats
    if budget is not None and per_round:
        first = max(1, min(first, budget // per_round))
    times = "once" if first == 1 else "twice" if first == 2 else f"{first} times"
    cap = f", or once {budget} matches are played" if budget is not None else ""
    return (
        f"Stopping: the run stops once every player is told apart from its neighbours in the ranking or tied with "
        f"them (means within {epsilon:g}){cap}. It first plays every seating {times} "
        f"({_count(per_round, 'match')} each time), then only the seatings of players not yet told apart."
    )


def _count(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 'es' if word.endswith('ch') else 's'}"


def cmd_init(args: argparse.Namespace) -> int:
    """``init TASK``: the study ``eval`` would play, as a commented spec file to edit."""
    from deepeval_games.app.commands.study import plan_study, spec_toml

    if args.task is None:  # a required argument left out: say what it may be (a usage error, exit 2)
        print_error(init_usage())
        return 2
    models = args.model or _offline_models()
    plan = plan_study(args.task, models, judge=args.judge, baselines_only=not models)
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
    text = spec_toml(plan.document, comments=True, header=header)
    if not args.model:  # offline as written; a hosted model is one uncommented table away
        text += HOSTED_PLAYER
    out.write_text(text, encoding="utf-8")
    print(f"wrote {out}; play it with: deepeval-games run {out} --out runs/{out.stem}")
    return 0


def init_usage() -> str:
    """What ``init`` without a task prints: how to call it and the registered tasks, one line each."""
    from deepeval_games.core.registry.games import registered_games

    infos = registered_games()
    width = max((len(info.short_name) for info in infos), default=0)
    return "\n".join(
        [
            "usage: deepeval-games init TASK [--model M] [--out FILE]",
            "error: name the task whose default study to write; the registered tasks:",
            *(f"  {info.short_name:<{width}}  {info.long_name}" for info in infos),
            "(any OpenSpiel game name works too: 'deepeval-games games --all' lists them)",
        ]
    )


HOSTED_PLAYER = """
# A hosted model plays beside these once its API key is set (here OPENAI_API_KEY); uncomment to add it:
# [[players]]
# name = "gpt-4o-mini"
# model = "openai/gpt-4o-mini"
"""
"""What ``init`` without ``--model`` appends to the spec it writes: a hosted model's player, commented out."""


def _offline_models() -> list[str]:
    """The model ``init`` puts in a study when none is named: the local model where it can run here (no key, no
    network), else none (the study's baselines alone play it)."""
    from llm_bots.local.server import local_model_available

    return ["local/smollm2"] if local_model_available() is None else []


def cmd_play(args: argparse.Namespace) -> int:
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
            print_error(f"  failed {match_id}: {error}")
        return 1
    for record in result.records:
        print("\n" + final_view(record, list(record.seats).index(HUMAN_NAME)))
    if result.played == 0:
        print(f"\nThis game was already played in {out}; give --seed N for another one.")
    print(f"\nRecorded in {out / DB_NAME} and {out / 'matches.jsonl'}")
    return 0
