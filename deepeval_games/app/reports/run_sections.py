"""The report-wide sections: the run directories and their players, aborted match attempts, the stopping rule
of each run, and the judge audit. Each registers on import (:func:`~deepeval_games.app.reports.sections.section`)."""

from __future__ import annotations

import json
import logging
import sqlite3

from deepeval_games.app.reports.runs import RunSource, identity_text, spec_source
from deepeval_games.app.reports.sections import Block, ReportContext, section
from deepeval_games.app.spec.stopping import recorded_rule
from deepeval_games.app.storage.store import Store, read_results

log = logging.getLogger(__name__)


@section("runs", "Runs and players", scope="report")
def _runs(ctx: ReportContext) -> list[Block]:
    if not ctx.runs:
        return []
    rows = tuple((run.label, str(run.path), str(ctx.run_counts.get(run.label, 0))) for run in ctx.runs)
    duplicates = (
        f"\n  {ctx.duplicates} copies of matches already read from an earlier run directory were left out (the "
        "same match id: the same game, seats, repeat and seed); each match is counted once in the tables"
        if ctx.duplicates
        else ""
    )
    blocks = [
        Block(
            "runs",
            "Run directories",
            text="Run directories:\n" + "\n".join(f"  {r[0]}: {r[2]} matches ({r[1]})" for r in rows) + duplicates,
            header=("run", "path", "matches"),
            rows=rows,
            note=duplicates.strip(),
        )
    ]
    identities: dict[str, set[str]] = {}
    for record in ctx.records:
        for i, name in enumerate(record.seats):
            identity = record.players[i] if i < len(record.players) else {}
            identities.setdefault(name, set()).add(
                identity_text(identity) if isinstance(identity, dict) else str(identity)
            )
    players = tuple((name, " | ".join(sorted(ids))) for name, ids in sorted(identities.items()))
    text = "Players (what played under each name):\n" + "\n".join(f"  {name}: {ids}" for name, ids in players)
    title = "Players (what played under each name)"
    blocks.append(Block("players", title, text=text, header=("player", "identity"), rows=players))
    return blocks


@section("aborted", "Aborted match attempts", scope="report")
def _aborted(ctx: ReportContext) -> list[Block]:
    """Attempts the runner gave up on (the store's ``attempts`` table): infrastructure failures, rescheduled and
    never scored, and errors of a bot or game. They are not results; they say what a run spent beyond them."""
    rows = []
    for run in ctx.runs:
        with Store(run.path, read_only=True) as store:
            attempts = store.attempts()
        for kind in sorted({kind for _, kind, _ in attempts}):
            of_kind = [match_id for match_id, k, _ in attempts if k == kind]
            rows.append((run.label, kind, str(len(of_kind)), str(len(set(of_kind)))))
    if not rows:
        return []
    title = "Aborted match attempts (not results: infra failures are rescheduled, errors lose their match)"
    text = title + "\n" + "\n".join(f"  {r[0]}: {r[1]} {r[2]} attempts of {r[3]} matches" for r in rows)
    return [Block("aborted", title, text=text, header=("run", "kind", "attempts", "matches"), rows=tuple(rows))]


@section("stopping", "Stopping rule", scope="report")
def _stopping(ctx: ReportContext) -> list[Block]:
    """Per run, what stopped it: under the adaptive rule its ``stopping.json`` (what stopped the run, matches per
    player, what is unresolved); under the old ``recheck`` rule that its intervals are not valid under repeated
    looks; with a fixed repeat count that no stopping rule was applied (so nothing claims the results converged)."""
    from analysis.stats.stopping import StoppingReport, format_stopping, stopping_rule_note

    blocks = []
    for run in ctx.runs:
        path = run.path / "stopping.json"
        if path.is_file():
            try:
                report = StoppingReport.from_dict(json.loads(path.read_text(encoding="utf-8")))
            except (ValueError, KeyError, TypeError, IndexError, AttributeError, RecursionError) as exc:
                log.warning("%s is unreadable (%s); its stopping report is left out", path, str(exc)[:200])
                continue
            text = f"{run.label}: " + format_stopping(report)
            blocks.append(Block("stopping", f"Adaptive stopping rule ({run.label})", text=text))
            continue
        source = spec_source(run)
        if source is None:
            continue
        rule = recorded_rule(source)
        if rule is None:
            note = stopping_rule_note(None, int(source.get("experiment", {}).get("repeats", 1)))
        elif rule.rule == "adaptive":
            note = (
                "the adaptive stopping rule's report (stopping.json) is missing: the run was stopped before the rule "
                "decided, or was played before the adaptive rule became the default (then by the old 'recheck' "
                "rule, whose intervals are not valid under repeated looks)."
            )
        else:
            note = stopping_rule_note(rule.rule, _played_repeats(run), rule.max_repeats)
        blocks.append(Block("stopping", f"Stopping rule ({run.label})", text=f"{run.label}: {note}"))
    return blocks


def _played_repeats(run: RunSource) -> int:
    """The repeats a run's committed matches reach (its largest repeat number plus one)."""
    db = read_results(run.path)
    try:
        query = "SELECT MAX(json_extract(record, '$.repeat')) FROM matches WHERE json_valid(record)"
        (top,) = db.execute(query).fetchone()
    except sqlite3.Error:
        top = None
    finally:
        db.close()
    return int(top) + 1 if top is not None else 0


@section("judge_audit", "Judge audit", scope="report")
def _judge_audit(ctx: ReportContext) -> list[Block]:
    if not ctx.judgements:
        return []
    from analysis.judge_audit import format_audit, judge_audit

    return [Block("judge_audit", "Judge audit", text=format_audit(judge_audit(ctx.records, ctx.judgements)))]
