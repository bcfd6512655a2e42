"""Scripted baselines for the ultimatum game; each plays either role, reading only its observation fields.

* ``ultimatum_fair`` — says it wants an even split, offers half the pot (rounded down) and, as responder,
  accepts an offer of at least ``threshold`` x coins (default 0.3: 3 of 10).
* ``ultimatum_greedy`` — says to take it or leave it, offers 1 coin and, as responder, accepts any offer > 0.

Against each other (10 coins): fair proposes 5, greedy accepts (5, 5); greedy proposes 1, fair rejects (0, 0).
"""

from __future__ import annotations

import math
from typing import Any, cast

import numpy as np
import pyspiel

from deepeval_games.core.bot import Decision, DeepEvalBot, Observation
from deepeval_games.core.registry.bots import register_bot
from deepeval_ultimatum.game import ACCEPT, REJECT, SHORT_NAME, UltimatumFields

__all__ = ["FairBot", "GreedyBot"]


class _UltimatumBot(DeepEvalBot):
    """Shared plumbing: what to say, what to offer, what to accept."""

    message = ""

    def offer(self, coins: int) -> int:
        """Coins to offer the responder."""
        raise NotImplementedError

    def accepts(self, offer: int, coins: int) -> bool:
        """Whether to accept ``offer`` of ``coins``."""
        raise NotImplementedError

    async def act(self, observation: Observation) -> Decision:
        """A message at a talk turn, else an offer or an answer, by the observation's fields."""
        if observation.free_text:
            return Decision(action=None, text=self.message)
        fields = cast(UltimatumFields, observation.fields)
        coins = fields["coins"]
        if fields["phase"] == "offer":
            action = min(max(self.offer(coins), 0), coins)
        else:
            action = ACCEPT if self.accepts(fields["offer"] or 0, coins) else REJECT
        return Decision(action=action, text=observation.action_to_string(action))

    def identity(self) -> dict[str, Any]:
        """What identifies this player in a match id (never shown to a seat)."""
        return {"kind": "scripted", "class": type(self).__name__}


@register_bot("ultimatum_fair", games=(SHORT_NAME,))
class FairBot(_UltimatumBot):
    """Offers half the pot; as responder accepts offers of at least ``threshold`` x coins (default 0.3)."""

    message = "I propose we split the coins evenly; I will not accept a lowball offer."

    def __init__(
        self, player_id: int, rng: np.random.Generator | None = None, *, game: pyspiel.Game, threshold: float = 0.3
    ) -> None:
        super().__init__(player_id, rng, game=game)
        if not 0.0 <= threshold <= 1.0:
            raise ValueError(f"threshold must be in [0, 1], got {threshold}")
        self.threshold = float(threshold)

    def offer(self, coins: int) -> int:
        return coins // 2

    def accepts(self, offer: int, coins: int) -> bool:
        return offer >= math.ceil(self.threshold * coins - 1e-9)

    def identity(self) -> dict[str, Any]:
        return {**super().identity(), "threshold": self.threshold}


@register_bot("ultimatum_greedy", games=(SHORT_NAME,))
class GreedyBot(_UltimatumBot):
    """Offers 1 coin; as responder accepts any offer above 0."""

    message = "Take what I offer or we both get nothing."

    def offer(self, coins: int) -> int:
        return 1

    def accepts(self, offer: int, coins: int) -> bool:
        return offer > 0
