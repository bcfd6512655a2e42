"""Flat tables of match records for pandas and friends: one row per match, or one row per turn.

The columns are fixed and documented here (:data:`MATCH_COLUMNS`, :func:`seat_columns`, :data:`TURN_COLUMNS`);
the README lists them. Rows are built one record at a time (:func:`match_row`, :func:`turn_rows`) and written
as they come (:func:`write_rows`) in CSV, JSON Lines or Parquet (``pyarrow``, optional), so an export streams a run
of any size. Reads match records only.

**A CSV file is safe to open in a spreadsheet.** Its text comes from models and from whoever wrote the run directory,
and a spreadsheet runs a cell that starts with ``=`` (``=HYPERLINK(...)``), ``+``, ``-`` or ``@`` as a formula. In
every text column (:func:`csv_text`), as OWASP's advice on CSV injection has it, such a cell (or one starting with a
tab or a carriage return) is written with a leading apostrophe, which spreadsheets show as text; control characters
(ESC, NUL, CR, the C1 controls, ...) and bidirectional overrides are written as visible escapes (``\x1b``,
``\u202e``); newlines and tabs inside a cell stay. Numeric columns are written as numbers, untouched.
``raw_text=True`` (``export --raw-text``) writes the text exactly as recorded. JSON Lines and Parquet always keep the
exact text: they are read by programs, not run as formulas.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

import pyspiel

from deepeval_games.core.bot import Outcome
from deepeval_games.core.errors import DeepEvalError
from deepeval_games.core.quoting import visible
from deepeval_games.core.records import CHANCE_SEAT, JUDGE_SEAT, MatchRecord, player_identity
from deepeval_games.core.registry.games import DATA_ITEM_PARAMETERS, game_variant

__all__ = [
    "FORMATS",
    "LEVELS",
    "MATCH_COLUMNS",
    "TURN_COLUMNS",
    "Column",
    "columns_for",
    "csv_text",
    "data_item",
    "match_row",
    "seat_columns",
    "turn_rows",
    "write_rows",
    "write_text_rows",
]

FORMATS = ("csv", "jsonl", "parquet")
LEVELS = ("match", "turn")


@dataclass(frozen=True)
class Column:
    """One exported column: its name, type (``str``, ``int``, ``float`` or ``bool``) and meaning."""

    name: str
    type: str
    doc: str


MATCH_COLUMNS: tuple[Column, ...] = (
    Column("run", "str", "the run directory the match comes from (its folder name)"),
    Column("match_id", "str", "stable id of the match"),
    Column("experiment", "str", "name of the experiment spec"),
    Column("game", "str", "full game string, data item included"),
    Column("variant", "str", "the game string without its data-item parameters (what tables pool)"),
    Column("task", "str", "the game's short name"),
    Column("data_item", "str", "the data-item parameters (start=..., task_id=..., paragraph=...), '' when none"),
    Column("repeat", "int", "repeat number of the seating, from 0"),
    Column("seed", "int", "match seed"),
    Column("status", "str", "complete or aborted"),
    Column("error", "str", "why the match was aborted ('' when complete)"),
    Column("seats", "int", "number of seats"),
    Column("player_turns", "int", "turns taken by the seats (chance and judge left out)"),
    Column("invalid_turns", "int", "seat turns that gave no valid move (invalid, refusal, overflow, truncated)"),
    Column("reasked_turns", "int", "seat turns that needed a re-ask"),
    Column("tokens_in", "int", "prompt tokens of every model call of the match (judge included)"),
    Column("tokens_out", "int", "completion tokens of every model call of the match (judge included)"),
    Column("cost_usd", "float", "cost of the match's model calls as litellm prices them"),
    Column("wall_time_s", "float", "wall-clock duration of the match"),
    Column("started_at", "str", "start time, ISO 8601 UTC"),
    Column("metrics", "str", "scorer metrics as a JSON object (pass_rate, chrf, hits, ...)"),
)
"""The per-match columns before the per-seat ones (:func:`seat_columns`)."""


def seat_columns(seats: int) -> tuple[Column, ...]:
    """``seat<i>_player``, ``seat<i>_role``, ``seat<i>_return``, ``seat<i>_identity`` for seats 0..seats-1."""
    out: list[Column] = []
    for i in range(seats):
        out += [
            Column(f"seat{i}_player", "str", f"name of the player in seat {i} ('' when the match has fewer seats)"),
            Column(f"seat{i}_role", "str", f"role of seat {i} (player in symmetric games)"),
            Column(f"seat{i}_return", "float", f"payoff of seat {i} (empty when the match has fewer seats)"),
            Column(
                f"seat{i}_identity",
                "str",
                f"what played seat {i} (bot or model, settings) as a JSON object, without what the engine derived for "
                "the match (a model's sampling seed: it follows from the match's seed)",
            ),
        ]
    return tuple(out)


TURN_COLUMNS: tuple[Column, ...] = (
    Column("run", "str", "the run directory the match comes from (its folder name)"),
    Column("match_id", "str", "stable id of the match"),
    Column("variant", "str", "the game variant (data items pooled)"),
    Column("data_item", "str", "the data-item parameters of the match"),
    Column("index", "int", "position of the move in the game's history, from 0"),
    Column("round", "int", "round of the referee's loop"),
    Column("seat", "int", "seat that moved; -1 chance, -2 judge"),
    Column("player", "str", "name of the seat's player; 'chance' or 'judge'"),
    Column("role", "str", "role of the seat ('' for chance and judge)"),
    Column("action", "int", "action applied to the game"),
    Column("action_string", "str", "the game's name of the action"),
    Column("text", "str", "the utterance added to the message pool"),
    Column("outcome", "str", "ok, reasked, invalid, refusal, context_overflow, truncated or infra_error"),
    Column("retries", "int", "re-asks after replies that were not a valid move"),
    Column("asks", "int", "model replies of the turn (first ask and re-asks)"),
    Column("calls", "int", "transport attempts of the turn (infrastructure retries included)"),
    Column("infra_retries", "int", "transport attempts that failed and were retried (429, 5xx, timeout)"),
    Column("model", "str", "model id the provider reported ('' for scripted bots)"),
    Column("tokens_in", "int", "prompt tokens of the turn's asks"),
    Column("tokens_out", "int", "completion tokens of the turn's asks"),
    Column("reasoning_tokens", "int", "reasoning tokens (included in tokens_out)"),
    Column("cost_usd", "float", "cost of the turn's calls"),
    Column("latency_s", "float", "seconds the seat took to answer"),
    Column("finish_reason", "str", "why the model stopped at the last ask ('' when unknown)"),
    Column("last_reply", "str", "the last raw model reply of the turn"),
    Column("error", "str", "why the turn was not ok, if it was not"),
)
"""The per-turn columns."""


def columns_for(level: str, seats: int) -> tuple[Column, ...]:
    """The columns of an export at ``level`` (``match``: :data:`MATCH_COLUMNS` then ``seats`` seat groups)."""
    if level == "match":
        return MATCH_COLUMNS + seat_columns(seats)
    if level == "turn":
        return TURN_COLUMNS
    raise DeepEvalError(f"unknown export level {level!r}: expected one of {', '.join(LEVELS)}")


def data_item(game: str) -> str:
    """The data-item parameters of a game string, ``key=value`` joined by commas ('' when it has none)."""
    params = pyspiel.game_parameters_from_string(game)
    return ",".join(f"{k}={params[k]}" for k in sorted(params) if k in DATA_ITEM_PARAMETERS)


_GIVES_NO_MOVE = {Outcome.INVALID, Outcome.REFUSAL, Outcome.TRUNCATED}
"""The outcomes of a turn the model answered without a valid move (a context overflow is a stand-in, not the
model's move)."""


def match_row(record: MatchRecord, seats: int, run: str = "") -> dict[str, Any]:
    """One record as a row of :func:`columns_for` ``("match", seats)``."""
    own = [t for t in record.turns if t.seat >= 0]
    row: dict[str, Any] = {
        "run": run,
        "match_id": record.match_id,
        "experiment": record.experiment,
        "game": record.game,
        "variant": game_variant(record.game),
        "task": record.game.split("(", 1)[0],
        "data_item": data_item(record.game),
        "repeat": record.repeat,
        "seed": record.seed,
        "status": record.status,
        "error": record.error or "",
        "seats": len(record.seats),
        "player_turns": len(own),
        "invalid_turns": sum(1 for t in own if Outcome(t.outcome) in _GIVES_NO_MOVE),
        "reasked_turns": sum(1 for t in own if t.retries > 0),
        "tokens_in": sum(t.tokens_in for t in record.turns),
        "tokens_out": sum(t.tokens_out for t in record.turns),
        "cost_usd": sum(t.cost_usd for t in record.turns),
        "wall_time_s": record.wall_time_s,
        "started_at": record.started_at,
        "metrics": json.dumps(record.metrics, ensure_ascii=False, sort_keys=True, default=str),
    }
    for i in range(seats):
        present = i < len(record.seats)
        row[f"seat{i}_player"] = record.seats[i] if present else ""
        row[f"seat{i}_role"] = (record.roles[i] if record.roles else "player") if present else ""
        row[f"seat{i}_return"] = float(record.returns[i]) if present and i < len(record.returns) else None
        identity = player_identity(record.players[i]) if present and i < len(record.players) else {}
        row[f"seat{i}_identity"] = json.dumps(identity, ensure_ascii=False, sort_keys=True, default=str)
    return row


def _player(record: MatchRecord, seat: int) -> str:
    if seat == CHANCE_SEAT:
        return "chance"
    if seat == JUDGE_SEAT:
        return "judge"
    return record.seats[seat] if 0 <= seat < len(record.seats) else f"seat {seat}"


def turn_rows(record: MatchRecord, run: str = "") -> Iterator[dict[str, Any]]:
    """The turns of one record as rows of :data:`TURN_COLUMNS`."""
    variant, item = game_variant(record.game), data_item(record.game)
    for turn in record.turns:
        seat = turn.seat
        yield {
            "run": run,
            "match_id": record.match_id,
            "variant": variant,
            "data_item": item,
            "index": turn.index,
            "round": turn.round,
            "seat": seat,
            "player": _player(record, seat),
            "role": (record.roles[seat] if record.roles else "player") if 0 <= seat < len(record.seats) else "",
            "action": turn.action,
            "action_string": turn.action_string,
            "text": turn.text,
            "outcome": Outcome(turn.outcome).value,
            "retries": turn.retries,
            "asks": len(turn.raw_replies),
            "calls": len(turn.attempts),
            "infra_retries": sum(1 for a in turn.attempts if a.status == "infra"),
            "model": turn.model or "",
            "tokens_in": turn.tokens_in,
            "tokens_out": turn.tokens_out,
            "reasoning_tokens": turn.reasoning_tokens,
            "cost_usd": turn.cost_usd,
            "latency_s": turn.latency_s,
            "finish_reason": (turn.finish_reasons[-1] or "") if turn.finish_reasons else "",
            "last_reply": turn.raw_replies[-1] if turn.raw_replies else "",
            "error": turn.error or "",
        }


def _arrow_schema(columns: Sequence[Column]) -> Any:
    import pyarrow as pa

    types = {"str": pa.string(), "int": pa.int64(), "float": pa.float64(), "bool": pa.bool_()}
    return pa.schema([(c.name, types[c.type]) for c in columns])


FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
"""How a cell that a spreadsheet would read as a formula starts (OWASP, "CSV Injection")."""


def csv_text(text: str) -> str:
    """A text cell as a CSV export writes it: control characters and bidirectional overrides escaped (newlines and
    tabs inside kept), and an apostrophe before a cell that would start a formula (see the module docs)."""
    cell = visible(text)
    return "'" + cell if cell.startswith(FORMULA_STARTS) else cell


def write_rows(
    rows: Iterable[dict[str, Any]],
    columns: Sequence[Column],
    path: str | Path,
    fmt: str,
    *,
    raw_text: bool = False,
) -> int:
    """Write rows as they come to ``path`` in ``fmt`` (csv, jsonl or parquet); returns the number of rows.

    In CSV, the text columns go through :func:`csv_text` unless ``raw_text``; JSON Lines and Parquet keep the exact
    text.

    Raises:
        DeepEvalError: an unknown format, ``parquet`` without ``pyarrow`` installed, or a path that cannot be
            written.
    """
    if fmt not in FORMATS:
        raise DeepEvalError(f"unknown export format {fmt!r}: expected one of {', '.join(FORMATS)}")
    out = Path(path)
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        return _write(rows, columns, out, fmt, raw_text)
    except OSError as exc:
        raise DeepEvalError(f"cannot write {out}: {exc}") from exc


def _write(rows: Iterable[dict[str, Any]], columns: Sequence[Column], out: Path, fmt: str, raw_text: bool) -> int:
    count = 0
    if fmt == "parquet":
        try:
            import pyarrow as pa
            import pyarrow.parquet as pq
        except ImportError as exc:
            raise DeepEvalError(
                "parquet export needs pyarrow: pip install 'deepeval-games[parquet]' (or use --format csv|jsonl)"
            ) from exc
        schema = _arrow_schema(columns)
        with pq.ParquetWriter(out, schema) as writer:
            batch: list[dict[str, Any]] = []
            for row in rows:
                batch.append(row)
                count += 1
                if len(batch) >= 2000:
                    writer.write_table(pa.Table.from_pylist(batch, schema=schema))
                    batch = []
            if batch or count == 0:
                writer.write_table(pa.Table.from_pylist(batch, schema=schema))
        return count
    with open(out, "w", encoding="utf-8", newline="") as handle:
        return write_text_rows(rows, columns, handle, fmt, raw_text=raw_text)


def write_text_rows(
    rows: Iterable[dict[str, Any]], columns: Sequence[Column], handle: TextIO, fmt: str, *, raw_text: bool = False
) -> int:
    """Write rows as they come to the open text stream ``handle`` (a file, standard output) as ``csv`` or ``jsonl``,
    the text columns as :func:`write_rows` writes them; returns the number of rows.

    Raises:
        DeepEvalError: another format (Parquet is binary: it needs a file).
    """
    if fmt not in ("csv", "jsonl"):
        raise DeepEvalError(f"{fmt} cannot be written to a text stream: give a file (--out FILE), or use csv or jsonl")
    names = [c.name for c in columns]
    count = 0
    if fmt == "csv":
        writer_csv = csv.DictWriter(handle, fieldnames=names)
        writer_csv.writeheader()
        text_columns = [] if raw_text else [c.name for c in columns if c.type == "str"]
        for row in rows:
            if text_columns:
                row = {**row, **{name: csv_text(row[name]) for name in text_columns if row[name]}}
            writer_csv.writerow(row)
            count += 1
    else:
        for row in rows:
            handle.write(json.dumps({k: row[k] for k in names}, ensure_ascii=False) + "\n")
            count += 1
    return count
