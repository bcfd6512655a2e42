"""Scripted bots for the process-executor tests (tests/test_workers.py).

They live in a module of their own, registered when it is imported: a worker process imports it (the executor
sends it the modules that define a spec's bots), so they show that a bot registered outside an entry point plays
in workers too. Cross-process state (how many infrastructure failures are left) is kept in a file named by an
environment variable, locked with ``flock``.
"""

from __future__ import annotations

import asyncio
import fcntl
import os

from deepeval_games import Decision, DeepEvalBot, InfrastructureError, Observation, register_bot
from deepeval_games.core.errors import FatalRunError

INFRA_FILE_ENV = "DG_TEST_INFRA_FAILURES"
"""File holding how many injected infrastructure failures are left (shared by every process)."""


def _take_failure() -> bool:
    """True (and one fewer left) when the shared file still holds failures to inject."""
    path = os.environ.get(INFRA_FILE_ENV)
    if not path:
        return False
    with open(path, "r+", encoding="utf-8") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        left = int(handle.read().strip() or 0)
        if left <= 0:
            return False
        handle.seek(0)
        handle.truncate()
        handle.write(str(left - 1))
        return True


class _Investor(DeepEvalBot):
    def __init__(self, player_id, rng=None, *, game=None, delay_s: float = 0.0) -> None:
        super().__init__(player_id, rng, game=game)
        self.delay_s = float(delay_s)
        self.endowment = int(game.get_parameters()["endowment"]) if game is not None else 10

    async def invest(self) -> Decision:
        if self.delay_s:
            await asyncio.sleep(self.delay_s)
        return Decision(action=int(self.rng.integers(0, self.endowment + 1)))


@register_bot("test_worker_random")
class SlowRandom(_Investor):
    """Invests a random amount, after ``delay_s`` seconds (a stand-in for a model's latency)."""

    async def act(self, observation: Observation) -> Decision:
        return await self.invest()


@register_bot("test_worker_flaky")
class Flaky(_Investor):
    """Invests a random amount, but the 'model service' fails while the shared file says failures are left."""

    async def act(self, observation: Observation) -> Decision:
        if _take_failure():
            raise InfrastructureError("injected 503 from the model service")
        return await self.invest()


@register_bot("test_worker_buggy")
class Buggy(_Investor):
    """Crashes in round 2 of every match (a bug in a bot)."""

    async def act(self, observation: Observation) -> Decision:
        if observation.fields["round"] == 2:
            raise ZeroDivisionError("bug in a bot")
        return await self.invest()


@register_bot("test_worker_fatal")
class Fatal(_Investor):
    """Stops the run in round 2 (as a bad API key would)."""

    async def act(self, observation: Observation) -> Decision:
        if observation.fields["round"] == 2:
            raise FatalRunError("injected: the API key was refused")
        return await self.invest()
