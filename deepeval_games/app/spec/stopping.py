"""The stopping rule of a run: the ``[experiment.until_stable]`` table (:class:`StoppingRule`) and the one place that
reads it. :func:`stopping_rule` resolves the rule a spec's run follows (its ``until_stable``; for ``pairing =
"active"`` without one, the adaptive rule with its defaults), :func:`recorded_rule` the same from a finished run's
stored spec, and :func:`recheck_epsilon` the half-width target of the fixed-sample rules (:data:`RECHECK_RULES`).
The command line, the runner, the estimate and the report are handed the resolved rule; none reads the table."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, Field, ValidationError

from deepeval_games.app.spec.tables import TABLE

if TYPE_CHECKING:
    from deepeval_games.app.spec.spec import ExperimentSpec

__all__ = [
    "ACTIVE_DEFAULT_EPSILON",
    "ACTIVE_MARGIN",
    "RECHECK_RULES",
    "StoppingRule",
    "recheck_epsilon",
    "recorded_rule",
    "stopping_rule",
]

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


ACTIVE_DEFAULT_EPSILON = 1e-300
"""The epsilon of the rule :func:`stopping_rule` gives ``pairing = "active"`` without ``until_stable``: a marker that
the indifference margin is :data:`ACTIVE_MARGIN` of the widest payoff range, known once the games are loaded."""
ACTIVE_MARGIN = 1.2
"""``pairing = "active"`` without ``until_stable``: an adjacent pair stops being refined once the anytime-valid
interval of its payoff difference (which spans twice the payoff range) is narrower than this multiple of the payoff
range: ``bench/bench_active.py``'s ``epsilon`` (2.4 on payoffs in [-1, 1])."""


def _resolved(pairing: object, table: StoppingRule | None) -> StoppingRule | None:
    if pairing == "active" and table is None:
        return StoppingRule(epsilon=ACTIVE_DEFAULT_EPSILON, rule="adaptive")
    return table


def stopping_rule(spec: ExperimentSpec) -> StoppingRule | None:
    """The rule that extends ``spec``'s run: its ``until_stable``, or for ``pairing = "active"`` the adaptive rule
    (with its defaults when ``until_stable`` is left out); None for a fixed number of repeats."""
    return _resolved(spec.pairing, spec.experiment.until_stable)


def recorded_rule(document: Mapping[str, Any] | None) -> StoppingRule | None:
    """:func:`stopping_rule` of a stored spec document (a run directory's spec, as JSON); None when it has no rule,
    or none this version reads."""
    experiment = document.get("experiment") if document else None
    if not isinstance(experiment, Mapping):
        return None
    table = experiment.get("until_stable")
    try:
        rule = StoppingRule.model_validate(table) if isinstance(table, Mapping) else None
    except ValidationError:
        return None
    return _resolved(experiment.get("pairing"), rule)


def recheck_epsilon(rule: StoppingRule | None) -> float | None:
    """``rule``'s epsilon where it is a half-width target (the fixed-sample stableness check of the recheck rules);
    None under the adaptive rule, whose epsilon is the margin within which two players are tied (the rule reports
    itself), and without a rule."""
    return rule.epsilon if rule is not None and rule.rule in RECHECK_RULES else None
