"""Idiom Solitaire: each player's losses counted by cause (not an idiom, wrong first character, repeat, format)."""

from __future__ import annotations

from analysis.tables.idiom_solitaire import LOSS_CAUSES, format_losses, losses_by_cause
from deepeval_games.core.bot import Outcome
from deepeval_games.core.records import MatchRecord, TurnRecord

GAME = "deepeval_idiom_solitaire(start=一马当先)"


def _record(seats: list[str], broken_by: int | None, reason: str | None, last: Outcome = Outcome.OK) -> MatchRecord:
    turns = [
        TurnRecord(index=0, round=1, seat=0, action=1, action_string="x", outcome=Outcome.OK),
        TurnRecord(
            index=1, round=2, seat=1, action=2, action_string="y", outcome=last if broken_by == 1 else Outcome.OK
        ),
    ]
    returns = [0.0, 0.0] if broken_by is None else [1.0 - 2 * (broken_by == 0), 1.0 - 2 * (broken_by == 1)]
    metrics = {"broken_by": broken_by, "break_reason": reason, "hits": [1, 0]}
    return MatchRecord(match_id=str(id(turns)), game=GAME, seats=seats, returns=returns, turns=turns, metrics=metrics)


def test_losses_are_counted_by_cause_per_player() -> None:
    records = [
        _record(["a", "b"], 1, "not_an_idiom"),
        _record(["a", "b"], 1, "not_an_idiom", Outcome.TRUNCATED),  # no usable answer: format
        _record(["b", "a"], 1, "wrong_first_char"),
        _record(["b", "a"], 0, "repeat"),
        _record(["a", "b"], 1, "not_an_idiom", Outcome.INVALID),
        _record(["a", "b"], None, None),  # a draw: nobody lost
        MatchRecord(match_id="pgg", game="deepeval_public_goods", seats=["a", "b"], returns=[1, 2], turns=[]),
    ]
    losses = losses_by_cause(records)
    assert losses == {
        "a": {"not an idiom": 0, "wrong first character": 1, "repeat": 0, "judge refused": 0, "format": 0},
        "b": {"not an idiom": 1, "wrong first character": 0, "repeat": 1, "judge refused": 0, "format": 2},
    }
    text = format_losses(losses).splitlines()
    assert text[0] == "Losses by cause:" and text[1].split()[0] == "player" and LOSS_CAUSES[0] in text[1]
    assert text[3].split()[-1] == "4"  # b lost four matches
