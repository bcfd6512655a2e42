"""The paper's idiom score (Eq. 1 by wins, both positions) and Tables 1 and 2 (early/late win rate and successful
hits) from match records."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from analysis.tables.idiom_solitaire import (
    HEADLINE_TITLE,
    early_late_table,
    format_early_late_intervals,
    format_early_late_table,
    format_headline,
    headline,
    hit_table,
    idiom_records,
    plot_early_late_tables,
    validity_note,
    win_rate_table,
)
from deepeval_games import parse_spec, run_experiment
from deepeval_games.app.commands.cli import main
from deepeval_games.app.reports.report import core_text
from deepeval_games.core.records import MatchRecord

_GAME = "deepeval_idiom_solitaire(match=exact,max_turns=50,start=一马当先)"


def _record(
    early: str, late: str, returns: tuple[float, float], hits: tuple[int, int], *, swap: bool = False
) -> MatchRecord:
    """A finished match; with ``swap`` the early player sits in seat 1 (roles say who moved first)."""
    seats, roles = [early, late], ["early", "late"]
    if swap:
        seats, roles, returns, hits = seats[::-1], roles[::-1], returns[::-1], hits[::-1]
    return MatchRecord(
        match_id=f"{early}-{late}-{len(seats)}",
        game=_GAME,
        seats=seats,
        returns=list(returns),
        turns=[],
        roles=roles,
        metrics={"hits": list(hits)},
    )


@pytest.fixture
def records() -> list[MatchRecord]:
    return [
        _record("A", "B", (1, -1), (2, 1)),
        _record("A", "B", (-1, 1), (1, 1)),
        _record("A", "B", (0, 0), (3, 3)),  # a draw: nobody wins
        _record("B", "A", (1, -1), (4, 0), swap=True),
        _record("A", "C", (1, -1), (1, 0)),
        _record("C", "A", (-1, 1), (0, 1)),
        _record("C", "C", (1, -1), (5, 5)),  # self-play: shown, not in the means
        MatchRecord(
            match_id="pgg", game="deepeval_public_goods(players=2)", seats=["A", "B"], returns=[3, 4], turns=[]
        ),
    ]


def test_win_rate_cells_and_means(records: list[MatchRecord]) -> None:
    table = win_rate_table(records)
    assert table.players == ("A", "B", "C")
    ab = table.cell("A", "B")
    assert ab is not None and (ab.early, ab.late, ab.matches) == (pytest.approx(1 / 3), pytest.approx(1 / 3), 3)
    ba = table.cell("B", "A")
    assert ba is not None and (ba.early, ba.late, ba.matches) == (1.0, 0.0, 1)
    assert table.cell("B", "C") is None
    assert table.early_mean("A") == pytest.approx((1 / 3 + 1.0) / 2)  # row A: cells (A,B), (A,C)
    assert table.late_mean("A") == pytest.approx((0.0 + 1.0) / 2)  # column A: cells (B,A), (C,A)
    assert table.early_mean("C") == 0.0  # (C,A) only; the self-play cell (C,C) is left out
    assert math.isnan(win_rate_table(records, players=["B", "C"]).early_mean("C"))  # only self-play left


def test_the_headline_is_eq1_by_wins_over_both_positions(records: list[MatchRecord]) -> None:
    found = headline(records)
    assert found is not None and found.title == HEADLINE_TITLE
    # A: won (A,B) #1, (A,C) and (C,A) as late player; lost (A,B) #2 and (B,A); drew (A,B) #3 -> 3 of 6.
    # B: won (A,B) #2 and (B,A) as early player in seat 1 -> 2 of 4. C: 0 of 2 (its self-play match left out).
    assert [(s.player, s.n, s.mean) for s in found.scores] == [("A", 6, 0.5), ("B", 4, 0.5), ("C", 2, 0.0)]
    assert found.note.endswith("A 3 of 6, B 2 of 4, C 0 of 2")
    between = headline(records, players=["A", "B"])
    assert between is not None and [(s.player, s.n, s.mean) for s in between.scores] == [("B", 4, 0.5), ("A", 4, 0.25)]
    assert headline(records[-1:]) is None  # no idiom match
    lines = format_headline(found).splitlines()
    assert lines[0].startswith("Eq. 1. Idiom Solitaire: wins per player over both positions")
    assert lines[1].split() == ["player", "matches", "wins", "win", "rate", "95%", "CI"]
    assert lines[2].split()[:4] == ["A", "6", "3", "0.50"]


def test_the_report_headline_of_the_task_is_wins_per_player_not_a_score_per_position(
    records: list[MatchRecord],
) -> None:
    text = core_text(r for r in records if r.game == _GAME)
    assert HEADLINE_TITLE in text and "Wins (matches won of matches played" in text
    assert "Eq. 2" not in text and "mean payoff per player and role" not in text


def test_hit_cells_and_roles(records: list[MatchRecord]) -> None:
    table = hit_table(records)
    ab, ba = table.cell("A", "B"), table.cell("B", "A")
    assert ab is not None and (ab.early, ab.late) == (pytest.approx(2.0), pytest.approx(5 / 3))
    assert ba is not None and (ba.early, ba.late) == (4.0, 0.0)  # seat 1 moved first: roles decide
    assert table.late_mean("B") == pytest.approx(5 / 3)
    assert table.late_mean("C") == 0.0  # column C: (A, C) only


def test_player_order_and_filter(records: list[MatchRecord]) -> None:
    table = win_rate_table(records, players=["C", "A"])
    assert table.players == ("C", "A") and set(table.cells) == {("A", "C"), ("C", "A"), ("C", "C")}
    assert len(idiom_records(records)) == 7
    custom = early_late_table(records, lambda r, seat: float(seat), "seat index")
    assert custom.cell("B", "A") is not None and custom.cell("B", "A").early == 1.0  # type: ignore[union-attr]


def test_text_table_looks_like_the_paper(records: list[MatchRecord]) -> None:
    text = format_early_late_table(win_rate_table(records), title="Table 1")
    lines = text.splitlines()
    assert lines[0] == "Table 1" and "early \\ late" in lines[1] and "mean s_E" in lines[1]
    assert "s_E" in lines[2] and "s_L" in lines[2]
    row_a = next(line for line in lines if line.startswith("A "))
    assert "0.33" in row_a and row_a.rstrip().endswith("0.67")
    assert lines[-2].startswith("mean s_L") and "1..3 matches per cell" in lines[-1]


def test_hits_metric_is_required() -> None:
    bare = MatchRecord(match_id="x", game=_GAME, seats=["A", "B"], returns=[1, -1], turns=[], roles=["early", "late"])
    with pytest.raises(ValueError, match="no 'hits'"):
        hit_table([bare])


def test_plot_writes_a_figure(records: list[MatchRecord], tmp_path: Path) -> None:
    out = plot_early_late_tables([win_rate_table(records), hit_table(records)], tmp_path / "fig" / "tables.png")
    assert out.exists() and out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_command_line_on_a_run_directory(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec = parse_spec(
        {
            "experiment": {
                "name": "idiom-small",
                "game": "deepeval_idiom_solitaire(max_turns=20)",
                "sweep": {"start": ["一马当先", "羚羊挂角"]},
                "pairing": "round_robin",
            },
            "players": [{"name": "strategic", "bot": "idiom_strategic"}, {"name": "dict", "bot": "idiom_dictionary"}],
        }
    )
    run_experiment(spec, tmp_path / "run")
    assert main(["tables", "idiom", str(tmp_path / "run"), "--plot", str(tmp_path / "t.png")]) == 0
    out = capsys.readouterr().out
    assert "Table 1. Idiom Solitaire: win rate" in out and "Table 2. Idiom Solitaire: successful hits" in out
    assert out.index("Eq. 1. Idiom Solitaire: wins per player") < out.index("Table 1.")  # the paper's score first
    assert "2 matches per cell" in out and (tmp_path / "t.png").exists()
    assert main(["tables", "idiom", str(tmp_path / "nothing")]) == 2  # a clear error, no traceback
    assert "no results in" in capsys.readouterr().err


def test_the_tables_say_who_decided_what_is_an_idiom() -> None:
    alone = validity_note("deepeval_idiom_solitaire(dictionary=xinhua+cedict+zdic-1,hint=False,match=exact)")
    judged = validity_note("deepeval_idiom_solitaire(dictionary=xinhua-1,validity=dictionary+judge)")
    assert "xinhua+cedict+zdic-1 alone" in alone and "[judge]" in alone
    assert "xinhua-1, and the judge ruled" in judged
    assert "xinhua-1 alone" in validity_note("deepeval_idiom_solitaire(max_turns=4)")  # before the parameter


def test_cells_have_intervals_and_resolved_differences_are_marked() -> None:
    def match(i: int, early: str, late: str, early_won: bool) -> MatchRecord:
        record = _record(early, late, (1, -1) if early_won else (-1, 1), (3, 2) if early_won else (2, 2))
        return record.model_copy(update={"match_id": f"{early}{late}{i:02d}", "repeat": i})

    records = [match(i, "A", "B", True) for i in range(12)]  # A, moving first, wins all 12: resolved
    records += [match(i, "B", "A", i % 2 == 0) for i in range(10)]  # 5 wins, 5 losses: unresolved
    table = win_rate_table(records)
    ab, ba = table.cell("A", "B"), table.cell("B", "A")
    assert ab is not None and ba is not None
    assert ab.early_ci.mean == 1.0 and 0.5 < ab.early_ci.low < 1.0 == ab.early_ci.high
    assert ab.difference.low > 0 and ba.difference.low < 0 < ba.difference.high
    assert ba.early_ci.low < 0.5 < ba.early_ci.high and ba.early_ci.high - ba.early_ci.low > 0.5  # honest at 10
    text = format_early_late_table(table)
    row_a = next(line for line in text.splitlines() if line.startswith("A "))
    row_b = next(line for line in text.splitlines() if line.startswith("B "))
    assert "0.00*" in row_a and "*" not in row_b and "* s_E - s_L resolved" in text
    listed = format_early_late_intervals(table)
    assert "A \\ B (12 matches): s_E 1.00 [" in listed and listed.count("unresolved") == 1
    hits = hit_table(records)
    assert hits.cell("A", "B").early_ci.high <= 25.0  # type: ignore[union-attr]  # max_turns 50: 25 moves a seat
