"""Tables 4–6 (Machine Translation): judge grid, chrF/BLEU grids and judge–chrF correlation on hand-built records."""

from __future__ import annotations

import math
import re
import statistics
from pathlib import Path
from typing import Any

import pytest

from analysis.correlation import correlate
from analysis.translation_tables import (
    format_metric_table,
    format_score_table,
    judge_correlations,
    plot_translation_tables,
    print_tables,
    record_pair,
    translation_groups,
    translation_table,
)
from deepeval_games.app.cli import main
from deepeval_games.app.store import Store
from deepeval_games.core.records import MatchRecord

_ROLES = ["translator", "proofreader"]
_PNG = b"\x89PNG\r\n\x1a\n"


def _record(
    pair: str,
    translator: str,
    proofreader: str,
    paragraph: str,
    scores: tuple[float, float],
    chrf: tuple[float, float] | None,
    bleu: tuple[float, float] | None,
) -> MatchRecord:
    metrics: dict[str, Any] = {"pair": pair, "paragraph": paragraph, "judge_scores": list(scores)}
    for name, values in (("chrf", chrf), ("bleu", bleu)):
        if values is not None:
            metrics |= {
                f"{name}_translation": values[0],
                f"{name}_proofread": values[1],
                f"{name}_gain": values[1] - values[0],
            }
    return MatchRecord(
        match_id=f"{pair}-{translator}-{proofreader}-{paragraph}",
        game=f"deepeval_translation(pair={pair},paragraph={paragraph})",
        seats=[translator, proofreader],
        returns=list(scores),
        turns=[],
        roles=list(_ROLES),
        metrics=metrics,
    )


# de-en: (translator, proofreader, paragraph, judge [s_T, s_Pr], chrF (T, Pr), BLEU (T, Pr))
DE_EN = [
    ("A", "B", "t1-0", (8, 9), (50, 60), (20, 25)),
    ("A", "B", "t1-1", (6, 7), (40, 44), (10, 12)),
    ("B", "A", "t1-0", (5, 4), (30, 27), (8, 6)),
    ("C", "A", "t2-0", (9, 6), (70, 70), None),  # no BLEU: left out of the BLEU grid, counted
    ("A", "C", "t2-0", (7, 8), (48, 56), (16, 20)),
    ("A", "A", "t2-1", (10, 10), (90, 95), (50, 55)),  # self-play: shown, left out of the means
]
EN_ZH = [
    ("A", "B", "t9-0", (3, 5), (20, 30), (5, 9)),
    ("B", "A", "t9-0", (9, 2), (60, 50), (30, 20)),
]


@pytest.fixture
def records() -> list[MatchRecord]:
    out = [_record("de-en", *row) for row in DE_EN] + [_record("en-zh", *row) for row in EN_ZH]
    # another task's record is ignored
    out.append(
        MatchRecord(match_id="pgg", game="deepeval_public_goods(players=2)", seats=["A", "B"], returns=[3, 4], turns=[])
    )
    return out


def _de_en(records: list[MatchRecord]) -> list[MatchRecord]:
    return [r for r in records if r.game.startswith("deepeval_translation(pair=de-en")]


def test_one_group_per_direction_in_table_order(records: list[MatchRecord]) -> None:
    groups = translation_groups(records)
    assert list(groups) == ["de-en", "en-zh"]  # Table 4 before Table 6
    assert [len(g) for g in groups.values()] == [6, 2]
    with pytest.raises(ValueError, match="2 directions"):
        translation_table(records)  # never pooled across directions


def test_judge_table_cells_and_means(records: list[MatchRecord]) -> None:
    table = translation_table(_de_en(records))
    assert (table.pair, table.number, table.players) == ("de-en", 4, ("A", "B", "C"))
    ba = table.cell("B", "A")  # proofreader B, translator A: two paragraphs pooled
    assert ba is not None and (ba.translator_score, ba.proofreader_score, ba.matches) == (7.0, 8.0, 2)
    ab = table.cell("A", "B")
    assert ab is not None and (ab.translator_score, ab.proofreader_score) == (5.0, 4.0)
    assert table.cell("B", "C") is None and table.cell("C", "B") is None
    # mean s_Pr per proofreader (row): A: (4 + 6) / 2, self-play's 10 left out
    assert [table.proofreader_mean(p) for p in "ABC"] == [5.0, 8.0, 8.0]
    # mean s_T per translator (column): A: (7 + 7) / 2, self-play left out
    assert [table.translator_mean(p) for p in "ABC"] == [7.0, 5.0, 9.0]
    text = format_score_table(table)
    lines = text.splitlines()
    assert lines[0] == "Table 4. Machine Translation (DE-EN): judge scores"
    assert lines[1].split() == ["Proof", "\\", "Trans", "A", "B", "C", "mean", "s_Pr"]
    assert lines[3].split() == ["A", "10.00", "10.00", "5.00", "4.00", "9.00", "6.00", "5.00"]
    assert lines[4].split() == ["B", "7.00", "8.00", "-", "-", "-", "-", "8.00"]
    assert lines[6].split() == ["mean", "s_T", "7.00", "5.00", "9.00"]
    assert lines[7] == (
        "(rows: proofreader, columns: translator; * s_T - s_Pr resolved (its 95% interval, match by match, excludes 0);"
        " 1..2 matches per cell)"
    )
    assert math.isinf(ba.translator_ci.high)  # paragraph "t1-0" is no IWSLT paragraph: no game, no judge's scale


def test_chrf_and_bleu_grids(records: list[MatchRecord]) -> None:
    table = translation_table(_de_en(records))
    chrf = table.cell("B", "A").metrics["chrf"]  # type: ignore[union-attr]
    assert (chrf.translation, chrf.proofread, chrf.gain, chrf.measured) == (45.0, 52.0, 7.0, 2)
    # row A (proofreader A): cells (A, B) and (A, C); column A (translator A): cells (B, A) and (C, A)
    assert table.row_mean("A", lambda c: c.metrics["chrf"].proofread) == (27 + 70) / 2
    assert table.row_mean("A", lambda c: c.metrics["chrf"].gain) == (-3 + 0) / 2
    assert table.column_mean("A", lambda c: c.metrics["chrf"].translation) == (45 + 48) / 2
    bleu = table.cell("A", "C").metrics["bleu"]  # type: ignore[union-attr]
    assert math.isnan(bleu.translation) and bleu.measured == 0
    assert table.unmeasured == {"chrf": 0, "bleu": 1}
    assert table.row_mean("A", lambda c: c.metrics["bleu"].proofread) == 6.0  # the NaN cell left out

    lines = format_metric_table(table, "chrf").splitlines()
    assert lines[0] == "Table 4. Machine Translation (DE-EN): chrF of the translation and the proofread text"
    assert lines[1].split()[-4:] == ["mean", "Pr", "mean", "gain"]
    assert lines[2].split()[:3] == ["T", "Pr", "gain"]
    row_a = ["A", "90.00", "95.00", "5.00", "30.00", "27.00", "-3.00", "70.00", "70.00", "0.00", "48.50", "-1.50"]
    assert lines[3].split() == row_a
    assert lines[6].split() == ["mean", "T", "46.50", "30.00", "70.00"]
    bleu_text = format_metric_table(table, "bleu")
    assert "BLEU of the translation" in bleu_text and "(1 match(es) without BLEU left out)" in bleu_text
    assert "without chrF" not in format_metric_table(table, "chrf")


def _fisher_interval(r: float, n: int) -> tuple[float, float]:
    half = 1.959963984540054 / math.sqrt(n - 3)
    return math.tanh(math.atanh(r) - half), math.tanh(math.atanh(r) + half)


def test_judge_chrf_correlation_per_role(records: list[MatchRecord]) -> None:
    translator, gain, proofread = judge_correlations(_de_en(records))
    assert translator.points == ((50, 8), (40, 6), (30, 5), (70, 9), (48, 7), (90, 10))
    r = statistics.correlation([50, 40, 30, 70, 48, 90], [8, 6, 5, 9, 7, 10])
    corr = translator.correlation
    assert corr.n == 6 and corr.pearson_r == pytest.approx(r)
    assert (corr.pearson_low, corr.pearson_high) == pytest.approx(_fisher_interval(r, 6))
    assert corr.spearman_rho == pytest.approx(1.0)  # chrF and score rise together
    assert gain.label == "Judge proofreader score vs chrF gain (proofread - translation)"
    assert gain.points == ((10, 9), (4, 7), (-3, 4), (0, 6), (8, 8), (5, 10))
    assert gain.correlation.pearson_r == pytest.approx(
        statistics.correlation([10, 4, -3, 0, 8, 5], [9, 7, 4, 6, 8, 10])
    )
    assert proofread.points[0] == (60, 9)


def test_correlation_is_undefined_when_too_few_or_constant() -> None:
    assert not correlate([(1, 2), (2, 3)]).defined
    flat = correlate([(1, 5), (2, 5), (3, 5), (4, 5)])
    assert flat.n == 4 and not flat.defined


def test_direction_and_seats_without_pair_parameter_or_roles() -> None:
    bare = MatchRecord(
        match_id="x",
        game="deepeval_translation(paragraph=t1-0)",
        seats=["T", "P"],
        returns=[3, 8],
        turns=[],
        metrics={"pair": "en-fr"},
    )
    assert record_pair(bare) == "en-fr"  # from the metrics when the game string has no pair
    table = translation_table([bare])
    cell = table.cell("P", "T")  # seat 0 is the translator
    assert table.number == 5 and cell is not None and (cell.translator_score, cell.proofreader_score) == (3.0, 8.0)
    assert math.isnan(cell.metrics["chrf"].translation) and table.unmeasured["chrf"] == 1


def test_plot_writes_a_figure(records: list[MatchRecord], tmp_path: Path) -> None:
    de_en = _de_en(records)
    out = plot_translation_tables(translation_table(de_en), de_en, tmp_path / "fig" / "t4.png")
    assert out.read_bytes()[:8] == _PNG


def test_print_tables_per_direction(
    records: list[MatchRecord], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert print_tables(records, plot=tmp_path / "t.png") == 0
    out = capsys.readouterr().out
    assert out.index("Table 4. Machine Translation (DE-EN)") < out.index("Table 6. Machine Translation (EN-ZH)")
    assert "deepeval_translation(pair=de-en) (6 matches)" in out
    assert out.count("Judge translator score vs chrF of the translation: n = ") == 2
    assert "Judge translator score vs chrF of the translation: n = 2, correlation undefined" in out  # en-zh
    assert (tmp_path / "t-de-en.png").exists() and (tmp_path / "t-en-zh.png").exists()
    assert print_tables(records[-1:]) == 1 and "no deepeval_translation matches" in capsys.readouterr().out


def test_command_line_on_a_run_directory(
    records: list[MatchRecord], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = tmp_path / "run"
    with Store(run) as store:
        for record in records:
            store.commit(record)
    assert main(["tables", "translation", str(run), "--players", "B", "A"]) == 0
    out = capsys.readouterr().out
    assert "Table 4. Machine Translation (DE-EN): judge scores" in out and "Table 6" in out
    assert "Proof \\ Trans" in out and "\nC " not in out  # only the players asked for, in that order
    assert out.index("\nB ") < out.index("\nA ")
    assert main(["tables", "translation", str(tmp_path / "nothing")]) == 2  # a clear error, no traceback
    assert "no results in" in capsys.readouterr().err


def _token_ends(line: str) -> set[int]:
    return {m.end() for m in re.finditer(r"\S+", line)}


def test_wide_numbers_keep_the_columns_aligned() -> None:
    rows = [
        ("A", "B", "t1-0", (9, 2), (100.0, 88.83), (100.0, 70.0)),  # 100.00 and -11.17: wider than 5
        ("B", "A", "t1-0", (4, 8), (5.0, 30.0), (1.0, 9.0)),
    ]
    table = translation_table([_record("de-en", *row) for row in rows])
    for text, labels in ((format_metric_table(table, "chrf"), ("T", "Pr", "gain")), (format_score_table(table), None)):
        lines = text.splitlines()
        header, sub, body, mean_row = lines[1], lines[2], lines[3:5], lines[5]
        assert "100.00" in text or labels is None
        sub_ends = _token_ends(sub)
        for line in body:  # every number ends where its sub-header ends, then the row means
            ends = sorted(_token_ends(line))
            assert set(ends[1 : 1 + len(sub_ends)]) == sub_ends, (line, sub)
            assert set(ends[1 + len(sub_ends) :]) <= _token_ends(header)  # under "mean Pr", "mean gain"
        # the column mean stands under the first sub-column (T or s_T), which it averages
        first_labels = [m.end() for m in re.finditer(r"\S+", sub)][:: 3 if labels else 2]
        assert sorted(_token_ends(mean_row))[-2:] == first_labels
    assert "-11.17" in format_metric_table(table, "chrf")
