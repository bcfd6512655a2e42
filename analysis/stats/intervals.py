"""Every interval method by name and version, so a report can say which one made each interval and an old run can be
re-reported with the method it was first reported with.

A method's name is ``family/version``: the version changes whenever a printed number would change (a bet, a grid, a
level), and an old version stays callable. The default of every function here is the method the project printed
before these names existed, so nothing changes until a caller asks for another.

Means of payoffs on a known range (:data:`INTERVAL_METHODS`, through :func:`mean_interval` and
:func:`mean_intervals`):

* ``betting-eb/1``: the fixed-n hedged-capital betting interval of :func:`analysis.stats.confseq.mean_intervals`
  (the default): any distribution on the range;
* ``exact-discrete/1``: the exact interval of payoffs that take two or three known values, the game's ``support``
  (:mod:`analysis.stats.exact`): a win/loss game, a win/draw/loss game, a points share of 1, 1/2 and 0. It is valid
  only where the support is known before the data are seen (the game's rules say so), never chosen because a
  sample happens to show few values; a value off the support is an error. On three values it tables every sample
  of a size, so above :data:`TRINOMIAL_MAX_N` it gives the betting interval;
* ``exact-discrete/2``: the same on two values; on three, the exact interval of each sample on its own
  (:mod:`analysis.stats.trinomial`) at every n (about half a second at n = 2,000).

The other kinds of result, named here for the report: :data:`RATE_METHODS` (win, draw, loss and illegal-move
rates: Clopper–Pearson, or Robbins' beta-binomial mixture sequence in a run stopped by looking at its results),
:data:`RATIO_METHODS` (GTBench's NRA), :data:`SEQUENCE_METHODS` (the anytime-valid sequences of the
stopping rule and of active matchmaking). ``bench/bench_width.py`` measures each against the t-interval (Wilson's
for rates) and ``bench/width_results.md`` says which is kept where, and why.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from analysis import views
from analysis.stats.confseq import Interval, make_sequence, rescaled, unit_mean_intervals
from analysis.stats.exact import (
    binomial_intervals,
    clopper_pearson_interval,
    conditional_ratio_intervals,
    mixture_rate_interval,
    support_counts,
    trinomial_intervals,
)
from analysis.stats.trinomial import trinomial_intervals as sample_trinomial_intervals
from deepeval_games.core.errors import DeepEvalError
from deepeval_games.core.records import MatchRecord
from deepeval_games.core.registry.games import load_recorded_game, payoff_support

__all__ = [
    "COLLECTED_MARK",
    "DEFAULT_METHOD",
    "EXACT_METHODS",
    "INTERVAL_KINDS",
    "INTERVAL_METHODS",
    "INTERVAL_VERSIONS",
    "LATEST_POLICY",
    "LATEST_VERSION",
    "MIXTURE_RATE_METHOD",
    "OLD_POLICY",
    "OLD_VERSION",
    "POINTS_SUPPORT",
    "RATE_METHOD",
    "RATE_METHODS",
    "RATIO_METHODS",
    "SEQUENCE_METHODS",
    "IntervalMethod",
    "IntervalPolicy",
    "mean_caption",
    "mean_interval",
    "mean_intervals",
    "win_loss_ratio_interval",
]

Compute = Callable[[np.ndarray, float, tuple[float, ...] | None], tuple[np.ndarray, np.ndarray]]
"""(values rescaled to ``[0, 1]``, runs x n; alpha; the support rescaled, or None) -> (low, high), rescaled."""


@dataclass(frozen=True)
class IntervalMethod:
    """One named, versioned interval method for the mean of payoffs on a known range."""

    name: str
    """``family/version``, as a report records it."""
    summary: str
    """One line: what the method is and where it holds."""
    compute: Compute
    needs_support: bool = False
    """Whether the caller must give the payoffs' support (the values the game can pay)."""


def _betting(x: np.ndarray, alpha: float, _: tuple[float, ...] | None) -> tuple[np.ndarray, np.ndarray]:
    return unit_mean_intervals(x, alpha=alpha)  # x is rescaled to [0, 1] already (mean_intervals)


TRINOMIAL_MAX_N = 40
"""The largest sample ``exact-discrete/1`` tables exactly on a three-value support: the table of every possible sample
grows as n² (about half a second of CPU at n = 30, three at n = 100), so above it the method gives the betting interval
(``betting-eb/1``), still valid, as wide as the other methods there."""


def _exact(x: np.ndarray, alpha: float, support: tuple[float, ...] | None) -> tuple[np.ndarray, np.ndarray]:
    if support is None or len(support) not in (2, 3):
        raise ValueError("exact-discrete/1 needs a support of two or three values")
    if len(support) == 3 and x.shape[1] > TRINOMIAL_MAX_N:
        return _betting(x, alpha, None)
    return _on_support(x, alpha, support, trinomial_intervals)


def _exact_every_n(x: np.ndarray, alpha: float, support: tuple[float, ...] | None) -> tuple[np.ndarray, np.ndarray]:
    if support is None or len(support) not in (2, 3):
        raise ValueError("exact-discrete/2 needs a support of two or three values")
    return _on_support(x, alpha, support, sample_trinomial_intervals)


def _on_support(
    x: np.ndarray,
    alpha: float,
    support: tuple[float, ...],
    three: Callable[[np.ndarray, float, float], tuple[np.ndarray, np.ndarray]],
) -> tuple[np.ndarray, np.ndarray]:
    """Clopper–Pearson on two values, ``three`` on three (values rescaled so the support's ends are 0 and 1)."""
    least, greatest = support[0], support[-1]
    on_support = (x - least) / (greatest - least)  # the support's ends at 0 and 1
    if len(support) == 2:
        _, highs = support_counts(on_support, (0.0, 1.0))
        low, high = binomial_intervals(highs, x.shape[1], alpha)
    else:
        low, high = three(on_support, (support[1] - least) / (greatest - least), alpha)
    return least + (greatest - least) * low, least + (greatest - least) * high


DEFAULT_METHOD = "betting-eb/1"
"""The method every function here uses unless asked: the one printed before methods had names."""

INTERVAL_METHODS: dict[str, IntervalMethod] = {
    method.name: method
    for method in (
        IntervalMethod(
            "betting-eb/1",
            "fixed-n hedged-capital betting interval, empirical-Bernstein bets; any distribution on the range",
            _betting,
        ),
        IntervalMethod(
            "exact-discrete/1",
            "exact binomial (two values) or trinomial (three values, n <= 40; the betting interval above) test "
            "inversion; payoffs on a declared support",
            _exact,
            needs_support=True,
        ),
        IntervalMethod(
            "exact-discrete/2",
            "exact binomial (two values) or trinomial (three values, every n: one sample's test inversion, "
            "likelihood-ordered, Berger–Boos) test inversion; payoffs on a declared support",
            _exact_every_n,
            needs_support=True,
        ),
    )
}
"""The interval methods of a mean, by name."""

RATE_METHOD = "clopper-pearson/1"
"""Win, draw, loss and illegal-move rates of a run of a fixed number of matches: the exact binomial interval
(scipy's ``binomtest``; :func:`analysis.stats.exact.clopper_pearson_interval`)."""

MIXTURE_RATE_METHOD = "beta-binomial-mixture/1"
"""The rates of a run stopped by a rule that looked at its results: the anytime-valid confidence sequence of Robbins'
beta-binomial mixture with Jeffreys' prior, read at the stopping time
(:func:`analysis.stats.exact.mixture_rate_interval`); from the counts only, whatever their order."""

RATE_METHODS = (RATE_METHOD, MIXTURE_RATE_METHOD)
"""The interval methods of a rate: fixed-n, then anytime-valid (:attr:`IntervalPolicy.rate`)."""

RATIO_METHODS = ("betting-ratio/1", "exact-conditional/1")
"""GTBench's NRA: test inversion by betting (:func:`analysis.stats.confseq.ratio_interval`, any payoffs), or, for a
game paid ``+c / -c`` with draws scored 0, the exact conditional binomial interval (:func:`win_loss_ratio_interval`)."""

SEQUENCE_METHODS = {"betting": "betting/1", "bernstein": "bernstein/1"}
"""The anytime-valid sequences (:func:`analysis.stats.confseq.make_sequence`'s names) and their versioned names."""


def mean_intervals(
    samples: np.ndarray,
    low: float,
    high: float,
    *,
    alpha: float = 0.05,
    method: str = DEFAULT_METHOD,
    support: Sequence[float] | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """The interval of the mean of every row of ``samples`` (runs x n, values in ``[low, high]``) by ``method`` (a
    name of :data:`INTERVAL_METHODS`), at level ``1 - alpha``; ``support``: the values the payoffs can take (sorted,
    from ``low`` to ``high``) for the methods that need it.

    Raises:
        ValueError: an unknown method, bad bounds, a value outside them or off the support, or a missing support.
    """
    if method not in INTERVAL_METHODS:
        raise ValueError(f"unknown interval method {method!r}; use one of {', '.join(INTERVAL_METHODS)}")
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    chosen = INTERVAL_METHODS[method]
    x = rescaled(np.atleast_2d(samples), low, high)
    points = None
    if chosen.needs_support:
        if support is None or len(set(support)) != len(support):
            raise ValueError(f"{method} needs the payoffs' support: distinct values")
        points = tuple(float(v) for v in rescaled(np.asarray(sorted(support), dtype=float), low, high))
    lo, hi = chosen.compute(x, alpha, points)
    return low + (high - low) * lo, low + (high - low) * hi


def mean_interval(
    values: Sequence[float] | np.ndarray,
    low: float,
    high: float,
    *,
    alpha: float = 0.05,
    method: str = DEFAULT_METHOD,
    support: Sequence[float] | None = None,
) -> Interval:
    """:func:`mean_intervals` of one sample, in the order given (which must not depend on the values); no values:
    an interval of NaNs. With the default method the numbers are those of
    :func:`analysis.stats.confseq.mean_interval`.

    Raises:
        ValueError: as :func:`mean_intervals`.
    """
    data = np.asarray(values, dtype=float)
    if data.size == 0:
        return Interval(math.nan, math.nan, math.nan, 0)
    lo, hi = mean_intervals(data[None, :], low, high, alpha=alpha, method=method, support=support)
    return Interval(float(lo[0]), float(hi[0]), float(data.mean()), int(data.size))


def win_loss_ratio_interval(wins: int, losses: int, *, alpha: float = 0.05) -> tuple[float, float]:
    """``exact-conditional/1``: the exact interval of GTBench's NRA ``(W - L) / (W + L)`` of a game paid ``+c / -c``
    with draws scored 0 (:func:`analysis.stats.exact.conditional_ratio_intervals`); ``(-1, 1)`` with no decisive
    match."""
    low, high = conditional_ratio_intervals(np.array([wins]), np.array([losses]), alpha)
    return float(low[0]), float(high[0])


# -- the versions a report prints: one method per kind of number ---------------------------------------------

OLD_VERSION = "1"
"""The methods printed before they had names: what a run whose stored spec names no ``intervals`` is reported with."""
LATEST_VERSION = "3"
"""What a new run's spec selects unless it says otherwise: the tightest valid method per kind."""
INTERVAL_VERSIONS = {
    "1": "every mean and points share betting-eb/1, every NRA betting-ratio/1",
    "2": "exact where the game declares its payoff values (exact-discrete/1, an NRA of a +c/-c game "
    "exact-conditional/1, a points share exact-discrete/1 on 0, 1/2, 1), betting otherwise",
    "3": "as 2, with exact-discrete/2 in place of exact-discrete/1 (three values exact at every n)",
}
"""What each version of ``[experiment] intervals`` prints; rates are ``clopper-pearson/1`` and paired differences
``betting-eb/1`` in both. In a run stopped by a rule that looked at its results (:attr:`IntervalPolicy.key`) every mean
and points share is the run's anytime-valid sequence and every rate ``beta-binomial-mixture/1``, in both."""

EXACT_METHODS = {"2": "exact-discrete/1", "3": "exact-discrete/2"}
"""The exact method of a mean on a declared support (and of a points share) in each version that has one."""

POINTS_SUPPORT = (0.0, 0.5, 1.0)
"""A points share's values by its definition: a win, a draw, a loss."""


PAIRED_SHARE = 0.5
"""The share of an adaptively collected ranking's ``alpha`` that its pairs' comparisons where they met spend
(:meth:`IntervalPolicy.pair_interval`); the means' intervals spend the rest, so a verdict read off either holds with
the ranking's ``1 - alpha`` (the adaptive stopping rule splits it alike)."""

COLLECTED_MARK = "+anytime:"
"""How an intervals key says the run was collected adaptively: ``VERSION+anytime:SEQUENCE:ALPHA``
(:attr:`IntervalPolicy.key`)."""


INTERVAL_KINDS = ("fixed", "anytime")
"""The kinds of interval a report may be asked for instead of the one valid for how its runs were collected."""


@dataclass(frozen=True)
class IntervalPolicy:
    """The interval method of each kind of number for one set of records (one game variant, or games paying alike),
    chosen by a version (:data:`INTERVAL_VERSIONS`), the payoff values the games declare, and how the run was
    collected: with ``sequence`` set (a rule looked at the results to decide when to stop), a player's mean gets the
    anytime-valid confidence sequence at the stopping time, at the level ``alpha`` shared by the players of a
    ranking, exactly as the adaptive stopping rule computed it (:mod:`analysis.stats.stopping`); a points share the
    same sequence on [0, 1] and a rate the beta-binomial mixture sequence, each at level ``alpha``. A fixed-n
    interval there would not be valid."""

    version: str
    support: tuple[float, ...] | None = None
    """The payoff values every game of the records declares (and every payoff of them takes); None: any value."""
    sequence: str | None = None
    """The confidence sequence of an adaptively collected run (``betting`` or ``bernstein``); None: a fixed number of
    matches."""
    alpha: float = 0.05
    """The error level of a ranking (the adaptive rule's ``alpha``), shared by its players."""

    def __post_init__(self) -> None:
        if self.version not in INTERVAL_VERSIONS:
            raise ValueError(f"unknown intervals version {self.version!r}; use one of {', '.join(INTERVAL_VERSIONS)}")
        if self.sequence is not None and self.sequence not in SEQUENCE_METHODS:
            raise ValueError(f"unknown confidence sequence {self.sequence!r}; use one of {', '.join(SEQUENCE_METHODS)}")
        if not 0.0 < self.alpha < 1.0:
            raise ValueError(f"alpha must be in (0, 1), got {self.alpha}")

    @classmethod
    def parse(cls, key: str) -> IntervalPolicy:
        """The policy an intervals key names (:attr:`key`: ``VERSION``, or ``VERSION+anytime:SEQUENCE:ALPHA`` for a
        run collected adaptively), with no payoff values declared (:meth:`for_records` adds them). The key is the
        policy's form in a manifest and on a command line; inside the program the policy itself travels.

        Raises:
            ValueError: a malformed key, an unknown version or sequence, or an alpha outside (0, 1).
        """
        version, mark, rest = key.partition(COLLECTED_MARK)
        if not mark:
            return cls(version)
        sequence, _, level = rest.partition(":")
        try:
            return cls(version, sequence=sequence, alpha=float(level))
        except ValueError:
            raise ValueError(f"malformed intervals key {key!r}") from None

    def requested(self, version: str | None = None, kind: str | None = None) -> IntervalPolicy:
        """The policy a report prints when asked for another: ``version`` in place of this one's where given
        (``report --intervals``), and the kind switched where ``kind`` asks (``report --interval``): ``fixed`` the
        fixed-n intervals of the version, ``anytime`` the anytime-valid ones (the run's own sequence and level where
        it was collected adaptively, the betting sequence at 95% otherwise). None keeps each part.

        Raises:
            ValueError: an unknown version or kind.
        """
        if kind is not None and kind not in INTERVAL_KINDS:
            raise ValueError(f"unknown kind of interval {kind!r}; use one of {', '.join(INTERVAL_KINDS)}")
        number = self.version if version is None else version
        if kind == "fixed":
            return IntervalPolicy(number, self.support)
        sequence = "betting" if kind == "anytime" and self.sequence is None else self.sequence
        return IntervalPolicy(number, self.support, sequence, self.alpha)

    def with_support(self, support: Sequence[float] | None, values: Iterable[float] = ()) -> IntervalPolicy:
        """This policy for payoffs declared to take the values ``support``; a value of ``values`` (the payoffs seen)
        off the support drops it (the betting methods then hold), as a game that broke its declaration."""
        if support is None:
            return IntervalPolicy(self.version, None, self.sequence, self.alpha)
        points = tuple(float(v) for v in sorted(support))
        if not all(any(math.isclose(v, p, abs_tol=1e-9) for p in points) for v in values):
            return IntervalPolicy(self.version, None, self.sequence, self.alpha)
        return IntervalPolicy(self.version, points, self.sequence, self.alpha)

    def for_records(self, records: Iterable[MatchRecord], *, data_dir: str | Path | None = None) -> IntervalPolicy:
        """This policy for the complete records' games (resolve it once per set of records, then pass it on): their
        declared payoff values (:func:`~deepeval_games.core.registry.games.payoff_support`) where every game of
        the records declares the same, checked against every payoff they hold. Version 1 names no exact method, so
        it declares none."""
        done = views.complete(records)  # (records kept as columns select themselves: no list of records)
        if self.version == OLD_VERSION or not done:
            return self.with_support(None)
        supports = set()
        for game_string in sorted({r.game for r in done}):
            try:
                supports.add(payoff_support(load_recorded_game(game_string, data_dir=data_dir)))
            except DeepEvalError:  # a game that cannot be loaded here declares nothing
                supports.add(None)
        support = supports.pop() if len(supports) == 1 else None
        return self.with_support(support, (float(x) for r in done for x in r.returns))

    @property
    def anytime(self) -> bool:
        """Whether the means get anytime-valid intervals (the run was stopped by looking at its results)."""
        return self.sequence is not None

    @property
    def key(self) -> str:
        """The policy as text, for a manifest or a command line (:meth:`parse` reads it back): its version alone
        when the number of matches was fixed in advance; with the sequence and the stopping rule's ``alpha`` when a
        rule looked at the results to decide when to stop (every interval is then the anytime-valid one)."""
        if self.sequence is None:
            return self.version
        return f"{self.version}{COLLECTED_MARK}{self.sequence}:{self.alpha:g}"

    @property
    def mean(self) -> str:
        """The method of a player's mean payoff."""
        if self.sequence is not None:
            return SEQUENCE_METHODS[self.sequence]
        exact = self.version != OLD_VERSION and self.support is not None and len(self.support) in (2, 3)
        return EXACT_METHODS.get(self.version, DEFAULT_METHOD) if exact else DEFAULT_METHOD

    @property
    def points(self) -> str:
        """The method of a points share (1, 1/2, 0 by its definition): the run's sequence where it was collected
        adaptively, else the exact method of the version."""
        if self.sequence is not None:
            return SEQUENCE_METHODS[self.sequence]
        return EXACT_METHODS.get(self.version, DEFAULT_METHOD)

    @property
    def rate(self) -> str:
        """The method of a rate (win, draw, loss, illegal moves): :data:`RATE_METHODS`' fixed-n one, or its
        anytime-valid one where the run was collected adaptively."""
        return MIXTURE_RATE_METHOD if self.sequence is not None else RATE_METHOD

    @property
    def ratio(self) -> str:
        """The method of GTBench's NRA: exact where the game pays ``+c / -c`` (draws 0), else by betting."""
        s = self.support
        symmetric = s is not None and s[0] < 0 and s[0] == -s[-1] and (len(s) == 2 or (len(s) == 3 and s[1] == 0))
        return RATIO_METHODS[1] if self.version != OLD_VERSION and symmetric else RATIO_METHODS[0]

    def mean_intervals(
        self, samples: np.ndarray, low: float, high: float, *, players: int = 1
    ) -> tuple[np.ndarray, np.ndarray]:
        """:func:`mean_intervals` of payoffs by :attr:`mean`; for an adaptively collected run, each row's sequence
        after its last value (rows in the order of repetition), at level ``alpha * (1 - PAIRED_SHARE) / players``
        (``players``: how many share the ranking; the pairs' comparisons spend the rest)."""
        if self.sequence is not None:
            rows = np.atleast_2d(samples)
            level = self.alpha * (1.0 - PAIRED_SHARE) / max(players, 1)
            ends = [make_sequence(self.sequence, low, high, alpha=level).extend(row) for row in rows]
            return np.array([e.low for e in ends]), np.array([e.high for e in ends])
        method = self.mean
        return mean_intervals(
            samples, low, high, method=method, support=self.support if method != DEFAULT_METHOD else None
        )

    def mean_interval(
        self, values: Sequence[float] | np.ndarray, low: float, high: float, *, players: int = 1
    ) -> Interval:
        """:func:`mean_interval` of payoffs by :attr:`mean` (``players`` as :meth:`mean_intervals`)."""
        data = np.asarray(values, dtype=float)
        if self.sequence is not None:
            if data.size == 0:
                return Interval(math.nan, math.nan, math.nan, 0)
            lo, hi = self.mean_intervals(data[None, :], low, high, players=players)
            return Interval(float(lo[0]), float(hi[0]), float(data.mean()), int(data.size))
        method = self.mean
        return mean_interval(data, low, high, method=method, support=self.support if method != DEFAULT_METHOD else None)

    def points_interval(self, values: Sequence[float]) -> Interval:
        """:func:`mean_interval` of a points share by :attr:`points`; for an adaptively collected run, the run's
        sequence on [0, 1] after the last value (in the order given), at level ``alpha``."""
        if self.sequence is not None:
            data = np.asarray(values, dtype=float)
            if data.size == 0:
                return Interval(math.nan, math.nan, math.nan, 0)
            end = make_sequence(self.sequence, 0.0, 1.0, alpha=self.alpha).extend(data)
            return Interval(end.low, end.high, float(data.mean()), int(data.size))
        support = None if self.points == DEFAULT_METHOD else POINTS_SUPPORT
        return mean_interval(values, 0.0, 1.0, method=self.points, support=support)

    def pair_interval(self, points: Sequence[float], *, pairs: int = 1) -> Interval:
        """The interval of a pair's mean point in its shared matches (1 ahead, 1/2 tie, 0 behind, in the order of
        repetition: :mod:`analysis.stats.pairs`) at the level its ranking's pairs share (``alpha * PAIRED_SHARE /
        pairs`` of an adaptively collected run, ``0.05 / pairs`` otherwise): the
        anytime-valid sequence at the stopping time for an adaptively collected run, the fixed-n interval of a points
        share otherwise (:attr:`points`)."""
        level = (self.alpha * PAIRED_SHARE if self.sequence is not None else 0.05) / max(pairs, 1)
        data = np.asarray(points, dtype=float)
        if data.size == 0:
            return Interval(math.nan, math.nan, math.nan, 0)
        if self.sequence is not None:
            end = make_sequence(self.sequence, 0.0, 1.0, alpha=level).extend(data)
            return Interval(end.low, end.high, float(data.mean()), int(data.size))
        support = None if self.points == DEFAULT_METHOD else POINTS_SUPPORT
        return mean_interval(data, 0.0, 1.0, alpha=level, method=self.points, support=support)

    def rate_interval(self, successes: int, trials: int) -> Interval:
        """The share ``successes / trials`` with its interval by :attr:`rate` at level ``1 - alpha``: Clopper–Pearson
        for a fixed number of matches, the beta-binomial mixture sequence at the stopping time for an adaptively
        collected run; NaNs for no trials.

        Raises:
            ValueError: counts outside ``0 <= successes <= trials``.
        """
        if trials == 0 and successes == 0:
            return Interval(math.nan, math.nan, math.nan, 0)
        compute = mixture_rate_interval if self.sequence is not None else clopper_pearson_interval
        low, high = compute(successes, trials, self.alpha)
        return Interval(low, high, successes / trials, trials)

    def note(self) -> str:
        """One line for a report's methods: the version and which method made which interval."""
        values = "" if self.support is None else " (the game pays " + ", ".join(f"{v:g}" for v in self.support) + ")"
        if self.sequence is not None:
            return (
                f"intervals {self.version}, adaptively collected: player means anytime-valid {self.mean} at alpha "
                f"{self.alpha:g} shared by a ranking's players; points shares anytime-valid {self.points} and rates "
                f"anytime-valid {self.rate}, each at alpha {self.alpha:g}; differences {DEFAULT_METHOD}; "
                f"NRA {self.ratio}"
            )
        return (
            f"intervals {self.version}: player means {self.mean}{values}; differences {DEFAULT_METHOD}; "
            f"NRA {self.ratio}; points shares {self.points}; rates {self.rate}"
        )


OLD_POLICY = IntervalPolicy(OLD_VERSION)
"""The policy of a run whose stored spec names no ``intervals``, and of any table asked for none."""
LATEST_POLICY = IntervalPolicy(LATEST_VERSION)
"""The policy a new run's spec selects unless it says otherwise, for a number of matches fixed in advance."""


SMALL_SAMPLE = 10
"""Up to this many matches a player, the caption under a table of means says that its intervals are wide."""


def mean_caption(policy: IntervalPolicy, *, players: int = 0, fewest: int | None = None, paired: bool = False) -> str:
    """The caption under a table of mean payoffs, in words: what its 95% intervals are, why they are the valid kind
    for how the run was collected, and how a reader tells two players apart (``players``: how many share the
    ranking; ``fewest``: the fewest matches of a row, for the small-sample warning where it applies; ``paired``: the
    verdicts follow, compared where the players met: :mod:`analysis.stats.pairs`). Method names
    and versions are for the methods section (:meth:`IntervalPolicy.note`), not for this line."""
    if policy.anytime:
        together = f" for all {players} players at once" if players > 1 else ""
        what = (
            f"95% interval: where each player's true mean payoff lies, with 95% confidence{together}; valid although "
            "the run looked at its results to decide when to stop, so wider than an interval for a number of matches "
            "fixed in advance"
        )
    elif policy.mean == DEFAULT_METHOD:
        what = (
            "95% interval: where each player's true mean payoff lies, with 95% confidence, for the number of matches "
            "fixed in advance; it assumes nothing of the payoffs but the game's range"
        )
    else:
        values = ", ".join(f"{v:g}" for v in policy.support or ())
        what = (
            "95% interval: where each player's true mean payoff lies, with 95% confidence, for the number of matches "
            f"fixed in advance; exact for a game that pays only {values}"
        )
    small = (
        f"; with {fewest} match{'' if fewest == 1 else 'es'} a player it is wide"
        if fewest is not None and 0 < fewest <= SMALL_SAMPLE
        else ""
    )
    verdict = "Who is told apart is said below" if paired else "Players whose intervals do not overlap are told apart"
    return f"{what}{small}. {verdict}"
