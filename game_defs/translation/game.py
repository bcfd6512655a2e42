"""Machine Translation on IWSLT 2017, the DeepEval paper's second writer–editor task (translator–proofreader).

Load string::

    deepeval_translation(pair=en-zh, paragraph=2455-p1, words=120, split=tst2017)

Rules card
----------
* Two seats with different roles: seat 0 is the **translator** ("Player 1"), seat 1 the **proofreader**
  ("Player 2"). Sequential, perfect information: both seats see everything said.
* The referee shows both seats one paragraph of a TED talk in the source language (a run of consecutive
  segments of one talk, :mod:`game_defs.translation.iwslt`). The reference translation is never shown.
* The translator translates the paragraph (free text); then the proofreader, who sees the source and the
  translation (quoted), replies with the polished translation only. That is the whole dialogue: two moves.
* Then a **verdict node**: a chance node at which :meth:`TranslationState.is_judge_turn` is true; its
  outcomes are every pair (translator score, proofreader score) in 1..10, numbered as in
  :mod:`game_defs.verdicts`. The judge is asked whether the translation is faithful to the source, and
  whether the proofread text is more accurate than the translation.
* Returns: the translator gets the translator score and the proofreader the proofreader score (0 and 0
  before the verdict), a pure function of the terminal history.
* Reference metrics (chrF, BLEU) are not part of the returns: the scorer
  :mod:`game_defs.translation.scorer` adds them to the match record beside the judge's scores.

Free-text moves work as in :mod:`game_defs.code_review.game`: a move is the id of an utterance in the state's
pool; id 0 (:data:`EMPTY`) is the empty text, the only listed legal action at a text node and the
**penalty** of a seat without a usable answer (an empty translation, or an empty proofread text).

Each role's reply cap (the task contract's ``reply_limit``) is sized from the paragraph:
``REPLY_TOKENS_BASE + REPLY_TOKENS_PER_WORD * source words`` tokens, enough for a whole paragraph in any
of the three target languages; an LLM player whose own ``max_tokens`` is larger keeps its own.

Parameters:

* ``pair`` (``de-en``, ``en-fr`` or ``en-zh``; default ``de-en``): the direction; a game variant.
* ``paragraph`` (default ``first``, the direction's first paragraph): ``<talk id>-p<k>``, the data item.
* ``words`` (int >= 10, default 120): paragraph size in source words (see the data layer for how runs are cut).
* ``split`` (``tst2017`` or ``tst2016``, default ``tst2017``): the IWSLT 2017 test set.
* ``rubric`` (``extended`` or ``paper``, default ``extended``): the judge's criteria. ``paper``
  (``preset = "paper"``): is the translation semantically true to the source, and is the proofread text more
  accurate than the translation (the paper's two criteria); ``extended``: the translation is also judged on being
  complete and fluent, and the proofread text on being more fluent too without losing anything of the source (this
  project's first rubric). The default is left out of the game string, so games made before this parameter keep
  their string and match ids; ``rubric=paper`` is a different game string, never pooled with them.

Payoff bounds: ``min_utility = 0``, ``max_utility = 10``. General-sum.

Version history: 1 — first version; ``rubric`` (the paper's criteria under ``preset = "paper"``; the default
leaves version 1 games unchanged).
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Mapping, Sequence
from typing import Any, TypedDict

import pyspiel

from deepeval_games.core.message_pool import seat_label
from deepeval_games.core.quoting import quote_player_text
from deepeval_games.core.task import Study, register_data_source
from game_defs.data_files import IWSLT2017_PAIRS, file_sources, iwslt2017_relpath
from game_defs.judged_exchange import (
    EMPTY,
    EMPTY_REPLY,
    QUOTES_ARE_WORDS,
    SCORE_MAX,
    SCORE_MIN,
    JudgedExchangeGame,
    JudgedExchangeState,
    exchange_game_info,
    exchange_game_type,
)
from game_defs.translation.iwslt import DEFAULT_WORDS, PAIRS, SPLITS, Paragraph, check_pair, load_iwslt2017
from game_defs.translation.iwslt import sample_paragraphs as _sample

__all__ = [
    "EMPTY",
    "FIRST",
    "GAME_VERSION",
    "LANGUAGES",
    "PROOFREADER",
    "REPLY_TOKENS_BASE",
    "REPLY_TOKENS_PER_WORD",
    "ROLES",
    "RUBRICS",
    "SCORE_MAX",
    "SCORE_MIN",
    "SHORT_NAME",
    "TRANSLATOR",
    "ParagraphFields",
    "TranslationFields",
    "TranslationGame",
    "TranslationJudgeFields",
    "TranslationState",
    "paragraph_of",
    "sample_games",
]

GAME_VERSION = 1
SHORT_NAME = "deepeval_translation"
FIRST = "first"
"""The default ``paragraph``: the direction's first paragraph."""

_DEFAULT_PARAMS: dict[str, Any] = {
    "pair": "de-en",
    "paragraph": FIRST,
    "words": DEFAULT_WORDS,
    "split": "tst2017",
    "rubric": "extended",
}
RUBRICS = ("extended", "paper")
"""The judge's criteria: this project's first rubric (faithful, complete, fluent), or the paper's two criteria."""
PRESETS: dict[str, dict[str, Any]] = {"paper": {"rubric": "paper"}, "project": {"rubric": "extended"}}
"""Game parameters a spec's ``preset`` selects (:func:`deepeval_games.app.spec.presets.apply_preset`): the paper's judge
criteria, or this project's first rubric (the default, left out of the game string: the project preset's games and
match ids are those made before the parameter)."""

TRANSLATOR, PROOFREADER = 0, 1
ROLES: tuple[str, str] = ("translator", "proofreader")
_MIN_WORDS = 10

LANGUAGES: Mapping[str, str] = {"de": "German", "en": "English", "fr": "French", "zh": "Chinese"}
REPLY_TOKENS_BASE = 128
REPLY_TOKENS_PER_WORD = 6
"""A reply cap of ``REPLY_TOKENS_BASE + REPLY_TOKENS_PER_WORD * source words`` tokens fits a paragraph."""

_STUDY_EN = (
    "2435-p4",
    "2435-p5",
    "2449-p10",
    "2432-p10",
    "2458-p4",
    "2455-p8",
    "2455-p3",
    "2458-p11",
    "2456-p5",
    "2459-p1",
)
STUDY_PARAGRAPHS: Mapping[str, tuple[str, ...]] = {
    "de-en": (
        "2413-p7", "2413-p11", "2438-p15", "2438-p1", "2442-p5",
        "2507-p5", "2507-p2", "2442-p10", "2447-p10", "2478-p5",
    ),
    "en-fr": _STUDY_EN,
    "en-zh": _STUDY_EN,
}  # fmt: skip
"""The paragraphs of the default study per direction (those of ``examples/paper/tables4_6_translation.toml``)."""

_GAME_TYPE = exchange_game_type(SHORT_NAME, "DeepEval Machine Translation (IWSLT 2017)", _DEFAULT_PARAMS)


def paragraph_of(pair: str, paragraph: str, words: int = DEFAULT_WORDS, split: str = "tst2017") -> Paragraph:
    """The paragraph a game is about (``first``: the direction's first); ``ValueError`` when there is none."""
    test_set = load_iwslt2017(pair, split)
    if paragraph == FIRST:
        return test_set.paragraphs(words)[0]
    return test_set.paragraph(paragraph, words)


def sample_games(pairs: Sequence[str] = PAIRS, count: int = 3, seed: int = 0, words: int = DEFAULT_WORDS) -> list[str]:
    """Game strings of ``count`` paragraphs per direction, drawn from ``seed`` (for a spec's ``games``)."""
    out = []
    for pair in pairs:
        for paragraph in _sample(pair, count, seed, words):
            extra = "" if words == DEFAULT_WORDS else f",words={words}"
            out.append(f"{SHORT_NAME}(pair={pair},paragraph={paragraph}{extra})")
    return out


class ParagraphFields(TypedDict):
    """The paragraph a game is about, as the seats and the judge are given it."""

    pair: str
    paragraph: str
    """The paragraph id (``<talk id>-p<k>``), resolved from ``first``."""
    words: int
    split: str
    source_language: str
    target_language: str
    source: str
    """The paragraph to translate."""


class TranslationFields(ParagraphFields):
    """A seat's observation as named values (:meth:`TranslationState.observation_fields`)."""

    role: str
    """This seat's role: ``translator`` or ``proofreader``."""
    translation: str | None
    """The translator's text (None before it)."""
    proofread: str | None
    """The proofreader's text (None before it)."""
    to_move: int | None
    """The seat to write now, None once the dialogue is over."""


class TranslationJudgeFields(ParagraphFields):
    """What the judge is given as values (:meth:`TranslationState.judge_fields`); roles, never names."""

    task: str
    translation: str
    proofread: str
    roles: list[str]
    score_min: int
    score_max: int


class TranslationGame(JudgedExchangeGame):
    """The game: parameters, bounds, the paragraph and the state factory; seat 0 translates, seat 1 proofreads."""

    game_type: pyspiel.GameType = _GAME_TYPE
    roles = ROLES
    presets = PRESETS

    parameter_bounds: Mapping[str, tuple[float, float]] = {"words": (_MIN_WORDS, 10_000)}
    """What a spec may ask for, checked before the game is loaded (the task contract's hook)."""

    def default_study(self) -> Study:
        """``eval``: Tables 4-6's 30 paragraphs (three directions), against the scripted translators and
        proofreaders."""
        return Study(
            games=tuple(
                f"{SHORT_NAME}(pair={pair},paragraph={paragraph})"
                for pair, paragraphs in STUDY_PARAGRAPHS.items()
                for paragraph in paragraphs
            ),
            opponents=(
                {"name": "reference", "bot": "mt_reference_translator"},
                {"name": "copy-source", "bot": "mt_copy_source_translator"},
                {"name": "word-drop", "bot": "mt_word_drop_translator"},
                {"name": "reference-proofreader", "bot": "mt_reference_proofreader"},
                {"name": "degrading-proofreader", "bot": "mt_degrading_proofreader"},
            ),
            epsilon=0.5,
            budget_matches=600,
            judge="required",
            judges=("judge_chrf", "openai/gpt-4.1"),
            note="Tables 4-6's paragraphs: every ordered pair (translator, proofreader), de-en, en-fr and en-zh",
        )

    def __init__(self, params: Mapping[str, Any] | None = None) -> None:
        merged = {**_DEFAULT_PARAMS, **(params or {})}
        check_pair(str(merged["pair"]))
        if str(merged["split"]) not in SPLITS:
            raise ValueError(f"split must be one of {', '.join(SPLITS)}, got {merged['split']!r}")
        words = merged["words"]
        if isinstance(words, bool) or not isinstance(words, int) or words < _MIN_WORDS:
            raise ValueError(f"words must be a whole number >= {_MIN_WORDS}, got {words!r}")
        if merged["rubric"] not in RUBRICS:
            raise ValueError(f"rubric must be one of {', '.join(RUBRICS)}, got {merged['rubric']!r}")
        self.paper_rubric = merged["rubric"] == "paper"
        if not self.paper_rubric:  # the default stays out of the string: games made before the parameter keep their ids
            del merged["rubric"]
        self.paragraph = paragraph_of(str(merged["pair"]), str(merged["paragraph"]), words, str(merged["split"]))
        super().__init__(self.game_type, exchange_game_info(2), merged)  # the translation, the proofread text

    def new_initial_state(self) -> TranslationState:
        """A new game: nothing written yet, the translator to write."""
        return TranslationState(self)

    def reply_limit(self, role: str) -> int | None:
        """Tokens a translator's or proofreader's reply may need: a whole paragraph (None for other roles)."""
        if role not in ROLES:
            return None
        return REPLY_TOKENS_BASE + REPLY_TOKENS_PER_WORD * self.paragraph.source_words

    def languages(self) -> tuple[str, str]:
        """The source and target languages, in English (``("English", "Chinese")``)."""
        src, tgt = check_pair(str(self.get_parameters()["pair"]))
        return LANGUAGES[src], LANGUAGES[tgt]

    def rules_text(self) -> str:
        """The rules, the roles' instructions and the paragraph, as the referee broadcasts them to both seats."""
        src, tgt = self.languages()
        return (
            f"This is a translation game between two players: {seat_label(TRANSLATOR)} is the translator, "
            f"{seat_label(PROOFREADER)} the proofreader.\n"
            f"The translator translates the {src} paragraph below into {tgt}, completely and faithfully, and "
            "replies with the translation only.\n"
            f"The proofreader then reads the source and the translation and polishes the translation: it "
            f"corrects mistranslations, omissions and awkward {tgt}, and replies with the polished {tgt} text "
            "only, without comments.\n"
            "A judge then scores the translator and the proofreader from 1 to 10 each.\n"
            f"The {src} paragraph:\n{self.paragraph.source}"
        )


class TranslationState(JudgedExchangeState):
    """A game in progress: the utterance pool, the two texts played, and the verdict once given."""

    roles = ROLES

    def __init__(self, game: TranslationGame) -> None:
        super().__init__(game)
        params = game.get_parameters()
        self._pair = str(params["pair"])
        self._words = int(params["words"])
        self._split = str(params["split"])
        self._paragraph_id = game.paragraph.paragraph_id
        self._source = game.paragraph.source
        self._languages = game.languages()
        self._paper_rubric = game.paper_rubric

    def _header(self) -> str:
        return f"IWSLT 2017 {self._pair} paragraph {self._paragraph_id}"

    def _recall_header(self) -> str:
        return f"Source ({self._pair} paragraph {self._paragraph_id}):\n{self._source}"

    def _move_caption(self, index: int) -> str:
        what = "translation" if index == TRANSLATOR else "proofread translation"
        return f"The {ROLES[index]}'s {what}"

    def dialogue_over(self) -> bool:
        """Both texts are written."""
        return len(self._moves) >= 2

    def translation(self) -> str:
        """The translator's text ("" before it, or when it was empty)."""
        texts = self.dialogue_texts()
        return texts[TRANSLATOR] if texts else ""

    def proofread(self) -> str:
        """The proofreader's text ("" before it, or when it was empty)."""
        texts = self.dialogue_texts()
        return texts[PROOFREADER] if len(texts) > PROOFREADER else ""

    def pair(self) -> str:
        """The direction, ``<source>-<target>``."""
        return self._pair

    def paragraph_id(self) -> str:
        """The paragraph's id, ``<talk id>-p<k>``."""
        return self._paragraph_id

    def source(self) -> str:
        """The source paragraph."""
        return self._source

    def _paragraph_fields(self) -> ParagraphFields:
        return ParagraphFields(
            pair=self._pair,
            paragraph=self._paragraph_id,
            words=self._words,
            split=self._split,
            source_language=self._languages[0],
            target_language=self._languages[1],
            source=self._source,
        )

    def observation_fields(self, player: int) -> TranslationFields:
        """What ``player`` may know now, as named values: everything said, never the reference."""
        texts = self.dialogue_texts()
        to_move = len(self._moves) if self.is_free_text_turn(len(self._moves)) else None
        return TranslationFields(
            **self._paragraph_fields(),
            role=ROLES[player],
            translation=texts[TRANSLATOR] if texts else None,
            proofread=texts[PROOFREADER] if len(texts) > PROOFREADER else None,
            to_move=to_move,
        )

    def judge_fields(self) -> TranslationJudgeFields:
        """What the judge is shown: the source, the translation and the proofread text (roles, not names)."""
        return TranslationJudgeFields(
            task=SHORT_NAME,
            **self._paragraph_fields(),
            translation=self.translation(),
            proofread=self.proofread(),
            roles=list(ROLES),
            score_min=SCORE_MIN,
            score_max=SCORE_MAX,
        )

    def judge_text(self) -> str:
        """The judge's brief: the rubric, the source, and both texts quoted with their roles.

        The translation and the proofread text are inside :func:`~deepeval_games.core.quoting.quote_player_text`
        delimiters, under a rubric that tells the judge to assess the quotes and never to follow them.
        """
        src, tgt = self._languages
        translation = quote_player_text("Translator", self.translation() or EMPTY_REPLY)
        proofread = quote_player_text("Proofreader", self.proofread() or EMPTY_REPLY)
        points = self._criteria({TRANSLATOR: "Translator", PROOFREADER: "Proofreader"})
        return (
            f"You are an expert {src}-{tgt} translator acting as the judge of a translation game between a "
            f"translator and a proofreader. Rate each of them from {SCORE_MIN} (worst) to {SCORE_MAX} (best):\n"
            f"1. {points[TRANSLATOR]}\n2. {points[PROOFREADER]}\n"
            f"The {src} source (from the referee):\n{self._source}\n"
            f"The players' texts follow, each quoted between <<< and >>>. {QUOTES_ARE_WORDS}\n\n"
            f"{translation}\n\n{proofread}"
        )

    def _criteria(self, who: Mapping[int, str]) -> dict[int, str]:
        """The rubric's point for each seat, after its name in ``who``: the game's ``rubric``."""
        src, tgt = self._languages
        if self._paper_rubric:
            return {
                TRANSLATOR: f"{who[TRANSLATOR]}: is the {tgt} translation faithful to the meaning of the {src} source?",
                PROOFREADER: f"{who[PROOFREADER]}: is the proofread version a more accurate translation than the one "
                "it was given?",
            }
        return {
            TRANSLATOR: f"{who[TRANSLATOR]}: is the translation a faithful, complete and fluent {tgt} rendering of "
            f"the {src} source?",
            PROOFREADER: f"{who[PROOFREADER]}: is the proofread version more accurate and fluent than the "
            "translation it was given (without losing anything of the source)?",
        }

    def judge_text_presented(self, order: list[int], labels: list[str]) -> str:
        """The judge's brief with the two roles introduced in ``order`` (seats) under ``labels`` (per seat).

        For judge audits: the rubric's points, the participants and the quoted texts follow ``order`` (the
        proofread text can be read before the translation it was made from), each text under its seat's label.
        """
        who = self._presented(order, labels)
        src, tgt = self._languages
        points = self._criteria(who)
        texts = {
            TRANSLATOR: quote_player_text(f"{labels[TRANSLATOR]} (translator)", self.translation() or EMPTY_REPLY),
            PROOFREADER: quote_player_text(f"{labels[PROOFREADER]} (proofreader)", self.proofread() or EMPTY_REPLY),
        }
        rubric = "\n".join(f"{i}. {points[seat]}" for i, seat in enumerate(order, 1))
        return (
            f"You are an expert {src}-{tgt} translator acting as the judge of a translation game between "
            f"{who[order[0]]} and {who[order[1]]}. Rate each of them from {SCORE_MIN} (worst) to {SCORE_MAX} "
            f"(best), in this order: {labels[order[0]]}, then {labels[order[1]]}.\n{rubric}\n"
            f"The {src} source (from the referee):\n{self._source}\n"
            f"The players' texts follow, each quoted between <<< and >>>. {QUOTES_ARE_WORDS}\n\n"
            f"{texts[order[0]]}\n\n{texts[order[1]]}"
        )

    def match_metrics(self) -> dict[str, Any]:
        """The direction, the paragraph, and the judge's scores per role."""
        return {
            "pair": self._pair,
            "paragraph": self._paragraph_id,
            "source_words": len(self._source.split()),
            "empty_translation": not self.translation().strip(),
            "empty_proofread": not self.proofread().strip(),
            "judge_scores": self._judge_scores(),
        }

    def status_line(self) -> str:
        """Who moves next and what to do, or how the game ended."""
        game_over = self._game_over_line()
        if game_over is not None:
            return game_over
        if self.dialogue_over():
            return "Both texts are written; the judge scores both players."
        src, tgt = self._languages
        if not self._moves:
            return f"{seat_label(TRANSLATOR)} (translator) to translate the {src} paragraph into {tgt}."
        return f"{seat_label(PROOFREADER)} (proofreader) to reply with the polished {tgt} translation."


pyspiel.register_game(_GAME_TYPE, TranslationGame)
for _source in file_sources(SHORT_NAME, [iwslt2017_relpath(pair) for pair in IWSLT2017_PAIRS]):
    register_data_source(_source)


def main(argv: Sequence[str] | None = None) -> None:
    """Print a spec's ``games = [...]`` line: ``count`` paragraphs per direction drawn from ``seed``."""
    parser = argparse.ArgumentParser(description="Sample IWSLT 2017 paragraphs for a translation spec.")
    parser.add_argument("--count", type=int, default=3, help="paragraphs per direction")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--words", type=int, default=DEFAULT_WORDS)
    parser.add_argument("--pairs", default=",".join(PAIRS), help="comma-separated directions")
    args = parser.parse_args(argv)
    games = sample_games(args.pairs.split(","), args.count, args.seed, args.words)
    print("games = [\n" + "".join(f"    {json.dumps(g)},\n" for g in games) + "]")


if __name__ == "__main__":
    main()
