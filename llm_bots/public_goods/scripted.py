"""Scripted baselines for the Public Goods Game.

Each bot reads only its seat's observation fields (round, endowment, its own last investment, and the
mode's feedback: its pool income in mode 1, the sorted investments in mode 2), as an LLM seat would.

* ``pgg_free_rider`` — always invests 0: the dominant strategy (Nash) when alpha < n.
* ``pgg_full_contributor`` — always invests everything: the social optimum when alpha > 1.
* ``pgg_random`` — a uniform investment in 0..E each round.
* ``pgg_conditional_cooperator`` — first round ``first`` coins, then last round's mean investment.
* ``pgg_grim_trigger`` — invests everything until a round's mean investment falls below
  ``threshold`` x E, then nothing for the rest of the game.

Every bot takes ``noise`` (default 0): the chance, each round, that it ignores its rule and invests a uniformly
random amount in 0..E instead (drawn from its seeded generator). It makes a population with known, tunable
variance for testing stopping rules: a noisier player needs more matches before its rank is clear.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import pyspiel

from deepeval_games.core.bot import FieldsBot, SeatSeed
from deepeval_games.core.registry.bots import register_bot
from game_defs.public_goods.game import endowment_of

__all__ = [
    "ConditionalCooperator",
    "FreeRider",
    "FullContributor",
    "GrimTrigger",
    "RandomInvestor",
    "last_round_mean_investment",
]

_PGG = ("deepeval_public_goods",)


def last_round_mean_investment(fields: Mapping[str, Any]) -> float | None:
    """Mean investment of the last round as a seat can infer it, or None before the first round ends.

    Mode 2 shows every investment; mode 1 shows the pool income ``alpha * total / n``, so the mean
    investment ``total / n`` is ``income / alpha``.
    """
    if "last_investments" in fields:
        amounts = fields["last_investments"]
        return float(sum(amounts)) / len(amounts)
    if "last_income" in fields:
        return float(fields["last_income"]) / float(fields["alpha"])
    return None


class _PGGBot(FieldsBot):
    """Shared plumbing: a move that invests :meth:`amount` coins, or with probability ``noise`` a random amount.

    A bot reads its observation's fields alone (:class:`~deepeval_games.core.bot.FieldsBot`): the referee asks it
    through
    :meth:`move_from_fields`, and :meth:`respond` (what any other caller gets) is the same move, named."""

    takes_seat_seed = True  # draws through self.rng only (and most never draw: no generator is made for them)

    def __init__(
        self,
        player_id: int,
        rng: np.random.Generator | SeatSeed | None = None,
        *,
        game: pyspiel.Game,
        noise: float = 0.0,
    ) -> None:
        super().__init__(player_id, rng)
        self.endowment = endowment_of(game)
        if not 0.0 <= float(noise) <= 1.0:
            raise ValueError(f"noise must be in [0, 1], got {noise}")
        self.noise = float(noise)

    def amount(self, fields: Mapping[str, Any]) -> int:
        """The coins this bot's rule invests, a Python ``int`` (clipped to 0..E by :meth:`move_from_fields`)."""
        raise NotImplementedError

    def move_from_fields(self, fields: Mapping[str, Any]) -> int:
        """Invest :meth:`amount` coins (clipped to 0..E), or with probability ``noise`` a uniformly random amount."""
        amount = self.amount(fields)
        if self.noise and self.rng.random() < self.noise:
            amount = int(self.rng.integers(0, self.endowment + 1))
        if amount.__class__ is not int:  # a float or numpy amount of a subclass's rule: as the bots always clipped
            return int(min(max(amount, 0), self.endowment))
        if amount < 0:  # int(min(max(amount, 0), endowment)), written out for an int
            return 0
        endowment = self.endowment
        return endowment if amount > endowment else amount

    def identity(self) -> dict[str, Any]:
        identity: dict[str, Any] = {"kind": "scripted", "class": type(self).__name__}
        if self.noise:
            identity["noise"] = self.noise
        return identity


@register_bot("pgg_free_rider", games=_PGG)
class FreeRider(_PGGBot):
    """Always invests nothing (the Nash move when alpha < n)."""

    def amount(self, fields: Mapping[str, Any]) -> int:
        return 0


@register_bot("pgg_full_contributor", games=_PGG)
class FullContributor(_PGGBot):
    """Always invests its whole endowment (the social optimum)."""

    def amount(self, fields: Mapping[str, Any]) -> int:
        return self.endowment


@register_bot("pgg_random", games=_PGG)
class RandomInvestor(_PGGBot):
    """Invests a uniformly random amount in 0..E each round."""

    def amount(self, fields: Mapping[str, Any]) -> int:
        return int(self.rng.integers(0, self.endowment + 1))


@register_bot("pgg_conditional_cooperator", games=_PGG)
class ConditionalCooperator(_PGGBot):
    """Opens with ``first`` coins (default E), then matches last round's mean investment."""

    def __init__(
        self,
        player_id: int,
        rng: np.random.Generator | SeatSeed | None = None,
        *,
        game: pyspiel.Game,
        first: int | None = None,
        noise: float = 0.0,
    ) -> None:
        super().__init__(player_id, rng, game=game, noise=noise)
        self.first = self.endowment if first is None else int(first)
        if not 0 <= self.first <= self.endowment:
            raise ValueError(f"first must be in 0..{self.endowment}, got {self.first}")

    def amount(self, fields: Mapping[str, Any]) -> int:
        mean = last_round_mean_investment(fields)
        return self.first if mean is None else math.floor(mean + 0.5)  # np.floor's value


@register_bot("pgg_grim_trigger", games=_PGG)
class GrimTrigger(_PGGBot):
    """Invests everything until a round's mean investment drops below ``threshold`` x E, then nothing."""

    def __init__(
        self,
        player_id: int,
        rng: np.random.Generator | SeatSeed | None = None,
        *,
        game: pyspiel.Game,
        threshold: float = 0.5,
        noise: float = 0.0,
    ) -> None:
        super().__init__(player_id, rng, game=game, noise=noise)
        if not 0.0 <= threshold <= 1.0:
            raise ValueError(f"threshold must be in [0, 1], got {threshold}")
        self.threshold = float(threshold)
        self.triggered = False

    def amount(self, fields: Mapping[str, Any]) -> int:
        mean = last_round_mean_investment(fields)
        if mean is not None and mean < self.threshold * self.endowment:
            self.triggered = True
        return 0 if self.triggered else self.endowment
