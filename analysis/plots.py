"""Figures from match records (matplotlib, Agg backend: no display needed)."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from analysis.convergence import running_means
from analysis.scores import payoffs_by_player
from analysis.tables import save_figure
from deepeval_games.records import MatchRecord

__all__ = ["convergence_plot", "payoff_boxplot"]


def payoff_boxplot(records: Iterable[MatchRecord], path: str | Path, *, title: str = "") -> Path:
    """Box plot of each player's payoffs (as the paper shows the Public Goods Game), saved to ``path``."""
    rows = payoffs_by_player(records)
    names = sorted(rows, key=lambda name: -sum(rows[name]) / len(rows[name]))
    figure, axes = plt.subplots(figsize=(1.6 + 1.2 * len(names), 4))
    axes.boxplot([rows[name] for name in names], tick_labels=names)
    axes.set_ylabel("payoff")
    axes.set_title(title or "Payoff per player")
    figure.tight_layout()
    out = save_figure(figure, path)
    plt.close(figure)
    return out


def convergence_plot(records: Iterable[MatchRecord], path: str | Path, *, title: str = "") -> Path:
    """Each player's running mean payoff against the number of its matches, saved to ``path``."""
    curves = running_means(records)
    figure, axes = plt.subplots(figsize=(6, 4))
    for name, values in sorted(curves.items()):
        axes.plot(range(1, len(values) + 1), values, label=name)
    axes.set_xlabel("matches played")
    axes.set_ylabel("mean payoff so far")
    axes.set_title(title or "Convergence of mean payoffs")
    axes.legend(fontsize="small")
    figure.tight_layout()
    out = save_figure(figure, path)
    plt.close(figure)
    return out
