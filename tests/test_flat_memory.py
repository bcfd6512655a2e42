"""Flat memory (issue 14, item 2): the summary ``run`` prints and ``report`` stream the store into slim records that
share their equal parts."""

from __future__ import annotations

import sqlite3
import tracemalloc
from pathlib import Path

import pytest

from analysis.stats.intervals import IntervalPolicy
from deepeval_games.app.execution.run import run_experiment
from deepeval_games.app.execution.run_result import RunResult
from deepeval_games.app.reports.columns import slim
from deepeval_games.app.reports.report import ReportData, load_report, text_report
from deepeval_games.app.spec.extends import stored_intervals
from deepeval_games.app.storage.store import DB_NAME, JSONL_NAME, Store
from deepeval_games.core.records import MatchRecord

BOTS = ("pgg_free_rider", "pgg_full_contributor", "pgg_conditional_cooperator", "pgg_random")
GAME = "deepeval_public_goods(players=4,rounds=2)"


def _spec(repeats: int) -> dict[str, object]:
    return {
        "experiment": {"game": GAME, "repeats": repeats, "seed": 3},
        "players": [{"name": bot, "bot": bot} for bot in BOTS],
    }


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("flat") / "run"
    run_experiment(_spec(80), out)
    return out


def _full(run_dir: Path) -> list[MatchRecord]:
    with Store(run_dir, read_only=True) as store:
        return list(store.records())


def test_report_shares_equal_slim_turns_and_its_tables_are_those_of_the_full_records(run_dir: Path) -> None:
    full = _full(run_dir)
    data = load_report([run_dir])
    slims = data.records
    turns = [t for r in slims for t in r.turns]
    assert len(slims) == 80 and len(turns) == sum(len(r.turns) for r in full)
    assert len({id(t) for t in turns}) < len(turns) // 4  # scripted moves repeat: one object per distinct turn
    assert len({id(r.seats) for r in slims}) < len(slims)
    for record, light in zip(full, slims, strict=True):  # what tables read is kept
        assert (light.match_id, light.returns, light.status, light.seats) == (
            record.match_id,
            record.returns,
            record.status,
            record.seats,
        )
        assert [(t.seat, t.action, t.outcome, t.tokens_in) for t in light.turns] == [
            (t.seat, t.action, t.outcome, t.tokens_in) for t in record.turns
        ]
    (variant,) = data.variants
    unslimmed = ReportData(data.runs, {variant: full}, [], data.run_counts, data.epsilon, data.intervals)
    assert text_report(data) == text_report(unslimmed)


def test_shared_slim_records_take_a_fraction_of_the_memory(run_dir: Path) -> None:
    full = _full(run_dir)

    def held(interned: dict[object, object] | None) -> int:
        tracemalloc.start()
        try:
            kept = [slim(r, interned) for r in full]
            size = tracemalloc.get_traced_memory()[0]
        finally:
            tracemalloc.stop()
        assert len(kept) == len(full)
        return size

    alone, shared = held(None), held({})
    assert shared < alone / 4, (alone, shared)
    assert shared / len(full) < 8_000  # bytes per 8-turn match (a full slim copy: about 20,000)


@pytest.mark.parametrize("workers", ["1", "2"])
def test_run_feeds_its_summary_as_it_commits_and_a_resumed_run_reads_only_its_earlier_records(
    workers: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from deepeval_games.app.commands.cli import main
    from deepeval_games.app.commands.playing import score_report

    def every_record_at_once(self: RunResult) -> list[MatchRecord]:
        raise AssertionError("the run summary read every record at once")

    monkeypatch.setattr(RunResult, "records", property(every_record_at_once))
    # two processes, two matches in flight: the worker plays every match and the driver commits its lines
    lines = [f'game = "{GAME}"', "repeats = 12", "seed = 3", "max_concurrency = 2"]
    players = "".join(f'\n[[players]]\nname = "{b}"\nbot = "{b}"\n' for b in BOTS)
    spec = tmp_path / "spec.toml"
    spec.write_text("[experiment]\n" + "\n".join(lines) + "\n" + players)
    streamed: list[str] = []
    original = RunResult.iter_records

    def counted(self: RunResult, *, rebuild_turns: bool = True) -> object:
        streamed.append(f"rebuild_turns={rebuild_turns}")
        return original(self, rebuild_turns=rebuild_turns)

    monkeypatch.setattr(RunResult, "iter_records", counted)
    out = tmp_path / "r"
    command = ["run", str(spec), "--out", str(out), "--no-progress", "--workers", workers]

    def summary_of_the_store() -> str:
        with Store(out, read_only=True) as store:
            return score_report(store.records(rebuild_turns=False), intervals=stored_intervals(out))

    assert main(command) == 0
    assert streamed == []  # a fresh run's summary was fed each record as it was committed: nothing read back
    assert capsys.readouterr().out.startswith(summary_of_the_store() + "\n")
    with sqlite3.connect(out / DB_NAME) as db:  # as if the run had been killed after 5 matches
        db.execute("DELETE FROM matches WHERE seq > 5")
    kept = (out / JSONL_NAME).read_text().splitlines(keepends=True)[:5]
    (out / JSONL_NAME).write_text("".join(kept))
    assert main(command) == 0
    assert streamed == ["rebuild_turns=False"]  # the 5 earlier records, as stored, ahead of the fed ones
    printed = capsys.readouterr().out
    assert "7 played now, 5 already in" in printed
    assert printed.startswith(summary_of_the_store() + "\n")


def test_run_summary_is_the_report_core(run_dir: Path) -> None:
    from deepeval_games.app.commands.playing import score_report

    full = _full(run_dir)
    data = load_report([run_dir])
    assert data.intervals == stored_intervals(run_dir) == IntervalPolicy("3")  # the current version
    summary = score_report(iter(full), intervals=data.intervals)
    assert summary == score_report(full, intervals=data.intervals) == text_report(data, core_only=True)


def test_the_run_summary_of_records_read_as_stored_is_that_of_the_full_records(run_dir: Path) -> None:
    """``run`` reads its moves records as stored (rows, no turns rebuilt): the summary's text is the same."""
    from deepeval_games.app.commands.playing import score_report

    with Store(run_dir, read_only=True) as store:
        stored = list(store.records(rebuild_turns=False))
    assert all(r.transcript == "moves" and r.moves and not r.turns for r in stored)
    assert score_report(iter(stored)) == score_report(_full(run_dir))


def test_a_record_the_summary_cannot_read_never_stops_the_run_it_fails_the_summary(run_dir: Path) -> None:
    from deepeval_games.app.reports.report import CoreSummary
    from deepeval_games.core.records import RecordError

    with Store(run_dir, read_only=True) as store:
        first, second = (record.to_json_bytes() for record, _ in zip(store.records(), range(2), strict=False))
    summary = CoreSummary()
    summary.add_json(first)
    summary.add_json(first.replace(b'"returns"', b'"return"'))  # no payoffs: the record does not validate
    summary.add_json(second)  # nothing is added after it
    assert sum(len(records) for records in summary.variants.values()) == 1
    with pytest.raises(RecordError):
        summary.text()


def test_the_run_summary_keeps_its_matches_as_columns_and_its_memory_per_match_stays_small(run_dir: Path) -> None:
    """Issue 41, item 4: the summary ``run`` prints holds no object per match, only columns (the id's bytes, the
    repeat, the payoffs, a shape index: about 70 bytes a four-seat PGG match; an object a match, as the outlines
    before, cost 240 bytes and more); what it holds grows by less than 120 bytes a match from 500 to 4,000, and its
    matches read back as outlines with the record's fields."""
    from deepeval_games.app.reports.columns import Outline, Outlines
    from deepeval_games.app.reports.report import CoreSummary

    lines = (run_dir / JSONL_NAME).read_bytes().splitlines()

    def held(matches: int) -> tuple[int, CoreSummary]:
        summary = CoreSummary()
        summary.add_json(lines[0])  # the section registry and the task's tables module loaded first
        tracemalloc.start()
        try:
            for index in range(matches - 1):
                summary.add_json(lines[(index + 1) % len(lines)])
            size = tracemalloc.get_traced_memory()[0]
        finally:
            tracemalloc.stop()
        (kept,) = summary.variants.values()
        assert type(kept) is Outlines and len(kept) == matches
        return size, summary

    (small, _), (large, summary) = held(500), held(4_000)
    assert (large - small) / 3_500 < 120, (small, large)
    (kept,) = summary.variants.values()
    first = MatchRecord.from_json(lines[0], rebuild_turns=False)
    item = kept[0]
    assert type(item) is Outline
    fields = (item.match_id, item.game, item.repeat, item.status)
    assert fields == (first.match_id, first.game, first.repeat, "complete")
    assert (item.seats, item.roles, list(item.returns)) == (first.seats, first.roles, first.returns)
    assert [(t.seat, t.outcome) for t in item.turns] == [(m[1], "ok") for m in first.moves or [] if m[1] >= 0]


def test_the_summary_columns_select_and_order_themselves_as_lists_do(run_dir: Path) -> None:
    """The analyses' filters and order of repetition (:mod:`analysis.views`) give columns a view (no list of
    outlines) holding the very matches, in the very order, that a list of the records gets."""
    from analysis import views
    from deepeval_games.app.reports.report import CoreSummary

    lines = (run_dir / JSONL_NAME).read_bytes().splitlines()
    summary = CoreSummary()
    for line in reversed(lines):  # not in the order of repetition
        summary.add_json(line)
    (kept,) = summary.variants.values()
    records = [MatchRecord.from_json(line) for line in reversed(lines)]
    assert isinstance(kept, views.RecordColumns) and not isinstance(records, views.RecordColumns)
    ordered = views.in_repetition_order(kept)
    assert isinstance(ordered, views.RecordColumns)
    assert [r.match_id for r in ordered] == [r.match_id for r in views.in_repetition_order(records)]
    odd = views.select(ordered, lambda r: r.repeat % 2 == 1)
    assert [r.match_id for r in odd] == [r.match_id for r in views.in_repetition_order(records) if r.repeat % 2]
    assert [r.match_id for r in odd[1:3]] == [r.match_id for r in list(odd)[1:3]]
    assert views.complete(kept) is kept  # every match complete: the same view
    # a filter of what a shape holds is asked once a shape (each seat's player here): the same matches as the list's
    first = records[0].seats[0]
    for view in (kept, ordered, odd):
        listed = list(view)
        seated = views.select(view, lambda r: r.seats[0] == first)
        assert isinstance(seated, views.RecordColumns)
        assert 0 < len(seated) < len(view)
        assert [r.match_id for r in seated] == [r.match_id for r in listed if r.seats[0] == first]
        mixed = views.select(view, lambda r: r.seats[0] == first and r.returns[0] > r.returns[1])
        assert [r.match_id for r in mixed] == [
            r.match_id for r in listed if r.seats[0] == first and r.returns[0] > r.returns[1]
        ]


def test_a_ratio_interval_of_many_matches_works_a_block_of_matches_at_a_time() -> None:
    """The betting tests of every candidate ratio (401 of them) advance a block of matches at a time: the working
    memory of an NRA interval no longer grows 401 x 8 bytes x several arrays a match (5,000 matches: 100+ MB
    before)."""
    import numpy as np

    from analysis.stats.confseq import ratio_interval

    rng = np.random.default_rng(0)
    mine = rng.choice([-1.0, 0.0, 1.0], size=5_000)
    tracemalloc.start()
    try:
        interval = ratio_interval(mine, np.abs(mine), 1.0)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert interval.low < interval.mean < interval.high
    assert peak < 10_000_000, peak


def test_the_plan_keeps_its_matches_as_columns_and_its_memory_per_match_stays_small() -> None:
    """Issue 41, item 4: a run holds its plan from start to end, as columns (the id's bytes, the repeat and seed, a
    seating index: about 45 bytes a match; an object a match, as the ``PlannedMatch`` list before, cost about 210
    bytes with its id string and ints); what a plan holds grows by less than 80 bytes a match from 1,000 to 10,000
    matches, and its matches read back, sliced and filtered with the fields they were planned with."""
    from deepeval_games.app.spec.plan import Plan, PlannedMatch
    from deepeval_games.app.spec.schedule import plan_matches
    from deepeval_games.app.spec.spec import parse_spec

    def held(repeats: int) -> tuple[int, Plan]:
        spec = parse_spec(_spec(repeats))
        plan_matches(parse_spec(_spec(1)))  # the game and the players' identities loaded first
        tracemalloc.start()
        try:
            plan = plan_matches(spec)
            size = tracemalloc.get_traced_memory()[0]
        finally:
            tracemalloc.stop()
        assert type(plan) is Plan and len(plan) == repeats
        return size, plan

    (small, _), (large, plan) = held(1_000), held(10_000)
    assert (large - small) / 9_000 < 80, (small, large)
    matches = list(plan)
    assert all(type(m) is PlannedMatch for m in matches[:3]) and plan[-1] == matches[-1] == plan[len(plan) - 1]
    assert len({m.match_id for m in matches}) == len(plan) and {m.repeat for m in matches} == set(range(len(plan)))
    assert plan[10:13] == matches[10:13] and list(plan.match_ids())[:5] == [m.match_id for m in matches[:5]]
    assert plan.without({m.match_id for m in matches[1:]}) == matches[:1] and plan.without(set()) is plan
    assert plan.games() == {matches[0].game} and Plan.of(matches[:50]) == plan[:50]


def test_a_run_takes_its_matches_from_the_plan_as_it_plays_them() -> None:
    """The matches waiting to be played are the plan's, in order, each made as it is taken (no queue of an object
    a match for the whole run), then the retries; a batch handed back comes first again."""
    from deepeval_games.app.execution.play_and_commit import Waiting
    from deepeval_games.app.spec.schedule import plan_matches
    from deepeval_games.app.spec.spec import parse_spec

    plan = plan_matches(parse_spec(_spec(5_000)))
    tracemalloc.start()
    try:
        waiting = Waiting(plan)
        first = waiting.popleft()
        size = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    assert size < 20_000, size  # what it holds does not grow with the plan (a queue of 5,000 tuples: 300+ kB)
    assert first == (plan[0], 1) and len(waiting) == len(plan) - 1
    second = waiting.popleft()
    waiting.append((first[0], 2))  # a retry: after the rest of the plan
    waiting.extendleft([second])  # handed back: first again
    taken = [waiting.popleft() for _ in range(len(waiting))]
    assert taken == [second, *((m, 1) for m in plan[2:]), (first[0], 2)] and not waiting
    with pytest.raises(IndexError):
        waiting.popleft()
