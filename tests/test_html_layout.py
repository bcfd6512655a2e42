"""The HTML report fits a 1,280-px screen (issue 50, item 6).

A Public Goods report (four players, one of them a model against the fake endpoint: a long game string, a recorded
identity with a per-match seed) and a tic-tac-toe report are written with ``report --html`` and opened in headless
Chromium at a 1280x900 viewport, their example transcripts open: the page never scrolls sideways, and nothing sticks
out past the viewport but what sits in a box that scrolls on its own (``overflow-x: auto``). A full-page screenshot
of each is kept under the test's ``tmp_path`` (and under ``$DEEPEVAL_GAMES_SCREENSHOTS`` when it is set). Labels: the
game string is shown once per variant (its label elsewhere), identities as text without the per-match seed, figure
titles wrapped at word boundaries and legends outside the axes.
"""

from __future__ import annotations

import base64
import os
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from deepeval_games.app.commands.cli import main
from tests.chromium import LivePage, chromium_binary
from tests.conftest import FAKE_KEY_ENV
from tests.fake_openai_server import Behaviour, FakeOpenAIServer, fake_eval_argv, first_legal_move

needs_chromium = pytest.mark.skipif(
    chromium_binary() is None, reason="chromium is not installed (.ci/run installs it: apt-get install -y chromium)"
)

WIDTH, HEIGHT = 1280, 900
PGG = "deepeval_public_goods(players=4,mode=2)"
PGG_ANSWER = '{"reason": "r", "coins": 3}'

# every element whose box ends past the viewport, unless a box above it scrolls sideways on its own (the parts of an
# inline SVG are the SVG's: it is the one measured)
_OVERFLOWING = r"""(function(){
  var width = window.innerWidth, found = [];
  function scrolls(e){
    for (var p = e.parentElement; p && p !== document.body; p = p.parentElement){
      var o = getComputedStyle(p).overflowX; if (o === 'auto' || o === 'scroll') return true;}
    return false;}
  document.querySelectorAll('body *').forEach(function(e){
    if (e.closest('svg') && e.tagName.toLowerCase() !== 'svg') return;
    var r = e.getBoundingClientRect();
    if (r.width && r.right > width + 0.5 && !scrolls(e))
      found.push(e.tagName.toLowerCase() + (e.id ? '#' + e.id : '') + (e.className && e.className.baseVal === undefined
        ? '.' + e.className : '') + ' ends at ' + Math.round(r.right) + ': ' + (e.textContent || '').slice(0, 80));});
  return found;})()"""


def _eval(out: Path, game: str, reply: Behaviour, *extra: str) -> None:
    with pytest.MonkeyPatch.context() as patch, FakeOpenAIServer(default=reply, max_hang_s=5) as server:
        patch.setenv(FAKE_KEY_ENV, "sk-test-not-a-secret")
        argv = fake_eval_argv(game, out, server.api_base, FAKE_KEY_ENV, *extra, settings=("temperature=0.2",))
        assert main(argv) == 0


@pytest.fixture(scope="module")
def reports(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """``report --html`` of a four-player Public Goods eval and of a tic-tac-toe eval: name -> index.html."""
    root = tmp_path_factory.mktemp("layout")
    _eval(root / "pgg", PGG, Behaviour.reply(PGG_ANSWER), "--max-matches", "4")
    _eval(root / "ttt", "tic_tac_toe", Behaviour.responder(first_legal_move), "--max-matches", "6")
    pages = {}
    for name in ("pgg", "ttt"):
        assert main(["report", str(root / name), "--html", str(root / f"{name}-html")]) == 0
        pages[name] = root / f"{name}-html" / "index.html"
    return pages


def _screenshot(page: LivePage, path: Path) -> Path:
    """A PNG of the whole page (beyond the viewport) at the viewport's width."""
    height = int(page.evaluate("Math.ceil(document.documentElement.scrollHeight)"))
    clip = {"x": 0, "y": 0, "width": WIDTH, "height": height, "scale": 1}
    shot = page._call(
        "Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True, "clip": clip}, page._session
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(base64.b64decode(shot["data"]))
    return path


def _layout(index: Path, screenshot: Path) -> dict[str, Any]:
    """The page at 1280x900 with its example transcripts open: its widths, what overflows, and its screenshot."""
    with LivePage(index.resolve().as_uri() + "#samples") as page:
        page._call(
            "Emulation.setDeviceMetricsOverride",
            {"width": WIDTH, "height": HEIGHT, "deviceScaleFactor": 1, "mobile": False},
            page._session,
        )
        page.wait_for("document.readyState === 'complete' && !!document.querySelector('#match-list tbody tr')", 30)
        page.wait_for("document.querySelectorAll('#samples-area .transcript').length > 0", 30)
        found = page.evaluate(
            "({html: document.documentElement.scrollWidth, body: document.body.scrollWidth, "
            "inner: window.innerWidth, rows: [...document.querySelectorAll('#match-list tbody tr')]"
            ".map(r => [r.children[1].textContent, r.children[1].title])})"
        )
        found["overflowing"] = page.evaluate(_OVERFLOWING)
        found["screenshot"] = _screenshot(page, screenshot)
    return dict(found)


@needs_chromium
@pytest.mark.parametrize("name", ["pgg", "ttt"])
def test_the_html_report_fits_a_1280_px_screen(name: str, reports: dict[str, Path], tmp_path: Path) -> None:
    found = _layout(reports[name], tmp_path / f"{name}-report.png")
    shot: Path = found["screenshot"]
    keep = os.environ.get("DEEPEVAL_GAMES_SCREENSHOTS")
    if keep:
        Path(keep).mkdir(parents=True, exist_ok=True)
        shutil.copy(shot, Path(keep) / shot.name)
    assert shot.read_bytes()[:4] == b"\x89PNG" and shot.stat().st_size > 20_000
    assert found["inner"] == WIDTH
    assert found["html"] <= found["inner"] and found["body"] <= found["inner"], found
    assert found["overflowing"] == [], "\n".join(found["overflowing"])
    # the match rows name the task by its short label; its full string is the cell's tooltip
    label, full = ("Public Goods Game", "deepeval_public_goods(") if name == "pgg" else ("Tic Tac Toe", "tic_tac_toe")
    assert found["rows"] and all(text == label and title.startswith(full) for text, title in found["rows"])


def _visible_text(page: str) -> str:
    """The page's text outside tags, scripts, tooltips and the game-string details blocks."""
    body = page[page.index("<body>") : page.index("<script")]
    body = re.sub(r'<details class="dg-game">.*?</details>', "", body, flags=re.S)
    return re.sub(r"<[^>]+>", " ", body)


@needs_chromium
def test_the_game_string_is_shown_once_and_identities_as_text(reports: dict[str, Path]) -> None:
    page = reports["pgg"].read_text(encoding="utf-8")
    game = re.search(r'data-variant="([^"]+)"', page).group(1)  # type: ignore[union-attr]
    assert len(game) > 100 and "mode=2" in game  # every parameter, as eval spells the game
    assert page.count(f"<code>{game}</code>") == 1  # in full once, in the task's details block
    heading = re.search(r'<h2 title="[^"]+">([^<]+)</h2>', page).group(1)  # type: ignore[union-attr]
    assert heading.startswith("Public Goods Game (") and "mode=2" in heading and "players=" not in heading
    text = _visible_text(page)
    assert "deepeval_public_goods(" not in text.replace("stopped after", "").split("Stopping rule")[0]
    players = re.search(r'data-table="players">.*?</table>', page, re.S).group(0)  # type: ignore[union-attr]
    assert "openai/fake-model, temperature 0.2" in players and "FreeRider (scripted)" in players
    assert "seed" not in players and "{" not in players and players.count("openai/fake-model") == 1
    assert "Figure of" not in page and "Contributions per round" in page


def test_figure_titles_break_at_word_boundaries_and_legends_sit_outside_the_axes() -> None:
    from analysis.plots import convergence_figure, payoff_figure, wrap_title
    from deepeval_games.core.records import MatchRecord

    game = (
        "deepeval_public_goods(alpha=1.6,answer=free,endowment=10,feedback=paper,goal=most,mode=2,players=4,"
        "rounds=5,unusable=reformat)"
    )
    lines = wrap_title(f"Running mean payoff: {game}", 50).split("\n")
    assert len(lines) > 1 and all(len(line) <= 50 for line in lines)
    for word in re.split(r"[,()]", game):  # each parameter whole on one line: "reform at" is not
        assert any(word in line for line in lines), (word, lines)
    assert "".join(lines).replace(" ", "") == f"Runningmeanpayoff:{game}"  # nothing lost, only line breaks
    records = [
        MatchRecord(match_id=f"m{i}", game=game, seats=["a", "b"], returns=[float(i), 2.0], turns=[]) for i in range(4)
    ] + [MatchRecord(match_id="w", game="tic_tac_toe", seats=["a", "b"], returns=[1.0, -1.0], turns=[])]
    for figure in (convergence_figure(records[:4]), payoff_figure(records[4:])):
        figure.canvas.draw()
        axes = figure.axes[0]
        legend = axes.get_legend().get_window_extent()
        assert legend.x0 >= axes.get_window_extent().x1, "the legend sits on the data area"


def test_labels_name_what_differs_and_identities_read_as_text() -> None:
    from deepeval_games.app.reports.runs import game_label, identity_text, short_labels

    game = "deepeval_public_goods(alpha=1.6,answer=free,endowment=10,mode=2,players=4)"
    assert game_label(game) == "Public Goods Game (answer=free, mode=2)"  # the defaults left out
    assert game_label("tic_tac_toe") == "Tic Tac Toe"
    # in the match list only what tells a report's variants apart
    other = "deepeval_public_goods(answer=free,mode=1)"
    assert short_labels([game, other, "tic_tac_toe"]) == [
        "Public Goods Game (mode=2)",
        "Public Goods Game (mode=1)",
        "Tic Tac Toe",
    ]
    assert short_labels(["tic_tac_toe", "tic_tac_toe()"]) == ["tic_tac_toe", "tic_tac_toe()"]  # the same label
    llm = {
        "kind": "llm",
        "model": "openai/fake",
        "prompt_style": "chat",
        "prompt_version": "generic-3",
        "sampling": {"max_tokens": None, "seed": 782911352, "temperature": 0.2, "top_p": None},
    }
    assert identity_text(llm) == "openai/fake, temperature 0.2, prompt generic-3 (chat)"
    assert identity_text({"class": "FreeRider", "kind": "scripted"}) == "FreeRider (scripted)"
