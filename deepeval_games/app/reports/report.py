"""The report of one or more run directories: every table and figure their records support, in one layout.

A report is the list of sections (:mod:`deepeval_games.app.reports.sections`), shown per game variant, then the
report-wide ones. The text report (``deepeval-games report``) prints every block's text; the HTML report
(:mod:`deepeval_games.app.reports.html`) shows the same blocks and the transcripts. Several run directories are read
as one (:mod:`deepeval_games.app.reports.runs`); different game variants are never pooled.

**Memory.** Tables read *slim* records (:func:`~deepeval_games.app.reports.columns.slim`: no prompts, raw replies,
transport attempts or message pool); the full records stream past once
(:func:`~deepeval_games.app.reports.runs.stream_records`), for transcripts and exports. The score summary ``run``
prints (:class:`CoreSummary`) keeps less: each match's outline, as columns
(:class:`~deepeval_games.app.reports.columns.OutlineColumns`, a few array entries a match).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from deepeval_games.app.reports.columns import Interned, OutlineColumns, Outlines, slim
from deepeval_games.app.reports.runs import (
    RunSource,
    open_runs,
    partial_note,
    player_labels,
    spec_epsilon,
    spec_intervals,
    stream_records,
)
from deepeval_games.app.reports.sections import (
    ENTRY_POINT_GROUP,
    SECTIONS,
    Block,
    ReportContext,
    Section,
    variant_title,
)
from deepeval_games.app.reports.task_tables import variant_tables
from deepeval_games.app.storage.store import Store
from deepeval_games.core.judgements import JudgementRecord
from deepeval_games.core.records import MatchRecord
from deepeval_games.core.registry.entry_points import load_entry_points
from deepeval_games.core.registry.games import game_variant

if TYPE_CHECKING:
    from analysis.stats.intervals import IntervalPolicy

# The built-in sections register on import, in the report's order: scores, the detail of a variant, the
# report-wide sections (kept in this order, not sorted).
# isort: off
from deepeval_games.app.reports import score_sections  # noqa: F401
from deepeval_games.app.reports import detail_sections  # noqa: F401
from deepeval_games.app.reports import run_sections  # noqa: F401
# isort: on

__all__ = ["CoreSummary", "ReportData", "core_text", "load_report", "render_blocks", "text_report"]

log = logging.getLogger(__name__)


@dataclass
class ReportData:
    """The slim records of a report, grouped by game variant, with its runs and judgements."""

    runs: list[RunSource]
    variants: dict[str, Sequence[MatchRecord]]
    """Per game variant, its slim records (or, for the score summary, its outlines: :class:`CoreSummary`)."""
    judgements: list[JudgementRecord]
    run_counts: dict[str, dict[str, int]]
    """Per variant, matches per run label (what each run holds: a match also in an earlier run counted in both)."""
    epsilon: float | None = None
    """The stableness epsilon of the runs' specs (``until_stable``), used when the report is given none."""
    intervals: IntervalPolicy | None = None
    """The interval policy of the report, resolved once (:func:`~deepeval_games.app.reports.runs.spec_intervals`:
    the version the runs' specs record, and how they were collected; a command that asks for another replaces it
    with :meth:`~analysis.stats.intervals.IntervalPolicy.requested`); None: the old version's."""
    duplicates: int = 0
    """Matches held by more than one of the runs, counted once
    (:func:`~deepeval_games.app.reports.runs.stream_records`): the copies left out."""

    @property
    def records(self) -> list[MatchRecord]:
        """Every slim record."""
        return [r for records in self.variants.values() for r in records]

    @property
    def partial(self) -> str | None:
        """The report's partial note (:func:`~deepeval_games.app.reports.runs.partial_note`): runs holding fewer
        matches than they planned, or still running; None when every run is whole."""
        held: dict[str, int] = {}
        for per_run in self.run_counts.values():
            for label, count in per_run.items():
                held[label] = held.get(label, 0) + count
        return partial_note(self.runs, held)


def load_report(
    run_dirs: Sequence[str | Path], *, on_record: Callable[[RunSource, MatchRecord], None] | None = None
) -> ReportData:
    """Stream every record of ``run_dirs`` once (``on_record`` sees each full record) and keep slim copies."""
    runs = open_runs(run_dirs)
    labels = player_labels(runs)
    variants: dict[str, list[MatchRecord]] = {}
    counts: dict[str, dict[str, int]] = {}
    interned: Interned = {}
    left_out = 0

    def held(run: RunSource, record: MatchRecord) -> None:
        per_run = counts.setdefault(game_variant(record.game), {})
        per_run[run.label] = per_run.get(run.label, 0) + 1

    def duplicate(run: RunSource, record: MatchRecord) -> None:
        nonlocal left_out
        left_out += 1
        held(run, record)

    for run, record in stream_records(runs, labels, on_duplicate=duplicate):
        if on_record is not None:
            on_record(run, record)
        variants.setdefault(game_variant(record.game), []).append(slim(record, interned))
        held(run, record)
    judgements: list[JudgementRecord] = []
    if len(runs) == 1:  # re-judged verdicts name the match ids of their own run
        with Store(runs[0].path, read_only=True) as store:
            judgements = list(store.judgements())
    return ReportData(
        runs,
        dict(sorted(variants.items())),
        judgements,
        counts,
        spec_epsilon(runs),
        spec_intervals(runs),
        duplicates=left_out,
    )


def render_blocks(
    data: ReportData,
    *,
    epsilon: float | None = None,
    figures: bool = False,
    core_only: bool = False,
) -> Iterator[tuple[Section, str, list[Block]]]:
    """(section, variant or "", blocks) for every section and variant that has something to show, with the intervals
    of :attr:`ReportData.intervals`. One context per variant serves every section, so what a context works out once
    (its interval policy for the variant's games) every section reads alike.

    Without ``epsilon`` the stableness check uses the runs' own (``until_stable``), when their spec has one.
    """
    epsilon = epsilon if epsilon is not None else data.epsilon
    contexts = {
        variant: ReportContext(
            variant, records, epsilon, figures, data.runs, [], data.run_counts[variant], data.intervals
        )
        for variant, records in data.variants.items()
    }
    load_entry_points(ENTRY_POINT_GROUP)  # sections of installed outside packages
    for sec in SECTIONS:
        if core_only and not sec.core:
            continue
        if sec.scope == "variant":
            for variant, ctx in contexts.items():
                blocks = _safe(sec, ctx)
                if blocks:
                    yield sec, variant, blocks
        else:
            totals: dict[str, int] = {}
            for per_run in data.run_counts.values():
                for run, n in per_run.items():
                    totals[run] = totals.get(run, 0) + n
            ctx = ReportContext(
                "", data.records, epsilon, figures, data.runs, data.judgements, totals, data.intervals, data.duplicates
            )
            blocks = _safe(sec, ctx)
            if blocks:
                yield sec, "", blocks


def _safe(sec: Section, ctx: ReportContext) -> list[Block]:
    """A section's blocks; a section that fails is reported in its place, never the end of the report."""
    try:
        return sec.render(ctx)
    except Exception as exc:  # one analysis failing must not lose the rest of the report
        log.exception("report section %s failed", sec.key)
        return [Block(f"{sec.key}_error", sec.title, text=f"{sec.title}: could not be computed ({exc!r})")]


def _variant_text(data: ReportData, variant: str, parts: list[tuple[Section, list[Block]]]) -> str:
    title = variant_title(variant, data.variants[variant])
    lines = [title]
    for sec, blocks in parts:
        texts = [b.text for b in blocks if b.kind == "table" and b.text]
        if texts:
            lines.append(("" if sec.core else "\n") + "\n".join(texts))
    return "\n".join(lines)


def text_report(
    data: ReportData,
    *,
    epsilon: float | None = None,
    core_only: bool = False,
) -> str:
    """Every table as text: per variant its sections, then the report-wide ones (runs of a comparison, the
    judge audit); first, for a run holding fewer matches than it planned, a ``partial: ...`` line
    (:attr:`ReportData.partial`)."""
    per_variant: dict[str, list[tuple[Section, list[Block]]]] = {v: [] for v in data.variants}
    report_wide: list[str] = []
    blocks_of = render_blocks(data, epsilon=epsilon, core_only=core_only)
    for sec, variant, blocks in blocks_of:
        if variant:
            per_variant[variant].append((sec, blocks))
        elif sec.key != "runs" or len(data.runs) > 1:
            report_wide.append("\n".join(b.text for b in blocks if b.kind == "table" and b.text))
    parts = [_variant_text(data, v, blocks) for v, blocks in per_variant.items() if data.variants[v]]
    text = "\n\n".join(parts + report_wide) or "no completed matches"
    partial = data.partial
    return text if partial is None else f"{partial}\n\n{text}"


class CoreSummary:
    """The score summary ``run`` prints (the core sections), fed one record at a time: each record is kept as its
    outline as it is added (the few fields those sections read), in columns
    (:class:`~deepeval_games.app.reports.columns.OutlineColumns`: a few array entries a match, no object), so a run
    that feeds its records as it commits them (``run_experiment``'s ``on_commit``) is left with only the tables to
    compute after its last match (:meth:`text`). A variant whose task gives its own headline
    (:mod:`~deepeval_games.app.reports.task_tables`), or a summary with a core section from an outside package, keeps
    slim records instead (:func:`slim`): such code may read any field."""

    def __init__(self) -> None:
        self._kept: dict[str, list[MatchRecord] | OutlineColumns] = {}
        self._interned: Interned = {}
        self._unread: Exception | None = None
        self._whole: dict[str, bool] = {}  # per variant: keep slim records

    @property
    def variants(self) -> dict[str, Sequence[MatchRecord]]:
        """What was added, per game variant, in the order added: its outlines
        (:class:`~deepeval_games.app.reports.columns.Outlines`, each made as it is read), or slim records."""
        return {v: kept if isinstance(kept, list) else Outlines(kept) for v, kept in self._kept.items()}

    def add(self, record: MatchRecord) -> None:
        """Add one record (kept as its outline, or slim)."""
        variant = game_variant(record.game)
        kept = self._kept.get(variant)
        if kept is None:
            whole = self._whole.get(variant)
            if whole is None:
                whole = self._whole[variant] = _reads_records(variant)
            kept = self._kept[variant] = [] if whole else OutlineColumns(self._interned)
        if isinstance(kept, list):
            kept.append(slim(record, self._interned))
        else:  # an outline stands for the record: the core sections read only its fields (OUTLINE_FIELDS)
            kept.add(record)

    def add_json(self, line: str | bytes) -> None:
        """Add one record as the store holds it (its JSON line), read as the store reads it back. A line that cannot
        be read never stops the run that commits it: :meth:`text` raises what reading it raised (as reading the
        store back would), and nothing is added after it."""
        if self._unread is not None:
            return
        try:
            self.add(MatchRecord.from_json(line, rebuild_turns=False))
        except Exception as exc:  # (a record error, or a bug of a slim copy): the run plays on, the summary fails
            self._unread = exc

    def put_first(self, records: Iterable[MatchRecord]) -> None:
        """Add ``records`` ahead of those added so far (a resumed run's records, committed before this run's)."""
        later, self._kept = self._kept, {}
        for record in records:
            self.add(record)
        for variant, kept in later.items():
            now = self._kept.setdefault(variant, kept)
            if now is kept:  # none of the records given
                continue
            if isinstance(now, OutlineColumns) and isinstance(kept, OutlineColumns):
                now.extend(kept)
            elif isinstance(now, list) and isinstance(kept, list):
                now += kept

    def text(self, *, epsilon: float | None = None, intervals: IntervalPolicy | None = None) -> str:
        """The core sections of the records added, with the intervals of the run's policy ``intervals`` (its version
        and how the run was collected; None: the old version's).

        Raises:
            Exception: what reading a line given to :meth:`add_json` raised.
        """
        if self._unread is not None:
            raise self._unread
        data = ReportData([], dict(sorted(self.variants.items())), [], {v: {} for v in self.variants})
        data.intervals = intervals  # the run's policy, its kind of interval included
        return text_report(data, epsilon=epsilon, core_only=True)


def _reads_records(variant: str) -> bool:
    """Whether the core sections of ``variant`` may read more of a record than its outline: the task gives its own
    headline, or a core section comes from an outside package."""
    load_entry_points(ENTRY_POINT_GROUP)
    here = __name__.rsplit(".", 1)[0] + "."  # the built-in sections' package
    outside = any(sec.core and not sec.render.__module__.startswith(here) for sec in SECTIONS)
    return outside or any(callable(getattr(module, "headline", None)) for _, module in variant_tables(variant))


def core_text(
    records: Iterable[MatchRecord], *, epsilon: float | None = None, intervals: IntervalPolicy | None = None
) -> str:
    """The score summary of ``records`` (what ``run`` prints): the core sections only, with the intervals of the
    policy ``intervals`` (None: the old version's). The records are read once, as they come, and kept slim
    (:class:`CoreSummary`): a stream from the store keeps memory small."""
    summary = CoreSummary()
    for record in records:
        summary.add(record)
    return summary.text(epsilon=epsilon, intervals=intervals)
