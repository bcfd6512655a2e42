"""What each player's turns cost and how they went: calls, tokens, cost and turn outcomes per player.

Reads :attr:`MatchRecord.turns` only (a player's own seats; chance outcomes and the judge's verdicts are counted
for the judge under the name ``judge`` when it is a model). A *call* is one transport attempt of a model call
(retries after 429s, 5xx and timeouts included); a scripted bot makes none. The *invalid share* is the share of a
player's turns that gave no valid move of its own (``invalid``, ``refusal``, ``truncated``). A ``context_overflow``
turn is none of the model's: no prompt fit its context, and the referee played a stand-in move; it is counted apart
(:attr:`PlayerUsage.stand_ins`), never as an invalid move.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from deepeval_games.core.bot import Outcome, Usage
from deepeval_games.core.records import JUDGE_SEAT, MatchRecord

__all__ = ["JUDGE_NAME", "OUTCOME_ORDER", "USAGE_HEADER", "PlayerUsage", "format_usage", "player_usage", "usage_rows"]

JUDGE_NAME = "judge"
"""The name an LLM judge's usage is counted under."""
OUTCOME_ORDER = tuple(outcome.value for outcome in Outcome)
"""Every turn outcome, in the order of :class:`~deepeval_games.core.bot.Outcome`."""

_VALID = {Outcome.OK.value, Outcome.REASKED.value}
_OVERFLOW = Outcome.CONTEXT_OVERFLOW.value
"""The status of an attempt whose prompt did not fit: sent, when the provider answered it (an HTTP status), else
a context policy skipped before any call (not a call)."""


@dataclass
class PlayerUsage:
    """Totals of one player over a set of matches."""

    player: str
    models: set[str] = field(default_factory=set)
    """The model strings the provider reported for its turns (empty for scripted bots)."""
    turns: int = 0
    outcomes: dict[str, int] = field(default_factory=dict)
    """Turns per outcome value; outcomes that never happened are absent."""
    asks: int = 0
    """Asks (first asks and re-asks) that got a reply."""
    calls: int = 0
    """Transport attempts sent (infrastructure retries included; a prompt found too long before a call is none)."""
    retried: int = 0
    """Transport attempts that failed and were retried (429, 5xx, timeouts)."""
    usage: Usage = field(default_factory=Usage)
    """The tokens and cost of its turns, summed (:class:`~deepeval_games.core.bot.Usage`)."""

    def add(self, other: PlayerUsage) -> None:
        """Add ``other``'s totals to these (the usage of several players, e.g. all of one model's)."""
        self.models |= other.models
        for key, count in other.outcomes.items():
            self.outcomes[key] = self.outcomes.get(key, 0) + count
        self.turns += other.turns
        self.asks += other.asks
        self.calls += other.calls
        self.retried += other.retried
        self.usage += other.usage

    @property
    def tokens_in(self) -> int:
        """Prompt tokens."""
        return self.usage.tokens_in

    @property
    def tokens_out(self) -> int:
        """Completion tokens (reasoning included)."""
        return self.usage.tokens_out

    @property
    def reasoning_tokens(self) -> int:
        """The part of ``tokens_out`` the model spent on reasoning, where the provider reports it."""
        return self.usage.reasoning_tokens

    @property
    def cached_tokens(self) -> int:
        """The part of ``tokens_in`` the provider read from its prompt cache (priced at its cached rate)."""
        return self.usage.cached_tokens

    @property
    def cache_write_tokens(self) -> int:
        """Prompt tokens written to the provider's prompt cache, where it reports them (Anthropic)."""
        return self.usage.cache_write_tokens

    @property
    def cost_usd(self) -> float:
        """Cost in USD."""
        return self.usage.cost_usd

    @property
    def cached_share(self) -> float:
        """:attr:`cached_tokens` over :attr:`tokens_in` (0 without prompt tokens)."""
        return self.cached_tokens / self.tokens_in if self.tokens_in else 0.0

    @property
    def stand_ins(self) -> int:
        """Turns no prompt fit the model's context: the referee's stand-in moves, not the model's."""
        return self.outcomes.get(Outcome.CONTEXT_OVERFLOW.value, 0)

    @property
    def invalid(self) -> int:
        """Turns the model answered without a valid move of its own (stand-ins are not counted)."""
        return self.turns - self.stand_ins - sum(self.outcomes.get(name, 0) for name in _VALID)

    @property
    def invalid_share(self) -> float:
        """:attr:`invalid` over the turns the model was asked (stand-ins left out; 0 without such turns)."""
        asked = self.turns - self.stand_ins
        return self.invalid / asked if asked else 0.0


def player_usage(records: Iterable[MatchRecord]) -> dict[str, PlayerUsage]:
    """Per player name (sorted), its turns, outcomes, calls, tokens and cost; an LLM judge counts as ``judge``."""
    out: dict[str, PlayerUsage] = {}
    for record in records:
        for turn in record.turns:
            if 0 <= turn.seat < len(record.seats):
                name = record.seats[turn.seat]
            elif turn.seat == JUDGE_SEAT and (turn.model or turn.attempts):
                name = JUDGE_NAME
            else:
                continue
            usage = out.setdefault(name, PlayerUsage(name))
            if turn.seat >= 0:
                usage.turns += 1
                key = Outcome(turn.outcome).value
                usage.outcomes[key] = usage.outcomes.get(key, 0) + 1
            if turn.model:
                usage.models.add(turn.model)
            usage.asks += len(turn.raw_replies)
            usage.calls += sum(1 for a in turn.attempts if a.status != _OVERFLOW or a.http_status is not None)
            usage.retried += sum(1 for a in turn.attempts if a.status == "infra")
            usage.usage += turn.usage
    return dict(sorted(out.items()))


USAGE_HEADER = (
    "player",
    *OUTCOME_ORDER,
    "invalid share",
    "calls",
    "retried",
    "tokens in",
    "cached in",
    "cached share",
    "cache writes",
    "tokens out",
    "reasoning tokens",
    "cost USD",
)


def usage_rows(usage: Mapping[str, PlayerUsage]) -> list[tuple[str, ...]]:
    """One row of strings per player, in the columns of :data:`USAGE_HEADER`."""
    rows = []
    for name, u in usage.items():
        rows.append(
            (
                name,
                *(str(u.outcomes.get(outcome, 0)) for outcome in OUTCOME_ORDER),
                f"{100 * u.invalid_share:.1f}%",
                str(u.calls),
                str(u.retried),
                str(u.tokens_in),
                str(u.cached_tokens),
                f"{100 * u.cached_share:.1f}%",
                str(u.cache_write_tokens),
                str(u.tokens_out),
                str(u.reasoning_tokens),
                f"{u.cost_usd:.4f}",
            )
        )
    return rows


def format_usage(usage: Mapping[str, PlayerUsage]) -> str:
    """The usage table as fixed-width text (columns that are zero for every player left out)."""
    body = usage_rows(usage)
    keep = [i for i in range(len(USAGE_HEADER)) if i <= 1 or any(row[i].strip("0.%") for row in body)]
    rows = [tuple(row[i] for i in keep) for row in [USAGE_HEADER, *body]]
    widths = [max(len(row[i]) for row in rows) for i in range(len(keep))]
    lines = [
        "  ".join(
            cell.ljust(w) if i == 0 else cell.rjust(w) for i, (cell, w) in enumerate(zip(row, widths, strict=True))
        )
        for row in rows
    ]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(line.rstrip() for line in lines)
