"""One story per result (issue 43 item 1): every interval printed for a player or a pair is the same interval on
every surface (``eval``'s output, ``report``'s, the HTML report) or carries the label of its kind, and the stopping
block's words agree with its intervals and with the header's round count.

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
from tests.fake_openai_server import Behaviour, FakeOpenAIServer, first_legal_move

INTERVAL = r"\[(-?\d+\.\d+), (-?\d+\.\d+)\]"
EQ1 = "Mean payoff per player (the paper's Eq. 1)"


def _eval(out: Path, game: str, key: str, *extra: str) -> str:
    with FakeOpenAIServer(default=Behaviour.responder(first_legal_move), max_hang_s=5) as server:
        argv = [
            "eval",
            game,
            "--model",
            "openai/fake-model",
            *("-M", f'api_base="{server.api_base}"', "-M", f'api_key_env="{key}"'),
            *("-M", "max_retries=0", "-M", "timeout_s=5"),
            *("--out", str(out), "--no-progress", "--workers", "1", *extra),
        ]
        assert main(argv) == 0
    return argv[0]


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

    # a player's mean: one interval, the same on the three surfaces, its method named under the table
    scores = _scores(played)
    assert scores and scores == _scores(reported) == _html_table(page, "scores", "95% CI")
    method = "exact-discrete/1" if game == "tic_tac_toe" else "betting-eb/1"
    assert f"(95% CI, {method} (intervals 2)" in played and f"(95% CI, {method} (intervals 2)" in reported
    # the anytime-valid sequence: a second kind, labelled as such, the same in the report and its HTML page
    anytime = _block(reported, "Anytime-valid 95% sequence")
    assert "a second kind of interval" in anytime and "betting/1" in anytime
    printed = {line.split()[0]: re.findall(INTERVAL, line)[0] for line in anytime.splitlines()[1 : 1 + len(scores)]}
    assert {p: f"[{lo}, {hi}]" for p, (lo, hi) in printed.items()} == _html_table(
        page, "anytime", "95% anytime-valid interval"
    )
    assert "Anytime-valid" not in played  # run and eval print one interval per mean
    # a pair's numbers: the same block in eval and report, each kind with its method
    if "Wins, draws, losses and advantage per pair" in played:
        pairs = _block(played, "Wins, draws, losses and advantage per pair")
        assert pairs == _block(reported, "Wins, draws, losses and advantage per pair")
        assert "clopper-pearson/1" in pairs and method in pairs
    # the stopping block: the same words everywhere, its intervals labelled, its pairs consistent with them
    stopping = _block(played, "Stopping rule: stopped after")
    assert stopping in reported and html.escape(stopping) in page
    assert "anytime-valid 95% sequence" in stopping
    assert re.findall(rf"^  \S+ +mean +\S+  anytime interval {INTERVAL}", stopping, re.M)
    apart = re.search(r"told apart: (.*)", stopping)
    assert apart is not None
    not_apart = re.findall(r"(\S+) vs (\S+) \(difference \[([-+\d.]+), ([-+\d.]+)\]\)", stopping)
    players = sorted(scores)
    told = {tuple(sorted(p.split(" above "))) for p in apart.group(1).split("; ") if " above " in p}
    assert len(told) + len(not_apart) + stopping.count(" ~ ") == len(players) * (len(players) - 1) // 2
    for _, _, low, high in not_apart:  # every pair left unresolved has an interval of its difference spanning 0
        assert float(low) <= 0.0 <= float(high)
    # the round counts agree with the header
    header = re.search(r"it starts with (\d+) rounds? of every seating", played)
    rounds = re.search(r"stopped after (\d+) rounds?", stopping)
    assert header is not None and rounds is not None and int(rounds.group(1)) >= int(header.group(1))


def test_an_old_run_keeps_its_methods_unless_asked(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], fake_provider_key: str
) -> None:
    run = tmp_path / "run"
    _eval(run, "tic_tac_toe", fake_provider_key, "--max-matches", "6")
    capsys.readouterr()
    with sqlite3.connect(run / "results.sqlite") as db:
        (text,) = db.execute("select value from meta where key='spec'").fetchone()
        source = json.loads(text)
        assert source["experiment"]["intervals"] == "2"  # a new run records the version it selects
        del source["experiment"]["intervals"]  # as a run made before the key
        db.execute("update meta set value=? where key='spec'", (json.dumps(source),))
    assert main(["report", str(run)]) == 0
    old = capsys.readouterr().out
    assert "(95% CI, betting-eb/1 (intervals 1)" in old
    assert main(["report", str(run), "--intervals", "2"]) == 0
    asked = capsys.readouterr().out
    assert "(95% CI, exact-discrete/1 (intervals 2)" in asked
    assert _scores(old) != _scores(asked)


def test_a_game_declares_its_payoff_values_and_a_payoff_off_them_drops_the_exact_method() -> None:
    from analysis.stats.intervals import DEFAULT_METHOD, interval_policy
    from deepeval_games.core.registry.games import load_game, payoff_support

    assert payoff_support(load_game("tic_tac_toe")) == (-1.0, 0.0, 1.0)
    assert payoff_support(load_game("hex")) == (-1.0, 1.0)
    assert payoff_support(load_game("kuhn_poker")) is None  # pays 1 or 2 chips either way: four values
    assert payoff_support(load_game("deepeval_public_goods")) is None
    declared = interval_policy("2", (-1.0, 0.0, 1.0), [1.0, -1.0, 0.0])
    assert (declared.mean, declared.ratio, declared.points) == (
        "exact-discrete/1",
        "exact-conditional/1",
        "exact-discrete/1",
    )
    assert interval_policy("2", (-1.0, 0.0, 1.0), [0.5]).mean == DEFAULT_METHOD  # a game that broke its word
    old = interval_policy("1", (-1.0, 0.0, 1.0))
    assert (old.mean, old.ratio, old.points) == (DEFAULT_METHOD, "betting-ratio/1", DEFAULT_METHOD)
    with pytest.raises(ValueError, match="unknown intervals version"):
        interval_policy("3")
