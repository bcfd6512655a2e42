"""The report of one or more run directories: every table and figure their records support, in one layout.

A report is a list of **sections**, registered in one place (:data:`SECTIONS`, :func:`section`). A section is a
function from a :class:`ReportContext` (the records of one game variant, or of the whole report) to
:class:`Block` s: a table (fixed-width text for the terminal, a header and rows for HTML), or a figure (SVG). The
text report (``deepeval-games report``) prints every block's text; the HTML report
(:mod:`deepeval_games.app.reports.html`) shows the same blocks and the transcripts. A new analysis adds its section
with ``@section("key", "Title")`` here; the analysis itself stays a library function over records. An outside
package does the same in a module it lists under the entry point group ``deepeval_games.report``.

**Several run directories** (``report A B``): each record is read once, in order, from every store. Players are
keyed by what they are (:attr:`MatchRecord.players`: bot or model, settings, prompt version), not by the name a
spec gave them: the same player under two names in two runs is one row, named as in the first run; two different
players that share a name get the run's name added (``gpt (run-b)``). Different game variants are never pooled.

**Memory.** Tables read *slim* records (:func:`slim`: no prompts, raw replies, transport attempts or message
pool); the full records stream past once (:func:`stream_records`), for transcripts and exports.
"""

from __future__ import annotations

import contextlib
import io
import json
import logging
import sqlite3
import tempfile
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol, cast

from deepeval_games.app.spec.stopping import RECHECK_RULES
from deepeval_games.app.storage.store import DB_NAME, Store
from deepeval_games.core.errors import DeepEvalError
from deepeval_games.core.judgements import JudgementRecord
from deepeval_games.core.records import MatchRecord, MoveRow, TurnRecord, turns_of_moves
from deepeval_games.core.registry.entry_points import load_entry_points
from deepeval_games.core.registry.games import game_variant

if TYPE_CHECKING:
    from analysis.tables.scores import Headline

__all__ = [
    "ENTRY_POINT_GROUP",
    "SECTIONS",
    "TABLES_ENTRY_POINT_GROUP",
    "Block",
    "ReportContext",
    "RunSource",
    "Section",
    "TaskTables",
    "core_text",
    "load_report",
    "max_seats",
    "open_runs",
    "player_labels",
    "render_blocks",
    "section",
    "slim",
    "spec_epsilon",
    "stream_records",
    "table_module",
    "table_names",
    "text_report",
]

log = logging.getLogger(__name__)

TABLES_ENTRY_POINT_GROUP = "deepeval_games.tables"
"""Each task lists its tables module under this entry point group, by the name ``deepeval-games tables`` takes: a
module with ``GAME`` (the game's short name) and ``print_tables(records, *, players=None, plot=None)``, printing the
task's pairwise tables, figures and reference points. A module may also define ``headline(records)``, returning an
:class:`analysis.tables.scores.Headline` (or None): the task's headline score, which the report shows in place of the
default Eq. 1 / Eq. 2 table (a symmetric task whose records name seats by position, scored as its paper scores it).
The built-in tasks register theirs as an outside package does (``setup.cfg``); the report names none of them."""


class TaskTables(Protocol):
    """A task's tables module (:data:`TABLES_ENTRY_POINT_GROUP`)."""

    GAME: str

    def print_tables(
        self, records: Sequence[MatchRecord], *, players: Sequence[str] | None = None, plot: Path | str | None = None
    ) -> int:
        """Print the tables of ``records`` (0: printed; else nothing to print), saving a figure to ``plot``."""
        ...


def table_names() -> list[str]:
    """The names of every registered tables module, sorted (nothing is imported)."""
    return sorted({entry.name for entry in metadata.entry_points(group=TABLES_ENTRY_POINT_GROUP)})


def table_module(name: str) -> TaskTables:
    """The tables module registered as ``name``.

    Raises:
        KeyError: no task registers tables by that name.
    """
    for entry in metadata.entry_points(group=TABLES_ENTRY_POINT_GROUP, name=name):
        return cast(TaskTables, entry.load())
    raise KeyError(f"no task registers tables named {name!r}; registered: {', '.join(table_names())}")


# -- runs and players -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RunSource:
    """One run directory of a report."""

    path: Path
    label: str
    """Its short name in the report (the folder name; the full path when two folders share a name)."""


def open_runs(run_dirs: Sequence[str | Path]) -> list[RunSource]:
    """The run directories of a report, checked; a clear error for one without results."""
    if not run_dirs:
        raise DeepEvalError("no run directory given")
    paths = [Path(p) for p in run_dirs]
    for path in paths:
        if not (path / DB_NAME).exists():
            raise DeepEvalError(f"no results in {path} (expected {DB_NAME})")
    names = [p.resolve().name for p in paths]
    return [
        RunSource(path, name if names.count(name) == 1 else str(path)) for path, name in zip(paths, names, strict=True)
    ]


def _identity_key(identity: Any, name: str) -> str:
    if not identity:  # records of an old version: the name is all there is
        return json.dumps({"name": name})
    return json.dumps(identity, sort_keys=True, default=str)


def _seatings(run: RunSource) -> Iterator[tuple[list[str], list[Any]]]:
    """(seats, players) of every match of a run, read with SQLite's JSON functions (no record is parsed)."""
    db = sqlite3.connect(f"file:{run.path / DB_NAME}?mode=ro", uri=True)
    try:
        query = "SELECT json_extract(record, '$.seats'), json_extract(record, '$.players') FROM matches"
        for seats, players in db.execute(query):
            yield json.loads(seats or "[]"), json.loads(players or "[]")
    finally:
        db.close()


def max_seats(runs: Sequence[RunSource]) -> int:
    """The most seats any match of ``runs`` has (0 without matches)."""
    return max((len(seats) for run in runs for seats, _ in _seatings(run)), default=0)


def _spec_source(run: RunSource) -> dict[str, Any] | None:
    """The spec a run directory was started with (its store's ``meta``), or None when it has none readable."""
    from deepeval_games.app.spec.extends import stored_spec_text

    text = stored_spec_text(run.path)
    try:
        source = json.loads(text) if text else None
    except (ValueError, TypeError):
        return None
    return source if isinstance(source, dict) else None


def _until_stable(source: dict[str, Any] | None) -> Any:
    experiment = source.get("experiment") if source else None
    return experiment.get("until_stable") if isinstance(experiment, dict) else None


def spec_epsilon(runs: Sequence[RunSource]) -> float | None:
    """The ``until_stable`` epsilon of the first run whose spec has one under the ``recheck`` rule (the stableness
    verdict's default: there it is the half-width every interval must fall below). Under the ``adaptive`` rule (the
    default) epsilon is the margin within which two players are tied, and the rule's own report says whether the run
    is settled: no fixed-sample verdict is added."""
    for run in runs:
        rule = _until_stable(_spec_source(run))
        if not isinstance(rule, dict) or rule.get("rule", "adaptive") not in RECHECK_RULES:
            continue
        if isinstance(rule.get("epsilon"), (int, float)):
            return float(rule["epsilon"])
    return None


def player_labels(runs: Sequence[RunSource]) -> dict[tuple[str, str], str]:
    """The report's name of every (run label, player name): one name per identity, distinct identities apart.

    A single run keeps its names. Across runs, a player (same identity) is named as in the first run it appears
    in; two different players with one name get the run's label added.
    """
    pairs: dict[tuple[str, str], str] = {}  # (run, name) -> identity key
    for run in runs:
        for seats, players in _seatings(run):
            for i, name in enumerate(seats):
                identity = players[i] if i < len(players) else None
                pairs.setdefault((run.label, name), _identity_key(identity, name))
    if len(runs) == 1:
        return {pair: pair[1] for pair in pairs}
    order = {run.label: i for i, run in enumerate(runs)}
    first: dict[str, tuple[str, str]] = {}  # identity -> its first (run, name)
    for pair in sorted(pairs, key=lambda p: (order[p[0]], p[1])):
        first.setdefault(pairs[pair], pair)
    labels: dict[tuple[str, str], str] = {}
    for pair, identity in pairs.items():
        name = first[identity][1]
        same_run_names = {n for (r, n), i in pairs.items() if r == pair[0] and i == identity}
        labels[pair] = pair[1] if len(same_run_names) > 1 else name
    # two identities under one label: the later ones get their first run's label added
    owners: dict[str, str] = {}
    for pair in sorted(pairs, key=lambda p: (order[p[0]], p[1])):
        identity, label = pairs[pair], labels[pair]
        owner = owners.setdefault(label, identity)
        if owner != identity:
            labels[pair] = f"{label} ({first[identity][0]})"
    return labels


def stream_records(
    runs: Sequence[RunSource], labels: dict[tuple[str, str], str] | None = None
) -> Iterator[tuple[RunSource, MatchRecord]]:
    """Every committed record of every run, in run then commit order, its seats renamed by ``labels``."""
    for run in runs:
        with Store(run.path, read_only=True) as store:
            for record in store.records():
                if labels is not None:
                    record.seats = [labels.get((run.label, name), name) for name in record.seats]
                yield run, record


Interned = dict[Any, Any]
"""Shared parts of slim records (:func:`slim`'s ``interned``): equal slim turns, seat lists and player entries."""


def _turn_key(turn: TurnRecord) -> tuple[Any, ...] | None:
    """The fields ``turn`` keeps once slim (:func:`slim`: a seat's texts emptied), as a key under which equal slim
    turns share one object; None when it has attempts. Read from the full turn, so a turn already interned is
    found without a copy being made."""
    if turn.attempts:
        return None
    seat_turn = turn.seat >= 0
    return (
        turn.index, turn.round, turn.seat, turn.action, "" if seat_turn else turn.action_string,
        "" if seat_turn else turn.text, turn.outcome,
        len(turn.raw_replies) if seat_turn else tuple(turn.raw_replies), turn.retries, turn.model,
        turn.tokens_in, turn.tokens_out, turn.cost_usd, turn.error, tuple(turn.cut_chars),
        tuple(turn.finish_reasons), turn.reasoning_tokens, turn.cached_tokens, turn.cache_write_tokens,
    )  # fmt: skip


def _shared(interned: Interned, value: dict[str, Any]) -> dict[str, Any]:
    """One object for every equal player entry (a JSON-like dict) of a report."""
    if all(type(item) is str for item in value.values()):  # names only (a scripted bot): no JSON text needed
        key: tuple[str, Any] = ("names", tuple(sorted(value.items())))
    else:
        key = ("json", json.dumps(value, sort_keys=True, default=str))
    return cast("dict[str, Any]", interned.setdefault(key, value))


def _strings(interned: Interned, value: list[str]) -> list[str]:
    """One object for every equal list of strings (seats, roles) of a report."""
    return cast("list[str]", interned.setdefault(("strings", tuple(value)), value))


def _slim_turn(turn: TurnRecord, interned: Interned | None) -> TurnRecord:
    """``turn`` without the texts of :func:`slim` (the interned copy when there is one)."""
    key = _turn_key(turn) if interned is not None else None
    if key is not None and interned is not None and key in interned:  # most turns of a large run: no copy
        return cast(TurnRecord, interned[key])
    update: dict[str, Any] = {"prompts": [], "reasoning": [], "latency_s": 0.0}
    if turn.seat >= 0:
        update.update(text="", action_string="", raw_replies=[""] * len(turn.raw_replies))
    light = turn.model_copy(update=update)
    return light if key is None or interned is None else cast(TurnRecord, interned.setdefault(key, light))


def _slim_rows(moves: Sequence[MoveRow], interned: Interned) -> list[TurnRecord]:
    """The slim turns of a ``moves`` record's rows (:data:`~deepeval_games.core.records.MOVE_ROW`). A row's slim
    turn is set by its place, round, seat and action (and a chance outcome's name: a seat's name and latency are
    dropped), so rows seen before are looked up; the record's turns are rebuilt only when a row is new."""
    keys = [
        ("row", index, round_, seat, action, name if seat < 0 else "")
        for index, (round_, seat, action, name, _) in enumerate(moves)
    ]
    try:
        return [interned[key] for key in keys]
    except KeyError:  # a row not seen yet
        for key, turn in zip(keys, turns_of_moves(moves), strict=True):
            if key not in interned:
                interned[key] = _slim_turn(turn, interned)
        return [interned[key] for key in keys]


def slim(record: MatchRecord, interned: Interned | None = None) -> MatchRecord:
    """A copy without the texts tables never read: prompts, reasoning, the message pool, the seats' replies and
    utterances (each reply becomes ``""``, so the number of asks stays) and the turns' latency. Transport attempts,
    outcomes, tokens, cost and the judge's verdicts (seat -2) are kept.

    With ``interned`` (one dict per report, empty at first) equal slim turns, seat lists, role lists and player
    entries are one shared object, so a report of many matches of few distinct moves stays small: sections only
    read records, never change them. A ``moves`` record read as stored (``rebuild_turns=False``: its rows, no turns)
    gets the slim turns of its rows.
    """
    if record.moves is not None and not record.turns:
        turns = _slim_rows(record.moves, {} if interned is None else interned)
    else:
        turns = [_slim_turn(turn, interned) for turn in record.turns]
    update: dict[str, Any] = {"turns": turns, "messages": [], "moves": None}  # slim turns stand for the rows
    if interned is not None:
        update.update(
            seats=_strings(interned, record.seats),
            roles=_strings(interned, record.roles),
            players=[_shared(interned, p) for p in record.players],
            game=interned.setdefault(("game", record.game), record.game),
        )
    return record.model_copy(update=update)


# -- sections ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Block:
    """One table or figure of a section."""

    key: str
    """Stable name (``scores``, ``usage``, ``payoffs``): an HTML id and a test's handle."""
    title: str
    text: str = ""
    """The table as fixed-width text (what the terminal shows)."""
    header: tuple[str, ...] = ()
    rows: tuple[tuple[str, ...], ...] = ()
    """Optional structured form of the table, for HTML (``text`` is shown when there is none)."""
    svg: str = ""
    """A figure, as an inline SVG element (``kind`` ``figure``)."""
    kind: Literal["table", "figure"] = "table"


@dataclass
class ReportContext:
    """What a section sees: the slim records of one game variant (or of the whole report)."""

    variant: str
    """The game variant, or ``""`` for a report-wide section."""
    records: list[MatchRecord]
    epsilon: float | None = None
    figures: bool = False
    """Whether figures are wanted (the HTML report); the text report leaves them out."""
    runs: list[RunSource] = field(default_factory=list)
    judgements: list[JudgementRecord] = field(default_factory=list)
    run_counts: dict[str, int] = field(default_factory=dict)
    """Matches per run label (of this variant, or of the report)."""


@dataclass(frozen=True)
class Section:
    """A registered part of the report."""

    key: str
    title: str
    scope: Literal["variant", "report"]
    render: Callable[[ReportContext], list[Block]]
    core: bool = False
    """Printed at the end of ``run`` too (the score summary), not only by ``report``."""


SECTIONS: list[Section] = []
"""Every section, in the order the report shows them."""
ENTRY_POINT_GROUP = "deepeval_games.report"
"""Outside packages add sections by listing a module under this entry point group; importing it registers them."""


def section(
    key: str, title: str, *, scope: Literal["variant", "report"] = "variant", core: bool = False
) -> Callable[[Callable[[ReportContext], list[Block]]], Callable[[ReportContext], list[Block]]]:
    """Register a section (a decorator); it shows after those registered before it."""

    def register(render: Callable[[ReportContext], list[Block]]) -> Callable[[ReportContext], list[Block]]:
        SECTIONS[:] = [s for s in SECTIONS if s.key != key]
        SECTIONS.append(Section(key, title, scope, render, core))
        return render

    return register


def _symmetric(records: Sequence[MatchRecord]) -> bool:
    return all(set(r.roles) <= {"player"} for r in records)


def variant_title(variant: str, records: Sequence[MatchRecord]) -> str:
    """The variant's game string, or ``variant (N data items pooled)``."""
    games = sorted({r.game for r in records})
    return games[0] if len(games) == 1 else f"{variant} ({len(games)} data items pooled)"


def _task_tables_modules(variant: str) -> list[tuple[str, TaskTables]]:
    """The registered tables modules of the variant's task, with their names."""
    task = variant.split("(", 1)[0]
    return [(name, module) for name in table_names() if task == (module := table_module(name)).GAME]


def _headline(ctx: ReportContext) -> Headline | None:
    """The task's own headline score from its tables module, or None (the default Eq. 1 / Eq. 2 table)."""
    for _, module in _task_tables_modules(ctx.variant):
        found = getattr(module, "headline", None)
        if callable(found):
            return cast("Headline | None", found(ctx.records))
    return None


@section("scores", "Scores (Eq. 1 / Eq. 2)", core=True)
def _scores(ctx: ReportContext) -> list[Block]:
    from analysis.tables.payoffs import format_interval, format_scores
    from analysis.tables.scores import role_scores, symmetric_scores

    headline, note = _headline(ctx), ""
    if headline is not None:
        scores, title, note = headline.scores, headline.title, headline.note
    elif _symmetric(ctx.records):
        scores, title = symmetric_scores(ctx.records), "Eq. 1 — mean payoff per player"
    else:
        scores, title = role_scores(ctx.records), "Eq. 2 — mean payoff per player and role"
    if not scores:
        return []
    with_role = any(s.role is not None for s in scores)
    header = ("player", *(("role",) if with_role else ()), "matches", "mean", "std", "95% CI", "min", "max")
    rows = tuple(
        (
            s.player,
            *((s.role or "",) if with_role else ()),
            str(s.n),
            f"{s.mean:.2f}",
            f"{s.std:.2f}",
            format_interval(s.ci_low, s.ci_high),
            f"{s.min:.2f}",
            f"{s.max:.2f}",
        )
        for s in scores
    )
    text = format_scores(scores, title=title) + (f"\n{note}" if note else "")
    return [Block("scores", title, text=text, header=header, rows=rows)]


@section("anytime", "Anytime-valid intervals")
def _anytime(ctx: ReportContext) -> list[Block]:
    """Every mean of the scores with its anytime-valid confidence sequence (:mod:`analysis.stats.confseq`): valid
    however
    often the results were looked at before the run stopped."""
    from analysis.stats.confseq import anytime_scores

    scores = anytime_scores(ctx.records)
    if not scores:
        return []
    with_role = any(s.role != "player" for s in scores)
    header = ("player", *(("role",) if with_role else ()), "matches", "mean", "95% anytime-valid interval")
    rows = tuple(
        (
            s.player,
            *((s.role,) if with_role else ()),
            str(s.interval.n),
            f"{s.interval.mean:.2f}",
            f"[{s.interval.low:.2f}, {s.interval.high:.2f}]",
        )
        for s in scores
    )
    title = "Anytime-valid 95% intervals of the mean payoff (hedged-capital confidence sequence, game payoff range)"
    width = max(len(r[0]) for r in rows)
    lines = [title] + ["  ".join([row[0].ljust(width), *row[1:]]) for row in rows]
    return [Block("anytime", title, text="\n".join(lines), header=header, rows=rows)]


@section("ratings", "Ratings", core=True)
def _ratings(ctx: ReportContext) -> list[Block]:
    """Bradley–Terry with intervals (two seats, one role), Plackett–Luce (more seats, one role), Bradley–Terry
    per role from paired comparisons (asymmetric tasks), and α-Rank where the seatings allow it
    (:mod:`analysis.stats.ratings`)."""
    from analysis.stats import ratings

    done = [r for r in ctx.records if r.status == "complete"]
    if not done:
        return []
    blocks = []
    if not _symmetric(done):
        per_role = ratings.role_ratings(done)
        rows = tuple(
            (role, p, f"{v:+.0f}")
            for role, table in per_role.items()
            for p, v in sorted(table.items(), key=lambda item: -item[1])
        )
        if rows:
            text = "Bradley–Terry rating per role (Elo scale, paired comparisons): " + "; ".join(
                f"{role}: " + ", ".join(f"{p} {v:+.0f}" for p, v in sorted(t.items(), key=lambda i: -i[1]))
                for role, t in per_role.items()
            )
            title = "Bradley–Terry rating per role (Elo scale)"
            blocks.append(Block("ratings", title, text=text, header=("role", "player", "rating"), rows=rows))
    elif all(len(r.seats) == 2 for r in done):
        points = ratings.points_share(done)
        rated = sorted(ratings.bradley_terry(done).items(), key=lambda item: -item[1])
        shares = {p: f"{points[p].mean:.2f} [{points[p].low:.2f}, {points[p].high:.2f}]" for p, _ in rated}
        text = "Bradley–Terry rating (Elo scale; points share with its 95% interval): " + ", ".join(
            f"{p} {v:+.0f} (points {shares[p]})" for p, v in rated
        )
        rows = tuple((p, f"{v:+.0f}", shares[p]) for p, v in rated)
        title = "Bradley–Terry rating (Elo scale)"
        blocks.append(
            Block("ratings", title, text=text, header=("player", "rating", "points share [95% interval]"), rows=rows)
        )
    else:
        pl = sorted(ratings.plackett_luce(done).items(), key=lambda item: -item[1].ordinal)
        text = "Plackett–Luce rating (mu ± sigma): " + ", ".join(f"{p} {r.mu:.1f} ± {r.sigma:.1f}" for p, r in pl)
        pl_rows = tuple((p, f"{r.mu:.2f}", f"{r.sigma:.2f}", f"{r.ordinal:.2f}", str(r.matches)) for p, r in pl)
        header = ("player", "mu", "sigma", "mu - 3 sigma", "matches")
        blocks.append(Block("ratings", "Plackett–Luce rating", text=text, header=header, rows=pl_rows))
    try:  # α-Rank needs every seating with replacement (pairing "self_play"); without it there is none
        ranked = ratings.alpha_rank_records(done)
    except (ValueError, KeyError, IndexError):
        return blocks
    rows = tuple((role, p, f"{mass:.3f}") for role, order in ranked.ranking.items() for p, mass in order)
    text = "α-Rank (stationary mass): " + "; ".join(
        f"{role}: " + ", ".join(f"{p} {m:.3f}" for p, m in order) for role, order in ranked.ranking.items()
    )
    blocks.append(Block("alpha_rank", "α-Rank", text=text, header=("population", "player", "mass"), rows=rows))
    return blocks


@section("two_player", "Two-player metrics", core=True)
def _two_player(ctx: ReportContext) -> list[Block]:
    from analysis.tables.two_player import format_two_player

    if not ctx.records or not all(len(r.seats) == 2 for r in ctx.records) or not _symmetric(ctx.records):
        return []
    return [Block("two_player", "Two-player metrics", text=format_two_player(ctx.records))]


@section("stableness", "Stableness", core=True)
def _stableness(ctx: ReportContext) -> list[Block]:
    from analysis.stats.convergence import stableness

    if ctx.epsilon is None or not ctx.records:
        return []
    check = stableness(ctx.records, epsilon=ctx.epsilon)
    verdict = "stable" if check.stable else "not yet stable"
    text = (
        f"Stableness (epsilon={ctx.epsilon}): {verdict} — {check.reason} (a fixed-sample check: looked at again "
        "after more matches it is not valid under repeated looks)"
    )
    rows = tuple((name, f"{half:.3f}") for name, half in sorted(check.half_widths.items()))
    return [Block("stableness", text, text=text, header=("player", "95% interval half-width"), rows=rows)]


@section("turn_outcomes", "Turn outcomes", core=True)
def _turn_outcomes(ctx: ReportContext) -> list[Block]:
    from analysis.tables.outcomes import format_turn_outcomes, turn_outcomes

    outcomes = turn_outcomes(ctx.records)
    if all(tally.all_ok for tally in outcomes.values()):  # every turn valid at the first ask: nothing to say
        return []
    return [Block("turn_outcomes", "Turn outcomes", text=format_turn_outcomes(outcomes))]


@section("usage", "Turn outcomes, calls, tokens and cost per player")
def _usage(ctx: ReportContext) -> list[Block]:
    from analysis.tables.usage import USAGE_HEADER, format_usage, player_usage, usage_rows

    usage = player_usage(ctx.records)
    if not usage:
        return []
    title = "Turn outcomes, calls, tokens and cost per player"
    return [
        Block(
            "usage",
            title,
            text=title + "\n" + format_usage(usage),
            header=USAGE_HEADER,
            rows=tuple(usage_rows(usage)),
        )
    ]


@section("context_use", "Context policy per turn")
def _context_use(ctx: ReportContext) -> list[Block]:
    from analysis.tables.context_use import CONTEXT_COLUMNS, context_use, format_context_use

    use = context_use(ctx.records)
    if all(set(tally) <= {"full"} for tally in use.values()):  # the paper's whole pool throughout: nothing to say
        return []
    rows = tuple((name, *(str(tally.get(c, 0)) for c in CONTEXT_COLUMNS)) for name, tally in use.items())
    text = format_context_use(use)
    return [Block("context_use", "Context policy per turn", text=text, header=("player", *CONTEXT_COLUMNS), rows=rows)]


@section("task_tables", "The paper's tables")
def _task_tables(ctx: ReportContext) -> list[Block]:
    """The task's pairwise tables (Tables 1–6), printed by the task's table module, with its figure."""
    blocks = []
    for name, module in _task_tables_modules(ctx.variant):
        with tempfile.TemporaryDirectory() as tmp:
            plot = Path(tmp) / "tables.svg" if ctx.figures else None
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                module.print_tables(ctx.records, plot=plot)
            text = "\n".join(line for line in out.getvalue().splitlines() if not line.startswith("figure: "))
            blocks.append(Block(f"{name}_tables", f"Tables of {name}", text=text.strip()))
            for svg in sorted(Path(tmp).glob("*.svg")):
                content = svg.read_text(encoding="utf-8")
                blocks.append(
                    Block(f"{name}_figure", f"Tables of {name}", svg=content[content.find("<svg") :], kind="figure")
                )
    return blocks


@section("figures", "Figures")
def _figures(ctx: ReportContext) -> list[Block]:
    if not ctx.figures or not ctx.records:
        return []
    from analysis.plots import convergence_figure, figure_svg, is_win_lose, payoff_figure

    title = variant_title(ctx.variant, ctx.records)
    payoffs = "Wins, draws and losses" if is_win_lose(ctx.records) else "Payoffs"
    return [
        Block(
            "payoffs", payoffs, svg=figure_svg(payoff_figure(ctx.records, title=f"{payoffs}: {title}")), kind="figure"
        ),
        Block(
            "convergence",
            "Convergence of mean payoffs",
            svg=figure_svg(convergence_figure(ctx.records, title=f"Running mean payoff: {title}")),
            kind="figure",
        ),
    ]


@section("runs", "Runs and players", scope="report")
def _runs(ctx: ReportContext) -> list[Block]:
    if not ctx.runs:
        return []
    rows = tuple((run.label, str(run.path), str(ctx.run_counts.get(run.label, 0))) for run in ctx.runs)
    blocks = [
        Block(
            "runs",
            "Run directories",
            text="Run directories:\n" + "\n".join(f"  {r[0]}: {r[2]} matches ({r[1]})" for r in rows),
            header=("run", "path", "matches"),
            rows=rows,
        )
    ]
    identities: dict[str, set[str]] = {}
    for record in ctx.records:
        for i, name in enumerate(record.seats):
            identity = record.players[i] if i < len(record.players) else {}
            identities.setdefault(name, set()).add(json.dumps(identity, sort_keys=True, default=str))
    players = tuple((name, " | ".join(sorted(ids))) for name, ids in sorted(identities.items()))
    text = "Players (what played under each name):\n" + "\n".join(f"  {name}: {ids}" for name, ids in players)
    title = "Players (what played under each name)"
    blocks.append(Block("players", title, text=text, header=("player", "identity"), rows=players))
    return blocks


@section("aborted", "Aborted match attempts", scope="report")
def _aborted(ctx: ReportContext) -> list[Block]:
    """Attempts the runner gave up on (the store's ``attempts`` table): infrastructure failures, rescheduled and
    never scored, and errors of a bot or game. They are not results; they say what a run spent beyond them."""
    rows = []
    for run in ctx.runs:
        with Store(run.path, read_only=True) as store:
            attempts = store.attempts()
        for kind in sorted({kind for _, kind, _ in attempts}):
            of_kind = [match_id for match_id, k, _ in attempts if k == kind]
            rows.append((run.label, kind, str(len(of_kind)), str(len(set(of_kind)))))
    if not rows:
        return []
    title = "Aborted match attempts (not results: infra failures are rescheduled, errors lose their match)"
    text = title + "\n" + "\n".join(f"  {r[0]}: {r[1]} {r[2]} attempts of {r[3]} matches" for r in rows)
    return [Block("aborted", title, text=text, header=("run", "kind", "attempts", "matches"), rows=tuple(rows))]


@section("stopping", "Stopping rule", scope="report")
def _stopping(ctx: ReportContext) -> list[Block]:
    """Per run, what stopped it: under the adaptive rule its ``stopping.json`` (what stopped the run, matches per
    player, what is unresolved); under the old ``recheck`` rule that its intervals are not valid under repeated
    looks; with a fixed repeat count that no stopping rule was applied (so nothing claims the results converged)."""
    from analysis.stats.stopping import StoppingReport, format_stopping, stopping_rule_note

    blocks = []
    for run in ctx.runs:
        path = run.path / "stopping.json"
        if path.is_file():
            try:
                report = StoppingReport.from_dict(json.loads(path.read_text(encoding="utf-8")))
            except (ValueError, KeyError, TypeError, IndexError) as exc:
                log.warning("%s is unreadable (%s); its stopping report is left out", path, exc)
                continue
            text = f"{run.label}: " + format_stopping(report)
            blocks.append(Block("stopping", f"Adaptive stopping rule ({run.label})", text=text))
            continue
        source = _spec_source(run)
        if source is None:
            continue
        rule = _until_stable(source)
        rule = rule if isinstance(rule, dict) else None
        if rule is None:
            note = stopping_rule_note(None, int(source.get("experiment", {}).get("repeats", 1)))
        elif rule.get("rule", "adaptive") == "adaptive":
            note = (
                "the adaptive stopping rule's report (stopping.json) is missing: the run was stopped before the rule "
                "decided, or was played before the adaptive rule became the default (then by the old 'recheck' "
                "rule, whose intervals are not valid under repeated looks)."
            )
        else:
            note = stopping_rule_note(str(rule["rule"]), _played_repeats(run), int(rule.get("max_repeats", 50)))
        blocks.append(Block("stopping", f"Stopping rule ({run.label})", text=f"{run.label}: {note}"))
    return blocks


def _played_repeats(run: RunSource) -> int:
    """The repeats a run's committed matches reach (its largest repeat number plus one)."""
    db = sqlite3.connect(f"file:{run.path / DB_NAME}?mode=ro", uri=True)
    try:
        (top,) = db.execute("SELECT MAX(json_extract(record, '$.repeat')) FROM matches").fetchone()
    except sqlite3.Error:
        top = None
    finally:
        db.close()
    return int(top) + 1 if top is not None else 0


@section("judge_audit", "Judge audit", scope="report")
def _judge_audit(ctx: ReportContext) -> list[Block]:
    if not ctx.judgements:
        return []
    from analysis.judge_audit import format_audit, judge_audit

    return [Block("judge_audit", "Judge audit", text=format_audit(judge_audit(ctx.records, ctx.judgements)))]


# -- assembling -------------------------------------------------------------------------------------------


@dataclass
class ReportData:
    """The slim records of a report, grouped by game variant, with its runs and judgements."""

    runs: list[RunSource]
    variants: dict[str, list[MatchRecord]]
    judgements: list[JudgementRecord]
    run_counts: dict[str, dict[str, int]]
    """Per variant, matches per run label."""
    epsilon: float | None = None
    """The stableness epsilon of the runs' specs (``until_stable``), used when the report is given none."""

    @property
    def records(self) -> list[MatchRecord]:
        """Every slim record."""
        return [r for records in self.variants.values() for r in records]


def load_report(
    run_dirs: Sequence[str | Path], *, on_record: Callable[[RunSource, MatchRecord], None] | None = None
) -> ReportData:
    """Stream every record of ``run_dirs`` once (``on_record`` sees each full record) and keep slim copies."""
    runs = open_runs(run_dirs)
    labels = player_labels(runs)
    variants: dict[str, list[MatchRecord]] = {}
    counts: dict[str, dict[str, int]] = {}
    interned: Interned = {}
    for run, record in stream_records(runs, labels):
        if on_record is not None:
            on_record(run, record)
        variant = game_variant(record.game)
        variants.setdefault(variant, []).append(slim(record, interned))
        per_run = counts.setdefault(variant, {})
        per_run[run.label] = per_run.get(run.label, 0) + 1
    judgements: list[JudgementRecord] = []
    if len(runs) == 1:  # re-judged verdicts name the match ids of their own run
        with Store(runs[0].path, read_only=True) as store:
            judgements = list(store.judgements())
    return ReportData(runs, dict(sorted(variants.items())), judgements, counts, spec_epsilon(runs))


def render_blocks(
    data: ReportData, *, epsilon: float | None = None, figures: bool = False, core_only: bool = False
) -> Iterator[tuple[Section, str, list[Block]]]:
    """(section, variant or "", blocks) for every section and variant that has something to show.

    Without ``epsilon`` the stableness check uses the runs' own (``until_stable``), when their spec has one.
    """
    epsilon = epsilon if epsilon is not None else data.epsilon
    load_entry_points(ENTRY_POINT_GROUP)  # sections of installed outside packages
    for sec in SECTIONS:
        if core_only and not sec.core:
            continue
        if sec.scope == "variant":
            for variant, records in data.variants.items():
                ctx = ReportContext(variant, records, epsilon, figures, data.runs, [], data.run_counts[variant])
                blocks = _safe(sec, ctx)
                if blocks:
                    yield sec, variant, blocks
        else:
            totals: dict[str, int] = {}
            for per_run in data.run_counts.values():
                for run, n in per_run.items():
                    totals[run] = totals.get(run, 0) + n
            ctx = ReportContext("", data.records, epsilon, figures, data.runs, data.judgements, totals)
            blocks = _safe(sec, ctx)
            if blocks:
                yield sec, "", blocks


def _safe(sec: Section, ctx: ReportContext) -> list[Block]:
    """A section's blocks; a section that fails is reported in its place, never the end of the report."""
    try:
        return sec.render(ctx)
    except Exception as exc:  # one analysis failing must not lose the rest of the report
        log.exception("report section %s failed", sec.key)
        return [Block(f"{sec.key}_error", sec.title, text=f"{sec.title}: could not be computed ({exc!r})")]


def _variant_text(data: ReportData, variant: str, parts: list[tuple[Section, list[Block]]]) -> str:
    title = variant_title(variant, data.variants[variant])
    lines = [title]
    for sec, blocks in parts:
        texts = [b.text for b in blocks if b.kind == "table" and b.text]
        if texts:
            lines.append(("" if sec.core else "\n") + "\n".join(texts))
    return "\n".join(lines)


def text_report(data: ReportData, *, epsilon: float | None = None, core_only: bool = False) -> str:
    """Every table as text: per variant its sections, then the report-wide ones (runs of a comparison, the
    judge audit)."""
    per_variant: dict[str, list[tuple[Section, list[Block]]]] = {v: [] for v in data.variants}
    report_wide: list[str] = []
    for sec, variant, blocks in render_blocks(data, epsilon=epsilon, core_only=core_only):
        if variant:
            per_variant[variant].append((sec, blocks))
        elif sec.key != "runs" or len(data.runs) > 1:
            report_wide.append("\n".join(b.text for b in blocks if b.kind == "table" and b.text))
    parts = [_variant_text(data, v, blocks) for v, blocks in per_variant.items() if data.variants[v]]
    text = "\n\n".join(parts + report_wide)
    return text or "no completed matches"


def core_text(records: Iterable[MatchRecord], *, epsilon: float | None = None) -> str:
    """The score summary of ``records`` (what ``run`` prints): the core sections only. The records are read once,
    as they come, and kept slim (:func:`slim`): a stream from the store keeps memory small."""
    variants: dict[str, list[MatchRecord]] = {}
    interned: Interned = {}
    for record in records:
        variants.setdefault(game_variant(record.game), []).append(slim(record, interned))
    data = ReportData([], dict(sorted(variants.items())), [], {v: {} for v in variants})
    return text_report(data, epsilon=epsilon, core_only=True)
