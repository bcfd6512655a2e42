"""The report's sections, registered in one place (:data:`SECTIONS`, :func:`section`).

A section is a function from a :class:`ReportContext` (the records of one game variant, or of the whole report) to
:class:`Block` s: a table (fixed-width text for the terminal, a header and rows for HTML), or a figure (SVG). The
built-in sections live in :mod:`~deepeval_games.app.reports.score_sections`,
:mod:`~deepeval_games.app.reports.detail_sections` and :mod:`~deepeval_games.app.reports.run_sections`, which
:mod:`~deepeval_games.app.reports.report` imports in that order; a new analysis adds its section with
``@section("key", "Title")`` beside them; the analysis itself stays a library function over records. An outside
package does the same in a module it lists under the entry point group ``deepeval_games.report``
(:data:`ENTRY_POINT_GROUP`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from deepeval_games.app.reports.runs import RunSource
from deepeval_games.core.judgements import JudgementRecord
from deepeval_games.core.records import MatchRecord

if TYPE_CHECKING:
    from analysis.stats.intervals import IntervalPolicy
    from analysis.tables.scores import Table

__all__ = [
    "ENTRY_POINT_GROUP",
    "SECTIONS",
    "Block",
    "ReportContext",
    "Section",
    "section",
    "table_block",
    "variant_title",
]


@dataclass(frozen=True)
class Block:
    """One table or figure of a section."""

    key: str
    """Stable name (``scores``, ``usage``, ``payoffs``): an HTML id and a test's handle."""
    title: str
    text: str = ""
    """The table as fixed-width text (what the terminal shows)."""
    header: tuple[str, ...] = ()
    rows: tuple[tuple[str, ...], ...] = ()
    """Optional structured form of the table, for HTML (``text`` is shown when there is none)."""
    svg: str = ""
    """A figure, as an inline SVG element (``kind`` ``figure``)."""
    kind: Literal["table", "figure"] = "table"
    note: str = ""
    """What the table's numbers are, in a sentence shown under the HTML table (``text`` says it for the terminal)."""


def table_block(table: Table, text: str = "") -> Block:
    """The block of an analysis :class:`~analysis.tables.scores.Table`, with ``text`` for the terminal ("": shown in
    the HTML report only, beside a block whose text says the same)."""
    return Block(table.key, table.title, text=text, header=table.header, rows=table.rows, note=table.note)


@dataclass
class ReportContext:
    """What a section sees: the slim records of one game variant (or of the whole report)."""

    variant: str
    """The game variant, or ``""`` for a report-wide section."""
    records: Sequence[MatchRecord]
    epsilon: float | None = None
    figures: bool = False
    """Whether figures are wanted (the HTML report); the text report leaves them out."""
    runs: list[RunSource] = field(default_factory=list)
    judgements: list[JudgementRecord] = field(default_factory=list)
    run_counts: dict[str, int] = field(default_factory=dict)
    """Matches per run label (of this variant, or of the report)."""
    intervals: IntervalPolicy | None = None
    """The interval policy of the report, resolved once from the runs' stored specs (and what the command asked
    for); None: the old version's (``[experiment] intervals``, :class:`~analysis.stats.intervals.IntervalPolicy`)."""
    duplicates: int = 0
    """Matches held by more than one of the report's runs, each counted once (the copies left out)."""

    @functools.cached_property
    def policy(self) -> IntervalPolicy:
        """:attr:`intervals` for these records' games (their declared payoff values), worked out once per section
        context: every table, caption, verdict and methods line of the context reads this one."""
        from analysis.stats.intervals import OLD_POLICY

        return (self.intervals or OLD_POLICY).for_records(self.records)


@dataclass(frozen=True)
class Section:
    """A registered part of the report."""

    key: str
    title: str
    scope: Literal["variant", "report"]
    render: Callable[[ReportContext], list[Block]]
    core: bool = False
    """Printed at the end of ``run`` too (the score summary), not only by ``report``."""


SECTIONS: list[Section] = []
"""Every section, in the order the report shows them."""
ENTRY_POINT_GROUP = "deepeval_games.report"
"""Outside packages add sections by listing a module under this entry point group; importing it registers them."""


def section(
    key: str, title: str, *, scope: Literal["variant", "report"] = "variant", core: bool = False
) -> Callable[[Callable[[ReportContext], list[Block]]], Callable[[ReportContext], list[Block]]]:
    """Register a section (a decorator); it shows after those registered before it."""

    def register(render: Callable[[ReportContext], list[Block]]) -> Callable[[ReportContext], list[Block]]:
        SECTIONS[:] = [s for s in SECTIONS if s.key != key]
        SECTIONS.append(Section(key, title, scope, render, core))
        return render

    return register


def variant_title(variant: str, records: Sequence[MatchRecord]) -> str:
    """The variant's game string, or ``variant (N data items pooled)``."""
    games = sorted({r.game for r in records})
    return games[0] if len(games) == 1 else f"{variant} ({len(games)} data items pooled)"
