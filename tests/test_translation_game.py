"""Machine Translation with scripted players: the game, the reference metrics, the controls' ordering, the specs."""

from __future__ import annotations

import asyncio
import re
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from deepeval_games import load_game, play_match, run_experiment
from deepeval_games.app.commands.cli import main
from deepeval_games.app.execution.one_match import build_player
from deepeval_games.app.spec.loading import load_spec
from deepeval_games.app.spec.players import PlayerSpec
from deepeval_games.core.errors import DeepEvalError
from deepeval_games.core.records import MatchRecord
from deepeval_games.core.registry.bots import scorers_for
from game_defs.translation import scorer as translation_scorer
from game_defs.translation.game import REPLY_TOKENS_BASE, REPLY_TOKENS_PER_WORD, sample_games
from game_defs.translation.iwslt import load_iwslt2017
from game_defs.translation.scorer import score_texts
from llm_bots.translation.scripted import drop_sentences, drop_words

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]
PAIRS = ("de-en", "en-fr", "en-zh")
METRICS = ("chrf_translation", "chrf_proofread", "chrf_gain", "bleu_translation", "bleu_proofread", "bleu_gain")


def _play(game_string: str, translator: str, proofreader: str, judge: str = "judge_chrf", **params: Any) -> MatchRecord:
    game = load_game(game_string)
    bots = [
        build_player(PlayerSpec(name="t", bot=translator, params=params), game, 0, np.random.default_rng(0)),
        build_player(PlayerSpec(name="p", bot=proofreader, params=params), game, 1, np.random.default_rng(1)),
    ]
    referee_judge = build_player(PlayerSpec(name="j", bot=judge), game, -2, np.random.default_rng(2))
    return asyncio.run(
        play_match(
            game,
            bots,
            seed=3,
            seat_names=["t", "p"],
            judge=referee_judge,
            scorers=scorers_for("deepeval_translation"),
        )
    )


@pytest.mark.parametrize("pair", PAIRS)
def test_controls_are_ordered_by_chrf_and_bleu_in_every_direction(pair: str) -> None:
    paragraph = load_iwslt2017(pair).paragraphs()[3].paragraph_id
    game = f"deepeval_translation(pair={pair},paragraph={paragraph})"
    reference = _play(game, "mt_reference_translator", "mt_identity_proofreader")
    dropped = _play(game, "mt_word_drop_translator", "mt_identity_proofreader")
    copied = _play(game, "mt_copy_source_translator", "mt_identity_proofreader")
    for metric in ("chrf_translation", "bleu_translation"):
        assert reference.metrics[metric] > dropped.metrics[metric] > copied.metrics[metric], metric
    assert reference.metrics["chrf_translation"] == pytest.approx(100.0)
    assert reference.metrics["chrf_gain"] == dropped.metrics["bleu_gain"] == 0.0  # the identity proofreader

    degraded = _play(game, "mt_word_drop_translator", "mt_degrading_proofreader")
    corrected = _play(game, "mt_word_drop_translator", "mt_reference_proofreader")
    assert degraded.metrics["chrf_gain"] < 0 < corrected.metrics["chrf_gain"]
    assert degraded.metrics["bleu_gain"] < 0 < corrected.metrics["bleu_gain"]
    assert corrected.metrics["chrf_proofread"] == pytest.approx(100.0)

    for record in (reference, degraded, corrected):  # the record contract the translation tables read
        assert record.roles == ["translator", "proofreader"] and record.seats == ["t", "p"]
        assert record.metrics["pair"] == pair and record.metrics["paragraph"] == paragraph
        scores = record.metrics["judge_scores"]
        assert record.returns == [float(scores["translator"]), float(scores["proofreader"])]
        assert all(isinstance(record.metrics[m], float) for m in METRICS)
        stats = [record.metrics[f"bleu_stats_{text}"] for text in ("translation", "proofread")]
        assert all(len(s) == 10 and all(isinstance(v, int) for v in s) for s in stats)  # corpus BLEU's counts
        assert "eff:no" in record.metrics["bleu_corpus_signature"] and "eff:yes" in record.metrics["bleu_signature"]
    assert degraded.returns[1] < 6 < corrected.returns[1]  # the chrF judge sees the gains too


def test_the_chinese_target_uses_the_chinese_bleu_tokenizer() -> None:
    reference = "我们如何了解自己所知的事物。"
    zh = score_texts("我们如何了解事物。", reference, reference, "zh")
    assert zh["bleu_translation"] > 0 and "tok:zh" in zh["bleu_signature"] and "tok:zh" in zh["bleu_corpus_signature"]
    assert score_texts("我们如何了解事物。", reference, reference, "en")["bleu_translation"] == 0.0  # one "word"
    assert score_texts("", reference, reference, "zh")["chrf_translation"] == 0.0
    translation_scorer._chrf.cache_clear()  # fresh metrics: nothing scored yet
    translation_scorer._bleu.cache_clear()
    translation_scorer._corpus_bleu.cache_clear()
    both_empty = score_texts("", "", reference, "fr")  # an empty translation proofread as empty: still signed
    assert both_empty["chrf_gain"] == 0.0 and "nrefs:1" in both_empty["chrf_signature"]
    assert "nrefs:1" in both_empty["bleu_corpus_signature"]
    assert both_empty["bleu_stats_translation"][:3] == [0, len(reference.split()), 0]  # the reference still counts


def test_the_degrading_controls_delete_what_they_say() -> None:
    assert drop_words("a b c d e f g h i j", 0.3, "en") == "a b c e f h i"
    assert drop_words("一二三四五六七八九十", 0.5, "zh") == "一三五七九"
    assert drop_sentences("One. Two! Three? Four.", 0.5, "en") == "One. Three?"
    assert drop_sentences("一。二。三。四。", 0.5, "zh") == "一。三。"
    assert drop_sentences("A single sentence here.", 0.5, "en") == "A single se"


def test_bad_parameters_and_bot_settings_are_refused() -> None:
    for bad, message in [
        ("deepeval_translation(pair=fr-de)", "unknown translation pair"),
        ("deepeval_translation(pair=en-zh,paragraph=9999-p1)", "has no talk 9999"),
        ("deepeval_translation(words=3)", "words must be"),
        ("deepeval_translation(split=tst2015)", "split must be"),
        ("deepeval_translation(rubric=fluent)", "rubric must be"),
    ]:
        with pytest.raises(DeepEvalError, match=message):
            load_game(bad)
    game = load_game("deepeval_translation")
    with pytest.raises(DeepEvalError, match="word_share must be"):
        build_player(PlayerSpec(name="x", bot="mt_word_drop_translator", params={"word_share": 1.5}), game, 0, None)
    with pytest.raises(DeepEvalError, match="proofreader must be one of"):
        build_player(PlayerSpec(name="x", bot="mt_copy_source_translator", params={"proofreader": "x"}), game, 0, None)


def test_the_game_shows_the_source_never_the_reference_and_caps_replies_by_paragraph() -> None:
    game = load_game("deepeval_translation(pair=en-zh,paragraph=2455-p2,words=40)")
    paragraph = load_iwslt2017("en-zh").paragraph("2455-p2", 40)
    assert paragraph.source in game.rules_text() and paragraph.reference[:20] not in game.rules_text()
    state = game.new_initial_state()
    fields = state.observation_fields(0)
    assert fields["source"] == paragraph.source and "reference" not in fields
    assert game.reply_limit("translator") == REPLY_TOKENS_BASE + REPLY_TOKENS_PER_WORD * paragraph.source_words
    assert game.reply_limit("judge") is None
    assert str(load_game(str(game))) == str(game)  # the paragraph id survives OpenSpiel's game-string parser


def test_the_rubric_parameter_selects_the_papers_two_criteria_and_the_default_keeps_the_old_game_string() -> None:
    base = "deepeval_translation(pair=en-fr,paragraph=2455-p2,words=40)"
    default, paper = load_game(base), load_game(base.replace(")", ",rubric=paper)"))
    assert "rubric" not in str(default) and str(load_game(base.replace(")", ",rubric=extended)"))) == str(default)
    assert "rubric=paper" in str(paper) and str(load_game(str(paper))) == str(paper)  # round-trips
    briefs = {}
    for name, game in (("extended", default), ("paper", paper)):
        state = game.new_initial_state()
        for text in ("Bonjour.", "Bonjour !"):
            state.apply_action(state.intern_utterance(state.current_player(), text))
        swapped = state.judge_text_presented([1, 0], ["B", "A"])
        briefs[name] = (re.findall(r"^\d\. .*$", state.judge_text(), re.MULTILINE), swapped)
    (extended, _), (criteria, swapped) = briefs["extended"], briefs["paper"]
    assert extended == [
        "1. Translator: is the translation a faithful, complete and fluent French rendering of the English source?",
        "2. Proofreader: is the proofread version more accurate and fluent than the translation it was given "
        "(without losing anything of the source)?",
    ]
    assert criteria == [
        "1. Translator: is the French translation faithful to the meaning of the English source?",
        "2. Proofreader: is the proofread version a more accurate translation than the one it was given?",
    ]
    assert "1. A (the proofreader): is the proofread version a more accurate translation" in swapped
    assert "fluent" not in swapped and "complete" not in swapped  # the audit's swapped brief keeps the rubric


def test_the_examples_games_are_the_seeded_samples_and_the_scripted_example_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for name, expected in [
        ("translation_scripted", sample_games(count=2, seed=0)),
        ("translation_local_model", sample_games(("en-zh", "de-en"), count=1, seed=0, words=30)),
        ("paper/tables4_6_translation", sample_games(count=10, seed=0)),
    ]:
        spec = tomllib.loads((ROOT / "examples" / f"{name}.toml").read_text(encoding="utf-8"))
        assert spec["experiment"]["games"] == expected, name
    paper = load_spec(ROOT / "examples" / "paper" / "tables4_6_translation.toml")
    assert len(paper.players) == 3 and all(p.model for p in paper.players) and paper.pairing == "round_robin"
    assert {re.search(r"pair=([a-z-]+)", g)[1] for g in paper.games} == set(PAIRS)  # type: ignore[index]

    result = run_experiment(ROOT / "examples" / "translation_scripted.toml", tmp_path / "run")
    assert not result.failed and result.played == 120
    # the tables command on the example's run directory: Tables 4-6, the correlations and one figure each
    assert main(["tables", "translation", str(tmp_path / "run"), "--plot", str(tmp_path / "t.png")]) == 0
    out = capsys.readouterr().out
    for number, pair in ((4, "DE-EN"), (5, "EN-FR"), (6, "EN-ZH")):
        assert f"Table {number}. Machine Translation ({pair}): judge scores" in out
        assert f"Table {number}. Machine Translation ({pair}): chrF of the translation" in out
        assert (tmp_path / f"t-{pair.lower()}.png").read_bytes()[:4] == b"\x89PNG"
    assert out.count("Judge translator score vs chrF of the translation: n = 40, Pearson r = ") == 3
    by_translator: dict[str, list[float]] = {}
    for record in result.records:
        by_translator.setdefault(record.seats[0], []).append(record.metrics["chrf_translation"])
    mean = {name: sum(v) / len(v) for name, v in by_translator.items()}
    assert mean["reference"] > mean["word-drop"] > mean["copy-source"]
