"""Anytime-valid confidence sequences for the mean of bounded payoffs.

A fixed-sample confidence interval (the bootstrap of :func:`analysis.scores.bootstrap_ci`) holds at one sample size
chosen in advance. Checking it again after every batch and stopping when it looks good is optional stopping: each
look is another chance to stop on an interval that misses the mean. A *confidence sequence* is a sequence of
intervals that contains the mean at every sample size at once with probability at least ``1 - alpha``, so it may be
looked at after every observation and a run may stop whenever it likes.

This module implements the predictable-plug-in empirical-Bernstein sequence (PrPl-EB) of Waudby-Smith and Ramdas,
"Estimating means of bounded random variables by betting" (JRSS-B, 2023), Theorem 2, for observations in a known
range ``[low, high]`` (a game's min and max utility, or a judge's 1-10 scale). On values rescaled to ``[0, 1]``:

* the predictable mean and variance estimates ``m_t = (1/2 + sum x_i) / (t + 1)`` and
  ``s2_t = (1/4 + sum (x_i - m_i)^2) / (t + 1)``;
* the bet of observation ``t``, fixed before ``x_t`` is seen:
  ``lambda_t = min(sqrt(2 log(2/alpha) / (s2_{t-1} t log(1 + t))), c)`` with ``c = 1/2``;
* the interval ``sum lambda_i x_i / sum lambda_i  +-  (log(2/alpha) + sum v_i psi(lambda_i)) / sum lambda_i`` with
  ``v_i = 4 (x_i - m_{i-1})^2`` and ``psi(l) = (-log(1 - l) - l) / 4``;

intersected with every earlier interval (a running intersection of a confidence sequence is one too). Every
quantity is a running sum, so :class:`ConfidenceSequence` is updated in constant time per observation and never
keeps the observations: statistics stream.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

__all__ = ["ConfidenceSequence", "Interval", "confidence_sequence"]

_MAX_BET = 0.5
"""The truncation ``c`` of the bets (the paper suggests 1/2 or 3/4)."""


@dataclass(frozen=True)
class Interval:
    """A confidence interval of a mean after ``n`` observations."""

    low: float
    high: float
    mean: float
    """The sample mean (not the sequence's centre, which weights observations by their bets)."""
    n: int

    @property
    def half_width(self) -> float:
        """Half the interval's width."""
        return (self.high - self.low) / 2.0

    def overlaps(self, other: Interval) -> bool:
        """Whether the two intervals share a point."""
        return self.low <= other.high and other.low <= self.high


class ConfidenceSequence:
    """A streaming PrPl-EB confidence sequence for the mean of values in ``[low, high]`` (see the module docstring).

    Args:
        low: the least value an observation can take.
        high: the greatest value an observation can take.
        alpha: the error level: the sequence misses the mean at some sample size with probability at most this.

    Raises:
        ValueError: ``high <= low`` or ``alpha`` is not in (0, 1).
    """

    def __init__(self, low: float, high: float, *, alpha: float = 0.05) -> None:
        if not (math.isfinite(low) and math.isfinite(high) and high > low):
            raise ValueError(f"a confidence sequence needs finite bounds low < high, got [{low}, {high}]")
        if not 0.0 < alpha < 1.0:
            raise ValueError(f"alpha must be in (0, 1), got {alpha}")
        self.low, self.high, self.alpha = float(low), float(high), float(alpha)
        self._log_term = math.log(2.0 / alpha)
        self.n = 0
        self._sum = 0.0  # sum of x_i (rescaled)
        self._mean_hat = 0.5  # m_{t-1}
        self._var_sum = 0.25  # 1/4 + sum (x_i - m_i)^2
        self._bet_sum = 0.0  # sum lambda_i
        self._bet_x_sum = 0.0  # sum lambda_i x_i
        self._penalty = 0.0  # sum v_i psi(lambda_i)
        self._lo, self._hi = 0.0, 1.0  # running intersection, rescaled

    def update(self, value: float) -> Interval:
        """Add one observation and return the interval after it.

        Raises:
            ValueError: the value lies outside ``[low, high]`` (the guarantee would not hold).
        """
        value = float(value)
        if not self.low <= value <= self.high:
            raise ValueError(f"observation {value} lies outside the declared range [{self.low}, {self.high}]")
        x = (value - self.low) / (self.high - self.low)
        t = self.n + 1
        variance = self._var_sum / t  # s2_{t-1}
        bet = min(math.sqrt(2.0 * self._log_term / (variance * t * math.log1p(t))), _MAX_BET)
        self._penalty += 4.0 * (x - self._mean_hat) ** 2 * (-math.log1p(-bet) - bet) / 4.0
        self._bet_sum += bet
        self._bet_x_sum += bet * x
        self._sum += x
        self.n = t
        self._mean_hat = (0.5 + self._sum) / (t + 1)
        self._var_sum += (x - self._mean_hat) ** 2
        centre = self._bet_x_sum / self._bet_sum
        width = (self._log_term + self._penalty) / self._bet_sum
        self._lo = max(self._lo, centre - width, 0.0)
        self._hi = min(self._hi, centre + width, 1.0)
        if self._lo > self._hi:  # the sequence has excluded every mean (a rare miss): keep a point, never empty
            self._lo = self._hi = centre
        return self.interval()

    def extend(self, values: Iterable[float]) -> Interval:
        """Add several observations in order; the interval after the last."""
        for value in values:
            self.update(value)
        return self.interval()

    def interval(self) -> Interval:
        """The current interval (the whole range before any observation)."""
        scale = self.high - self.low
        mean = self.low + scale * self._sum / self.n if self.n else (self.low + self.high) / 2.0
        return Interval(self.low + scale * self._lo, self.low + scale * self._hi, mean, self.n)


def confidence_sequence(
    values: Sequence[float] | np.ndarray, low: float, high: float, *, alpha: float = 0.05
) -> list[Interval]:
    """The interval after each of ``values`` (in order) of a :class:`ConfidenceSequence` on ``[low, high]``."""
    sequence = ConfidenceSequence(low, high, alpha=alpha)
    return [sequence.update(value) for value in values]
