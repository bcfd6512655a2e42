"""Runs as inspect_ai eval logs (``deepeval-games export --format inspect --out DIR``), so that ``inspect view DIR``
opens them beside a team's other evaluations.

One log per run directory, task variant and player (a model, or a baseline: a scripted bot's model string reads
``scripted/<bot>``), one sample per match that player played: the sample's messages are the match as the player's
seat saw it (the rules as a system message, what the referee told the seat as user messages, its replies and the
referee's re-asks), its scores are the seat's ``return`` (the log's mean of it is Eq. 1's mean payoff) and
``valid_moves`` (the share of its turns that ended in a move of its own), its model usage is the seat's tokens and
cost, and its metadata holds the seating, the roles, every return and the task's metrics. A player holding several
seats of one match (self-play) is scored by the mean of its returns and shown as its first seat saw the match.

inspect_ai is an optional dependency (``pip install "deepeval-games[inspect]"``), imported only here, when logs are
written. :func:`seat_messages` and :func:`sample_scores` need nothing beyond the records.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from deepeval_games.core.bot import Outcome, Usage
from deepeval_games.core.errors import DeepEvalError
from deepeval_games.core.records import MatchRecord, TurnRecord
from deepeval_games.core.registry.games import game_variant
from deepeval_games.core.transcript import with_messages

__all__ = ["SCORES", "player_model", "sample_scores", "seat_messages", "write_inspect_logs"]

SCORES = ("return", "valid_moves")
"""The scores of every sample, in this order."""
_MOVED = {Outcome.OK, Outcome.REASKED}


def player_model(record: MatchRecord, seat: int) -> str:
    """The model string of the player in ``seat``: its model, else ``<kind>/<player>`` (``scripted/free-rider``,
    ``human/alice``, ``classical/mcts``), as inspect_ai's logs name a model."""
    identity = record.players[seat] if seat < len(record.players) else {}
    if identity.get("model"):
        return str(identity["model"])
    return f"{identity.get('kind') or 'scripted'}/{record.seats[seat]}"


def _turn_messages(turn: TurnRecord) -> list[dict[str, str]]:
    """A turn of the seat: each reply (the move's text for a player that writes none), each re-ask between."""
    said: list[dict[str, str]] = []
    for k, reply in enumerate(turn.raw_replies or [turn.text or turn.action_string]):
        if 0 < k < len(turn.prompts):  # the re-ask: the last user message of that ask's prompt
            asked = [m for m in turn.prompts[k] if m.get("role") == "user"]
            said.append({"role": "user", "content": str(asked[-1].get("content", "")) if asked else ""})
        said.append({"role": "assistant", "content": reply})
    return said


def seat_messages(record: MatchRecord, seat: int) -> list[dict[str, str]]:
    """The match as ``seat`` saw it, as chat messages (``role``, ``content``) in the message pool's order: the
    rules (``system``), what the referee told the seat (``user``), and at each move of the seat its turn: each
    reply (``assistant``) and each re-ask (``user``)."""
    record = with_messages(record)
    turns = iter([t for t in record.turns if t.seat == seat])
    out: list[dict[str, str]] = []
    for message in record.messages:
        if message.get("sender") == seat and message.get("kind") == "move":
            turn = next(turns, None)
            out.extend(_turn_messages(turn) if turn else [{"role": "assistant", "content": str(message.get("text"))}])
        elif seat in message.get("recipients", []) and message.get("sender") != seat:
            role = "system" if message.get("kind") == "rules" else "user"
            out.append({"role": role, "content": str(message.get("text", ""))})
    for turn in turns:  # a turn whose move the pool does not show (none expected): kept, at the end
        out.extend(_turn_messages(turn))
    return out


def _seats_of(record: MatchRecord, player: str) -> list[int]:
    return [s for s, name in enumerate(record.seats) if name == player]


def sample_scores(record: MatchRecord, seats: list[int]) -> dict[str, float]:
    """The :data:`SCORES` of the player in ``seats`` (its seats of ``record``)."""
    returns = [float(record.returns[s]) for s in seats if s < len(record.returns)]
    turns = [t for t in record.turns if t.seat in seats]
    moved = sum(1 for t in turns if Outcome(t.outcome) in _MOVED)
    return {
        "return": sum(returns) / len(returns) if returns else 0.0,
        "valid_moves": moved / len(turns) if turns else 1.0,
    }


def _usage(record: MatchRecord, seats: list[int]) -> Usage | None:
    """Tokens and cost of the seats' model calls (None for a player that calls no model). They are counted under
    the player's model string: a turn's ``model`` is the id the provider answered with, without the provider."""
    turns = [t for t in record.turns if t.seat in seats and (t.tokens_in or t.tokens_out or t.cost_usd)]
    return Usage.total(t.usage for t in turns) if turns else None


@dataclass
class _Log:
    """The samples of one (run, variant, player) log, gathered while the records stream past."""

    run: str
    variant: str
    player: str
    model: str
    experiment: str
    samples: list[Any] = field(default_factory=list)
    scores: dict[str, list[float]] = field(default_factory=lambda: {name: [] for name in SCORES})
    usage: dict[str, Usage] = field(default_factory=dict)
    started: list[str] = field(default_factory=list)
    ended: list[str] = field(default_factory=list)


def _safe(text: str) -> str:
    """``text`` as one part of a log's file name (inspect splits the name at ``_``)."""
    return re.sub(r"[^A-Za-z0-9.-]+", "-", text).strip("-")[:60] or "x"


def _model_usage(ia: Any, used: Usage) -> Any:
    return ia["ModelUsage"](
        input_tokens=used.tokens_in,
        output_tokens=used.tokens_out,
        total_tokens=used.tokens_in + used.tokens_out,
        reasoning_tokens=used.reasoning_tokens or None,
        total_cost=used.cost_usd,
    )


def _inspect() -> dict[str, Any]:
    """The inspect_ai classes the logs are made of; a clear error when it is not installed."""
    try:
        from inspect_ai import log as L
        from inspect_ai.model import ChatMessageAssistant, ChatMessageSystem, ChatMessageUser, ModelOutput, ModelUsage
        from inspect_ai.scorer import Score
    except ImportError as exc:
        raise DeepEvalError(
            'export --format inspect needs inspect_ai: pip install "deepeval-games[inspect]" (or inspect-ai)'
        ) from exc
    chat = {"system": ChatMessageSystem, "user": ChatMessageUser, "assistant": ChatMessageAssistant}
    return {"log": L, "chat": chat, "ModelOutput": ModelOutput, "ModelUsage": ModelUsage, "Score": Score}


def _sample(ia: Any, record: MatchRecord, seats: list[int], log: _Log) -> Any:
    L = ia["log"]
    chat = [ia["chat"][m["role"]](content=m["content"]) for m in seat_messages(record, seats[0])]
    first_reply = next((n for n, m in enumerate(chat) if m.role == "assistant"), len(chat))
    scores = sample_scores(record, seats)
    usage = _usage(record, seats)
    if usage is not None:
        log.usage[log.model] = log.usage.get(log.model, Usage()) + usage
    for name, value in scores.items():
        log.scores[name].append(value)
    if record.started_at:
        log.started.append(record.started_at)
        try:
            start = datetime.fromisoformat(record.started_at)
            log.ended.append((start + timedelta(seconds=record.wall_time_s)).isoformat(timespec="seconds"))
        except ValueError:  # a start time written otherwise: the log's end falls back to its start
            pass
    replies = [m for m in chat if m.role == "assistant"]
    return L.EvalSample(
        id=record.match_id,
        epoch=1,
        input=chat[:first_reply] or f"{record.game}, seat {seats[0]}",
        target="",
        messages=chat,
        scores={name: ia["Score"](value=value) for name, value in scores.items()},
        model_usage={} if usage is None else {log.model: _model_usage(ia, usage)},
        metadata={
            "game": record.game,
            "seats": record.seats,
            "roles": record.roles,
            "returns": record.returns,
            "player_seats": seats,
            "repeat": record.repeat,
            "seed": str(record.seed),
            "metrics": record.metrics,
            "status": record.status,
        },
        output=ia["ModelOutput"].from_content(log.model, replies[-1].text if replies else ""),
        total_time=record.wall_time_s or None,
        error=L.EvalError(message=record.error or "aborted", traceback="", traceback_ansi="")
        if record.status == "aborted"
        else None,
    )


def _metrics(ia: Any, values: list[float]) -> dict[str, Any]:
    n = len(values)
    mean = sum(values) / n if n else 0.0
    var = sum((v - mean) ** 2 for v in values) / (n - 1) if n > 1 else 0.0
    metric = ia["log"].EvalMetric
    return {
        "mean": metric(name="mean", value=mean),
        "stderr": metric(name="stderr", value=math.sqrt(var / n) if n else 0.0),
    }


def _eval_id(log: _Log) -> str:
    """A stable id of the log: exporting the run again writes the same ids (and file names)."""
    return hashlib.sha256(f"{log.run}\0{log.variant}\0{log.player}".encode()).hexdigest()[:22]


def _eval_log(ia: Any, log: _Log) -> Any:
    L = ia["log"]
    started = min(log.started) if log.started else datetime.now(timezone.utc).isoformat(timespec="seconds")
    eval_id = _eval_id(log)
    task = log.variant.split("(", 1)[0]
    results = L.EvalResults(
        total_samples=len(log.samples),
        completed_samples=sum(1 for s in log.samples if s.error is None),
        scores=[
            L.EvalScore(name=name, scorer=name, scored_samples=len(values), metrics=_metrics(ia, values))
            for name, values in log.scores.items()
        ],
    )
    spec = L.EvalSpec(
        eval_id=eval_id,
        run_id=hashlib.sha256(log.run.encode()).hexdigest()[:22],
        created=started,
        task=task,
        task_id=eval_id,
        task_display_name=f"{log.variant} · {log.player}",
        task_args={"game": log.variant},
        dataset=L.EvalDataset(name=log.variant, samples=len(log.samples), sample_ids=[s.id for s in log.samples]),
        model=log.model,
        config=L.EvalConfig(),
        metadata={"run": log.run, "player": log.player, "experiment": log.experiment, "source": "deepeval-games"},
    )
    stats = L.EvalStats(
        started_at=started,
        completed_at=max(log.ended) if log.ended else started,
        model_usage={model: _model_usage(ia, used) for model, used in log.usage.items()},
    )
    return L.EvalLog(status="success", eval=spec, results=results, stats=stats, samples=log.samples)


def write_inspect_logs(records: Iterable[tuple[str, MatchRecord]], out: str | Path) -> list[Path]:
    """Write ``records`` ((run label, record) pairs) as inspect_ai logs (``.eval`` files) into the folder
    ``out``; returns their paths, one per run, task variant and player.

    Raises:
        DeepEvalError: inspect_ai is not installed, or ``out`` cannot be written.
    """
    ia = _inspect()
    folder = Path(out)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise DeepEvalError(f"cannot write the inspect logs into {folder}: {exc}") from exc
    logs: dict[tuple[str, str, str], _Log] = {}
    for run, record in records:
        variant = game_variant(record.game)
        for player in dict.fromkeys(record.seats):
            seats = _seats_of(record, player)
            key = (run, variant, player)
            if key not in logs:
                logs[key] = _Log(run, variant, player, player_model(record, seats[0]), record.experiment)
            logs[key].samples.append(_sample(ia, record, seats, logs[key]))
    paths = []
    for log in logs.values():
        # inspect's own naming, {start}_{task}_{model}_{id}, which its listing reads before opening a log
        log_file = _eval_log(ia, log)
        stamp = log_file.eval.created.replace(":", "-")
        task = _safe(log.variant.split("(", 1)[0])
        path = folder / f"{stamp}_{task}_{_safe(log.run)}-{_safe(log.player)}_{_eval_id(log)}.eval"
        try:
            ia["log"].write_eval_log(log_file, str(path), format="eval")
        except OSError as exc:
            raise DeepEvalError(f"cannot write the inspect log {path}: {exc}") from exc
        paths.append(path)
    return paths
