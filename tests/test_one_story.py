"""One story per result (issue 43 item 1, issue 50 item 2): every interval printed for a player's mean is the same
interval on every surface (``eval``'s output, ``report``'s, the HTML report), the one valid for how the run was
collected, said in words; the stopping block prints no interval of its own, and its verdicts are those of the printed
intervals; its batch count agrees with the header.

Also the switch of issue 42 item 4: a run records its interval version; a run that records none (made before the
key) is reported with the old methods unless ``report --intervals`` asks for another.
"""

from __future__ import annotations

import html
import json
import re
import sqlite3
from pathlib import Path

import pytest

from deepeval_games.app.commands.cli import main
from tests.fake_openai_server import Behaviour, FakeOpenAIServer, fake_eval_argv, first_legal_move

INTERVAL = r"\[(-?\d+\.\d+), (-?\d+\.\d+)\]"
EQ1 = "Mean payoff per player (the paper's Eq. 1)"


def _eval(out: Path, game: str, key: str, *extra: str) -> None:
    with FakeOpenAIServer(default=Behaviour.responder(first_legal_move), max_hang_s=5) as server:
        assert main(fake_eval_argv(game, out, server.api_base, key, *extra)) == 0


def _scores(text: str) -> dict[str, str]:
    """The Eq. 1 table's rows: player -> its 95% CI, as printed."""
    lines = text.splitlines()
    start = lines.index(EQ1) + 3  # title, header, rule
    rows = {}
    for line in lines[start:]:
        if line.startswith("("):
            break
        found = re.search(INTERVAL, line)
        assert found is not None, line
        rows[line.split()[0]] = found.group(0)
    return rows


def _html_table(page: str, key: str, column: str) -> dict[str, str]:
    """An HTML table's rows (``data-table`` ``key``): first cell -> the cell of ``column``."""
    table = re.search(rf'<table class="dg-table" data-table="{key}">(.*?)</table>', page, re.S)
    assert table is not None, key
    head = [html.unescape(h) for h in re.findall(r"<th>(.*?)</th>", table.group(1))]
    rows = {}
    for row in re.findall(r"<tr>(.*?)</tr>", table.group(1).split("<tbody>", 1)[1], re.S):
        cells = [html.unescape(c) for c in re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)]
        rows[cells[0]] = cells[head.index(column)]
    return rows


def _block(text: str, first: str) -> str:
    """The lines from the one containing ``first`` to the next blank line."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if first in line)
    end = next((i for i in range(start, len(lines)) if not lines[i].strip()), len(lines))
    return "\n".join(lines[start:end])


@pytest.mark.parametrize(
    ("game", "extra"),
    [
        ("tic_tac_toe", ("--max-matches", "6")),
        ("deepeval_public_goods", ("--max-matches", "4")),
    ],
)
def test_every_interval_is_one_interval_or_labelled_and_the_stopping_block_agrees(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    fake_provider_key: str,
    game: str,
    extra: tuple[str, ...],
) -> None:
    run = tmp_path / "run"
    _eval(run, game, fake_provider_key, *extra)
    played = capsys.readouterr().out
    assert main(["report", str(run)]) == 0
    reported = capsys.readouterr().out
    assert main(["report", str(run), "--html", str(tmp_path / "html")]) == 0
    capsys.readouterr()
    page = (tmp_path / "html" / "index.html").read_text(encoding="utf-8")

    # a player's mean: one interval, the same on the three surfaces; the caption says in words which kind it is (the
    # stopping rule looked at the results: the anytime-valid one at the stopping time), its method in the methods
    scores = _scores(played)
    assert scores and scores == _scores(reported) == _html_table(page, "scores", "95% interval")
    for text in (played, reported):
        assert "valid although the run looked at its results to decide when to stop" in text
        assert "Anytime-valid" not in text and "95% CI" not in text and "betting/1" not in text
    assert _html_table(page, "methods", "method")["collected"].startswith("adaptively")
    # a pair's numbers: the same block in eval and report, in words
    if "Wins, draws, losses and advantage per pair" in played:
        pairs = _block(played, "Wins, draws, losses and advantage per pair")
        assert pairs == _block(reported, "Wins, draws, losses and advantage per pair")
        assert "clopper-pearson/1" not in pairs and "valid although the run looked at its results" in pairs
    # the stopping block: the same words everywhere, no interval of its own; the verdicts are said once, under the
    # table of means, the same in eval, report and the HTML, each pair's told apart exactly when its printed
    # interval excludes 0
    stopping = _block(played, "Stopping rule: stopped after")
    assert stopping in reported and html.escape(stopping) in page
    assert not re.search(INTERVAL, stopping)
    lines = _block(played, "Who is told apart (").splitlines()
    told = [lines[0]]
    for line in lines[1:]:  # up to the next section
        if not line.startswith(("  ", "told apart", "not told apart")):
            break
        told.append(line)
    assert "\n".join(told) in reported
    players = sorted(scores)
    assert len([line for line in told if line.startswith("  ")]) == len(players) * (len(players) - 1) // 2
    section = ""
    for line in told[1:]:
        if not line.startswith("  "):
            section = line
            continue
        low, _ = (float(x) for x in re.findall(r"interval \[([-+\d.]+), ([-+\d.]+)\]", line)[0])
        assert (low > 0.0) == section.startswith("told apart"), line
    assert _html_table(page, "told_apart", "verdict")
    # the batch counts agree with the header
    header = re.search(r"It first plays every seating (once|twice|\d+ times)", played)
    batches = re.search(r"stopped after \d+ match(?:es)? in (\d+) batch", stopping)
    assert header is not None and batches is not None
    first = {"once": 1, "twice": 2}.get(header.group(1)) or int(header.group(1).split()[0])
    assert int(batches.group(1)) >= first


def test_an_old_run_keeps_its_methods_unless_asked(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], fake_provider_key: str
) -> None:
    run = tmp_path / "run"
    _eval(run, "tic_tac_toe", fake_provider_key, "--max-matches", "6")
    capsys.readouterr()
    with sqlite3.connect(run / "results.sqlite") as db:
        (text,) = db.execute("select value from meta where key='spec'").fetchone()
        source = json.loads(text)
        assert source["experiment"]["intervals"] == "3"  # a new run records the version it selects
        del source["experiment"]["intervals"]  # as a run made before the key
        db.execute("update meta set value=? where key='spec'", (json.dumps(source),))
    # the fixed-n intervals, on request: the old run's version unless another is asked for
    methods = {}
    for asked in ("1", "2"):
        argv = ["report", str(run), "--interval", "fixed", *(("--intervals", "2") if asked == "2" else ())]
        assert main(argv) == 0
        methods[asked] = capsys.readouterr().out
        assert main([*argv, "--html", str(tmp_path / f"html{asked}")]) == 0
        capsys.readouterr()
        page = (tmp_path / f"html{asked}" / "index.html").read_text(encoding="utf-8")
        assert _html_table(page, "methods", "method")["methods"].startswith(f"intervals {asked}: player means ")
    assert (
        "betting-eb/1"
        in _html_table((tmp_path / "html1" / "index.html").read_text(encoding="utf-8"), "methods", "method")["methods"]
    )
    assert _scores(methods["1"]) != _scores(methods["2"])
    assert "exact for a game that pays only -1, 0, 1" in methods["2"]


def test_a_game_declares_its_payoff_values_and_a_payoff_off_them_drops_the_exact_method() -> None:
    from analysis.stats.intervals import DEFAULT_METHOD, IntervalPolicy
    from deepeval_games.core.registry.games import load_game, payoff_support

    assert payoff_support(load_game("tic_tac_toe")) == (-1.0, 0.0, 1.0)
    assert payoff_support(load_game("hex")) == (-1.0, 1.0)
    assert payoff_support(load_game("kuhn_poker")) is None  # pays 1 or 2 chips either way: four values
    assert payoff_support(load_game("deepeval_public_goods")) is None
    declared = IntervalPolicy("2").with_support((-1.0, 0.0, 1.0), [1.0, -1.0, 0.0])
    assert (declared.mean, declared.ratio, declared.points) == (
        "exact-discrete/1",
        "exact-conditional/1",
        "exact-discrete/1",
    )
    broken = IntervalPolicy("2").with_support((-1.0, 0.0, 1.0), [0.5])  # a game that broke its word
    assert broken.mean == DEFAULT_METHOD
    old = IntervalPolicy("1").with_support((-1.0, 0.0, 1.0))
    assert (old.mean, old.ratio, old.points) == (DEFAULT_METHOD, "betting-ratio/1", DEFAULT_METHOD)
    latest = IntervalPolicy("3").with_support((-1.0, 0.0, 1.0), [1.0, -1.0, 0.0])
    assert (latest.mean, latest.ratio, latest.points) == ("exact-discrete/2", "exact-conditional/1", "exact-discrete/2")
    with pytest.raises(ValueError, match="unknown intervals version"):
        IntervalPolicy.parse("4")
