"""Bounds on what is large, and saying what a run holds (issue 51, items 3-5): linear name handling, a cap on a
player name's length, plot labels cut short, data files measured before they are hashed, a partial run said to be
partial, ``run --dry-run`` of a spec that ``extends`` a pool, and ``data fetch`` offline."""

from __future__ import annotations

import json
import resource
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from deepeval_games.app.commands.cli import main
from deepeval_games.app.spec.spec import MAX_NAME_CHARS, MAX_PLAYERS, parse_spec
from deepeval_games.core import task
from deepeval_games.core.errors import SpecError
from deepeval_games.infra.files import DatasetError, file_sha256, find_data_file, size_limit

BIG = 3 << 30
"""A sparse file's size: 3 GiB, far over every data file's bound (no disk is used)."""


def _sparse(path: Path, size: int) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run(["truncate", "-s", str(size), str(path)], check=True)
    return path


# -- data files -----------------------------------------------------------------------------------------------------


def test_a_huge_file_in_the_data_cache_is_refused_before_it_is_hashed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("DEEPEVAL_GAMES_DATA", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    huge = _sparse(tmp_path / "cache" / "deepeval-games" / "mbpp" / "mbpp.jsonl", BIG)
    with pytest.raises(DatasetError) as caught:
        find_data_file("mbpp/mbpp.jsonl", expected_sha256="0" * 64, expected_size=563_743)
    message = str(caught.value)
    assert f"{BIG:,} bytes" in message and "563,743 bytes its source publishes" in message
    assert str(huge) in message and "not hashed" in message
    with pytest.raises(DatasetError, match="no published size"):  # no size known: the general cap
        file_sha256(huge)


def test_a_file_within_its_bound_is_hashed_in_chunks_with_bounded_memory(tmp_path: Path) -> None:
    size = 64 << 20  # 64 MiB of holes, hashed through a 1 MiB buffer
    sparse = _sparse(tmp_path / "data.bin", size)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    digest = file_sha256(sparse, expected_size=size)
    grown_mib = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    assert len(digest) == 64 and grown_mib < 32  # never the whole file in memory
    assert size_limit(size) > size and size_limit(None) >= 1 << 30


def test_data_lists_a_huge_cached_file_as_too_large_and_fetch_offline_exits_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from deepeval_games.app.commands import data

    monkeypatch.delenv("DEEPEVAL_GAMES_DATA", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("DEEPEVAL_GAMES_OFFLINE", "1")
    data.sources()
    mbpp = next(s for s in task.data_sources() if s.name == "mbpp/mbpp.jsonl")
    assert mbpp.size == 563_743
    _sparse(tmp_path / "cache" / "deepeval-games" / mbpp.name, BIG)
    assert main(["data"]) == 1
    assert f"{mbpp.name}  [deepeval_code_review]  TOO LARGE, not hashed ({BIG:,} bytes" in capsys.readouterr().out
    assert main(["data", "fetch", "code_review"]) == 2
    err = capsys.readouterr().err
    assert "downloads are disabled ($DEEPEVAL_GAMES_OFFLINE is set)" in err
    assert "mbpp/mbpp.jsonl, mbpp/sanitized-mbpp.json" in err and "Traceback" not in err


# -- run --dry-run with extends --------------------------------------------------------------------------------------


def _toml_value(value: Any) -> str:
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k} = {_toml_value(v)}" for k, v in value.items()) + "}"
    return json.dumps(value)  # strings, numbers and lists of strings read the same in TOML


def _spec_file(path: Path, players: list[dict[str, Any]], **experiment: Any) -> Path:
    table = {"name": "lb", "game": "tic_tac_toe", "repeats": 1, "seed": 3, "pairing": "round_robin", **experiment}
    lines = ["[experiment]", *(f"{k} = {_toml_value(v)}" for k, v in table.items())]
    for player in players:
        lines += ["", "[[players]]", *(f"{k} = {_toml_value(v)}" for k, v in player.items())]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_a_dry_run_of_a_spec_that_extends_a_pool_prints_its_estimate(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pool = _spec_file(tmp_path / "pool.toml", [{"name": "r1", "bot": "random"}, {"name": "r2", "bot": "random"}])
    assert main(["run", str(pool), "--out", str(tmp_path / "pool"), "--no-progress"]) == 0
    new = [{"name": "m5", "bot": "mcts", "params": {"simulations": 5}}]
    extension = _spec_file(tmp_path / "ext.toml", new, extends=[str(tmp_path / "pool")])
    capsys.readouterr()
    assert main(["run", str(extension), "--dry-run", "--out", str(tmp_path / "ext")]) == 0
    out = capsys.readouterr().out
    assert "Dry run: 4 matches to play (4 planned); nothing was sent." in out  # m5 against r1 and r2, both seats
    assert not (tmp_path / "ext").exists()


# -- players: many, and long names -----------------------------------------------------------------------------------


def _players_document(count: int, name: Any = None) -> dict[str, Any]:
    experiment = {"name": "big", "game": "deepeval_public_goods(players=4,mode=1,alpha=1.6)", "repeats": 1}
    players = [{"name": name if name is not None else f"p{i}", "bot": "pgg_random"} for i in range(count)]
    return {"experiment": experiment, "players": players}


def test_a_spec_with_200000_players_is_refused_by_its_count_without_quadratic_work() -> None:
    started = time.perf_counter()
    with pytest.raises(SpecError, match=r"lists 200,000 players, more than the 100,000 a spec may list"):
        parse_spec(_players_document(200_000))
    print(f"200,000 players refused in {time.perf_counter() - started:.2f} s")  # measured, not asserted


def test_duplicate_names_are_found_among_many_players_and_looked_up_by_name() -> None:
    document = _players_document(20_000)
    spec = parse_spec(document)  # linear de-duplication: 20,000 names took 9 s when it was quadratic
    assert spec.player("p19999").name == "p19999" and MAX_PLAYERS >= 20_000
    document["players"][-1] = {"name": "p7", "bot": "pgg_random"}
    with pytest.raises(SpecError, match=r"names must be unique; repeated: \['p7'\]"):
        parse_spec(document)


def test_a_10_mib_name_is_refused_naming_its_position_and_the_cap(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    document = _players_document(3)
    document["players"][1]["name"] = "x" * (10 << 20)
    with pytest.raises(SpecError) as caught:
        parse_spec(document)
    message = str(caught.value)
    assert message.startswith(f"[[players]] #2 name: {10 << 20:,} characters")
    assert f"a name may be at most {MAX_NAME_CHARS} characters" in message and len(message) < 300
    long = {"name": "y" * (MAX_NAME_CHARS + 1), "bot": "pgg_random"}
    spec = _spec_file(tmp_path / "long.toml", [long], game="deepeval_public_goods(players=1)")
    assert main(["run", str(spec), "--dry-run", "--out", str(tmp_path / "out")]) == 2
    assert f"[[players]] #1 name: {MAX_NAME_CHARS + 1} characters" in capsys.readouterr().err
    assert parse_spec(_players_document(1, "z" * MAX_NAME_CHARS)).players[0].name == "z" * MAX_NAME_CHARS


# -- plots ------------------------------------------------------------------------------------------------------------


def test_plot_labels_and_legends_are_cut_with_an_ellipsis() -> None:
    from analysis.plots import convergence_figure, figure_svg, payoff_figure
    from analysis.tables.payoffs import LABEL_CHARS, cut_label, cut_labels
    from deepeval_games.core.records import MatchRecord

    huge, twin = "n" * (10 << 20), "n" * (10 << 20) + "b"  # 10 MiB names, alike for their first 40 characters
    game = "deepeval_public_goods(players=2)"
    records = [
        MatchRecord(match_id=f"m{i}", game=game, seats=[huge, twin], returns=[float(i), 2.0], turns=[])
        for i in range(3)
    ]
    wins = [MatchRecord(match_id="w", game="tic_tac_toe", seats=[huge, "b"], returns=[1.0, -1.0], turns=[])]
    started = time.perf_counter()
    figures = [payoff_figure(records), payoff_figure(wins), convergence_figure(records, title="t" * (10 << 20))]
    texts: list[str] = []
    for figure in figures:
        svg = figure_svg(figure, close=False)
        assert len(svg) < 1 << 20  # no megabytes of text laid out
        for axes in figure.axes:
            texts += [t.get_text() for t in axes.get_xticklabels()]
            legend = axes.get_legend()
            texts += [t.get_text() for t in legend.get_texts()] if legend else []
    print(f"three figures with 10 MiB names drawn in {time.perf_counter() - started:.2f} s")
    names = [t for t in texts if t.startswith("n")]
    assert names and all(len(t) <= LABEL_CHARS and t.endswith(("\u2026", "#2")) for t in names)
    assert len(set(cut_labels([huge, twin]))) == 2  # cut alike, still told apart
    assert cut_label("short") == "short" and cut_label("x" * 41) == "x" * 39 + "\u2026"


# -- a partial run says it is partial -------------------------------------------------------------------------------

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "pgg_scripted.toml"


def _set_last_entry(run: Path, **changes: Any) -> None:
    manifest = json.loads((run / "manifest.json").read_text(encoding="utf-8"))
    manifest["runs"][-1].update(changes)
    (run / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")


def test_a_report_of_a_run_short_of_its_plan_says_it_is_partial(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = tmp_path / "run"
    assert main(["run", str(EXAMPLE), "--out", str(run), "--no-progress"]) == 0
    held = json.loads((run / "manifest.json").read_text(encoding="utf-8"))["runs"][-1]["planned"]
    capsys.readouterr()
    assert main(["report", str(run)]) == 0
    assert "partial" not in capsys.readouterr().out  # a whole, finished run says nothing

    _set_last_entry(run, planned=3000, status="interrupted")
    assert main(["report", str(run)]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert first == f"partial: {held:,} of 3,000 planned matches (the run was interrupted; rerun it to resume)"
    assert main(["report", str(run), "--html", str(tmp_path / "html")]) == 0
    assert capsys.readouterr().out.startswith("HTML report: ")
    page = (tmp_path / "html" / "index.html").read_text(encoding="utf-8")
    assert f'<p class="dg-partial" role="status">partial: {held:,} of 3,000 planned matches' in page

    _set_last_entry(run, planned=held, status="running")  # all in, but the run has not said it ended
    assert main(["report", str(run)]) == 0
    assert capsys.readouterr().out.startswith(f"partial: {held:,} of {held:,} planned matches (the run is still")
    _set_last_entry(run, planned=held + 1, status="finished")
    assert main(["report", str(run)]) == 0
    assert capsys.readouterr().out.startswith(f"partial: {held:,} of {held + 1:,} planned matches (the run finished")


def test_a_run_stopped_after_a_few_matches_reports_itself_partial(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from deepeval_games.app.execution.run import run_experiment

    commits = [0]

    def stop_after_five(_line: str | bytes) -> None:
        commits[0] += 1
        if commits[0] == 5:
            raise KeyboardInterrupt  # as Ctrl-C between two commits

    with pytest.raises(KeyboardInterrupt):
        run_experiment(EXAMPLE, tmp_path / "run", workers=1, on_commit=stop_after_five)
    entry = json.loads((tmp_path / "run" / "manifest.json").read_text(encoding="utf-8"))["runs"][-1]
    assert entry["status"] == "interrupted"
    assert main(["report", str(tmp_path / "run")]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert first.startswith("partial: ")
    assert f" of {entry['planned']:,} planned matches (the run was interrupted" in first
