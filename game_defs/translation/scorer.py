"""Reference metrics for Machine Translation: chrF and BLEU of both texts against the IWSLT reference.

Registered as a scorer of ``deepeval_translation``: after every match the engine adds these to
``record.metrics``, beside the judge's scores (``judge_scores``), so the judge can be checked against them:

* ``chrf_translation``, ``chrf_proofread`` — sacrebleu chrF (defaults: character 6-grams, beta 2) of the
  translation and of the proofread text against the reference, on the one paragraph (0..100);
* ``bleu_translation``, ``bleu_proofread`` — sacrebleu BLEU at the sentence level (the paragraph scored alone,
  with effective order), tokenised with ``zh`` for a Chinese target and ``13a`` otherwise (0..100);
* ``chrf_gain``, ``bleu_gain`` — the proofreading gain: proofread minus translation;
* ``bleu_stats_translation``, ``bleu_stats_proofread`` — BLEU's sufficient statistics of the text against the
  reference, as sacrebleu counts them (:data:`BLEU_STATS`: the text's and the reference's lengths in tokens, then
  the matching and the total n-grams for n = 1..4). Summed over matches they give corpus BLEU, the score MT work
  reports (``sacrebleu.corpus_bleu``: one BLEU over all the texts, not a mean of sentence scores), which the
  translation tables print (:func:`analysis.tables.translation.corpus_bleu`);
* ``pair`` and ``paragraph`` — the direction and the paragraph id;
* ``chrf_signature``, ``bleu_signature`` — sacrebleu's signatures of the sentence-level metrics, and
  ``bleu_corpus_signature`` that of corpus BLEU over the statistics (no effective order), for reproducibility.

An empty text scores 0 (its statistics count the reference's length, as a corpus score of an empty output
does). Importing this module registers the game too (it imports :mod:`game_defs.translation.game`).
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any

import pyspiel

from deepeval_games.core.records import MatchRecord
from deepeval_games.core.registry.bots import register_scorer
from game_defs.translation.game import SHORT_NAME, TranslationState, paragraph_of

if TYPE_CHECKING:  # sacrebleu is imported when a text is first scored: every command registers this scorer
    from sacrebleu.metrics import BLEU, CHRF

__all__ = ["BLEU_STATS", "bleu", "bleu_statistics", "chrf", "reference_metrics", "score_texts"]

BLEU_STATS = (
    "hyp_len",
    "ref_len",
    "correct_1",
    "correct_2",
    "correct_3",
    "correct_4",
    "total_1",
    "total_2",
    "total_3",
    "total_4",
)
"""The layout of ``bleu_stats_*``: sacrebleu's segment statistics of BLEU (4-grams at most), in its order."""


@functools.cache
def _chrf() -> CHRF:
    from sacrebleu.metrics import CHRF

    metric = CHRF()
    metric.sentence_score("a", ["a"])  # sacrebleu's signature names the number of references of a scored text
    return metric


@functools.cache
def _bleu(target_lang: str) -> BLEU:
    from sacrebleu.metrics import BLEU

    metric = BLEU(tokenize="zh" if target_lang == "zh" else "13a", effective_order=True)
    metric.sentence_score("a", ["a"])  # as above: a signature is available before any real text is scored
    return metric


@functools.cache
def _corpus_bleu(target_lang: str) -> BLEU:
    from sacrebleu.metrics import BLEU

    metric = BLEU(tokenize="zh" if target_lang == "zh" else "13a")  # corpus_bleu's defaults otherwise
    metric.corpus_score(["a"], [["a"]])  # as above: the signature names the number of references
    return metric


def chrf(hypothesis: str, reference: str) -> float:
    """Sentence-level chrF of one text against one reference (0 for an empty text)."""
    return float(_chrf().sentence_score(hypothesis.strip(), [reference]).score) if hypothesis.strip() else 0.0


def bleu(hypothesis: str, reference: str, target_lang: str) -> float:
    """Sentence-level BLEU of one text against one reference, Chinese-tokenised for ``zh`` (0 for an empty text)."""
    if not hypothesis.strip():
        return 0.0
    return float(_bleu(target_lang).sentence_score(hypothesis.strip(), [reference]).score)


def bleu_statistics(hypothesis: str, reference: str, target_lang: str) -> list[int]:
    """BLEU's sufficient statistics of one text against one reference (:data:`BLEU_STATS`), tokenised as
    :func:`bleu` tokenises; summed over texts they give sacrebleu's corpus BLEU of those texts."""
    score = _bleu(target_lang).sentence_score(hypothesis.strip(), [reference])
    return [int(score.sys_len), int(score.ref_len), *map(int, score.counts), *map(int, score.totals)]


def score_texts(translation: str, proofread: str, reference: str, target_lang: str) -> dict[str, Any]:
    """The chrF and BLEU metrics of both texts and the gains (see the module docs), without pair and paragraph."""
    metrics: dict[str, Any] = {}
    for name, score in (("chrf", lambda t: chrf(t, reference)), ("bleu", lambda t: bleu(t, reference, target_lang))):
        first, second = score(translation), score(proofread)
        metrics[f"{name}_translation"] = first
        metrics[f"{name}_proofread"] = second
        metrics[f"{name}_gain"] = second - first
    metrics["bleu_stats_translation"] = bleu_statistics(translation, reference, target_lang)
    metrics["bleu_stats_proofread"] = bleu_statistics(proofread, reference, target_lang)
    metrics["chrf_signature"] = str(_chrf().get_signature())
    metrics["bleu_signature"] = str(_bleu(target_lang).get_signature())
    metrics["bleu_corpus_signature"] = str(_corpus_bleu(target_lang).get_signature())
    return metrics


@register_scorer(SHORT_NAME)
def reference_metrics(state: pyspiel.State, record: MatchRecord) -> dict[str, Any]:
    """Scorer: chrF and BLEU of a finished game's translation and proofread text against the reference."""
    assert isinstance(state, TranslationState)
    params = state.get_game().get_parameters()
    paragraph = paragraph_of(state.pair(), state.paragraph_id(), int(params["words"]), str(params["split"]))
    target = state.pair().split("-")[1]
    metrics = score_texts(state.translation(), state.proofread(), paragraph.reference, target)
    return {"pair": state.pair(), "paragraph": state.paragraph_id(), **metrics}
