"""Figures from match records (matplotlib, Agg backend: no display needed).

Every figure comes as a matplotlib ``Figure`` (:func:`payoff_figure`, :func:`convergence_figure`) so the HTML
report can embed it as SVG (:func:`figure_svg`), and as files through :func:`payoff_boxplot` and
:func:`convergence_plot`, which write a PNG and an SVG beside it. Conventions: titles are wrapped to the width of
the figure at word boundaries (:func:`wrap_title`: a game string breaks after its commas, never inside a word);
legends sit outside the data area, right of the axes; figures are saved with a tight bounding box, so what sits
outside the axes is kept; axes that count matches show whole numbers; a task whose seats play different roles gets
one panel per role; a win/lose game (two seats, payoffs in {-1, 0, 1}) gets a win/draw/loss bar chart instead of a
box plot. A player's name on a tick or in a legend is cut to :data:`~analysis.tables.payoffs.LABEL_CHARS` characters
with an ellipsis, and a title to :data:`TITLE_CHARS`, so a long name never has matplotlib lay out all of it.
"""

from __future__ import annotations

import io
import re
from collections import defaultdict
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
from matplotlib.ticker import MaxNLocator

from analysis.tables.payoffs import cut_label, cut_labels, save_figure
from deepeval_games.core.records import MatchRecord

__all__ = [
    "TITLE_CHARS",
    "convergence_figure",
    "convergence_plot",
    "figure_svg",
    "is_win_lose",
    "payoff_boxplot",
    "payoff_figure",
    "save_png_and_svg",
    "wrap_title",
]

TITLE_CHARS = 1000
"""The most characters of a figure's title (a longer one is cut with an ellipsis before it is wrapped)."""

_INCH_CHARS = 11.0
"""Characters of a 10-pt title per inch of figure width (used to wrap titles so they fit)."""


def _complete(records: Iterable[MatchRecord]) -> list[MatchRecord]:
    return [r for r in records if r.status == "complete"]


def _roles(records: Sequence[MatchRecord]) -> list[str]:
    """The roles of the records' seats, sorted; ``["player"]`` for symmetric games."""
    roles = sorted({role for r in records for role in (r.roles or ["player"] * len(r.seats))})
    return roles or ["player"]


def _role_of(record: MatchRecord, seat: int) -> str:
    return record.roles[seat] if record.roles else "player"


def is_win_lose(records: Sequence[MatchRecord]) -> bool:
    """True for a two-seat game whose payoffs are all -1, 0 or 1 (a win, a draw or a loss)."""
    done = _complete(records)
    return bool(done) and all(len(r.seats) == 2 and set(r.returns) <= {-1.0, 0.0, 1.0} for r in done)


_BREAK = re.compile(r"(?<=[\s,(;/])")
"""Where a title may break: after a space, or after a comma, an opening parenthesis, a semicolon or a slash (a game
string ``name(a=1,b=2)`` breaks between its parameters)."""


def wrap_title(title: str, width: int) -> str:
    """``title`` in lines of at most ``width`` characters, broken at word boundaries only (after spaces, commas,
    ``(``, ``;``, ``/``); a single word longer than a whole line is the only thing ever cut."""
    lines: list[str] = []
    line = ""
    for piece in _BREAK.split(title):
        if line and len((line + piece).rstrip()) > width:
            lines.append(line.rstrip())
            line = piece.lstrip()
        else:
            line += piece
        while len(line) > width:  # one word wider than the line: cut it (nothing else fits there)
            lines.append(line[:width])
            line = line[width:]
    if line.strip():
        lines.append(line.rstrip())
    return "\n".join(lines)


def _title(figure: Any, axes: Any, title: str, size: float = 10) -> None:
    width_in = figure.get_figwidth() * axes.get_position().width
    width = max(20, int(width_in * _INCH_CHARS * 10 / size))
    axes.set_title(wrap_title(cut_label(title, TITLE_CHARS), width), fontsize=size)


def _suptitle(figure: Any, title: str) -> None:
    width = max(20, int(figure.get_figwidth() * _INCH_CHARS))
    figure.suptitle(wrap_title(cut_label(title, TITLE_CHARS), width), fontsize=10)


def _legend_outside(axes: Any) -> None:
    """The axes' legend right of its data area (top-aligned), so no line or bar is hidden behind it."""
    axes.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1), borderaxespad=0, frameon=False)


def payoff_figure(records: Iterable[MatchRecord], *, title: str = "") -> Any:
    """Each player's payoffs: box plots (one panel per role), or win/draw/loss bars for a win/lose game."""
    done = _complete(records)
    if is_win_lose(done):
        return _wdl_figure(done, title=title)
    roles = _roles(done)
    by_role: dict[str, dict[str, list[float]]] = {role: defaultdict(list) for role in roles}
    for record in done:
        for seat, (name, payoff) in enumerate(zip(record.seats, record.returns, strict=True)):
            by_role[_role_of(record, seat)][name].append(float(payoff))
    widest = max((len(rows) for rows in by_role.values()), default=1)
    figure, panels = plt.subplots(
        1, len(roles), figsize=(max(4.5, (1.6 + 1.1 * widest) * len(roles)), 4.2), squeeze=False
    )
    for axes, role in zip(panels[0], roles, strict=True):
        rows = by_role[role]
        names = sorted(rows, key=lambda name: (-sum(rows[name]) / len(rows[name]), name))
        axes.boxplot([rows[name] for name in names], tick_labels=cut_labels(names))
        axes.tick_params(axis="x", labelrotation=20 if len(names) > 3 else 0, labelsize=8)
        axes.set_ylabel("payoff")
        if len(roles) > 1:
            _title(figure, axes, f"as {role}", 9)
    _suptitle(figure, title or "Payoff per player")
    figure.tight_layout()
    return figure


def _wdl_figure(records: Sequence[MatchRecord], *, title: str) -> Any:
    tally: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])
    for record in records:
        for seat, name in enumerate(record.seats):
            mine, theirs = record.returns[seat], record.returns[1 - seat]
            tally[name][0 if mine > theirs else 1 if mine == theirs else 2] += 1
    names = sorted(tally, key=lambda name: (-tally[name][0] / max(1, sum(tally[name])), name))
    figure, axes = plt.subplots(figsize=(max(4.5, 1.6 + 1.1 * len(names)), 4.2))
    bottom = [0.0] * len(names)
    for index, (label, colour) in enumerate((("win", "#2e7d32"), ("draw", "#9e9e9e"), ("loss", "#c62828"))):
        shares = [tally[name][index] / max(1, sum(tally[name])) for name in names]
        axes.bar(range(len(names)), shares, bottom=bottom, label=label, color=colour)
        bottom = [b + s for b, s in zip(bottom, shares, strict=True)]
    axes.set_xticks(range(len(names)), cut_labels(names))
    axes.set_ylim(0, 1)
    axes.set_ylabel("share of matches")
    axes.tick_params(axis="x", labelrotation=20 if len(names) > 3 else 0, labelsize=8)
    _legend_outside(axes)
    _suptitle(figure, title or "Wins, draws and losses per player")
    figure.tight_layout()
    return figure


def convergence_figure(records: Iterable[MatchRecord], *, title: str = "") -> Any:
    """Each player's running mean payoff against the number of its matches (one panel per role)."""
    done = sorted(_complete(records), key=lambda r: (r.repeat, r.game, r.match_id))
    roles = _roles(done)
    series: dict[str, dict[str, list[float]]] = {role: defaultdict(list) for role in roles}
    for record in done:
        for seat, (name, payoff) in enumerate(zip(record.seats, record.returns, strict=True)):
            series[_role_of(record, seat)][name].append(float(payoff))
    figure, panels = plt.subplots(1, len(roles), figsize=(6.0 * len(roles), 4.2), squeeze=False)
    for axes, role in zip(panels[0], roles, strict=True):
        ordered = sorted(series[role].items())
        for (_, payoffs), label in zip(ordered, cut_labels(name for name, _ in ordered), strict=True):
            total, means = 0.0, []
            for count, value in enumerate(payoffs, start=1):
                total += value
                means.append(total / count)
            axes.plot(range(1, len(means) + 1), means, label=label, marker="." if len(means) < 30 else None)
        longest = max((len(v) for v in series[role].values()), default=1)
        axes.set_xlim(0.5, max(longest, 2) + 0.5)  # room for whole-number ticks even after one match
        axes.xaxis.set_major_locator(MaxNLocator(integer=True))
        axes.set_xlabel("matches played")
        axes.set_ylabel("mean payoff so far")
        if len(roles) > 1:
            _title(figure, axes, f"as {role}", 9)
        _legend_outside(axes)
    _suptitle(figure, title or "Convergence of mean payoffs")
    figure.tight_layout()
    return figure


def figure_svg(figure: Any, *, close: bool = True) -> str:
    """The figure as an SVG element (no XML prolog), ready to be put inline in an HTML page."""
    buffer = io.StringIO()
    figure.savefig(buffer, format="svg", bbox_inches="tight")
    if close:
        plt.close(figure)
    text = buffer.getvalue()
    return text[text.find("<svg") :]


def save_png_and_svg(figure: Any, path: str | Path) -> Path:
    """Save the figure to ``path`` (PNG) and beside it as SVG; returns the PNG's path and closes the figure."""
    out = save_figure(figure, Path(path).with_suffix(".png"))
    figure.savefig(out.with_suffix(".svg"), bbox_inches="tight")
    plt.close(figure)
    return out


def payoff_boxplot(records: Iterable[MatchRecord], path: str | Path, *, title: str = "") -> Path:
    """:func:`payoff_figure` saved to ``path`` (PNG) and as SVG beside it."""
    return save_png_and_svg(payoff_figure(records, title=title), path)


def convergence_plot(records: Iterable[MatchRecord], path: str | Path, *, title: str = "") -> Path:
    """:func:`convergence_figure` saved to ``path`` (PNG) and as SVG beside it."""
    return save_png_and_svg(convergence_figure(records, title=title), path)
