"""Tables 4–6 (Machine Translation): judge grid, chrF/BLEU grids and judge–chrF correlation on hand-built records."""

from __future__ import annotations

import math
import re
import statistics
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from analysis.stats.correlation import correlate
from analysis.tables.translation import (
    CORPUS_BLEU,
    corpus_bleu,
    format_corpus_bleu_table,
    format_metric_table,
    format_score_table,
    judge_correlations,
    plot_translation_tables,
    print_tables,
    record_pair,
    translation_groups,
    translation_table,
)
from deepeval_games.app.commands.cli import main
from deepeval_games.app.storage.store import Store
from deepeval_games.core.records import MatchRecord
from game_defs.translation.scorer import score_texts

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
    assert table.unmeasured == {"chrf": 0, "bleu": 1, CORPUS_BLEU: 6}  # hand-made records: no BLEU statistics
    assert table.row_mean("A", lambda c: c.metrics["bleu"].proofread) == 6.0  # the NaN cell left out

    lines = format_metric_table(table, "chrf").splitlines()
    assert lines[0] == "Table 4. Machine Translation (DE-EN): chrF of the translation and the proofread text"
    assert lines[1].split()[-4:] == ["mean", "Pr", "mean", "gain"]
    assert lines[2].split()[:3] == ["T", "Pr", "gain"]
    row_a = ["A", "90.00", "95.00", "5.00", "30.00", "27.00", "-3.00", "70.00", "70.00", "0.00", "48.50", "-1.50"]
    assert lines[3].split() == row_a
    assert lines[6].split() == ["mean", "T", "46.50", "30.00", "70.00"]
    bleu_text = format_metric_table(table, "bleu")
    assert "sentence BLEU of the translation" in bleu_text
    assert "(1 match(es) without sentence BLEU left out)" in bleu_text
    assert "without chrF" not in format_metric_table(table, "chrf")


# (translator, proofreader, paragraph, reference, translation, proofread text): texts a corpus BLEU is made of
BLEU_TEXTS = [
    ("A", "B", "p1", "The cat sat on the mat today.", "The cat sat on a mat.", "The cat sat on the mat today."),
    ("A", "B", "p2", "We went to the market early.", "We go market.", "We went to the market."),
    ("A", "B", "p3", "It is raining in the city again.", "Rain city.", "It is raining in the city."),
    ("B", "A", "p1", "The cat sat on the mat today.", "A cat is on the mat now.", "A cat sat on the mat now."),
    ("C", "A", "p2", "We went to the market early.", "We went to market early.", "We went to the market early."),
    ("A", "A", "p3", "It is raining in the city again.", "Raining.", "It rains in the city."),  # self-play
]


def _text_record(translator: str, proofreader: str, paragraph: str, reference: str, t: str, pr: str) -> MatchRecord:
    metrics = {"pair": "de-en", "paragraph": paragraph, **score_texts(t, pr, reference, "en")}  # what the scorer keeps
    return MatchRecord(
        match_id=f"{translator}-{proofreader}-{paragraph}",
        game=f"deepeval_translation(pair=de-en,paragraph={paragraph})",
        seats=[translator, proofreader],
        returns=[5.0, 5.0],
        turns=[],
        roles=list(_ROLES),
        metrics=metrics,
    )


def test_the_bleu_grid_is_sacrebleus_corpus_bleu_of_each_cell_and_each_players_texts() -> None:
    import sacrebleu

    records = [_text_record(*row) for row in BLEU_TEXTS]
    table = translation_table(records)

    def corpus(rows: Sequence[tuple[str, ...]], text: int) -> float:
        return float(sacrebleu.corpus_bleu([r[text] for r in rows], [[r[3] for r in rows]], tokenize="13a").score)

    ba = [r for r in BLEU_TEXTS if r[:2] == ("A", "B")]  # proofreader B, translator A: three paragraphs
    cell = table.cell("B", "A")
    assert cell is not None and cell.bleu.measured == 3
    scores = cell.bleu.scores()
    assert scores.translation == pytest.approx(corpus(ba, 4), abs=1e-9)
    assert scores.proofread == pytest.approx(corpus(ba, 5), abs=1e-9)
    assert scores.gain == pytest.approx(corpus(ba, 5) - corpus(ba, 4), abs=1e-9)
    sentence_mean = statistics.mean(r.metrics["bleu_translation"] for r in records[:3])
    assert abs(sentence_mean - scores.translation) > 1  # corpus BLEU is not the mean of the sentence scores
    # translator A's texts pooled over its column (proofreaders B and C), self-play left out
    as_translator = [r for r in BLEU_TEXTS if r[0] == "A" and r[1] != "A"]
    assert table.translator_bleu("A").translation == pytest.approx(corpus(as_translator, 4), abs=1e-9)
    as_proofreader = [r for r in BLEU_TEXTS if r[1] == "A" and r[0] != "A"]
    assert table.proofreader_bleu("A").proofread == pytest.approx(corpus(as_proofreader, 5), abs=1e-9)
    assert math.isnan(corpus_bleu(())) and corpus_bleu(records[0].metrics["bleu_stats_proofread"]) == pytest.approx(100)

    text = format_corpus_bleu_table(table)
    lines = text.splitlines()
    assert lines[0] == f"Table 4. Machine Translation (DE-EN): {CORPUS_BLEU} of the translation and the proofread text"
    assert lines[4].split()[1:4] == [f"{scores.translation:.2f}", f"{scores.proofread:.2f}", f"{scores.gain:.2f}"]
    assert "sacrebleu signature: nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:" in text
    assert "without BLEU statistics" not in text
    # a record made before the scorer kept the statistics is left out and counted
    old = records[0].model_copy(update={"metrics": {k: v for k, v in records[0].metrics.items() if "stats" not in k}})
    assert "(1 match(es) without BLEU statistics left out" in format_corpus_bleu_table(
        translation_table([old, *records[1:]])
    )


def test_the_corpus_bleu_of_chinese_uses_the_chinese_tokenizer() -> None:
    import sacrebleu

    rows = [("我们如何了解自己所知的事物。", "我们如何了解事物。"), ("今天天气很好。", "今天天气好。")]
    stats = [score_texts(hyp, hyp, ref, "zh")["bleu_stats_translation"] for ref, hyp in rows]
    summed = [sum(column) for column in zip(*stats, strict=True)]
    expected = sacrebleu.corpus_bleu([h for _, h in rows], [[r for r, _ in rows]], tokenize="zh").score
    assert corpus_bleu(summed) == pytest.approx(expected, abs=1e-9) and expected > 0


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
    assert out.index(": chrF of the") < out.index(f": {CORPUS_BLEU} of the") < out.index(": sentence BLEU of the")
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
