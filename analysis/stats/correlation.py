"""How far a judge agrees with a ground truth: per-match correlation, its 95% interval, and a scatter panel.

The tasks with a judge (Code Review, Machine Translation) check its scores against a measured reference
(the MBPP pass rate, chrF): :func:`correlate` takes the (judge score, reference) pair of every match and
gives Pearson's r with its 95% confidence interval (Fisher z transform, from scipy) and Spearman's rho,
each with its p value; :func:`correlation_line` says it in one line and :func:`correlation_scatter` draws
the matches as one panel of a matplotlib figure.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from analysis.formatting import format_number

__all__ = ["Correlation", "correlate", "correlation_line", "correlation_scatter"]

MIN_MATCHES = 3
"""Fewer matches than this leave the correlation undefined."""


@dataclass(frozen=True)
class Correlation:
    """Agreement of a judge's score with a reference measure over the matches that have both."""

    n: int
    """Matches with both values."""
    pearson_r: float
    pearson_p: float
    spearman_rho: float
    spearman_p: float
    pearson_low: float = math.nan
    """Lower end of the 95% confidence interval of Pearson's r (Fisher z)."""
    pearson_high: float = math.nan
    """Upper end of the 95% confidence interval of Pearson's r (Fisher z)."""

    @property
    def defined(self) -> bool:
        """Whether there were enough matches with varying values to correlate."""
        return not math.isnan(self.pearson_r)


def correlate(pairs: Iterable[tuple[float, float]]) -> Correlation:
    """Pearson (with its 95% Fisher-z interval) and Spearman correlation of (judge score, reference) pairs.

    NaN coefficients when fewer than 3 pairs are given, or when either side is constant.
    """
    points = [(float(x), float(y)) for x, y in pairs]
    n = len(points)
    if n < MIN_MATCHES or len({x for x, _ in points}) < 2 or len({y for _, y in points}) < 2:
        return Correlation(n, math.nan, math.nan, math.nan, math.nan)
    from scipy import stats

    xs, ys = zip(*points, strict=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pearson = stats.pearsonr(xs, ys)
        interval = pearson.confidence_interval(confidence_level=0.95)
        spearman = stats.spearmanr(xs, ys)
    return Correlation(
        n,
        float(pearson.statistic),
        float(pearson.pvalue),
        float(spearman.statistic),
        float(spearman.pvalue),
        float(interval.low),
        float(interval.high),
    )


def correlation_line(what: str, corr: Correlation) -> str:
    """One line: ``what`` (e.g. ``Judge programmer score vs MBPP pass rate``), n, r with its CI, rho."""
    if not corr.defined:
        return f"{what}: n = {corr.n}, correlation undefined (too few or constant)."
    return (
        f"{what}: n = {corr.n}, Pearson r = {corr.pearson_r:.3f} "
        f"[95% CI {corr.pearson_low:.3f}, {corr.pearson_high:.3f}] (p = {corr.pearson_p:.3g}), "
        f"Spearman rho = {corr.spearman_rho:.3f} (p = {corr.spearman_p:.3g})"
    )


def correlation_scatter(
    ax: Any,
    points: Sequence[tuple[float, float]],
    corr: Correlation,
    *,
    labels: tuple[str, str],
    limits: tuple[tuple[float, float] | None, tuple[float, float] | None] = (None, None),
) -> None:
    """Draw the matches as (reference, judge score) points on ``ax``, titled with n and Pearson's r.

    Args:
        ax: a matplotlib panel.
        points: (reference, judge score) per match.
        corr: their correlation (for the title).
        labels: (x label, y label).
        limits: (x limits, y limits); None lets matplotlib choose.
    """
    if points:
        xs, ys = zip(*points, strict=True)
        ax.scatter(xs, ys, alpha=0.5)
    if limits[0] is not None:
        ax.set_xlim(*limits[0])
    if limits[1] is not None:
        ax.set_ylim(*limits[1])
    ax.set_xlabel(labels[0])
    ax.set_ylabel(labels[1])
    interval = f" [{format_number(corr.pearson_low, 2)}, {format_number(corr.pearson_high, 2)}]" if corr.defined else ""
    ax.set_title(f"n = {corr.n}, Pearson r = {format_number(corr.pearson_r, 2)}{interval}", fontsize=10)
