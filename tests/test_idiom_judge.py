"""Idiom Solitaire's referee mode (validity=dictionary+judge): answers outside the dictionary go to a judge."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest

from analysis.tables.idiom_solitaire import format_losses, losses_by_cause
from deepeval_games import Decision, DeepEvalBot, Observation, SpecError, UnknownGameError, load_game, play_match
from deepeval_games.app.execution.one_match import build_player
from deepeval_games.app.spec.players import PlayerSpec
from deepeval_games.core.records import JUDGE_SEAT, MatchRecord
from game_defs.idiom_solitaire.game import JUDGE_REFUSED, NOT_AN_IDIOM, WRONG_FIRST_CHAR, dictionary
from llm_bots.judge import IdiomListJudge, check_judge
from tests.fake_openai_server import Behaviour, FakeOpenAIServer, model_player

JUDGED = "validity=dictionary+judge"
ACCEPT = ["与时俱进", "久经沙场"]


class SayBot(DeepEvalBot):
    """Scripted seat that replies with the given texts in turn, as a model would (free text)."""

    def __init__(self, player_id: int, replies: Sequence[str]) -> None:
        super().__init__(player_id, np.random.default_rng(0))
        self.replies = list(replies)

    async def act(self, observation: Observation) -> Decision:
        text = self.replies.pop(0)
        if observation.free_text:
            return Decision(action=None, text=text)
        found = dictionary(str(observation.params["dictionary"])).parse_reply(text).idiom_id
        return Decision(action=int(found) if found is not None else int(observation.penalty_action or 0), text=text)

    def identity(self) -> dict[str, Any]:
        return {"kind": "test", "replies": list(self.replies)}


def _play(game_string: str, first: Sequence[str], second: Sequence[str], judge: DeepEvalBot | None) -> MatchRecord:
    game = load_game(game_string)
    bots = [SayBot(0, first), SayBot(1, second)]
    return asyncio.run(play_match(game, bots, seed=0, seat_names=["a", "b"], judge=judge))


def _list_judge(game_string: str) -> IdiomListJudge:
    return IdiomListJudge(JUDGE_SEAT, game=load_game(game_string), accept=ACCEPT)


def _judge_turns(record: MatchRecord) -> list[Any]:
    return [t for t in record.turns if t.seat == JUDGE_SEAT]


def test_unlisted_idioms_are_ruled_on_and_the_ruling_and_reason_are_recorded() -> None:
    assert dictionary().id_of("久经沙场") is None and dictionary().id_of("与时俱进") is None  # unlisted
    game = f"deepeval_idiom_solitaire(start=天长地久,max_turns=4,{JUDGED})"
    # a: 久经沙场 (unlisted, accepted); b: 场面热闹 (unlisted, refused): b loses, its cause "judge refused"
    record = _play(game, ["我的答案：久经沙场。"], ["场面热闹"], _list_judge(game))
    rulings = _judge_turns(record)
    assert [t.action for t in rulings] == [1, 0]
    accepted, refused = (json.loads(t.text)["Idiom"] for t in rulings)
    assert accepted["score"] == 1 and "久经沙场 is on the accepted list" in accepted["evaluation"]
    assert refused["score"] == 0 and "场面热闹 is not on the accepted list" in refused["evaluation"]
    assert [t.action_string for t in rulings] == ["ruling: accepted", "ruling: refused"]
    assert record.metrics["chain"] == ["天长地久", "久经沙场"] and record.metrics["hits"] == [1, 0]
    assert record.metrics["rulings"] == [
        {"turn": 1, "seat": 0, "idiom": "久经沙场", "accepted": True},
        {"turn": 2, "seat": 1, "idiom": "场面热闹", "accepted": False},
    ]
    assert record.metrics["broken_by"] == 1 and record.metrics["break_reason"] == JUDGE_REFUSED
    assert record.returns == [1.0, -1.0]
    losses = losses_by_cause([record])
    assert losses["b"]["judge refused"] == 1 and losses["b"]["not an idiom"] == 0 and sum(losses["a"].values()) == 0
    assert "judge refused" in format_losses(losses)
    brief = next(m for m in record.messages if m["kind"] == "brief")
    assert "久经沙场" in brief["text"] and brief["fields"]["required_char"] == "久"


def test_an_accepted_answer_continues_the_chain_with_its_last_character() -> None:
    game = f"deepeval_idiom_solitaire(start=孤立寡与,max_turns=2,{JUDGED})"
    record = _play(game, ["与时俱进"], ["进退两难"], _list_judge(game))  # 进退两难 is a dictionary idiom
    assert record.metrics["chain"] == ["孤立寡与", "与时俱进", "进退两难"] and record.metrics["draw"]
    assert len(_judge_turns(record)) == 1  # a dictionary idiom needs no ruling


def test_the_engine_rejects_a_wrong_first_character_without_asking_the_judge() -> None:
    game = f"deepeval_idiom_solitaire(start=一马当先,{JUDGED})"
    record = _play(game, ["与时俱进"], [], _list_judge(game))
    assert record.metrics["break_reason"] == WRONG_FIRST_CHAR and not _judge_turns(record)
    assert record.metrics["rulings"] == []


def test_dictionary_only_games_are_unchanged_and_never_pool_with_judged_ones() -> None:
    plain = load_game("deepeval_idiom_solitaire(start=天长地久)")
    assert "validity" not in str(plain)  # the default keeps the game string (and match ids) of earlier runs
    assert str(load_game("deepeval_idiom_solitaire(start=天长地久,validity=dictionary)")) == str(plain)
    judged = load_game(f"deepeval_idiom_solitaire(start=天长地久,{JUDGED})")
    assert str(judged) != str(plain) and "validity=dictionary+judge" in str(judged)
    record = _play(str(plain), ["久经沙场"], [], None)  # no judge: outside the dictionary, it loses at once
    assert record.metrics["break_reason"] == NOT_AN_IDIOM and "rulings" not in record.metrics
    with pytest.raises(SpecError, match="judge"):
        check_judge(judged, judge_configured=False)
    with pytest.raises(UnknownGameError, match="validity must be one of"):
        load_game("deepeval_idiom_solitaire(validity=judge)")
    with pytest.raises(ValueError, match="no verdict"):
        IdiomListJudge(JUDGE_SEAT, game=plain, accept=ACCEPT)


@pytest.mark.usefixtures("fake_provider_key")
def test_llm_player_and_llm_judge_through_the_fake_endpoint() -> None:
    """An LLM seat's unlisted answer is a free-text move; the LLM judge's JSON ruling and reason are recorded."""
    verdict = json.dumps({"Idiom": {"evaluation": "a well-known idiom about veterans", "score": 1}}, ensure_ascii=False)

    def respond(body: dict[str, Any]) -> str:
        return verdict if "judge" in body["model"] else "久经沙场"

    game_string = f"deepeval_idiom_solitaire(start=天长地久,max_turns=2,{JUDGED})"
    game = load_game(game_string)
    rng = np.random.default_rng(0)
    with FakeOpenAIServer(default=Behaviour.responder(respond), max_hang_s=5) as server:
        player, judge = model_player("fake-player", server), model_player("fake-judge", server)
        seat0 = build_player(PlayerSpec(name="p", model=player["model"], params=_params(player)), game, 0, rng)
        judge_bot = build_player(PlayerSpec(name="j", model=judge["model"], params=_params(judge)), game, -2, rng)
        record = asyncio.run(play_match(game, [seat0, SayBot(1, ["场面热闹"])], seed=0, judge=judge_bot))
        judge_asks = [json.dumps(r, ensure_ascii=False) for r in server.requests if "judge" in r["model"]]
    rulings = _judge_turns(record)
    assert rulings and rulings[0].action == 1
    assert json.loads(rulings[0].text)["Idiom"]["evaluation"] == "a well-known idiom about veterans"
    assert record.metrics["rulings"][0] == {"turn": 1, "seat": 0, "idiom": "久经沙场", "accepted": True}
    assert record.turns[0].seat == 0 and "久经沙场" in record.turns[0].text
    # the judge was shown the answer and the idiom it continues, and asked for the one-role JSON
    assert judge_asks and "久经沙场" in judge_asks[0] and "天长地久" in judge_asks[0] and '\\"Idiom\\"' in judge_asks[0]


def _params(entry: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in entry.items() if k not in ("name", "model")}


def test_a_spec_with_a_scripted_judge_runs_and_the_table_counts_judge_refusals(tmp_path: Any, capsys: Any) -> None:
    """End to end through the runner: phrasebook players, judge_idiom_list; `tables idiom` counts the refusals."""
    from deepeval_games import run_experiment
    from deepeval_games.app.commands.cli import main

    spec = {
        "experiment": {
            "name": "idiom-judge",
            "game": f"deepeval_idiom_solitaire(start=天长地久,max_turns=4,{JUDGED})",
            "repeats": 1,
            "seed": 0,
            "pairing": "round_robin",
        },
        "players": [
            {"name": "veteran", "bot": "idiom_phrasebook", "params": {"answers": ["久经沙场"]}},
            {"name": "talker", "bot": "idiom_phrasebook", "params": {"answers": ["场面热闹"]}},
        ],
        "judge": {"name": "referee", "bot": "judge_idiom_list", "params": {"accept": ACCEPT}},
    }
    result = run_experiment(spec, tmp_path / "run")
    assert not result.failed and result.played == 2
    records = result.records
    first = next(r for r in records if r.seats == ["veteran", "talker"])
    assert [r["accepted"] for r in first.metrics["rulings"]] == [True, False]
    assert first.metrics["break_reason"] == JUDGE_REFUSED
    assert main(["tables", "idiom", str(tmp_path / "run")]) == 0
    out = capsys.readouterr().out
    losses = out.split("Losses by cause:")[1]
    talker = next(line for line in losses.splitlines() if line.startswith("talker"))
    assert "judge refused" in out and talker.split()[4] == "1"  # not idiom, wrong char, repeat, judge refused


@pytest.mark.parametrize("bot", ["idiom_dictionary", "idiom_strategic", "idiom_limited"])
def test_scripted_players_continue_after_an_accepted_answer(bot: str) -> None:
    from deepeval_games.core.bot import observe
    from deepeval_games.core.registry.bots import make_bot

    game = load_game(f"deepeval_idiom_solitaire(start=孤立寡与,{JUDGED})")
    state = game.new_initial_state()
    state.apply_action(state.intern_utterance(0, "与时俱进"))
    state.apply_action(1)  # accepted
    params = {"fraction": 1.0} if bot == "idiom_limited" else {}
    player = make_bot(bot, game, 1, np.random.default_rng(0), params)
    decision = asyncio.run(player.act(observe(state, 1, (), 1)))
    assert decision.action is not None and dictionary()[decision.action].first_char == "进"
    assert state.why_invalid(decision.action) is None
