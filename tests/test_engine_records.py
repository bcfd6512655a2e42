"""The engine plays the same matches as before its per-move cost was cut: records equal, timings aside.

The fixture (``tests/fixtures/engine_records.jsonl``) was written by the engine before that work (see
:mod:`tests.engine_cases`): scripted, random, MCTS and exact players, illegal moves and their penalties, chance
nodes, simultaneous rounds, free-text moves and a judge, on the Public Goods Game, tic_tac_toe, connect_four,
kuhn_poker, liars_dice, the iterated prisoner's dilemma, Idiom Solitaire and Machine Translation. A digest of every
observation a test seat received is part of its moves, so an LLM seat's prompt would be unchanged too.

The cases with a ``random``, ``mcts`` or ``exact`` seat were rewritten on purpose by the engine's second pass
(``random`` became OpenSpiel's C++ bot; classical seats are sent no per-turn views): see :mod:`tests.engine_cases`.
That a viewing seat is shown the same against such a seat is ``tests/test_engine_lean.py``.
"""

from __future__ import annotations

import asyncio
import json

import pytest

from deepeval_games.core.records import migrate
from tests.engine_cases import CASES, FIXTURE, Case, _normal, play

EXPECTED = {  # written at record version 4: as canonical() gives such a record now (its moves are its turns)
    entry["case"]: {k: v for k, v in migrate(entry["record"]).items() if k != "moves"}
    for entry in map(json.loads, FIXTURE.read_text("utf-8").splitlines())
}


def test_the_fixture_holds_every_case() -> None:
    assert sorted(EXPECTED) == sorted(case.name for case in CASES)


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_same_seed_same_record_as_before(case: Case) -> None:
    played = _normal(asyncio.run(play(case)))
    assert played["case"] == case.name
    record, expected = played["record"], EXPECTED[case.name]
    assert record["turns"] == expected["turns"]
    assert record["messages"] == expected["messages"]
    assert record == expected
