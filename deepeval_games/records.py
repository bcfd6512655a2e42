"""The match record: one typed, versioned document per match.

A record holds what is needed to audit and re-score a match without replaying it: the game string,
who sat where, every turn (prompt, raw replies, action, outcome, re-asks, latency, tokens, cost), the
message pool, and the returns. ``matches.jsonl`` in a run directory holds one record per line.

Schema version history: 1 — first version.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

__all__ = ["SCHEMA_VERSION", "TIMING_FIELDS", "MatchRecord", "TurnRecord"]

SCHEMA_VERSION = 1
TIMING_FIELDS = ("latency_s", "wall_time_s", "started_at")
"""Fields that measure wall-clock time; :meth:`MatchRecord.canonical` leaves them out."""

CHANCE_SEAT = -1
JUDGE_SEAT = -2


@dataclass
class TurnRecord:
    """One move: a seat's action, a chance outcome (seat -1) or the judge's verdict (seat -2)."""

    index: int
    """Position in the game's history, from 0."""
    round: int
    """Round of Algorithm 1 (a simultaneous node is one round for all its seats)."""
    seat: int
    action: int
    action_string: str
    text: str = ""
    """The utterance added to the message pool."""
    outcome: str = "ok"
    """``ok``, ``reasked``, ``invalid``, ``refusal``, ``context_overflow`` or ``infra_error``."""
    raw_replies: list[str] = field(default_factory=list)
    prompt: list[dict[str, str]] = field(default_factory=list)
    retries: int = 0
    model: str | None = None
    tokens_in: int = 0
    tokens_out: int = 0
    cost_usd: float = 0.0
    latency_s: float = 0.0
    error: str | None = None


@dataclass
class MatchRecord:
    """Everything about one match."""

    match_id: str
    """Stable id: a hash of the game string, the seating, the players, the seed and the repeat."""
    game: str
    """The full game string (``deepeval_public_goods(alpha=1.6,...)``)."""
    seats: list[str]
    """Player names in seat order; seat i is anonymous "Player i+1" inside the match."""
    returns: list[float]
    """Payoff of every seat, in seat order."""
    turns: list[TurnRecord]
    experiment: str = ""
    repeat: int = 0
    seed: int = 0
    players: list[dict[str, Any]] = field(default_factory=list)
    """Per seat: what played there (scripted bot name or model id, prompt version), never shown to seats."""
    roles: list[str] = field(default_factory=list)
    """Per seat: the role it plays (``player`` in symmetric games)."""
    messages: list[dict[str, Any]] = field(default_factory=list)
    """The message pool, in order."""
    metrics: dict[str, Any] = field(default_factory=dict)
    """Task metrics from scorers (successful hits, MBPP pass rate, ...)."""
    status: str = "complete"
    """``complete`` or ``aborted``."""
    error: str | None = None
    schema_version: int = SCHEMA_VERSION
    wall_time_s: float = 0.0
    started_at: str = ""

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-able form."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> MatchRecord:
        """Inverse of :meth:`to_dict`; refuses records of a newer schema."""
        version = int(data.get("schema_version", 0))
        if version > SCHEMA_VERSION:
            raise ValueError(f"record schema {version} is newer than this version of deepeval-games ({SCHEMA_VERSION})")
        data = dict(data)
        data["turns"] = [TurnRecord(**turn) for turn in data.get("turns", [])]
        return cls(**data)

    def canonical(self) -> dict[str, Any]:
        """The record without wall-clock measurements: equal for equal seeds."""
        data = self.to_dict()
        for key in TIMING_FIELDS:
            data.pop(key, None)
        for turn in data["turns"]:
            for key in TIMING_FIELDS:
                turn.pop(key, None)
        return data
