"""A scripted bot for the Ray executor's tests (tests/test_ray_executor.py), in a module of its own: the executor
sends the actors the modules that define a spec's bots, so they import it and the bot plays there too."""

from __future__ import annotations

import os
from pathlib import Path

from deepeval_games import Decision, DeepEvalBot, Observation, register_bot


@register_bot("test_ray_dies_once")
class DiesOnce(DeepEvalBot):
    """Invests a random amount; the first time any process plays it while ``marker`` does not exist, it creates
    the file and kills its own process (an actor lost mid-match, as to the OOM killer)."""

    def __init__(self, player_id, rng=None, *, game=None, marker: str = "") -> None:
        super().__init__(player_id, rng, game=game)
        self.marker = Path(marker)
        self.endowment = int(game.get_parameters()["endowment"]) if game is not None else 10

    async def act(self, observation: Observation) -> Decision:
        if self.marker.name:
            try:
                self.marker.open("x").close()  # exactly one process wins the file
            except FileExistsError:
                pass
            else:
                os._exit(1)
        return Decision(action=int(self.rng.integers(0, self.endowment + 1)))
