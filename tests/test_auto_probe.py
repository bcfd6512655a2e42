"""The probe of ``workers = "auto"`` (``placement.run_probe``): which matches it times, and what it leaves."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from deepeval_games.app.execution import placement
from deepeval_games.app.execution.placement import _spread, run_probe
from deepeval_games.app.execution.run_result import RunResult
from deepeval_games.app.spec.schedule import PlannedMatch


def _plan(games: dict[str, int]) -> list[PlannedMatch]:
    return [
        PlannedMatch(match_id=f"{game}-{i}", game=game, seats=("a", "b"), repeat=i, seed=i)
        for game, count in games.items()
        for i in range(count)
    ]


class _Recorder:
    """A runner that notes the chunks the probe hands it instead of playing them."""

    def __init__(self) -> None:
        self.chunks: list[list[PlannedMatch]] = []

    async def run(self, chunk: list[PlannedMatch], result: Any, *, bar: Any = None) -> None:
        self.chunks.append(list(chunk))


@pytest.mark.parametrize(("count", "size"), [(1, 1), (7, 7), (12, 24), (200, 10_000), (64, 65)])
def test_spread_positions_are_distinct_and_every_prefix_covers_the_range(count: int, size: int) -> None:
    order = _spread(count, size)
    assert len(order) == count == len(set(order)) and all(0 <= p < size for p in order)
    if count >= 4:  # the first few already reach both ends of the plan
        assert min(order[:4]) < size / 4 and max(order[:4]) >= size / 2


def test_the_probe_times_matches_from_all_over_the_plan(monkeypatch: pytest.MonkeyPatch) -> None:
    # a sweep whose first game is cheap and whose second is costly: the probe must time both
    todo = _plan({"cheap_game": 500, "costly_game": 500})
    monkeypatch.setattr(placement, "AUTO_PROBE_S", 60.0)
    fake = _Recorder()
    rest, _ = asyncio.run(run_probe(fake, todo, 40, RunResult(run_dir=None, planned=len(todo)), None))  # type: ignore[arg-type]
    probed = [m for chunk in fake.chunks for m in chunk]
    assert [len(c) for c in fake.chunks] == [1, 2, 4, 8, 16, 9]  # doubling chunks, up to the limit
    assert {m.game for m in probed} == {"cheap_game", "costly_game"}
    assert {m.game for m in fake.chunks[1]} == {"cheap_game", "costly_game"}  # from the second chunk on
    # every match is played once: the probed ones now, the rest later, in plan order
    assert sorted(m.match_id for m in [*probed, *rest]) == sorted(m.match_id for m in todo)
    assert rest == [m for m in todo if m not in probed]


def test_a_probe_cut_short_by_its_time_limit_leaves_the_rest(monkeypatch: pytest.MonkeyPatch) -> None:
    todo = _plan({"g": 100})
    monkeypatch.setattr(placement, "AUTO_PROBE_S", 0.0)  # stops after the first chunk
    fake = _Recorder()
    rest, count = asyncio.run(run_probe(fake, todo, 50, RunResult(run_dir=None, planned=100), None))  # type: ignore[arg-type]
    assert [len(c) for c in fake.chunks] == [1] and fake.chunks[0] == [todo[0]]
    assert rest == todo[1:] and count >= 1
