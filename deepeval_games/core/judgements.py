"""Judgements: verdicts given to finished matches' transcripts after play, kept beside the match records.

``deepeval-games rejudge`` re-scores a run's transcripts with a judge (the same or another, a scripted bot, an
LLM, later a person) without replaying play, and stores each verdict as a :class:`JudgementRecord` in a table of
its own in the run directory's store (:meth:`~deepeval_games.app.storage.store.Store.commit_judgement`). The match
records
are never changed: the original verdict stays in the match's turns and returns. The judge audits of
:mod:`analysis.judge_audit` read these records beside the match records.

History: 1 — first version.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pyspiel
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from deepeval_games.core.bot import Observation, game_facts
from deepeval_games.core.message_pool import Message
from deepeval_games.core.records import CHANCE_SEAT, JUDGE_SEAT, RecordError, TurnRecord

__all__ = ["JUDGEMENT_SCHEMA_VERSION", "JudgementRecord", "judge_observation"]

_CONFIG = ConfigDict(extra="forbid", use_attribute_docstrings=True)

JUDGEMENT_SCHEMA_VERSION = 1
"""The version of the judgement records this code writes (:class:`JudgementRecord`)."""


class JudgementRecord(BaseModel):
    """One verdict given to a finished match's transcript by ``deepeval-games rejudge``, kept beside the match.

    A re-judging never changes the match record it scores: the original verdict stays in the match's turns and
    returns; this record holds another (or the same) judge's scores of the same transcript, under a stated
    presentation (the order the roles were shown in, and the anonymous label each seat was given).
    """

    model_config = _CONFIG

    judgement_id: str
    """Stable id: a hash of the match id, the judge's identity, the presentation and the repeat."""
    match_id: str
    """The match whose transcript was judged."""
    game: str
    """The match's game string."""
    judge: str
    """The judge's name: a registered bot name, a model string, or ``human:<name>``."""
    judge_identity: dict[str, Any] = Field(default_factory=dict)
    """What judged (the judge bot's identity: kind, class or model, settings)."""
    judge_model: str | None = None
    """The judge's model string (None for scripted or human judges); self-preference is read from it."""
    presented_order: list[int]
    """The seats in the order the judge was shown their roles (``[0, 1]``: as played; ``[1, 0]``: swapped)."""
    seat_labels: list[str]
    """Per seat (seat order), the anonymous label the judge saw it under."""
    repeat: int = 0
    """The repeat of this judge and presentation on this match, from 0 (re-judging at the same settings)."""
    scores: list[int]
    """The judge's score of every seat, in seat order (whatever the presentation)."""
    roles: list[str] = Field(default_factory=list)
    """Per seat: its role (copied from the match)."""
    verdict_text: str = ""
    """The verdict as the judge gave it (canonical JSON)."""
    turn: TurnRecord | None = None
    """The judge's exchange: prompts, raw replies, re-asks, tokens, cost, latency."""
    created_at: str = ""
    """When the judgement was made (ISO 8601, UTC)."""
    schema_version: int = JUDGEMENT_SCHEMA_VERSION
    """The layout version of this record."""

    @property
    def swapped(self) -> bool:
        """Whether the roles were shown in another order than the seats'."""
        return self.presented_order != sorted(self.presented_order)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-able form."""
        return self.model_dump(mode="json")

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> JudgementRecord:
        """Inverse of :meth:`to_dict`, validated.

        Raises:
            RecordError: the record is of a newer version than this code, or does not validate.
        """
        version = data.get("schema_version", JUDGEMENT_SCHEMA_VERSION)
        if isinstance(version, int) and version > JUDGEMENT_SCHEMA_VERSION:
            raise RecordError(
                f"judgement {data.get('judgement_id', '?')!r} has schema version {version}, newer than this version "
                f"of deepeval-games reads ({JUDGEMENT_SCHEMA_VERSION}): upgrade deepeval-games to read it"
            )
        try:
            return cls.model_validate(dict(data))
        except ValidationError as exc:
            raise RecordError(f"judgement {data.get('judgement_id', '?')!r} is not a valid record: {exc}") from exc


def judge_observation(
    game: pyspiel.Game,
    state: pyspiel.State,
    round: int,
    brief: str,
    fields: Mapping[str, Any],
    inbox: tuple[Message, ...],
) -> Observation:
    """What the judge is asked with at a verdict node: the brief, its fields, the verdicts as legal actions.

    ``state`` is at the verdict node (a copy the judge's action names are read from); ``inbox`` holds the
    pool messages addressed to the judge (the brief). Used by the referee and by ``deepeval-games rejudge``.
    """
    return Observation(
        seat=JUDGE_SEAT,
        **game_facts(game),
        round=round,
        text=brief,
        fields=fields,
        legal_actions=tuple(action for action, _ in state.chance_outcomes()),
        inbox=inbox,
        action_to_string=lambda action: state.action_to_string(CHANCE_SEAT, action),
    )
