"""The replication specs in examples/paper/: each validates, states its match count (checked against the plan),
its cost and the paper's models, and with scripted stand-ins for the models runs offline end to end and prints
the table or figure it is for (issue 12, item 6)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from deepeval_games import load_spec, parse_spec, run_experiment
from deepeval_games.app.commands.cli import main
from deepeval_games.app.spec.schedule import plan_matches

ROOT = Path(__file__).resolve().parents[1]
PAPER = ROOT / "examples" / "paper"
SPECS = sorted(p.name for p in PAPER.glob("*.toml"))

# per task: scripted bots standing in for the models (in the spec's player order), the scripted judge, and the
# command that prints the paper's result with what it must print
STAND_INS: dict[str, tuple[list[str], str | None, list[str], str | tuple[str, ...]]] = {
    "deepeval_public_goods": (
        ["pgg_conditional_cooperator", "pgg_free_rider", "pgg_full_contributor", "pgg_grim_trigger"],
        None,
        ["report", "{run}", "--plots", "{out}"],
        "Eq. 1",
    ),
    "deepeval_idiom_solitaire": (
        ["idiom_strategic", "idiom_dictionary", "idiom_limited"],
        None,
        ["tables", "idiom", "{run}", "--plot", "{out}/tables.png"],
        ("Eq. 1. Idiom Solitaire: wins per player over both positions", "Table 1"),  # the paper's score, then Table 1
    ),
    "deepeval_code_review": (
        ["cr_reference_programmer", "cr_broken_programmer", "cr_over_reviewer", "cr_test_reviewer"],
        "judge_pass_rate",
        ["tables", "code-review", "{run}", "--plot", "{out}/table3.png"],
        "Table 3",
    ),
    "deepeval_translation": (
        ["mt_reference_translator", "mt_word_drop_translator", "mt_degrading_proofreader"],
        "judge_chrf",
        ["tables", "translation", "{run}", "--plot", "{out}/tables.png"],
        ("Table 4. Machine Translation (DE-EN)", "(DE-EN): corpus BLEU", "eff:no|tok:13a"),
    ),
}


def _task(source: dict[str, Any]) -> str:
    experiment = source["experiment"]
    game = experiment.get("game") or experiment["games"][0]
    return str(game).split("(", 1)[0]


def _stand_in(source: dict[str, Any]) -> dict[str, Any]:
    """The spec with scripted bots for its models (names kept) and a small share of its data items."""
    bots, judge, _, _ = STAND_INS[_task(source)]
    experiment = dict(source["experiment"])
    experiment["cache"] = False
    if "sweep" in experiment:  # the first two data items
        experiment["sweep"] = {
            k: (v[:2] if isinstance(v, list) else {"from": v["from"], "to": v["from"] + 1})
            for k, v in experiment["sweep"].items()
        }
    if "games" in experiment:  # one paragraph per direction
        seen: dict[str, str] = {}
        for game in experiment["games"]:
            seen.setdefault(re.sub(r"paragraph=[^,)]*", "", game), game)
        experiment["games"] = list(seen.values())
    players = [{"name": p["name"], "bot": bot} for p, bot in zip(source["players"], bots, strict=False)]
    spec: dict[str, Any] = {"experiment": experiment, "players": players}
    if judge is not None:
        spec["judge"] = {"bot": judge}
    return spec


@pytest.mark.parametrize("name", SPECS)
def test_each_spec_validates_and_its_header_states_matches_cost_and_the_papers_models(name: str) -> None:
    path = PAPER / name
    header = "".join(line for line in path.read_text(encoding="utf-8").splitlines(True) if line.startswith("#"))
    spec = load_spec(path)
    assert spec.uses_models() and spec.experiment.preset == "paper" and spec.experiment.budget_usd
    stated = re.search(r"Matches: ([\d,]+)", header)
    assert stated is not None and "Cost: " in header and "The paper's models: " in header, name
    assert len(plan_matches(spec)) == int(stated[1].replace(",", "")), name
    assert "deepeval-games run examples/paper/" + name in header


def test_there_is_a_spec_for_each_paper_result() -> None:
    assert SPECS == [
        "figure4_pgg_mode1.toml",
        "figure4_pgg_mode2.toml",
        "table3_code_review.toml",
        "tables1_2_idiom.toml",
        "tables4_6_translation.toml",
    ]


@pytest.mark.parametrize("name", SPECS)
def test_each_spec_runs_offline_with_scripted_stand_ins_and_prints_its_result(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = load_spec(PAPER / name).source
    spec = parse_spec(_stand_in(source))
    result = run_experiment(spec, tmp_path / "run")
    assert result.played > 0 and not result.failed
    assert {r.seats[0] for r in result.records} <= {p["name"] for p in source["players"]}  # the models' names
    _, _, command, expected = STAND_INS[_task(source)]
    out = tmp_path / "out"
    out.mkdir()
    capsys.readouterr()
    assert main([part.format(run=tmp_path / "run", out=out) for part in command]) == 0
    printed = capsys.readouterr().out
    for text in (expected,) if isinstance(expected, str) else expected:
        assert text in printed
    assert list(out.glob("*.png")), "no figure was written"
    if "figure4" in name:
        assert "gpt-4o" in printed and "claude-sonnet-4" in printed
        assert "for the number of matches fixed in advance" in printed  # what the Eq. 1 intervals are
        assert "No stopping rule was applied: 10 repeat(s) fixed in advance" in printed  # never "converged"
    else:  # the per-cell intervals of Tables 1-6
        assert "95% intervals per cell" in printed and "resolved" in printed
