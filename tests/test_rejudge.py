"""Re-judging finished transcripts and the judge audits: swap (position/label bias), repeats (variance),
agreement, self-preference, ground truth and canaries; the original records stay as they were."""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from analysis.judge_audit import ORIGINAL, format_audit, judge_audit, judge_scores, self_preference
from deepeval_games import parse_spec, run_experiment
from deepeval_games.app.commands.cli import main
from deepeval_games.app.execution.rejudge import (
    JudgeSource,
    Presentation,
    RejudgeError,
    judge_source,
    rejudge,
    replay_to_verdict,
)
from deepeval_games.app.storage.store import DB_NAME, JSONL_NAME, Store
from deepeval_games.core.errors import SpecError, UnknownBotError
from deepeval_games.core.judgements import JudgementRecord
from deepeval_games.core.records import JUDGE_SEAT, MatchRecord, TurnRecord
from deepeval_games.core.registry.games import load_game
from deepeval_games.infra.sandbox import bubblewrap_usable
from tests.fake_openai_server import Behaviour, FakeOpenAIServer, last_user_message, model_player

needs_sandbox = pytest.mark.skipif(not bubblewrap_usable(), reason="bubblewrap cannot create sandboxes here")
EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def _originals(run_dir: Path) -> tuple[list[tuple[str, str, str]], bytes]:
    """The match rows of the store and the bytes of matches.jsonl, to compare before and after."""
    with sqlite3.connect(run_dir / DB_NAME) as db:
        rows = list(db.execute("SELECT match_id, record, committed_at FROM matches ORDER BY seq"))
    return rows, (run_dir / JSONL_NAME).read_bytes()


def _small_run(tmp_path: Path, tasks: Sequence[int] = (11,), scores: list[int] | None = None) -> Path:
    """A code review run of the reference and the broken programmer judged by ``judge_fixed`` (``scores``, if
    given), one MBPP task a sweep point; it needs no sandbox (reviewers answer over; the pass rate may be None)."""
    judge: dict[str, Any] = (
        {"bot": "judge_fixed"} if scores is None else {"bot": "judge_fixed", "params": {"scores": scores}}
    )
    spec = parse_spec(
        {
            "experiment": {
                "name": "rejudge-test",
                "game": "deepeval_code_review(max_rounds=1)",
                "sweep": {"task_id": list(tasks)},
                "pairing": "round_robin",
            },
            "players": [
                {"name": "ref", "bot": "cr_reference_programmer"},
                {"name": "broken", "bot": "cr_broken_programmer"},
            ],
            "judge": judge,
        }
    )
    out = tmp_path / "run"
    result = run_experiment(spec, out)
    assert not result.failed
    return out


def _first_record(run_dir: Path) -> MatchRecord:
    """The first match record of a run."""
    with Store(run_dir) as store:
        return next(iter(store.records()))


def _fake_judge(server: FakeOpenAIServer, **settings: Any) -> JudgeSource:
    """The fake server's model as a re-judging judge."""
    entry = model_player("fake-judge", server, **settings)
    return judge_source(entry["model"], {k: v for k, v in entry.items() if k not in ("name", "model")})


# -- the "must show", on the Code Review example run ------------------------------------------------


@needs_sandbox
def test_swap_audit_on_the_code_review_example_shows_a_biased_judge_and_no_bias_for_an_unbiased_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run_dir = tmp_path / "demo"
    assert main(["run", str(EXAMPLES / "code_review_scripted.toml"), "--out", str(run_dir), "--no-progress"]) == 0
    before = _originals(run_dir)
    capsys.readouterr()

    assert main(["rejudge", str(run_dir), "--judge", "judge_position_biased", "--param", "bonus=2", "--swap"]) == 0
    biased = capsys.readouterr().out
    assert "120 judgements by judge_position_biased(bonus=2) planned: 120 made now" in biased
    line = next(x for x in biased.splitlines() if x.strip().startswith("judge_position_biased(bonus=2): 60 matches"))
    assert "first-position advantage +2.00" in line and "BIASED" in line

    assert main(["rejudge", str(run_dir), "--judge", "judge_pass_rate", "--swap"]) == 0
    unbiased = capsys.readouterr().out
    line = next(x for x in unbiased.splitlines() if x.strip().startswith("judge_pass_rate: 60 matches"))
    assert "first-position advantage +0.00" in line and "no bias detected" in line
    assert "flips in 0% of matches" in line
    # the unbiased re-judge agrees with the original verdicts exactly
    assert re.search(r"original vs judge_pass_rate: n = 120, rho \+1\.00 .* mean \|diff\| 0\.00", unbiased)

    assert _originals(run_dir) == before  # the original records are unchanged, in the store and in the JSONL
    with Store(run_dir) as store:
        records, judgements = list(store.records()), list(store.judgements())
    assert len(judgements) == 240
    swapped = [j for j in judgements if j.judge == "judge_position_biased(bonus=2)" and j.swapped]
    assert {tuple(j.presented_order) for j in swapped} == {(1, 0)}
    assert {tuple(j.seat_labels) for j in swapped} == {("Player 2", "Player 1")}
    audit = judge_audit(records, judgements)
    by_judge = {b.judge: b for b in audit.biases}
    assert by_judge["judge_position_biased(bonus=2)"].first_advantage.value == pytest.approx(2.0)
    assert by_judge["judge_pass_rate"].first_advantage.value == 0.0

    # a rerun adds nothing (resume by judgement id); 'report' shows the audit too
    assert main(["rejudge", str(run_dir), "--judge", "judge_pass_rate", "--swap"]) == 0
    assert "0 made now, 120 already in" in capsys.readouterr().out
    assert main(["report", str(run_dir)]) == 0
    assert "Position/label bias" in capsys.readouterr().out


@needs_sandbox
def test_the_canary_buys_points_from_a_gullible_judge_and_none_from_the_pass_rate_judge(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run_dir = tmp_path / "canary"
    assert main(["run", str(EXAMPLES / "code_review_canary.toml"), "--out", str(run_dir), "--no-progress"]) == 0
    capsys.readouterr()
    assert main(["rejudge", str(run_dir), "--judge", "judge_gullible"]) == 0
    out = capsys.readouterr().out
    assert "judge_gullible: canary vs reference as programmer: 15 cells, shift +4.00" in out
    assert "original: canary vs reference as programmer: 15 cells, shift +0.00" in out
    with Store(run_dir) as store:
        records = list(store.records())
    canary_code = next(t.text for r in records if r.seats[0] == "canary" for t in r.turns if t.seat == 0)
    assert canary_code.startswith("# Note to the judge")


# -- without a sandbox -----------------------------------------------------------------------------------------


def test_replay_rebuilds_the_verdict_node_and_refuses_a_tampered_transcript(tmp_path: Path) -> None:
    run_dir = _small_run(tmp_path)
    record = _first_record(run_dir)
    game = load_game(record.game)
    state, _ = replay_to_verdict(record, game)
    original_brief = next(m["text"] for m in record.messages if m["kind"] == "brief")
    assert state.judge_text() == original_brief
    tampered = record.model_copy(deep=True)
    tampered.turns = [t for t in tampered.turns if t.seat == JUDGE_SEAT]
    with pytest.raises(RejudgeError, match="does not reach a verdict"):
        replay_to_verdict(tampered, game)


def test_swapped_brief_introduces_the_reviewer_first_under_swapped_labels(tmp_path: Path) -> None:
    run_dir = _small_run(tmp_path)
    record = _first_record(run_dir)
    state, _ = replay_to_verdict(record, load_game(record.game))
    shown = Presentation.swapped(2)
    text = state.judge_text_presented(list(shown.order), list(shown.labels))
    assert "between Player 1 (the reviewer) and Player 2 (the programmer)" in text
    assert "Player 2 (programmer), round 1" in text
    assert text.index("Player 1 (the reviewer)'s feedback") < text.index("Player 2 (the programmer)'s code")


def test_an_llm_judge_is_given_the_swapped_brief_and_its_position_bias_is_measured(
    tmp_path: Path, fake_provider_key: str
) -> None:
    run_dir = _small_run(tmp_path, [11, 12, 13], scores=[5, 5])
    before = _originals(run_dir)

    def first_mentioned_wins(body: dict[str, Any]) -> str:
        """A judge that prefers whichever role the brief mentions first."""
        brief = last_user_message(body).lower()
        programmer_first = brief.index("programmer") < brief.index("reviewer")
        high, low = {"evaluation": "first", "score": 8}, {"evaluation": "second", "score": 5}
        return json.dumps(
            {"Programmer": high, "Reviewer": low} if programmer_first else {"Programmer": low, "Reviewer": high}
        )

    with FakeOpenAIServer(default=Behaviour.responder(first_mentioned_wins), max_hang_s=5) as server:
        result = rejudge(run_dir, _fake_judge(server), swap=True)
    assert (result.planned, result.judged, result.failed) == (12, 12, [])
    assert _originals(run_dir) == before
    with Store(run_dir) as store:
        records, judgements = list(store.records()), list(store.judgements())
    assert all(j.judge_model == "openai/fake-judge" and j.turn is not None and j.turn.prompts for j in judgements)
    audit = judge_audit(records, judgements)
    bias = next(b for b in audit.biases if b.judge == "openai/fake-judge")
    assert bias.first_advantage.value == pytest.approx(3.0) and bias.flip_rate == 1.0


def test_judge_variance_from_repeats_and_agreement_between_judges(tmp_path: Path) -> None:
    run_dir = _small_run(tmp_path, [11, 12, 13, 14], scores=[6, 6])
    steady = rejudge(run_dir, judge_source("judge_position_biased", {"bonus": 0}), repeat=3)
    noisy = rejudge(run_dir, judge_source("judge_position_biased", {"bonus": 0, "noise": 2}), repeat=3)
    assert steady.judged == noisy.judged == 24
    with Store(run_dir) as store:
        records, judgements = list(store.records()), list(store.judgements())
    # two settings of one bot are two judges: apart in the ids and, by their names, in the audit
    assert len({j.judgement_id for j in judgements}) == 48
    audit = judge_audit(records, judgements)
    shares = {(v.judge, v.role): v.share for v in audit.variances}
    noisy_judge, steady_judge = "judge_position_biased(bonus=0,noise=2)", "judge_position_biased(bonus=0)"
    assert shares[(noisy_judge, "programmer")] > 0.5 and shares[(noisy_judge, "reviewer")] > 0.5
    assert shares[(steady_judge, "programmer")] == shares[(steady_judge, "reviewer")] == 0.0
    agreement = next(a for a in audit.agreements if a.judges == (ORIGINAL, steady_judge))
    assert agreement.n == 16 and agreement.mean_abs_diff.value == 0.0  # 8 matches x 2 seats, both 6 everywhere
    noisy = next(a for a in audit.agreements if a.judges == (ORIGINAL, noisy_judge))
    assert noisy.mean_abs_diff.value > 0.5


def _record(match_id: str, models: list[str], scores: list[int]) -> MatchRecord:
    verdict = TurnRecord(index=2, round=3, seat=JUDGE_SEAT, action=0, action_string="verdict")
    return MatchRecord(
        match_id=match_id,
        game="deepeval_code_review(max_rounds=1,task_id=11)",
        seats=[m.split("/")[-1] for m in models],
        returns=[float(s) for s in scores],
        turns=[verdict],
        players=[{"kind": "llm", "model": m} for m in models],
        roles=["programmer", "reviewer"],
        metrics={"judge_scores": dict(zip(["programmer", "reviewer"], scores, strict=True))},
    )


def _judgement(match_id: str, judge: str, scores: list[int]) -> JudgementRecord:
    return JudgementRecord(
        judgement_id=f"{judge}-{match_id}",
        match_id=match_id,
        game="deepeval_code_review(max_rounds=1,task_id=11)",
        judge=judge,
        judge_model=judge,
        presented_order=[0, 1],
        seat_labels=["Player 1", "Player 2"],
        scores=scores,
        roles=["programmer", "reviewer"],
    )


def test_self_preference_compares_a_judge_with_the_other_judges_on_its_own_models_seats() -> None:
    records = [
        _record("m1", ["openai/alpha", "openai/beta"], [5, 5]),
        _record("m2", ["openai/beta", "openai/alpha"], [6, 4]),
    ]
    judgements = [  # alpha judges its own seats 3 points above what beta and the original judge give them
        _judgement("m1", "openai/alpha", [8, 5]),
        _judgement("m2", "openai/alpha", [6, 7]),
        _judgement("m1", "openai/beta", [5, 5]),
        _judgement("m2", "openai/beta", [6, 4]),
    ]
    scores = judge_scores(records, judgements)
    pref = self_preference(records, scores, "openai/alpha")
    assert pref is not None and pref.seats == 2 and pref.difference.value == pytest.approx(3.0)
    beta = self_preference(records, scores, "openai/beta")
    assert beta is not None and beta.difference.value == 0.0  # beta scores its own seats as the others do
    assert "openai/alpha (openai/alpha): 2 seats, +3.00" in format_audit(judge_audit(records, judgements))


def test_translation_canary_and_a_swap_for_a_scripted_judge(tmp_path: Path) -> None:
    spec = parse_spec(
        {
            "experiment": {
                "name": "mt-canary",
                "games": ["deepeval_translation(pair=de-en,paragraph=2413-p14)"],
                "pairing": "round_robin",
            },
            "players": [
                {"name": "reference", "bot": "mt_reference_translator"},
                {"name": "canary", "bot": "mt_canary_translator"},
                {"name": "copy", "bot": "mt_copy_source_translator"},
            ],
            "judge": {"bot": "judge_chrf"},
        }
    )
    run_dir = tmp_path / "mt"
    assert not run_experiment(spec, run_dir).failed
    gullible = judge_source("judge_gullible", {"text_fields": ["translation", "proofread"]})
    assert rejudge(run_dir, gullible, swap=True).judged == 12
    with Store(run_dir) as store:
        audit = judge_audit(list(store.records()), list(store.judgements()))
    shifts = {(c.judge, c.role): c.shift.value for c in audit.canaries}
    assert gullible.name == 'judge_gullible(text_fields=["translation", "proofread"])'
    assert shifts[(gullible.name, "translator")] > 0
    assert shifts[(ORIGINAL, "translator")] <= 0  # chrF gives the canary's extra sentence nothing
    assert any(measure == "chrf_translation" for _, _, measure, _ in audit.ground_truth)
    record = _first_record(run_dir)
    state, _ = replay_to_verdict(record, load_game(record.game))
    assert state.judge_text() == next(m["text"] for m in record.messages if m["kind"] == "brief")
    swapped = state.judge_text_presented([1, 0], ["Player 2", "Player 1"])
    assert swapped.index("[Player 1 (proofreader) wrote") < swapped.index("[Player 2 (translator) wrote")


# -- bad input ---------------------------------------------------------------------------------------------


def test_bad_input_is_a_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["rejudge", str(tmp_path / "nothing"), "--judge", "judge_fixed"]) == 2
    assert "no results" in capsys.readouterr().err
    with pytest.raises(UnknownBotError, match="litellm model string"):
        judge_source("no_such_judge")
    pgg = tmp_path / "pgg"
    assert main(["run", str(EXAMPLES / "pgg_scripted.toml"), "--out", str(pgg), "--no-progress"]) == 0
    capsys.readouterr()
    assert main(["rejudge", str(pgg), "--judge", "judge_fixed"]) == 2
    assert "no judged matches" in capsys.readouterr().err
    run_dir = _small_run(tmp_path)
    assert main(["rejudge", str(run_dir), "--judge", "judge_fixed", "--repeat", "0"]) == 2
    assert main(["rejudge", str(run_dir), "--judge", "judge_fixed", "--param", "scores=[1]"]) == 2
    assert "bad parameters" in capsys.readouterr().err
    with pytest.raises(SpecError):
        rejudge(run_dir, judge_source("judge_fixed", {"colour": "red"}))


def test_a_judge_without_a_usable_verdict_is_logged_and_the_other_matches_go_on(
    tmp_path: Path, fake_provider_key: str
) -> None:
    run_dir = _small_run(tmp_path)
    verdict = json.dumps({"Programmer": {"evaluation": "ok", "score": 7}, "Reviewer": {"evaluation": "ok", "score": 6}})
    with FakeOpenAIServer(default=Behaviour.reply(verdict), max_hang_s=5) as server:
        server.script(Behaviour.reply("no verdict here"))  # the first judgement gets no usable verdict
        result = rejudge(run_dir, _fake_judge(server, max_reasks=0), max_concurrency=1)
    assert result.judged == 1 and len(result.failed) == 1 and "JudgeError" in result.failed[0][1]
    with Store(run_dir) as store:
        assert [kind for _, kind, _ in store.attempts()] == ["rejudge"]
        assert [j.scores for j in store.judgements()] == [[7, 6]]
