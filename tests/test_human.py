"""Humans at the table (issue 16): a person plays a seat or judges from a plain terminal, driven here through a
pseudo-terminal with pexpect: the prompts shown, the re-ask on an invalid answer, Ctrl-C leaving the run
resumable, the committed record, and nothing shown that names another seat's bot or model."""

from __future__ import annotations

import asyncio
import io
import json
import os
import sys
from pathlib import Path

import pexpect
import pytest

from deepeval_games import parse_spec
from deepeval_games.app.commands.play import play_spec
from deepeval_games.app.spec.players import HUMAN_BOT
from deepeval_games.app.storage.store import Store
from deepeval_games.core.errors import SpecError
from deepeval_games.core.records import JUDGE_SEAT, MatchRecord
from deepeval_games.core.registry.bots import registered_bots
from deepeval_games.core.registry.games import load_game
from deepeval_games.infra.sandbox import bubblewrap_usable
from llm_bots.players.human import HUMAN, HumanBot, HumanLeft, Terminal

CLI = [sys.executable, "-m", "deepeval_games"]
BOT_NAMES = [entry.name for entry in registered_bots() if entry.name != HUMAN]
needs_sandbox = pytest.mark.skipif(not bubblewrap_usable(), reason="bubblewrap cannot create sandboxes here")


def _spawn(args: list[str], cwd: Path) -> pexpect.spawn:
    child = pexpect.spawn(
        CLI[0],
        [*CLI[1:], *args],
        cwd=str(cwd),
        env=dict(os.environ),
        encoding="utf-8",
        timeout=60,
        dimensions=(50, 200),
    )
    child.logfile_read = io.StringIO()  # everything the person was shown
    return child


def _shown(child: pexpect.spawn) -> str:
    log = child.logfile_read
    assert isinstance(log, io.StringIO)
    return log.getvalue()


def _answer(child: pexpect.spawn, *lines: str) -> None:
    """Wait for the input prompt, then type ``lines``."""
    child.expect_exact("> ")
    for line in lines:
        child.sendline(line)


def _no_other_player_named(shown: str, *names: str) -> None:
    for name in (*BOT_NAMES, *names):
        assert name not in shown, f"{name!r} was shown to the person"


def _records(run_dir: Path) -> list[MatchRecord]:
    with Store(run_dir, read_only=True) as store:
        return list(store.records())


# -- a seat ------------------------------------------------------------------------------------------------


def test_play_public_goods_seat_1_reasks_an_invalid_move_ctrl_c_resumes_and_commits_the_human_turns(
    tmp_path: Path,
) -> None:
    out = tmp_path / "pgg"
    args = ["play", "deepeval_public_goods", "--seat", "1", "--out", str(out)]

    # Ctrl-C in round 2: nothing is committed, the run directory stays resumable
    child = _spawn(args, tmp_path)
    _answer(child, "invest 4")
    child.expect_exact("Player 1, your turn (round 2)")
    child.expect_exact("> ")
    child.sendintr()
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 130
    assert "committed matches are kept; rerun the same command to resume" in _shown(child)
    assert _records(out) == []

    # the same command plays the game again, whole
    child = _spawn(args, tmp_path)
    child.expect_exact("Player 1, your turn (round 1)")
    child.expect_exact("You are Player 1.")
    child.expect_exact("Legal moves now: invest 0, invest 1")
    _answer(child, "all of them")  # invalid: the task's own re-ask, with its reason
    child.expect_exact('Not accepted: no JSON object with a "coins" field was found. (try 2 of 3)')
    child.expect_exact("Reply again with only a JSON object")
    _answer(child, "invest 3")  # a listed move by its name
    for move in ('{"reason": "test the pool", "coins": 5}', "invest 10", "invest 0", "invest 1"):
        _answer(child, move)
    child.expect_exact("The game is over")
    child.expect(r"Returns: Player 1 \(you\) [-+][\d.]+, Player 2 [-+][\d.]+, Player 3 [-+][\d.]+, Player 4")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    shown = _shown(child)
    assert shown.count("your turn") == 5
    _no_other_player_named(shown)

    (record,) = _records(out)
    assert record.seats[0] == "human" and record.players[0]["kind"] == "human"
    mine = [t for t in record.turns if t.seat == 0]
    assert [t.action for t in mine] == [3, 5, 10, 0, 1]
    first = mine[0]
    assert first.outcome == "reasked" and first.retries == 1
    assert first.raw_replies == ["all of them", "invest 3"]
    assert first.latency_s > 0
    assert "You are Player 1." in first.prompts[0][0]["content"]  # what the person saw, as a model's prompt
    assert "could not be used" in first.prompts[1][0]["content"]
    assert [t.outcome for t in mine[1:]] == ["ok"] * 4
    assert mine[1].text == '{"reason": "test the pool", "coins": 5}'


def test_play_idiom_solitaire_with_an_invalid_answer_then_a_chain_and_a_break(tmp_path: Path) -> None:
    out = tmp_path / "idiom"
    child = _spawn(["play", "deepeval_idiom_solitaire", "--against", "idiom_dictionary", "--out", str(out)], tmp_path)
    child.expect_exact("Player 1, your turn (round 1)")
    child.expect_exact("The chain so far: 一马当先")
    _answer(child, "hello")
    child.expect_exact("Not accepted: no four-character Chinese idiom was found in the reply. (try 2 of 3)")
    _answer(child, "先发制人")
    child.expect_exact("Player 1, your turn (round 3)")
    child.expect(r"The chain so far: 一马当先 → 先发制人 → 人\w{3}")
    _answer(child, "一马当先")  # already used: the move loses
    child.expect_exact("Returns: Player 1 (you) -1, Player 2 +1")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    _no_other_player_named(_shown(child))

    (record,) = _records(out)
    assert record.returns == [-1.0, 1.0]
    mine = [t for t in record.turns if t.seat == 0]
    assert mine[0].outcome == "reasked" and mine[0].raw_replies == ["hello", "先发制人"]
    assert mine[0].action_string == "先发制人"
    assert mine[1].raw_replies == ["一马当先"] and mine[1].outcome == "ok"


@needs_sandbox
def test_play_code_review_as_programmer_types_code_over_several_lines_up_to_the_terminator(tmp_path: Path) -> None:
    out = tmp_path / "cr"
    game = "deepeval_code_review(max_rounds=1,task_id=11)"
    args = ["play", game, "--against", "cr_over_reviewer", "--judge", "judge_fixed", "--out", str(out)]
    child = _spawn(args, tmp_path)
    child.expect_exact("You are Player 1.")
    child.expect_exact("end it with a line holding only .")
    _answer(child, ".")  # nothing typed: the task's re-ask
    child.expect_exact("Not accepted: no Python code was found in the reply. (try 2 of 3)")
    code = ["def remove_Occ(s, ch):", "    return s.replace(ch, '', 1)[::-1].replace(ch, '', 1)[::-1]"]
    _answer(child, *code, ".")
    child.expect_exact("Returns: Player 1 (you)")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    _no_other_player_named(_shown(child))
    (record,) = _records(out)
    programmer = next(t for t in record.turns if t.seat == 0)
    assert programmer.text == "\n".join(code) and programmer.outcome == "reasked"
    assert programmer.raw_replies == ["", "\n".join(code)]
    assert record.metrics.get("pass_rate") == 1.0


# -- a judge -----------------------------------------------------------------------------------------------


def _judge(child: pexpect.spawn, scores: tuple[str, str], reasons: tuple[str, str]) -> None:
    child.expect_exact("You are the judge")
    for label, score, why in zip(("Programmer", "Reviewer"), scores, reasons, strict=True):
        child.expect_exact(f"Score for the {label} (1-10):")
        child.sendline(score)
        child.expect_exact(f"Reasons for the {label}'s score; end with a line holding only .")
        for line in [*why.split("\n"), "."]:
            child.sendline(line)
    child.expect_exact("Verdict recorded.")


@needs_sandbox
def test_human_judged_code_review_stores_typed_scores_and_reasons_and_the_audit_compares_a_scripted_judge(
    tmp_path: Path,
) -> None:
    spec = tmp_path / "judged.toml"
    spec.write_text(
        """
[experiment]
name = "human-judged"
game = "deepeval_code_review(max_rounds=1,task_id=11)"
pairing = "fixed"

[[players]]
name = "zq-writer"
bot = "cr_reference_programmer"

[[players]]
name = "zq-critic"
bot = "cr_over_reviewer"

[judge]
human = true
""",
        encoding="utf-8",
    )
    out = tmp_path / "run"
    child = _spawn(["run", str(spec), "--out", str(out)], tmp_path)
    child.expect_exact("You are the judge")
    child.expect_exact("Programmer")  # the brief an LLM judge is shown
    child.expect_exact("Score for the Programmer (1-10):")
    child.sendline("11")  # out of range: asked again
    child.expect_exact('Not accepted: "Programmer" needs a whole-number "score" from 1 to 10')
    child.expect_exact("Score for the Programmer (1-10):")
    child.sendline("9")
    child.expect_exact("Reasons for the Programmer's score; end with a line holding only .")
    for line in ("Correct on the shown tests.", "Clear code.", "."):
        child.sendline(line)
    child.expect_exact("Score for the Reviewer (1-10):")
    child.sendline("3")
    child.expect_exact("Reasons for the Reviewer's score")
    for line in ("Said over without reading.", "."):
        child.sendline(line)
    child.expect_exact("Verdict recorded.")
    judged_part = _shown(child)
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0, _shown(child)[-2000:]
    _no_other_player_named(judged_part, "zq-writer", "zq-critic")

    (record,) = _records(out)
    verdict = next(t for t in record.turns if t.seat == JUDGE_SEAT)
    assert json.loads(verdict.text) == {
        "Programmer": {"evaluation": "Correct on the shown tests.\nClear code.", "score": 9},
        "Reviewer": {"evaluation": "Said over without reading.", "score": 3},
    }
    assert verdict.raw_replies[:2] == ["11", "9"] and verdict.outcome == "ok"
    assert record.returns == [9.0, 3.0]

    # the audit sets a scripted judge's scores of the same transcript beside the person's (the original verdict)
    rejudged = _spawn(["rejudge", str(out), "--judge", "judge_pass_rate"], tmp_path)
    rejudged.expect(pexpect.EOF)
    rejudged.close()
    assert rejudged.exitstatus == 0
    audit = _shown(rejudged)
    assert "1 judgements by judge_pass_rate planned: 1 made now" in audit
    assert "original vs judge_pass_rate: n = 2" in audit  # the person's two scores beside the scripted judge's

    # rejudge --human: Ctrl-C stores nothing; then a person scores the finished transcript again, blind
    left = _spawn(["rejudge", str(out), "--human", "alice"], tmp_path)
    left.expect_exact("Score for the Programmer (1-10):")
    left.sendintr()
    left.expect(pexpect.EOF)
    left.close()
    assert left.exitstatus == 130
    with Store(out, read_only=True) as store:
        assert [j.judge for j in store.judgements()] == ["judge_pass_rate"]
    human = _spawn(["rejudge", str(out), "--human", "alice"], tmp_path)
    _judge(human, ("8", "2"), ("Good.", "Too quick."))
    human.expect_exact("1 judgements by human:alice planned: 1 made now")
    blind = _shown(human)
    human.expect(pexpect.EOF)
    human.close()
    assert human.exitstatus == 0
    _no_other_player_named(blind.split("judgements by")[0], "zq-writer", "zq-critic")
    with Store(out, read_only=True) as store:
        judgements = {j.judge: j for j in store.judgements()}
    assert judgements["human:alice"].scores == [8, 2]
    assert judgements["human:alice"].judge_model is None
    assert "original vs human:alice: n = 2" in _shown(human)


# -- in process ------------------------------------------------------------------------------------------


def test_human_table_and_bot_human_are_one_player_and_play_seats_the_person_where_asked() -> None:
    assert HUMAN == HUMAN_BOT
    base = {"experiment": {"game": "deepeval_idiom_solitaire"}}
    one = parse_spec({**base, "players": [{"name": "me", "human": True}, {"name": "b", "bot": "idiom_dictionary"}]})
    two = parse_spec({**base, "players": [{"name": "me", "bot": "human"}, {"name": "b", "bot": "idiom_dictionary"}]})
    assert one.players[0] == two.players[0] and one.has_humans() and one.players[0].is_human
    with pytest.raises(SpecError, match="exactly one of 'bot'"):
        parse_spec({**base, "players": [{"name": "me", "human": True, "bot": "random"}]})
    spec = play_spec("deepeval_public_goods", seat=3, against=["pgg_free_rider"])
    assert [p.name for p in spec.players][2] == "human" and spec.pairing == "fixed"
    with pytest.raises(SpecError, match=r"--seat must be 1\.\.4"):
        play_spec("deepeval_public_goods", seat=5)
    with pytest.raises(SpecError, match="--judge"):
        play_spec("deepeval_code_review")


def test_multi_line_answers_end_at_the_stated_terminator_and_end_of_input_stops_the_match() -> None:
    game = load_game("deepeval_code_review(max_rounds=1,task_id=11)")
    out = io.StringIO()
    terminal = Terminal(stdin=io.StringIO("def f():\n    return 1\nEND\n"), stdout=out)
    bot = HumanBot(0, game=game, terminator="END", terminal=terminal)
    assert asyncio.run(terminal.read_block("END", "> ")) == "def f():\n    return 1"
    with pytest.raises(HumanLeft):
        asyncio.run(terminal.read_line("> "))
    with pytest.raises(ValueError, match="terminator"):
        HumanBot(0, game=game, terminator=" ")
    assert bot.identity()["kind"] == "human"
    # every seat and judge without a terminal of its own reads standard input through one queue
    assert HumanBot(0, game=game).terminal is HumanBot(JUDGE_SEAT, game=game).terminal is Terminal.standard()


def test_a_run_with_a_person_sends_every_model_call_live() -> None:
    from deepeval_games.app.execution.one_match import open_runtime

    players = [{"name": "me", "human": True}, {"name": "m", "model": "openai/gpt-4o-mini"}]
    with_person = parse_spec({"experiment": {"game": "deepeval_idiom_solitaire"}, "players": players})
    without = parse_spec(
        {"experiment": {"game": "deepeval_idiom_solitaire"}, "players": [players[1], players[1] | {"name": "n"}]}
    )
    runtime = open_runtime(with_person)
    assert runtime is not None and runtime.cache is None
    runtime.close()
    other = open_runtime(without)
    assert other is not None and other.cache is not None
    other.close()


def test_a_model_seat_of_the_same_round_is_not_held_up_while_the_person_types(
    tmp_path: Path, fake_provider_key: str
) -> None:
    import time

    from tests.fake_openai_server import Behaviour, FakeOpenAIServer, model_player

    with FakeOpenAIServer(default=Behaviour.slow_reply(0.3, '{"reason": "r", "coins": 4}')) as server:
        model = model_player("zq-model", server, timeout_s=2)
        players = "\n".join(f"{k} = {json.dumps(v)}" for k, v in model.items())
        spec = tmp_path / "mixed.toml"
        spec.write_text(
            '[experiment]\ngame = "deepeval_public_goods(players=2,rounds=1)"\npairing = "fixed"\n\n'
            f'[[players]]\n{players}\n\n[[players]]\nname = "me"\nhuman = true\n',
            encoding="utf-8",
        )
        out = tmp_path / "run"
        child = _spawn(["run", str(spec), "--out", str(out)], tmp_path)
        child.expect_exact("Player 2, your turn (round 1)")
        child.expect_exact("> ")
        time.sleep(3)  # longer than the model's timeout
        child.sendline("invest 3")
        child.expect(pexpect.EOF)
        child.close()
    assert child.exitstatus == 0, _shown(child)[-2000:]
    (record,) = _records(out)
    model_turn, human_turn = sorted((t for t in record.turns if t.seat >= 0), key=lambda t: t.seat)
    assert model_turn.outcome == "ok" and model_turn.latency_s < 2.5  # answered while the person was typing
    assert human_turn.latency_s >= 3 and human_turn.action == 3
