"""A new user's journeys through the CLI, read as the user reads them (issue 50, item 7).

Three models behind one fake OpenAI-compatible endpoint (:mod:`tests.journey_models`: ``strong`` plays well,
``weak`` plays legally but badly, ``broken`` never answers in the format) are evaluated on the Public Goods Game and
on tic-tac-toe; then ``report``, ``leaderboard`` (text and CSV), ``report --html`` opened in headless Chromium at
1,280 px, and ``export --out -``. The tests assert what a reader sees:

* one row per model on every surface (a per-match sampling seed is never part of a player);
* one interval per mean, the same on every surface (eval's closing tables, ``report``, ``leaderboard``, its CSV, the
  HTML page as Chromium shows it), and the caption says which kind it is in words;
* the strong model ranked above the other two, told apart from them once the data say so (compared where they met:
  who finished ahead in their shared matches), and no verdict that contradicts its printed interval;
* a player's invalid turns are explained where they are counted;
* none of a list of internal words (method codes, setting names, the old second interval) in the default output;
* the HTML page never scrolls sideways at 1,280 px.
"""

from __future__ import annotations

import contextlib
import csv
import io
import json
import re
from pathlib import Path
from typing import Any

import pytest

from deepeval_games.app.commands.cli import main
from deepeval_games.app.storage.store import Store
from deepeval_games.core.bot import Outcome
from tests.chromium import LivePage, chromium_binary
from tests.conftest import FAKE_KEY_ENV
from tests.journey_models import BROKEN_REPLY, MODELS, eval_argv, three_models

INTERVAL = re.compile(r"\[(-?\d+\.\d+), (-?\d+\.\d+)\]")
EQ1 = "Mean payoff per player (the paper's Eq. 1)"
WIDTH = 1280

INTERNAL_WORDS = (
    "betting-eb",
    "betting/1",
    "exact-discrete",
    "clopper-pearson",
    "exact-conditional",
    "intervals 2",
    "(intervals",
    "until_stable",
    "budget_matches",
    "epsilon",
    "mu - 3 sigma",
    "a second kind",
    "anytime interval",
    "Anytime-valid 95% sequence",
    "95% CI",
    "sampling.seed",
    "Figure 4",
    "matches a round",
    "rounds  ",
)
"""Words a reader cannot decode without the code: method codes, setting names, the second interval printed beside
the first, the per-match seed taken as identity, the paper's figure numbers and the stopping rule's "rounds"."""

JOURNEYS = {
    # four players (the three models and the free rider): one seating a batch, each match the same seats
    "pgg": ("deepeval_public_goods", ("--against", "pgg_free_rider", "--max-matches", "24")),
    # four players (the three models and OpenSpiel's random player): twelve seatings a batch, two a pair
    "ttt": ("tic_tac_toe", ("--against", "random", "--max-matches", "120")),
}


def _cli(*argv: str) -> tuple[int, str, str]:
    """Run the CLI as a user would; (exit code, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def journeys(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    """Each journey's outputs: eval, report, leaderboard (text, csv), the HTML page's path, the export."""
    root = tmp_path_factory.mktemp("journeys")
    done: dict[str, dict[str, Any]] = {}
    with pytest.MonkeyPatch.context() as patch, three_models() as server:
        patch.setenv(FAKE_KEY_ENV, "sk-test-not-a-secret")
        for name, (game, extra) in JOURNEYS.items():
            run = root / name
            code, played, _ = _cli(*eval_argv(game, run, server.api_base, FAKE_KEY_ENV, *extra))
            assert code == 0, played
            outputs: dict[str, Any] = {"eval": played, "run": run}
            outputs["report"] = _cli("report", str(run))[1]
            outputs["leaderboard"] = _cli("leaderboard", str(run))[1]
            outputs["leaderboard_csv"] = _cli("leaderboard", str(run), "--format", "csv")[1]
            assert _cli("report", str(run), "--html", str(root / f"{name}-html"))[0] == 0
            outputs["html"] = root / f"{name}-html" / "index.html"
            code, exported, counted = _cli("export", str(run), "--format", "csv", "--out", "-")
            assert code == 0, counted
            outputs["export"] = exported
            done[name] = outputs
    return done


def _table(text: str, title: str = EQ1) -> dict[str, str]:
    """The rows of the first table under ``title``: player -> its interval as printed."""
    lines = text.splitlines()
    start = lines.index(title) + 3  # title, header, rule
    rows = {}
    for line in lines[start:]:
        found = INTERVAL.search(line)
        if found is None:
            break
        rows[line.split()[0]] = found.group(0)
    return rows


def _leaderboard(text: str) -> dict[str, list[str]]:
    """The leaderboard's rows: player -> every interval printed on its lines (one row per player expected)."""
    rows: dict[str, list[str]] = {}
    for line in text.splitlines():
        found = INTERVAL.search(line)
        if line.startswith("  ") and found is not None and not line.strip().startswith("player"):
            rows.setdefault(line.split()[0], []).append(found.group(0))
    return rows


def _html_scores(index: Path) -> tuple[dict[str, str], dict[str, Any]]:
    """The scores table as Chromium shows it (player -> the interval cell) and the page's widths at 1,280 px."""
    with LivePage(index.resolve().as_uri()) as page:
        page._call(
            "Emulation.setDeviceMetricsOverride",
            {"width": WIDTH, "height": 900, "deviceScaleFactor": 1, "mobile": False},
            page._session,
        )
        page.wait_for("document.readyState === 'complete' && !!document.querySelector('table[data-table=scores]')", 30)
        cells = page.evaluate(
            "(function(){var t = document.querySelector('table[data-table=scores]');"
            "var head = [...t.querySelectorAll('thead th')].map(h => h.textContent.trim());"
            "var at = head.indexOf('95% interval');"
            "return {head: head, rows: [...t.querySelectorAll('tbody tr')].map(r => "
            "[r.children[0].textContent.trim(), at < 0 ? '' : r.children[at].textContent.trim()])};})()"
        )
        widths = page.evaluate(
            "({html: document.documentElement.scrollWidth, body: document.body.scrollWidth, inner: window.innerWidth})"
        )
    assert "95% interval" in cells["head"], cells["head"]
    return {player: interval for player, interval in cells["rows"]}, dict(widths)


def _bounds(interval: str) -> tuple[float, float]:
    found = INTERVAL.fullmatch(interval)
    assert found is not None, interval
    return float(found.group(1)), float(found.group(2))


def _verdicts(text: str) -> tuple[set[tuple[str, str]], set[frozenset[str]], dict[frozenset[str], tuple[float, float]]]:
    """The verdicts said under the table of means: (leader, other) told apart, the pairs not told apart, and each
    pair's printed advantage interval (from the first-named player's side)."""
    block = text[text.index("\nWho is told apart (") + 1 :].split("\n\n", 1)[0]
    apart: set[tuple[str, str]] = set()
    not_apart: set[frozenset[str]] = set()
    intervals: dict[frozenset[str], tuple[float, float]] = {}
    section = ""
    for line in block.splitlines()[1:]:
        if not line.startswith("  "):
            if not line.startswith(("told apart", "not told apart")):
                break  # the next section
            section = line
            continue
        found = re.search(r"^  (\S+) (?:ahead of|and) (\S+?):? ", line)
        assert found is not None, line
        first, second = found.groups()
        bounds = INTERVAL.search(line.replace("+", ""))
        if bounds is not None:
            intervals[frozenset((first, second))] = (float(bounds.group(1)), float(bounds.group(2)))
        if section.startswith("told apart"):
            apart.add((first, second))
        else:
            not_apart.add(frozenset((first, second)))
    return apart, not_apart, intervals


@pytest.mark.parametrize("name", list(JOURNEYS))
def test_one_row_per_model_on_every_surface(name: str, journeys: dict[str, dict[str, Any]]) -> None:
    outputs = journeys[name]
    board = _leaderboard(outputs["leaderboard"])
    for model in MODELS:
        assert len(board.get(model, [])) == 1, outputs["leaderboard"]
        for surface in ("eval", "report"):
            table = outputs[surface].split(EQ1, 1)[1].split("\n(", 1)[0]  # the table, up to its caption
            assert sum(line.split()[:1] == [model] for line in table.splitlines()) == 1, table
    assert not any("[" in player for player in board), board  # no row told apart by what the engine derived
    rows = list(csv.DictReader(io.StringIO(outputs["leaderboard_csv"])))
    assert sorted(r["player"] for r in rows) == sorted(board)
    exported = list(csv.DictReader(io.StringIO(outputs["export"])))
    assert exported and len({r["match_id"] for r in exported}) == len(exported)
    for model in MODELS:  # one identity a model across its matches: the per-match sampling seed is the match's
        identities = {
            row[f"seat{i}_identity"] for row in exported for i in range(4) if row.get(f"seat{i}_player") == model
        }
        assert len(identities) == 1 and "seed" not in json.loads(identities.pop()).get("sampling", {})


@pytest.mark.parametrize("name", list(JOURNEYS))
def test_one_interval_a_mean_the_same_on_every_surface(name: str, journeys: dict[str, dict[str, Any]]) -> None:
    outputs = journeys[name]
    played = _table(outputs["eval"])
    assert set(MODELS) <= set(played)
    assert _table(outputs["report"]) == played
    assert {p: ivs[0] for p, ivs in _leaderboard(outputs["leaderboard"]).items()} == played
    rows = list(csv.DictReader(io.StringIO(outputs["leaderboard_csv"])))
    assert {r["player"]: f"[{float(r['ci_low']):.2f}, {float(r['ci_high']):.2f}]" for r in rows} == played
    assert {r["ci_kind"] for r in rows} == {"anytime"}  # eval's stopping rule looked at the results
    if chromium_binary() is not None:
        shown, widths = _html_scores(outputs["html"])
        assert shown == played
        assert widths["html"] <= widths["inner"] == WIDTH and widths["body"] <= WIDTH, widths
    # the caption says, in words, which interval it is and why it is the valid one
    for text in (outputs["eval"], outputs["report"]):
        assert "valid although the run looked at its results to decide when to stop" in text
        for interval in set(played.values()):  # no second printing of a mean's interval elsewhere in the output
            assert text.count(interval) == list(played.values()).count(interval), interval
    assert "valid although the runs looked at their results" in outputs["leaderboard"]


@pytest.mark.parametrize("name", list(JOURNEYS))
def test_the_strong_model_leads_and_no_verdict_contradicts_the_numbers(
    name: str, journeys: dict[str, dict[str, Any]]
) -> None:
    outputs = journeys[name]
    played = _table(outputs["eval"])
    ranked = [player for player in played if player in MODELS]
    assert ranked[0] == "strong", played
    means = {
        line.split()[0]: float(line.split()[2])
        for line in outputs["eval"].splitlines()[outputs["eval"].splitlines().index(EQ1) + 3 :][: len(played)]
    }
    assert means["strong"] > means["weak"] and means["strong"] > means["broken"]
    apart, not_apart, advantages = _verdicts(outputs["eval"])
    assert _verdicts(outputs["report"]) == (apart, not_apart, advantages)
    assert len(apart) + len(not_apart) == len(played) * (len(played) - 1) // 2  # every pair has its verdict
    for pair in apart:  # told apart exactly when the printed interval of the leader's advantage excludes 0
        low, high = advantages[frozenset(pair)]
        assert low > 0.0 and means[pair[0]] >= means[pair[1]], pair
    for pair in not_apart:
        low, high = advantages[pair]
        assert low <= 0.0 <= high, pair
    # the data say so (24 shared matches in PGG, 20 head-to-head in tic-tac-toe): the strong model is told apart
    assert ("strong", "weak") in apart and ("strong", "broken") in apart
    ratings = next(line for line in outputs["eval"].splitlines() if "rating, Elo scale" in line)
    assert "±" not in ratings  # a rating is a point estimate: its interval could contradict the verdicts


@pytest.mark.parametrize("name", list(JOURNEYS))
def test_the_default_output_reads_in_plain_words(name: str, journeys: dict[str, dict[str, Any]]) -> None:
    outputs = journeys[name]
    for surface in ("eval", "report", "leaderboard"):
        found = [word for word in INTERNAL_WORDS if word in outputs[surface]]
        assert not found, (surface, found)
    # the broken model's invalid turns are explained where they are counted
    outcomes = outputs["eval"][outputs["eval"].index("Turn outcomes:") :]
    assert re.search(r"broken\s+invalid \d+ \(of \d+\)", outcomes)
    played_instead = "penalty move" if name == "pgg" else "random legal move"
    assert f"{played_instead} was played in its place" in outcomes.split("\n\n")[0]
    # the stopping rule speaks of batches of matches, the game of its rounds: one word per concept
    assert "batch" in outputs["eval"] and "Stopping rule: stopped after" in outputs["eval"]


@pytest.mark.parametrize("name", list(JOURNEYS))
def test_the_three_models_play_as_their_names_say(name: str, journeys: dict[str, dict[str, Any]]) -> None:
    with Store(journeys[name]["run"], read_only=True) as store:
        records = list(store.records())
    assert records and all(r.status == "complete" for r in records)

    def turns(player: str) -> list[Any]:
        return [t for r in records if player in r.seats for t in r.turns if t.seat == r.seats.index(player)]

    broken = turns("broken")  # every turn re-asked, then invalid, its prose kept
    assert broken and all(t.outcome == Outcome.INVALID and t.retries >= 1 for t in broken)
    assert all(set(t.raw_replies) == {BROKEN_REPLY} for t in broken)
    assert all(t.outcome == Outcome.OK for player in ("strong", "weak") for t in turns(player))
    strong = [r.returns[r.seats.index("strong")] for r in records if "strong" in r.seats]
    if name == "ttt":  # perfect play never loses; the worst legal move loses every game it can
        assert min(strong) >= 0.0
        assert all(r.returns[r.seats.index("strong")] == 1.0 for r in records if set(r.seats) == {"strong", "weak"})
    else:  # strong keeps its coins, weak gives them all
        assert {t.action_string for t in turns("strong")} == {"invest 0"}
        assert {t.action_string for t in turns("weak")} == {"invest 10"}
