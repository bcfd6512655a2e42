"""Scripted Idiom Solitaire players, the start-idiom sample, and the offline tournament that ranks them."""

from __future__ import annotations

import asyncio
import time
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest

from deepeval_games import (
    Observation,
    SpecError,
    load_game,
    load_spec,
    make_bot,
    observe,
    play_match,
    run_experiment,
)
from deepeval_games.core.records import MatchRecord
from game_defs.idiom_solitaire.dictionary import IdiomDictionary, load_idioms
from game_defs.idiom_solitaire.dictionary_versions import load_dictionary
from game_defs.idiom_solitaire.starts import playable_start_ids, sample_start_idioms, sweep_toml_line
from llm_bots.idiom_solitaire.adapter import IdiomSolitaireAdapter, parse_idiom
from llm_bots.idiom_solitaire.scripted import known_vocabulary, opponent_replies, valid_replies
from llm_bots.llm_bot import make_llm_bot
from tests.fake_openai_server import Behaviour, FakeOpenAIServer

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "idiom_scripted.toml"


@pytest.fixture(scope="module")
def d() -> IdiomDictionary:
    """The dictionary the game uses by default: the Xinhua list (same ids) with CC-CEDICT's idioms after it."""
    return load_dictionary()


def _decide(bot_name: str, game_string: str, moves: tuple[str, ...] = (), seed: int = 0, **params: object) -> int:
    game = load_game(game_string)
    state = game.new_initial_state()
    for text in moves:
        state.apply_action(load_idioms().id_of(text))
    bot = make_bot(bot_name, game, state.current_player(), np.random.default_rng(seed), params)
    return int(asyncio.run(bot.act(observe(state, state.current_player()))).action)


# --- helpers -----------------------------------------------------------------------------------------------


def test_valid_replies_exclude_used_and_follow_the_rule(d: IdiomDictionary) -> None:
    chain = [d.id_of("一手遮天"), d.id_of("天外有天")]
    replies = valid_replies(chain, "exact", d)
    assert replies and d.id_of("天外有天") not in replies
    assert all(d[i].first_char == "天" for i in replies)
    assert set(valid_replies(chain, "homophone", d)) > set(replies)


def test_opponent_replies_matches_brute_force(d: IdiomDictionary) -> None:
    used = [d.id_of("一手遮天"), d.id_of("天外有天")]
    for candidate in valid_replies(used, "exact", d)[:40]:
        brute = len(valid_replies([*used, candidate], "exact", d))
        assert opponent_replies(candidate, used, "exact", d) == brute


def test_known_vocabulary_is_seeded(d: IdiomDictionary) -> None:
    vocab = known_vocabulary(0.2, 0)
    assert len(vocab) == round(0.2 * len(load_idioms())) and vocab == known_vocabulary(0.2, 0)
    assert len(known_vocabulary(0.2, 0, len(d))) == round(0.2 * len(d))
    assert vocab != known_vocabulary(0.2, 1)


# --- the three players ------------------------------------------------------------------------------------


def test_bots_are_registered_and_validate_params() -> None:
    game = load_game("deepeval_idiom_solitaire")
    for name in ("idiom_dictionary", "idiom_strategic", "idiom_limited"):
        assert make_bot(name, game, 0, np.random.default_rng(0)).identity()["kind"] == "scripted"
    with pytest.raises(SpecError):
        make_bot("idiom_limited", game, 0, np.random.default_rng(0), {"fraction": 1.5})
    with pytest.raises(SpecError):
        make_bot("idiom_strategic", load_game("deepeval_public_goods"), 0, np.random.default_rng(0))


@pytest.mark.parametrize("name", ["idiom_dictionary", "idiom_strategic", "idiom_limited"])
def test_bots_play_valid_replies(d: IdiomDictionary, name: str) -> None:
    for seed in range(5):
        action = _decide(name, "deepeval_idiom_solitaire(start=一马当先)", ("先声夺人",), seed=seed)
        if action != len(d):  # the limited player may not know a reply
            assert d[action].first_char == "人"


@pytest.mark.parametrize("name", ["idiom_dictionary", "idiom_strategic", "idiom_limited"])
def test_without_a_reply_the_bot_gives_the_invalid_reply(d: IdiomDictionary, name: str) -> None:
    dead_end = next(i.text for i in d if not d.successors(i.id))
    assert _decide(name, f"deepeval_idiom_solitaire(start={dead_end})") == len(d)


def test_strategic_player_takes_a_dead_end(d: IdiomDictionary) -> None:
    start = "一马当先"
    options = valid_replies([d.id_of(start)], "exact", d)
    assert any(opponent_replies(o, [d.id_of(start)], "exact", d) == 0 for o in options)
    for seed in range(5):
        action = _decide("idiom_strategic", f"deepeval_idiom_solitaire(start={start})", seed=seed)
        assert opponent_replies(action, [d.id_of(start)], "exact", d) == 0


def test_strategic_player_minimises_replies(d: IdiomDictionary) -> None:
    used = [d.id_of("一马当先"), d.id_of("先声夺人")]
    options = valid_replies(used, "exact", d)
    fewest = min(opponent_replies(o, used, "exact", d) for o in options)
    action = _decide("idiom_strategic", "deepeval_idiom_solitaire(start=一马当先)", ("先声夺人",))
    assert opponent_replies(action, used, "exact", d) == fewest


def test_limited_player_only_uses_its_vocabulary(d: IdiomDictionary) -> None:
    vocab = known_vocabulary(0.5, 3, len(d))
    for seed in range(10):
        action = _decide(
            "idiom_limited",
            "deepeval_idiom_solitaire(start=一马当先)",
            ("先声夺人",),
            seed,
            fraction=0.5,
            vocabulary_seed=3,
        )
        assert action == len(d) or action in vocab


# --- start idioms -----------------------------------------------------------------------------------------


def test_start_sample_is_seeded_and_playable(d: IdiomDictionary) -> None:
    starts = sample_start_idioms(30, seed=0)
    assert starts == sample_start_idioms(30, seed=0) != sample_start_idioms(30, seed=1)
    assert len(set(starts)) == 30
    for text in starts:
        idiom_id = d.id_of(text)
        assert any(s != idiom_id for s in d.successors(idiom_id))
    assert d.id_of("天外有天") in playable_start_ids()
    with pytest.raises(ValueError):
        sample_start_idioms(0)


def test_example_spec_sweeps_the_seeded_sample() -> None:
    spec = load_spec(EXAMPLE)
    assert list(spec.sweep["start"]) == sample_start_idioms(30, seed=0)
    assert sweep_toml_line(spec.sweep["start"]) in EXAMPLE.read_text(encoding="utf-8")


# --- the tournament ------------------------------------------------------------------------------------------


def _pair_wins(records: list[MatchRecord]) -> dict[tuple[str, str], int]:
    wins: dict[tuple[str, str], int] = defaultdict(int)
    for r in records:
        for seat, other in ((0, 1), (1, 0)):
            if r.returns[seat] > 0:
                wins[(r.seats[seat], r.seats[other])] += 1
    return wins


def test_example_tournament_ranks_strategic_over_dictionary_over_limited(tmp_path: Path) -> None:
    spec = load_spec(EXAMPLE)
    started = time.perf_counter()
    result = run_experiment(spec, tmp_path / "run")
    elapsed = time.perf_counter() - started
    assert not result.failed and result.planned == len(result.records) == 30 * 6
    assert elapsed < 30, f"the offline tournament took {elapsed:.1f} s"
    wins = _pair_wins(result.records)
    # head to head, over all 30 starts in both orders (60 matches a pair)
    assert wins[("strategic", "dictionary")] > wins[("dictionary", "strategic")]
    assert wins[("dictionary", "limited-20%")] > wins[("limited-20%", "dictionary")]
    assert wins[("strategic", "limited-20%")] > wins[("limited-20%", "strategic")]
    total = defaultdict(float)
    for r in result.records:
        for name, payoff in zip(r.seats, r.returns, strict=True):
            total[name] += payoff
    assert total["strategic"] > total["dictionary"] > total["limited-20%"]
    assert all(r.roles == ["early", "late"] for r in result.records)


# --- the LLM adapter (prompts and reply parsing) ---------------------------------------------------------


def _observation(game_string: str, moves: tuple[str, ...] = ()) -> Observation:
    state = load_game(game_string).new_initial_state()
    for text in moves:
        state.apply_action(load_idioms().id_of(text))
    return observe(state, state.current_player())


def test_the_rules_and_the_chain_are_the_games_and_the_prompt_only_says_how_to_answer() -> None:
    adapter = IdiomSolitaireAdapter()
    assert adapter.prompt_version == "idiom_solitaire-3"
    game = load_game("deepeval_idiom_solitaire(start=一马当先,max_turns=9)")
    rules = game.rules_text()
    assert "成语接龙" in rules and "一马当先" in rules and "9 idioms" in rules and "pronounced" not in rules
    paper = _observation("deepeval_idiom_solitaire(start=一马当先,max_turns=9)", ("先声夺人",))
    assert "一马当先 → 先声夺人" in paper.text and "人" not in paper.text.splitlines()[-1]  # the chain only
    assert "人" not in adapter.format_text(paper) and "continues the chain" in adapter.format_text(paper)
    assert "人" not in adapter.reask_text(paper, "no idiom.")
    obs = _observation("deepeval_idiom_solitaire(start=一马当先,max_turns=9,hint=true)", ("先声夺人",))
    assert "一马当先 → 先声夺人" in obs.text and "start with 人" in obs.text  # the referee delivers the chain
    answer = adapter.format_text(obs)
    assert "start with 人" in answer and "idiom only" in answer
    assert "成语接龙" not in answer and "一马当先" not in answer  # no rules, no chain: they are pool messages
    homophone = _observation("deepeval_idiom_solitaire(start=一马当先,match=homophone,hint=true)")
    assert "pronounced the same way" in load_game("deepeval_idiom_solitaire(match=homophone)").rules_text()
    assert "read 'xian'" in homophone.text
    assert 'pronounced "xian"' in adapter.format_text(homophone)
    reask = adapter.reask_text(homophone, "no idiom.")
    assert "could not be used: no idiom." in reask and "start with 先" in reask


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ("先声夺人", "先声夺人"),
        ("先聲奪人", "先声夺人"),
        ("好的，我的回答是：「先声夺人」。", "先声夺人"),
        ("天外有天", "天外有天"),  # a dictionary idiom that does not connect: a move (it loses)
        ("我不知道", None),  # four Chinese characters, not an idiom: the losing "not an idiom" move
    ],
)
def test_adapter_reads_replies_as_moves(d: IdiomDictionary, reply: str, expected: str | None) -> None:
    obs = _observation("deepeval_idiom_solitaire(start=一马当先)")
    parsed = IdiomSolitaireAdapter().parse(reply, obs)
    assert parsed.ok and parsed.text == reply
    assert parsed.action == (d.id_of(expected) if expected else len(d))


@pytest.mark.parametrize("reply", ["", "I give up", "先声夺", "Sure! Here is my answer."])
def test_adapter_reasks_replies_without_a_candidate(reply: str) -> None:
    parsed = parse_idiom(reply, 99)
    assert not parsed.ok and "four-character" in (parsed.error or "")


def test_llm_match_records_invalid_replies(fake_provider_key: str) -> None:
    game = load_game("deepeval_idiom_solitaire(start=一马当先)")
    with FakeOpenAIServer(default=Behaviour.reply("I have no idea."), max_hang_s=5) as server:
        server.script(Behaviour.reply("我的回答：先声夺人"))
        params = {"api_base": server.api_base, "api_key_env": fake_provider_key, "max_retries": 0}
        bots = [
            make_llm_bot("openai/fake-model", params, game, 0, np.random.default_rng(0)),
            make_bot("idiom_dictionary", game, 1, np.random.default_rng(1)),
        ]
        record = asyncio.run(play_match(game, bots, seed=0, seat_names=["llm", "dictionary"]))
    first, _, last = record.turns
    assert first.action_string == "先声夺人" and first.text == "我的回答：先声夺人" and first.outcome == "ok"
    assert last.outcome == "invalid" and last.action_string == "<not an idiom>"
    assert last.raw_replies == ["I have no idea."] * 3 and last.text == "I have no idea."
    assert record.metrics["break_reason"] == "not_an_idiom" and record.metrics["hits"] == [1, 1]
    assert record.returns == [-1.0, 1.0] and record.players[0]["prompt_version"] == "idiom_solitaire-3"
