"""The tables modules tasks register (entry point group :data:`TABLES_ENTRY_POINT_GROUP`): each task's pairwise
tables (the paper's Tables 1–6), its figure and, optionally, its headline score. ``deepeval-games tables`` prints
one; the report shows those of each game variant's task (:mod:`deepeval_games.app.reports.score_sections`,
:mod:`deepeval_games.app.reports.detail_sections`)."""

from __future__ import annotations

from collections.abc import Sequence
from importlib import metadata
from pathlib import Path
from typing import Protocol, cast

from deepeval_games.core.records import MatchRecord

__all__ = ["TABLES_ENTRY_POINT_GROUP", "TaskTables", "table_module", "table_names", "variant_tables"]

TABLES_ENTRY_POINT_GROUP = "deepeval_games.tables"
"""Each task lists its tables module under this entry point group, by the name ``deepeval-games tables`` takes: a
module with ``GAME`` (the game's short name, or a game family's prefix ending in ``:``, ``clem:``) and
``print_tables(records, *, players=None, plot=None)``, printing the
task's pairwise tables, figures and reference points. A module may also define ``headline(records)``, returning an
:class:`analysis.tables.scores.Headline` (or None): the task's headline score, which the report shows in place of the
default Eq. 1 / Eq. 2 table (a symmetric task whose records name seats by position, scored as its paper scores it),
and ``tables(records)``, returning its tables as :class:`analysis.tables.scores.Table` cells, which the HTML report
draws as tables (without it, the printed text is shown as it is printed), and ``FIGURE_TITLE``, the caption the HTML
report gives its figure.
The built-in tasks register theirs as an outside package does (``setup.cfg``); the report names none of them."""


class TaskTables(Protocol):
    """A task's tables module (:data:`TABLES_ENTRY_POINT_GROUP`)."""

    GAME: str

    def print_tables(
        self, records: Sequence[MatchRecord], *, players: Sequence[str] | None = None, plot: Path | str | None = None
    ) -> int:
        """Print the tables of ``records`` (0: printed; else nothing to print), saving a figure to ``plot``."""
        ...


def table_names() -> list[str]:
    """The names of every registered tables module, sorted (nothing is imported)."""
    return sorted({entry.name for entry in metadata.entry_points(group=TABLES_ENTRY_POINT_GROUP)})


def table_module(name: str) -> TaskTables:
    """The tables module registered as ``name``.

    Raises:
        KeyError: no task registers tables by that name.
    """
    for entry in metadata.entry_points(group=TABLES_ENTRY_POINT_GROUP, name=name):
        return cast(TaskTables, entry.load())
    raise KeyError(f"no task registers tables named {name!r}; registered: {', '.join(table_names())}")


def variant_tables(variant: str) -> list[tuple[str, TaskTables]]:
    """The registered tables modules of the variant's task, with their names (sorted; the first module registered
    under a name, as :func:`table_module` finds it), from one look at the entry points."""
    task = variant.split("(", 1)[0]
    entries: dict[str, metadata.EntryPoint] = {}
    for entry in metadata.entry_points(group=TABLES_ENTRY_POINT_GROUP):
        entries.setdefault(entry.name, entry)
    modules = ((name, cast(TaskTables, entries[name].load())) for name in sorted(entries))
    return [(name, module) for name, module in modules if _plays(module.GAME, task)]


def _plays(game: str, task: str) -> bool:
    """Whether a tables module for ``game`` (a short name, or a family's prefix ending in ``:``) covers ``task``."""
    return task == game or (game.endswith(":") and task.startswith(game))
