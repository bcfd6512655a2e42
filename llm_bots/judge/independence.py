"""Independence of the judge, checked before any match: a judged game needs a judge, and no player judges itself.

An LLM judge may not be one of the players' models (same model string, or the same name after the last
``/``) unless ``allow_player_model = true`` is set in ``[judge]``, which logs a warning instead.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

import pyspiel

from deepeval_games.core import task
from deepeval_games.core.errors import SpecError

__all__ = ["ALLOW_PLAYER_MODEL", "check_judge"]

log = logging.getLogger(__name__)

ALLOW_PLAYER_MODEL = "allow_player_model"
"""``[judge]`` key that lets a player's model judge (self-preference risk; a warning is logged)."""


def _model_names(model: str) -> set[str]:
    model = model.strip().casefold()
    return {model, model.rsplit("/", 1)[-1]}


def check_judge(
    game: pyspiel.Game,
    *,
    judge_configured: bool,
    judge_model: str | None = None,
    judge_params: Mapping[str, Any] | None = None,
    player_models: Mapping[str, str] | None = None,
) -> None:
    """Refuse a judged game without a judge, or an LLM judge that is a player's model (unless forced).

    Args:
        game: the game about to be played.
        judge_configured: whether the experiment has a judge (a ``[judge]`` table) at all.
        judge_model: the LLM judge's model string; None for a scripted judge.
        judge_params: the judge's other settings (``allow_player_model`` is read from them for an LLM judge).
        player_models: model string of every LLM player, by player name.

    Raises :class:`~deepeval_games.core.errors.SpecError`; with ``allow_player_model = true`` logs a warning instead.
    """
    if not judge_configured:
        if task.is_judged(game):
            raise SpecError(
                f"{game.get_type().short_name} is judged: add a [judge] table to the spec "
                '(model = "..." for an LLM judge, or bot = "judge_fixed" / "judge_pass_rate" for a scripted one)'
            )
        return
    forced = (judge_params or {}).get(ALLOW_PLAYER_MODEL, False) if judge_model is not None else False
    if not isinstance(forced, bool):
        raise SpecError(f"[judge]: {ALLOW_PLAYER_MODEL!r} must be true or false, got {forced!r}")
    if judge_model is None:
        return
    models = player_models or {}
    clash = sorted(name for name, model in models.items() if model and _model_names(model) & _model_names(judge_model))
    if not clash:
        return
    if not forced:
        raise SpecError(
            f"[judge] model {judge_model!r} also plays (player(s) {', '.join(clash)}): a model would judge itself. "
            f"Choose another judge model, or set {ALLOW_PLAYER_MODEL} = true in [judge] to force it."
        )
    log.warning(
        "the judge %r is also the model of player(s) %s (%s = true): expect self-preference in the scores",
        judge_model,
        ", ".join(clash),
        ALLOW_PLAYER_MODEL,
    )
