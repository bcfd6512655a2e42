"""The stopping rule of ``[experiment.until_stable]``: add repeats until the results are stable
(:class:`StoppingRule`), and the rules whose ``epsilon`` is a half-width target (:data:`RECHECK_RULES`)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from deepeval_games.app.spec.tables import TABLE

__all__ = ["RECHECK_RULES", "StoppingRule"]

RECHECK_RULES = ("recheck", "bootstrap")
"""The ``until_stable`` rules whose ``epsilon`` is a half-width target (the fixed-sample stableness check); under
``adaptive`` it is the margin within which two players are tied."""


class StoppingRule(BaseModel):
    """``[experiment.until_stable]``: add repeats until the stableness condition holds.

    ``rule = "adaptive"`` (the default; :mod:`analysis.stats.stopping`) is valid at every look: anytime-valid confidence
    sequences per player, per role and per game variant; after the first ``repeats`` rounds only the seatings of
    players whose ranks are unresolved are repeated, in complete blocks; it stops when every adjacent pair is
    separated or tied within ``epsilon``, when ``budget_matches`` would be passed, or after ``max_repeats`` rounds.
    ``rule = "recheck"`` (the default until the adaptive rule took its place; ``"bootstrap"`` is its old name, kept
    for old specs) extends every seating by ``step`` repeats until every fixed-sample 95% interval's half-width is
    below ``epsilon`` and the ranking is steady; re-checking a fixed-sample interval after every extension is
    optional stopping, so its error rate grows with each look, and its report says so.
    """

    model_config = TABLE

    epsilon: float = Field(gt=0)
    """Required. ``adaptive``: the indifference margin: adjacent players whose means surely differ by at most this
    are tied. ``recheck``: every player's 95% interval half-width of the mean payoff must fall below this."""
    rule: Literal["adaptive", "recheck", "bootstrap"] = "adaptive"
    """``adaptive`` (anytime-valid, the default) or ``recheck`` (uniform extensions, not valid under repeated looks;
    ``bootstrap`` is the same rule under its old name)."""
    alpha: float = Field(default=0.05, gt=0, lt=1)
    """``adaptive``: the chance that a ranking of one variant and role separates two players in the wrong order."""
    budget_matches: int | None = Field(default=None, ge=1)
    """``adaptive``: the most matches the rule may play in all (no round is started that would pass it)."""
    sequence: Literal["betting", "bernstein"] = "betting"
    """``adaptive``: the confidence sequence, hedged-capital ``betting`` or empirical-``bernstein``."""
    step: int = Field(default=0, ge=0)
    """Repeats added per extension (0: the initial ``repeats``)."""
    max_repeats: int = Field(default=50, ge=1)
    """Give up (results reported as not stable) past this many repeats."""
    batch: int = Field(default=5, ge=1)
    """Matches per player between two ranking checkpoints."""
    window: int = Field(default=2, ge=1)
    """Checkpoints over which the ranking must stay the same."""
    top: int | None = Field(default=None, ge=1)
    """``pairing = "active"`` only: the boundary of the top ``top`` players of each ranking (who is in the top k) is
    resolved to ``top_epsilon`` instead of ``epsilon``, as a leaderboard is read from its top (none by default)."""
    top_epsilon: float | None = Field(default=None, gt=0)
    """``pairing = "active"`` with ``top``: the width at which the pair at the top-``top`` boundary counts as tied
    (default ``epsilon / 2``)."""
