"""The report (issue 15): the HTML report opened in headless Chromium, exports, dry run, run summary, comparing
runs and figures.

The HTML tests render the report of each scripted example run and of a run against the fake OpenAI endpoint scripted
to produce every turn outcome, open it in Chromium (``--dump-dom`` after scripts ran, ``--screenshot``) and check the
DOM for every table, every figure and one transcript per outcome, and Chromium's net log for requests of the page.
"""

from __future__ import annotations

import json
import re
import sqlite3
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest

from deepeval_games import run_experiment
from deepeval_games.app.commands.cli import main
from deepeval_games.app.reports.html import RETRIED, write_html_report
from deepeval_games.app.reports.report import load_report, text_report
from deepeval_games.app.storage.store import Store
from deepeval_games.core.bot import CallAttempt
from deepeval_games.core.records import MatchRecord
from deepeval_games.core.registry.games import game_variant
from tests.chromium import chromium_binary, visit
from tests.fake_openai_server import Behaviour, FakeOpenAIServer, model_player

REPO = Path(__file__).resolve().parent.parent
EXAMPLES = REPO / "examples"
ANSWER = '{"reason": "r", "coins": 3}'

needs_chromium = pytest.mark.skipif(
    chromium_binary() is None, reason="chromium is not installed (.ci/run installs it: apt-get install -y chromium)"
)


def _bubblewrap() -> bool:
    from deepeval_games.infra.sandbox import bubblewrap_usable

    return bool(bubblewrap_usable())


def _ultimatum_installed() -> bool:
    try:
        metadata.distribution("deepeval-ultimatum")
    except metadata.PackageNotFoundError:
        return False
    return True


# spec file, then the tables and figures its page must show (beyond scores, usage, payoffs and convergence)
EXAMPLE_RUNS: dict[str, tuple[str, set[str], set[str]]] = {
    "pgg": ("pgg_scripted.toml", set(), set()),
    "idiom": ("idiom_scripted.toml", {"ratings", "idiom_tables"}, {"idiom_figure"}),
    "code_review": ("code_review_scripted.toml", {"ratings", "code-review_tables"}, {"code-review_figure"}),
    "code_review_canary": ("code_review_canary.toml", {"ratings", "code-review_tables"}, {"code-review_figure"}),
    # re-judged by the fixture: the page shows the judge audit too
    "translation": (
        "translation_scripted.toml",
        {"ratings", "translation_tables", "judge_audit"},
        {"translation_figure"},
    ),
    "ultimatum": ("ultimatum/ultimatum.toml", set(), set()),  # two players, no paired comparison per role
}


@pytest.fixture(scope="module")
def example_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Each scripted example played once into a run directory (the ones whose needs are met here)."""
    root = tmp_path_factory.mktemp("examples")
    runs = {}
    for name, (spec, _, _) in EXAMPLE_RUNS.items():
        if name.startswith("code_review") and not _bubblewrap():
            continue
        if name == "ultimatum" and not _ultimatum_installed():
            continue
        run_experiment(EXAMPLES / spec, root / name)
        runs[name] = root / name
    if "translation" in runs:  # a second judge's verdicts beside the matches: the report adds the judge audit
        assert main(["rejudge", str(runs["translation"]), "--judge", "judge_fixed"]) == 0
    return runs


def _outcomes(run_dir: Path) -> set[str]:
    with Store(run_dir, read_only=True) as store:
        return {str(t.outcome.value) for r in store.records() for t in r.turns if 0 <= t.seat < len(r.seats)}


def _sample_block(dom: str, outcome: str) -> str:
    """The DOM of the sample transcript shown for ``outcome`` (up to the next sample)."""
    start = dom.find(f'data-sample="{outcome}"')
    assert start >= 0, f"no sample slot for {outcome}"
    end = dom.find('data-sample="', start + 1)
    return dom[start : end if end > 0 else len(dom)]


def _check_page(page: Path, tables: set[str], figures: set[str], outcomes: set[str], tmp_path: Path) -> str:
    visit_ = visit(page, fragment="samples", screenshot=tmp_path / "page.png")
    dom = visit_.dom
    assert visit_.page_requests == [], f"the page made network requests: {visit_.page_requests}"
    assert visit_.screenshot is not None and visit_.screenshot.read_bytes()[:4] == b"\x89PNG"
    assert visit_.screenshot.stat().st_size > 20_000  # a rendered page, not a blank one
    shown_tables = set(re.findall(r'data-table="([\w-]+)"', dom))
    shown_figures = set(re.findall(r'data-figure="([\w-]+)"', dom))
    assert tables <= shown_tables, f"missing tables: {tables - shown_tables}"
    assert figures <= shown_figures, f"missing figures: {figures - shown_figures}"
    assert dom.count("<svg") >= len(figures)
    matches = int(re.search(r'id="f-count">(\d+) of (\d+) matches', dom).group(2))  # type: ignore[union-attr]
    assert matches > 0 and 'data-match="' in dom  # the first page of the match list is filled in
    for outcome in outcomes:  # one transcript per outcome, turn by turn, with a turn of that outcome
        block = _sample_block(dom, outcome)
        shows = 'class="attempt-retry"' if outcome == RETRIED else f'data-outcome="{outcome}"'
        assert 'class="transcript"' in block and shows in block, outcome
    return dom


@needs_chromium
@pytest.mark.parametrize("name", list(EXAMPLE_RUNS))
def test_html_report_of_each_example_run_opens_in_chromium(
    name: str, example_runs: dict[str, Path], tmp_path: Path
) -> None:
    if name not in example_runs:
        pytest.skip(f"the {name} example cannot run here (sandbox or example package missing)")
    run_dir = example_runs[name]
    page = write_html_report([run_dir], tmp_path / "html")
    _, tables, figures = EXAMPLE_RUNS[name]
    _check_page(
        page,
        {"scores", "usage", "runs", "players", *tables},
        {"payoffs", "convergence", *figures},
        _outcomes(run_dir),
        tmp_path,
    )
    assert not list((tmp_path / "html").rglob("*.css")) and (tmp_path / "html" / "data" / "chunk-00000.js").exists()


def _every_outcome_run(run_dir: Path) -> tuple[list[MatchRecord], int]:
    """A Public Goods match against the fake endpoint whose six model turns end in each turn outcome in turn,
    after a 500 that is retried."""
    cut = Behaviour(kind="reply", text='{"reason": "I will put in', finish_reason="length")
    with FakeOpenAIServer(default=Behaviour.reply(ANSWER), max_hang_s=5) as server:
        server.script(
            Behaviour.error(500),  # retried by the transport
            Behaviour.reply(ANSWER),  # ok
            *(Behaviour.reply("no idea"), Behaviour.reply(ANSWER)),  # reasked
            *(Behaviour.reply("no idea"), Behaviour.reply("still none")),  # invalid (max_reasks 1)
            *(Behaviour.refusal(), Behaviour.refusal()),  # refusal
            *(cut, cut),  # truncated
            Behaviour.context_overflow(),  # context_overflow (under the smallest context policy: a stand-in)
        )
        spec = {
            "experiment": {
                "name": "outcomes",
                "game": "deepeval_public_goods(players=2,rounds=6)",
                "cache": False,
                "max_concurrency": 1,
            },
            "players": [
                model_player("fake-model", server, max_reasks=1, context="state"),
                {"name": "free", "bot": "pgg_free_rider"},
            ],
        }
        result = run_experiment(spec, run_dir)
        return result.records, server.request_count


@needs_chromium
@pytest.mark.usefixtures("fake_provider_key")
def test_html_report_of_a_fake_endpoint_run_shows_a_transcript_per_outcome(tmp_path: Path) -> None:
    records, requests = _every_outcome_run(tmp_path / "run")
    expected = {"ok", "reasked", "invalid", "refusal", "truncated", "context_overflow"}
    assert _outcomes(tmp_path / "run") == expected and requests == 11  # the 500 was retried
    assert any(a.status == "infra" for r in records for t in r.turns for a in t.attempts)  # the 500, on record
    page = write_html_report([tmp_path / "run"], tmp_path / "html")
    dom = _check_page(
        page,
        {"scores", "usage", "ratings", "two_player", "turn_outcomes"},
        {"payoffs", "convergence"},
        expected | {RETRIED},
        tmp_path,
    )
    # per player: every outcome once, 11 calls of which 1 retried, in the usage table
    usage = re.search(r'data-table="usage">.*?</table>', dom, re.S).group(0)  # type: ignore[union-attr]
    cells = [re.sub(r"<[^>]+>", "", c) for c in re.findall(r"<td[^>]*>.*?</td>", usage)]
    row = cells[cells.index("fake-model") : cells.index("fake-model") + 14]
    # the stand-in for the overflow is not the model's invalid move: 3 of the 5 turns it was asked
    assert row[1:8] == ["1", "1", "1", "1", "1", "0", "1"] and row[8] == "60.0%" and row[9:11] == ["11", "1"]
    refusal = _sample_block(dom, "refusal")
    assert "re-ask 1" in refusal and "reply 2 [content_filter]" in _sample_block(dom, "refusal")
    assert "[length]" in _sample_block(dom, "truncated")
    assert "(rules)" in refusal and "(observation)" in refusal  # what the seat saw: the pool's messages
    # a round's move comes before that round's result (both carry the round's number in the pool)
    block = _sample_block(dom, "ok")
    move = re.search(r"<b>\[round 1\] Player", block)
    assert move is not None and move.start() < block.index("In round 1"), "round 1's result shown before its move"


def _headings(part: str) -> list[str]:
    """The text of every heading, table caption and figure caption in a part of the page."""
    found = re.findall(r"<(h[1-6]|caption|figcaption)\b[^>]*>(.*?)</\1>", part, re.S)
    return [re.sub(r"<[^>]+>", "", text).strip() for _, text in found]


@needs_chromium
@pytest.mark.usefixtures("fake_provider_key")
def test_html_report_has_one_heading_per_section_tables_as_tables_and_rounds_in_play_order(tmp_path: Path) -> None:
    """Issue 43, item 3: "Two-player metrics" and "Turn outcomes, calls, tokens and cost per player" were each a
    section heading and again the caption of its table; the two-player metrics, the turn outcomes and the PGG
    reference points were preformatted text; a round's result must follow that round's moves."""
    _every_outcome_run(tmp_path / "run")  # two seats (two-player metrics), every turn outcome, a PGG of 6 rounds
    dom = visit(write_html_report([tmp_path / "run"], tmp_path / "html"), fragment="samples").dom
    body = dom[dom.index('id="report-body"') : dom.index('<section id="matches"')]
    parts = re.split(r'(?=<section class="dg-task"|<section id="report-wide")', body)[1:]
    assert parts, "no task section"
    for part in parts:  # one heading per section: no heading, caption or figure caption said twice in a part
        seen = _headings(part)
        assert len(seen) == len(set(seen)), [h for h in seen if seen.count(h) > 1]
    assert "<pre" not in body, re.findall(r"<pre[^>]*>.{0,120}", body, re.S)  # tables as tables, notes as text
    for key in ("two_player", "turn_outcomes", "usage", "pgg_tables"):
        assert re.search(rf'<table[^>]*data-table="{key}"', body), f"{key} is not an HTML table"
    two_player = re.search(r'data-table="two_player">.*?</table>', body, re.S).group(0)  # type: ignore[union-attr]
    assert "<th>NRA</th>" in two_player and "fake-model" in two_player
    block = _sample_block(dom, "ok")  # play order: each round's moves, then that round's result
    for r in range(1, 7):
        moves = [m.start() for m in re.finditer(rf"<b>\[round {r}\] Player", block)]
        results = [m.start() for m in re.finditer(rf"In round {r} you", block)]
        assert len(moves) == 2 and len(results) == 2 and max(moves) < min(results), f"round {r} out of order"


@needs_chromium
def test_transport_retries_are_shown_in_the_transcript(tmp_path: Path, example_runs: dict[str, Path]) -> None:
    # a record carrying a retried 429 (as the transport records it) gets its own example and a visible note
    with Store(example_runs["pgg"], read_only=True) as store:
        record = next(iter(store.records()))
    turn = next(t for t in record.turns if t.seat == 0)
    turn.attempts = [CallAttempt(status="infra", http_status=429, error="RateLimitError", wait_s=1.5), CallAttempt()]
    with Store(tmp_path / "run") as store:
        store.commit(record)
    page = write_html_report([tmp_path / "run"], tmp_path / "html")
    dom = visit(page, fragment="samples").dom
    block = _sample_block(dom, RETRIED)
    assert 'class="attempt-retry"' in block and "429 RateLimitError (waited 1.5 s)" in block


@needs_chromium
def test_the_request_check_sees_a_page_that_goes_online(tmp_path: Path) -> None:
    page = tmp_path / "online.html"
    page.write_text('<html><body><img src="http://127.0.0.1:9/probe.png"></body></html>', encoding="utf-8")
    assert visit(page).page_requests == ["http://127.0.0.1:9/probe.png"]


# -- exports --------------------------------------------------------------------------------------------------


def test_export_csv_round_trips_the_eq1_means(
    example_runs: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pd = pytest.importorskip("pandas")
    run_dir = example_runs["pgg"]
    assert main(["report", str(run_dir)]) == 0
    report = capsys.readouterr().out
    shown = {m.group(1): float(m.group(2)) for m in re.finditer(r"^(\S+)\s+\d+\s+(-?\d+\.\d\d)\s", report, re.M)}
    assert main(["export", str(run_dir), "--format", "csv", "--out", str(tmp_path / "m.csv")]) == 0
    frame = pd.read_csv(tmp_path / "m.csv")
    assert len(frame) == 20 and frame["match_id"].is_unique
    long = pd.concat(
        [frame[[f"seat{i}_player", f"seat{i}_return"]].set_axis(["player", "return"], axis=1) for i in range(4)]
    )
    means = long.groupby("player")["return"].mean()
    assert set(means.index) == set(shown) and len(shown) == 4
    for player, mean in shown.items():
        assert round(float(means[player]), 2) == mean
    assert json.loads(frame["metrics"].iloc[0]) is not None and set(frame["variant"]) == {frame["variant"].iloc[0]}


def test_export_turns_as_parquet_and_jsonl(example_runs: dict[str, Path], tmp_path: Path) -> None:
    pd = pytest.importorskip("pandas")
    pytest.importorskip("pyarrow")
    run_dir = example_runs["idiom"]
    assert (
        main(["export", str(run_dir), "--level", "turn", "--format", "parquet", "--out", str(tmp_path / "t.pq")]) == 0
    )
    assert (
        main(["export", str(run_dir), "--level", "turn", "--format", "jsonl", "--out", str(tmp_path / "t.jsonl")]) == 0
    )
    turns = pd.read_parquet(tmp_path / "t.pq")
    assert len(turns) == len(pd.read_json(tmp_path / "t.jsonl", lines=True))
    with Store(run_dir, read_only=True) as store:
        assert len(turns) == sum(len(r.turns) for r in store.records())
    assert {"match_id", "seat", "player", "outcome", "tokens_in", "cost_usd"} <= set(turns.columns)
    assert set(turns["outcome"]) <= {"ok", "reasked", "invalid", "refusal", "context_overflow", "truncated"}


def test_export_and_report_errors_are_clear(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["export", str(tmp_path / "nothing"), "--out", str(tmp_path / "x.csv")]) == 2
    assert main(["report", str(tmp_path / "nothing"), "--html", str(tmp_path / "h")]) == 2
    assert "no results in" in capsys.readouterr().err
    _pgg_run(tmp_path / "run", {"a": "pgg_free_rider", "b": "pgg_full_contributor"})
    (tmp_path / "afile").write_text("x", encoding="utf-8")
    assert main(["report", str(tmp_path / "run"), "--html", str(tmp_path / "afile")]) == 2
    assert main(["export", str(tmp_path / "run"), "--out", str(tmp_path / "afile" / "m.csv")]) == 2
    with pytest.raises(SystemExit) as unknown:  # argparse names the formats and exits 2
        main(["export", str(tmp_path / "run"), "--format", "xlsx", "--out", str(tmp_path / "m.x")])
    assert unknown.value.code == 2
    err = capsys.readouterr().err
    assert "cannot write the HTML report" in err and "cannot write" in err and "Traceback" not in err


def test_export_columns_are_documented_in_the_readme() -> None:
    from analysis.export import MATCH_COLUMNS, TURN_COLUMNS, seat_columns

    readme = (REPO / "docs" / "results.md").read_text(encoding="utf-8")  # the manual moved from the README
    for column in (*MATCH_COLUMNS, *TURN_COLUMNS, *seat_columns(1)):
        name = column.name.replace("seat0_", "seat<i>_")
        assert f"`{name}`" in readme, name


# -- dry run and run summary --------------------------------------------------------------------------------


@pytest.mark.usefixtures("fake_provider_key")
def test_dry_run_counts_what_run_plays_and_calls_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with FakeOpenAIServer(default=Behaviour.reply(ANSWER), max_hang_s=5) as server:
        hosted = model_player("gpt", server, model="openai/gpt-4o-mini")
        spec = tmp_path / "spec.toml"
        spec.write_text(
            '[experiment]\nname = "dry"\ngame = "deepeval_public_goods(players=2,rounds=2)"\nrepeats = 3\n'
            "\n" + _player_toml(hosted) + '\n[[players]]\nname = "free"\nbot = "pgg_free_rider"\n\n'
            '[[players]]\nname = "full"\nbot = "pgg_full_contributor"\n',
            encoding="utf-8",
        )
        assert main(["run", str(spec), "--out", str(tmp_path / "run"), "--dry-run"]) == 0
        dry = capsys.readouterr().out
        assert server.request_count == 0 and not (tmp_path / "run").exists()
        count = int(re.search(r"Dry run: (\d+) matches to play", dry).group(1))  # type: ignore[union-attr]
        assert re.search(r"openai/gpt-4o-mini: .*<= \$\d", dry)  # priced from litellm's table
        assert main(["run", str(spec), "--out", str(tmp_path / "run"), "--no-progress"]) == 0
        out = capsys.readouterr().out
        assert f"{count} matches planned: {count} played now" in out
        assert count == 18 and server.request_count > 0  # 3 players, both orders of every pair, 3 repeats
        # the run summary: a line per model with calls, cache hits, tokens, cost and the invalid-turn share
        calls = server.request_count
        line = re.escape(f"openai/gpt-4o-mini: {calls} calls, 0 cache hits, ")
        assert re.search(line + r"[\d,]+ tokens in, [\d,]+ tokens out, \$[\d.]+, invalid turns 0\.0%", out)
        # the same spec into a new directory replays from the model-call cache: no call, every ask a cache hit
        assert main(["run", str(spec), "--out", str(tmp_path / "again"), "--no-progress"]) == 0
        assert f"openai/gpt-4o-mini: 0 calls, {calls} cache hits," in capsys.readouterr().out
        assert server.request_count == calls
        # killed between the JSONL line and the database insert: the matches the rerun recovers from matches.jsonl
        # were not played now, and their tokens are not counted again
        with sqlite3.connect(tmp_path / "again" / "results.sqlite") as db:
            db.execute("DELETE FROM matches WHERE rowid % 2 = 0")
        assert main(["run", str(spec), "--out", str(tmp_path / "again"), "--no-progress"]) == 0
        out = capsys.readouterr().out
        assert "18 matches planned: 0 played now, 18 already in" in out and "openai/gpt-4o-mini:" not in out
        # resumed: nothing left to play, and the dry run says so
        assert main(["run", str(spec), "--out", str(tmp_path / "run"), "--dry-run"]) == 0
        assert "Dry run: 0 matches to play (18 planned)" in capsys.readouterr().out


def _player_toml(table: dict[str, Any]) -> str:
    return "[[players]]\n" + "".join(f"{k} = {json.dumps(v)}\n" for k, v in table.items())


# -- comparing runs ------------------------------------------------------------------------------------------


def _pgg_run(run_dir: Path, players: dict[str, str]) -> None:
    spec = {
        "experiment": {"name": run_dir.name, "game": "deepeval_public_goods(players=2,rounds=1)", "repeats": 2},
        "players": [{"name": name, "bot": bot} for name, bot in players.items()],
    }
    run_experiment(spec, run_dir)


def test_report_compares_runs_by_what_players_are(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A player is its name and its spec (DESIGN.md section 8), in the report as in the leaderboard: two players
    under one name are told apart by what differs; one bot under two names is two rows, as in one run holding both."""
    _pgg_run(tmp_path / "a", {"rider": "pgg_free_rider", "same": "pgg_full_contributor"})
    _pgg_run(tmp_path / "b", {"freeloader": "pgg_free_rider", "same": "pgg_conditional_cooperator"})
    assert main(["report", str(tmp_path / "a"), str(tmp_path / "b")]) == 0
    out = capsys.readouterr().out
    table = out.split("(the paper's Eq. 1)\n", 1)[1].split("\n(", 1)[0].splitlines()[2:]
    rows = {line.rsplit(None, 7)[0].strip(): line.rsplit(None, 7)[1] for line in table}
    full, conditional = "same [bot=pgg_full_contributor]", "same [bot=pgg_conditional_cooperator]"
    assert rows == {"rider": "2", "freeloader": "2", full: "2", conditional: "2"}
    assert "Run directories" in out and "a: 2 matches" in out and "b: 2 matches" in out
    assert main(["leaderboard", str(tmp_path / "a"), str(tmp_path / "b"), "--format", "json"]) == 0
    board = json.loads(capsys.readouterr().out)
    assert {row["player"]: str(row["matches"]) for row in board["rows"]} == rows  # the leaderboard's rows
    # the HTML report of both: the same names in its tables and its match index
    page = write_html_report([tmp_path / "a", tmp_path / "b"], tmp_path / "html")
    index = (tmp_path / "html" / "data" / "index.js").read_text(encoding="utf-8")
    assert json.dumps(conditional) in index and index.count('"rider"') == 2 and index.count('"freeloader"') == 2
    assert 'data-table="runs"' in page.read_text(encoding="utf-8")


# -- figures -------------------------------------------------------------------------------------------------


def test_figures_whole_number_axes_roles_and_win_draw_loss(example_runs: dict[str, Path]) -> None:
    from analysis.plots import convergence_figure, figure_svg, is_win_lose, payoff_figure

    with Store(example_runs["idiom"], read_only=True) as store:
        idiom = list(store.records())
    assert is_win_lose(idiom)
    wdl = payoff_figure(idiom)
    assert [t.get_text() for t in wdl.axes[0].get_legend().get_texts()] == ["win", "draw", "loss"]
    curves = convergence_figure(idiom[:3], title="x" * 300)  # a long title is wrapped, not cut
    assert len(curves.axes) == 2  # early and late: one panel per role
    for axes in curves.axes:
        ticks = [t for t in axes.get_xticks() if axes.get_xlim()[0] <= t <= axes.get_xlim()[1]]
        assert ticks and all(float(t).is_integer() for t in ticks)
    assert curves.texts[0].get_text().count("\n") >= 2
    assert figure_svg(curves).startswith("<svg")


@pytest.mark.parametrize("rule", ["recheck", "adaptive"])
def test_the_stableness_verdict_defaults_to_the_runs_own_epsilon(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], rule: str
) -> None:
    """Under ``recheck`` the runs' epsilon is the half-width target of the fixed-sample verdict; under ``adaptive``
    it is the tie margin, the rule reports itself, and no fixed-sample verdict is added unless asked for."""
    from deepeval_games.app.commands.study import spec_toml

    spec = {
        "experiment": {
            "name": "stable",
            "game": "deepeval_public_goods(players=2,rounds=1)",
            "repeats": 2,
            "until_stable": {"epsilon": 100.0, "max_repeats": 2, "rule": rule},
        },
        "players": [{"name": "a", "bot": "pgg_free_rider"}, {"name": "b", "bot": "pgg_full_contributor"}],
    }
    run_experiment(spec, tmp_path / "run")
    assert main(["report", str(tmp_path / "run")]) == 0
    assert ("Stableness (epsilon=100.0)" in capsys.readouterr().out) is (rule == "recheck")
    path = tmp_path / "spec.toml"  # what run prints at the end follows the same rule
    path.write_text(spec_toml(spec), encoding="utf-8")
    assert main(["run", str(path), "--out", str(tmp_path / "run"), "--no-progress"]) == 0
    assert ("Stableness (epsilon=100.0)" in capsys.readouterr().out) is (rule == "recheck")
    assert main(["report", str(tmp_path / "run"), "--epsilon", "0.5"]) == 0
    assert "Stableness (epsilon=0.5)" in capsys.readouterr().out


def test_a_model_without_a_price_is_said_so_not_counted_as_free() -> None:
    from deepeval_games.app.reports.estimate import DryRun, ModelEstimate, format_dry_run
    from deepeval_games.app.spec.spec import parse_spec

    spec = parse_spec(
        {
            "experiment": {"name": "p", "game": "deepeval_public_goods(players=2,rounds=1)"},
            "players": [{"name": "a", "bot": "pgg_free_rider"}, {"name": "b", "bot": "pgg_full_contributor"}],
        }
    )
    known = ModelEstimate("openai/gpt-4o", 1, 3, 100, 10, 0.5, 1, 50, 5, 0.1)
    unknown = ModelEstimate("openai/no-such-model", 1, 3, 100, 10, None, 1, 50, 5, None)
    text = format_dry_run(DryRun(2, 2, [known, unknown]), spec)
    assert "total: <= $0.50 for the priced models; no price for openai/no-such-model" in text


@needs_chromium
def test_the_match_list_filters_by_task_player_seat_outcome_and_data_item(
    example_runs: dict[str, Path], tmp_path: Path
) -> None:
    run_dir = example_runs["idiom"]
    with Store(run_dir, read_only=True) as store:
        records = list(store.records())
    page = write_html_report([run_dir], tmp_path / "html")
    start = re.search(r"start=([^,)]+)", records[0].game).group(1)  # type: ignore[union-attr]
    cases = {
        "player=strategic&seat=0": sum(r.seats[0] == "strategic" for r in records),
        f"player=dictionary&item={start}": sum("dictionary" in r.seats and start in r.game for r in records),
        "outcome=invalid": sum(any(str(t.outcome.value) == "invalid" for t in r.turns if t.seat >= 0) for r in records),
        f"task={game_variant(records[0].game)}&seat=1&player=strategic": sum(
            r.seats[1] == "strategic" for r in records
        ),
    }
    for fragment, expected in cases.items():
        dom = visit(page, fragment=fragment).dom
        shown = re.search(r'id="f-count">(\d+) of (\d+) matches', dom)
        assert shown is not None and int(shown.group(1)) == expected, fragment
        assert dom.count('<tr data-match="') == min(expected, 50)  # one page of at most 50 rows


def test_a_new_analysis_adds_its_section_in_one_place(
    example_runs: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from deepeval_games.app.reports import sections

    @sections.section("longest", "Longest match")
    def _longest(ctx: sections.ReportContext) -> list[sections.Block]:
        turns = max(len(r.turns) for r in ctx.records)
        return [
            sections.Block(
                "longest",
                "Longest match",
                text=f"Longest match: {turns} turns",
                header=("turns",),
                rows=((str(turns),),),
            )
        ]

    try:
        assert main(["report", str(example_runs["pgg"])]) == 0
        assert "Longest match: 20 turns" in capsys.readouterr().out
        page = write_html_report([example_runs["pgg"]], tmp_path / "html").read_text(encoding="utf-8")
        assert 'data-section="longest"' in page and 'data-table="longest"' in page
    finally:
        sections.SECTIONS[:] = [s for s in sections.SECTIONS if s.key != "longest"]


def _local_reason() -> str | None:
    from llm_bots.local.server import local_model_available

    return local_model_available("local/smollm2")


@needs_chromium
@pytest.mark.local_model
@pytest.mark.slow
def test_html_report_of_the_local_model_example(tmp_path: Path) -> None:
    reason = _local_reason()
    if reason is not None:
        pytest.skip(reason)
    from deepeval_games.app.spec.loading import load_spec

    spec = load_spec(EXAMPLES / "pgg_local_model.toml")  # one match of one round: a real model's page
    spec = spec.with_experiment(repeats=1, game=spec.games[0].replace(")", ",rounds=1)"))
    run_experiment(spec, tmp_path / "run")
    page = write_html_report([tmp_path / "run"], tmp_path / "html")
    _check_page(page, {"scores", "usage", "ratings"}, {"payoffs", "convergence"}, _outcomes(tmp_path / "run"), tmp_path)


def test_aborted_attempts_are_reported_apart_from_results(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _pgg_run(tmp_path / "run", {"a": "pgg_free_rider", "b": "pgg_full_contributor"})
    with Store(tmp_path / "run") as store:
        store.log_attempt("m1", "infra", "HTTP 503")
        store.log_attempt("m1", "infra", "HTTP 503")
        store.log_attempt("m2", "error", "Traceback ...")
    assert main(["report", str(tmp_path / "run")]) == 0
    out = capsys.readouterr().out
    assert "run: infra 2 attempts of 1 matches" in out and "run: error 1 attempts of 1 matches" in out
    page = write_html_report([tmp_path / "run"], tmp_path / "html").read_text(encoding="utf-8")
    assert 'data-table="aborted"' in page


def test_the_told_apart_caption_says_per_role_where_the_ranking_is(example_runs: dict[str, Path]) -> None:
    """A two-role task ranks each role apart, and its 95% holds for each role's pairs at once: the caption says so."""
    for name, per_role in (("code_review", True), ("pgg", False)):
        if name not in example_runs:
            continue
        text = text_report(load_report([example_runs[name]]))
        caption = text[text.index("Who is told apart (") :].split("\n", 1)[0]
        assert ("pairs of each role's ranking at once" in caption) is per_role, caption
        assert ("pairs of a ranking at once" in caption) is not per_role, caption
