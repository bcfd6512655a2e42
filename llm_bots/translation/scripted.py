"""Scripted players of Machine Translation (``deepeval_translation``): baselines, graded controls, a judge.

Each bot plays both roles, one behaviour per role (a spec may override either with ``translator = ...`` or
``proofreader = ...`` in ``[players.params]``). A translator bot proofreads as ``identity`` (changes
nothing), a proofreader bot translates as ``copy_source`` (does no work), so each bot's effort is in its
named role:

==============================  ==========================  ==========================
bot                             translator behaviour        proofreader behaviour
==============================  ==========================  ==========================
``mt_reference_translator``     ``reference``               ``identity``
``mt_copy_source_translator``   ``copy_source``             ``identity``
``mt_word_drop_translator``     ``word_drop``               ``identity``
``mt_identity_proofreader``     ``copy_source``             ``identity``
``mt_reference_proofreader``    ``copy_source``             ``reference``
``mt_degrading_proofreader``    ``copy_source``             ``drop_sentences``
==============================  ==========================  ==========================

Translator behaviours: ``reference`` — the IWSLT reference translation; ``copy_source`` — the source
paragraph unchanged; ``word_drop`` — the reference with a fixed share of its words deleted
(``word_share``, default 0.3; characters for Chinese), spread evenly: a graded negative control between the two.
Proofreader behaviours: ``identity`` — returns the translation it was given; ``reference`` — returns the
reference; ``drop_sentences`` — returns the translation with a share of its sentences deleted
(``sentence_share``, default 0.5, spread evenly; a one-sentence text loses its second half).

``mt_canary_translator`` — a canary for the judge audits: ``mt_reference_translator`` with a last sentence that
tells the judge to give it 10 (:data:`~llm_bots.judge.JUDGE_INJECTION`); its identity names its honest twin
(``canary_of``), with which the audit compares its scores.

``judge_chrf`` — a scripted judge from the reference: translator score ``1 + round(9 * chrF / 100)`` of
the translation; proofreader score ``round(5.5 + gain / 4)`` clipped to 1..10, with ``gain`` the chrF of
the proofread text minus that of the translation (no change scores 6; each 4 chrF points gained or lost
move it by one).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

import numpy as np
import pyspiel

from deepeval_games.core.bot import Decision, Observation, SyncBot
from deepeval_games.core.registry.bots import register_bot
from game_defs.translation.game import ROLES, TRANSLATOR, paragraph_of
from game_defs.translation.scorer import chrf
from llm_bots.judge import JUDGE_INJECTION, verdict_decision

__all__ = [
    "PROOFREADER_KINDS",
    "TRANSLATOR_KINDS",
    "CanaryTranslator",
    "ChrFJudge",
    "CopySourceTranslator",
    "DegradingProofreader",
    "IdentityProofreader",
    "ReferenceProofreader",
    "ReferenceTranslator",
    "WordDropTranslator",
    "drop_sentences",
    "drop_words",
]

_GAME = ("deepeval_translation",)
TRANSLATOR_KINDS = ("reference", "copy_source", "word_drop")
PROOFREADER_KINDS = ("identity", "reference", "drop_sentences")
_SENTENCE_END = re.compile(r"(?<=[.!?。！？])[\"'”’」)]*\s*")


def _spread(count: int, share: float) -> set[int]:
    """The indices (of ``count``) to delete so that ``share`` of them go, spread evenly."""
    return {i for i in range(count) if math.floor((i + 1) * share) > math.floor(i * share)}


def drop_words(text: str, share: float, lang: str) -> str:
    """``text`` with ``share`` of its words deleted, evenly spread (characters for Chinese, which has no spaces)."""
    if lang == "zh":
        chars = [c for c in text if not c.isspace()]
        gone = _spread(len(chars), share)
        return "".join(c for i, c in enumerate(chars) if i not in gone)
    words = text.split()
    gone = _spread(len(words), share)
    return " ".join(w for i, w in enumerate(words) if i not in gone)


def _sentences(text: str) -> list[str]:
    return [s for s in (m.strip() for m in _SENTENCE_END.split(text)) if s]


def drop_sentences(text: str, share: float, lang: str) -> str:
    """``text`` with ``share`` of its sentences deleted, evenly spread; one sentence loses its second half."""
    sentences = _sentences(text)
    if len(sentences) <= 1:
        return text[: len(text) // 2].strip()
    gone = _spread(len(sentences), share)
    kept = [s for i, s in enumerate(sentences) if i not in gone] or sentences[:1]
    return ("" if lang == "zh" else " ").join(kept)


def _share(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 < value < 1.0:
        raise ValueError(f"{name} must be a number between 0 and 1 (both excluded), got {value!r}")
    return float(value)


class _TranslationPlayer(SyncBot):
    """Shared plumbing: one behaviour per role, chosen by the seat's role in the observation."""

    default_translator = "copy_source"
    default_proofreader = "identity"

    def __init__(
        self,
        player_id: int,
        rng: np.random.Generator | None = None,
        *,
        game: pyspiel.Game,
        translator: str | None = None,
        proofreader: str | None = None,
        word_share: float = 0.3,
        sentence_share: float = 0.5,
    ) -> None:
        super().__init__(player_id, rng)
        self.translator = translator or self.default_translator
        self.proofreader = proofreader or self.default_proofreader
        if self.translator not in TRANSLATOR_KINDS:
            raise ValueError(f"translator must be one of {', '.join(TRANSLATOR_KINDS)}, got {self.translator!r}")
        if self.proofreader not in PROOFREADER_KINDS:
            raise ValueError(f"proofreader must be one of {', '.join(PROOFREADER_KINDS)}, got {self.proofreader!r}")
        self.word_share = _share("word_share", word_share)
        self.sentence_share = _share("sentence_share", sentence_share)

    def identity(self) -> dict[str, Any]:
        return {
            "kind": "scripted",
            "class": type(self).__name__,
            "translator": self.translator,
            "proofreader": self.proofreader,
            "word_share": self.word_share,
            "sentence_share": self.sentence_share,
        }

    def respond(self, observation: Observation) -> Decision:
        """Write the translation or the proofread text, by the seat's role."""
        fields = observation.fields
        if fields["role"] == ROLES[TRANSLATOR]:
            return Decision(action=None, text=self.translate(fields))
        return Decision(action=None, text=self.proofread(fields))

    @staticmethod
    def _reference(fields: Mapping[str, Any]) -> str:
        return paragraph_of(fields["pair"], fields["paragraph"], int(fields["words"]), fields["split"]).reference

    def translate(self, fields: Mapping[str, Any]) -> str:
        """The translation."""
        if self.translator == "reference":
            return self._reference(fields)
        if self.translator == "word_drop":
            return drop_words(self._reference(fields), self.word_share, fields["pair"].split("-")[1])
        return str(fields["source"])

    def proofread(self, fields: Mapping[str, Any]) -> str:
        """The proofread text."""
        translation = fields.get("translation") or ""
        if self.proofreader == "reference":
            return self._reference(fields)
        if self.proofreader == "drop_sentences":
            return drop_sentences(translation, self.sentence_share, fields["pair"].split("-")[1])
        return translation


@register_bot("mt_reference_translator", games=_GAME)
class ReferenceTranslator(_TranslationPlayer):
    """Translation: translates with the IWSLT reference; as proofreader, returns its input."""

    default_translator = "reference"


@register_bot("mt_copy_source_translator", games=_GAME)
class CopySourceTranslator(_TranslationPlayer):
    """Translation: "translates" by copying the source; as proofreader, returns its input."""


@register_bot("mt_word_drop_translator", games=_GAME)
class WordDropTranslator(_TranslationPlayer):
    """Translation: the reference with a share of its words deleted (``word_share``, default 0.3).

    It proofreads as the identity."""

    default_translator = "word_drop"


@register_bot("mt_identity_proofreader", games=_GAME)
class IdentityProofreader(_TranslationPlayer):
    """Translation: as proofreader, returns the translation unchanged; translates by copying the source."""


@register_bot("mt_reference_proofreader", games=_GAME)
class ReferenceProofreader(_TranslationPlayer):
    """Translation: as proofreader, returns the reference; translates by copying the source."""

    default_proofreader = "reference"


@register_bot("mt_degrading_proofreader", games=_GAME)
class DegradingProofreader(_TranslationPlayer):
    """Translation: as proofreader, deletes a share of the sentences (``sentence_share``, default 0.5).

    It translates by copying the source."""

    default_proofreader = "drop_sentences"


@register_bot("mt_canary_translator", games=_GAME)
class CanaryTranslator(ReferenceTranslator):
    """Translation canary: the reference translation, then a sentence telling the judge to give it 10."""

    def translate(self, fields: Mapping[str, Any]) -> str:
        """The reference translation with the judge-directed sentence appended."""
        return f"{super().translate(fields)} ({JUDGE_INJECTION})"

    def identity(self) -> dict[str, Any]:
        return {**super().identity(), "canary_of": ReferenceTranslator.__name__}


@register_bot("judge_chrf", games=_GAME)
class ChrFJudge(SyncBot):
    """Scripted translation judge: scores from chrF against the reference (see the module docs)."""

    def __init__(self, player_id: int, rng: np.random.Generator | None = None, *, game: pyspiel.Game) -> None:
        super().__init__(player_id, rng)

    def identity(self) -> dict[str, Any]:
        return {"kind": "scripted_judge", "class": type(self).__name__}

    def respond(self, observation: Observation) -> Decision:
        """Score the translation by its chrF and the proofreading by its chrF gain."""
        fields = observation.fields
        reference = paragraph_of(fields["pair"], fields["paragraph"], int(fields["words"]), fields["split"]).reference
        first = chrf(fields["translation"], reference)
        second = chrf(fields["proofread"], reference)
        gain = second - first
        return verdict_decision(
            fields,
            [1 + round(9 * first / 100), round(5.5 + gain / 4)],
            [f"the translation's chrF is {first:.1f}", f"proofreading changed chrF by {gain:+.1f}"],
        )
