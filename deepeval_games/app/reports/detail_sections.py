"""The report's sections of detail per game variant: turn outcomes, calls, tokens and cost, the context policy
per turn, the task's own tables (the paper's Tables 1–6) and the figures. Each registers on import
(:func:`~deepeval_games.app.reports.sections.section`)."""

from __future__ import annotations

import contextlib
import io
import tempfile
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from deepeval_games.app.reports.runs import game_label
from deepeval_games.app.reports.sections import Block, ReportContext, section, table_block, variant_title
from deepeval_games.app.reports.task_tables import TaskTables, variant_tables
from deepeval_games.core.records import MatchRecord


@section("turn_outcomes", "Turn outcomes", core=True)
def _turn_outcomes(ctx: ReportContext) -> list[Block]:
    from analysis.tables.outcomes import format_turn_outcomes, turn_outcome_table, turn_outcomes

    outcomes = turn_outcomes(ctx.records)
    if all(tally.all_ok for tally in outcomes.values()):  # every turn valid at the first ask: nothing to say
        return []
    penalty = _has_penalty(ctx.records)
    return [table_block(turn_outcome_table(outcomes, penalty), format_turn_outcomes(outcomes, penalty))]


def _has_penalty(records: Sequence[MatchRecord]) -> bool | None:
    """Whether the records' game has its own penalty move for a turn without a valid move (the referee draws a random
    legal move otherwise); None when the game cannot be loaded here."""
    from deepeval_games.core import task
    from deepeval_games.core.errors import DeepEvalError
    from deepeval_games.core.registry.games import load_recorded_game

    if not records:
        return None
    try:
        state = load_recorded_game(records[0].game).new_initial_state()
    except (DeepEvalError, RuntimeError, ValueError):  # (pyspiel raises RuntimeError for a game it cannot load)
        return None
    return task.has_penalty(state)


@section("usage", "Turn outcomes, calls, tokens and cost per player")
def _usage(ctx: ReportContext) -> list[Block]:
    from analysis.tables.usage import USAGE_HEADER, format_usage, player_usage, usage_rows

    usage = player_usage(ctx.records)
    if not usage:
        return []
    title = "Turn outcomes, calls, tokens and cost per player"
    return [
        Block(
            "usage",
            title,
            text=title + "\n" + format_usage(usage),
            header=USAGE_HEADER,
            rows=tuple(usage_rows(usage)),
        )
    ]


@section("context_use", "Context policy per turn")
def _context_use(ctx: ReportContext) -> list[Block]:
    from analysis.tables.context_use import CONTEXT_COLUMNS, context_use, format_context_use

    use = context_use(ctx.records)
    if all(set(tally) <= {"full"} for tally in use.values()):  # the paper's whole pool throughout: nothing to say
        return []
    rows = tuple((name, *(str(tally.get(c, 0)) for c in CONTEXT_COLUMNS)) for name, tally in use.items())
    text = format_context_use(use)
    return [Block("context_use", "Context policy per turn", text=text, header=("player", *CONTEXT_COLUMNS), rows=rows)]


@section("task_tables", "The paper's tables")
def _task_tables(ctx: ReportContext) -> list[Block]:
    """The task's pairwise tables (Tables 1–6), printed by the task's table module, with its figure."""
    blocks = []
    for name, module in variant_tables(ctx.variant):
        with tempfile.TemporaryDirectory() as tmp:
            plot = Path(tmp) / "tables.svg" if ctx.figures else None
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                module.print_tables(ctx.records, plot=plot)
            text = "\n".join(line for line in out.getvalue().splitlines() if not line.startswith("figure: "))
            blocks += _task_cells(name, module, ctx.records, text.strip())
            for svg in sorted(Path(tmp).glob("*.svg")):
                content = svg.read_text(encoding="utf-8")
                title = str(getattr(module, "FIGURE_TITLE", "") or f"The figure of the {name} tables")
                blocks.append(Block(f"{name}_figure", title, svg=content[content.find("<svg") :], kind="figure"))
    return blocks


def _task_cells(name: str, module: TaskTables, records: Sequence[MatchRecord], text: str) -> list[Block]:
    """A task's tables as cells where its module gives them (``tables(records)``: the first block carries ``text``,
    what the terminal prints of them all), else its ``text`` as one block."""
    give = getattr(module, "tables", None)
    drawn = give(records) if callable(give) else []
    if not drawn:
        return [Block(f"{name}_tables", f"Tables of {name}", text=text)]
    return [
        table_block(replace(table, key=f"{name}_tables" + (f"_{i}" if i else "")), text if i == 0 else "")
        for i, table in enumerate(drawn)
    ]


@section("figures", "Figures")
def _figures(ctx: ReportContext) -> list[Block]:
    if not ctx.figures or not ctx.records:
        return []
    from analysis.plots import convergence_figure, figure_svg, is_win_lose, payoff_figure

    title = variant_title(ctx.variant, ctx.records).replace(ctx.variant, game_label(ctx.variant), 1)
    if len({r.game for r in ctx.records}) == 1:  # one game string (a data item's): its label
        title = game_label(ctx.records[0].game)
    payoffs = "Wins, draws and losses" if is_win_lose(ctx.records) else "Payoffs"
    return [
        Block(
            "payoffs", payoffs, svg=figure_svg(payoff_figure(ctx.records, title=f"{payoffs}: {title}")), kind="figure"
        ),
        Block(
            "convergence",
            "Convergence of mean payoffs",
            svg=figure_svg(convergence_figure(ctx.records, title=f"Running mean payoff: {title}")),
            kind="figure",
        ),
    ]


@section("methods", "Methods")
def _methods(ctx: ReportContext) -> list[Block]:
    """The interval methods behind the variant's numbers, by name and version, for a paper's methods section: shown
    in the HTML report (and recorded in the run's manifest), never in a sentence of the terminal's tables."""
    if not ctx.records:
        return []
    policy = ctx.policy
    collected = (
        "adaptively (a stopping rule looked at the results to decide when to stop): every mean's interval is the "
        "anytime-valid one at the stopping time"
        if policy.anytime
        else "with a number of matches fixed in advance: every mean's interval is the fixed-n one"
    )
    rows = (("collected", collected), ("methods", policy.note()), ("intervals key", policy.key))
    return [Block("methods", "Methods", header=("what", "method"), rows=rows, note="")]
