"""Presets: ``preset = "paper"`` renders each task's prompts as the paper words them; a preset that changes the rules
changes the game strings (issue 12, items 1 and 3)."""

from __future__ import annotations

import functools
import re
from pathlib import Path
from typing import Any

import pytest

from deepeval_games import SpecError, load_game, parse_spec
from deepeval_games.app.spec.presets import apply_preset, preset_parameters
from deepeval_games.app.spec.schedule import plan_matches
from deepeval_games.core.bot import observe
from game_defs.idiom_solitaire.dictionary import IdiomDictionary
from llm_bots.adapters import adapter_for

ROOT = Path(__file__).resolve().parents[1]
PGG = "deepeval_public_goods(players=2,rounds=1)"
IDIOM = "deepeval_idiom_solitaire(start=一马当先,max_turns=4)"
MT = "deepeval_translation(pair=en-fr,paragraph=2455-p2,words=40)"
CR = "deepeval_code_review(task_id=11,max_rounds=3)"


def _spec(preset: str | None, games: list[str], bots: tuple[str, str], **experiment: Any) -> Any:
    table: dict[str, Any] = {"games": games, **experiment}
    if preset is not None:
        table["preset"] = preset
    return parse_spec({"experiment": table, "players": [{"name": "a", "bot": bots[0]}, {"name": "b", "bot": bots[1]}]})


def _first_turn(game_string: str, d: IdiomDictionary | None = None, move: str | None = None) -> tuple[str, str, str]:
    """(rules text, the seat's observation, the LLM's answer format) at the first turn (after ``move``)."""
    game = load_game(game_string)
    state = game.new_initial_state()
    if move is not None and d is not None:
        state.apply_action(d.id_of(move))
    seat = state.current_player() if state.current_player() >= 0 else 0
    observation = observe(state, seat)
    return game.rules_text(), observation.text, adapter_for(game).format_text(observation)


def test_the_paper_preset_renders_the_papers_prompts(d: IdiomDictionary) -> None:
    paper = _spec("paper", [PGG, IDIOM, MT], ("pgg_free_rider", "pgg_free_rider"))
    pgg, idiom, mt = paper.games
    assert mt == MT.replace(")", ",rubric=paper)")  # the paper's judge criteria: a game string of its own
    # Public Goods: the competitive goal (end with the most coins), not the absolute one
    rules, _, _ = _first_turn(pgg)
    assert "more coins than any other participant" in rules and "as many coins as possible" not in rules
    # Idiom Solitaire: the chain only, no required-character hint, neither in the observation nor the format
    _, seen, answer = _first_turn(idiom, d, "先声夺人")
    assert "一马当先 → 先声夺人" in seen
    assert "人" not in seen.splitlines()[-1] and "人" not in answer and "start with" not in answer + seen
    # Machine Translation: the judge's two criteria (faithful translation; a more accurate proofread text)
    state = load_game(mt).new_initial_state()
    for text in ("Bonjour.", "Bonjour !"):
        state.apply_action(state.intern_utterance(state.current_player(), text))
    brief = state.judge_text()
    criteria = re.findall(r"^\d\. .*$", brief, re.MULTILINE)
    assert len(criteria) == 2 and "faithful to the meaning" in criteria[0] and "more accurate" in criteria[1]
    assert "complete" not in brief and "fluent" not in brief  # the project's rubric adds those (rubric=extended)

    # Code Review: no "over" offered in the first review (only in the follow-up), the paper's three criteria
    cr_paper = _spec("paper", [CR], ("pgg_free_rider", "pgg_free_rider")).games[0]
    rules, state, adapter = _code_review_first_review(cr_paper)
    first_review = adapter.format_text(observe(state, 1)) + state.observation_string(1)
    assert not re.search(r"\bover\b", rules + first_review)
    _say(state, "over")  # a first review of "over" is an ordinary review: the programmer revises
    assert not state.is_chance_node() and state.current_player() == 0
    _say(state, "def remove_Occ(s, c): return s")
    assert re.search(r"\bover\b", adapter.format_text(observe(state, 1)))  # the follow-up offers it
    _say(state, "over")
    assert state.ended_by() == "consensus"
    brief = state.judge_text()
    criteria = re.findall(r"^\d\. .*$", brief, re.MULTILINE)
    assert len(criteria) == 3 and "pass its tests" not in brief and "Its tests:" not in brief
    assert "meet what the problem asks" in criteria[0] and "suggestions" in criteria[1] and "feedback" in criteria[2]

    project = _spec("project", [PGG, IDIOM, CR], ("pgg_free_rider", "pgg_free_rider"))
    rules, _, _ = _first_turn(project.games[0])
    assert "as many coins as possible" in rules and "more coins than any" not in rules
    _, seen, answer = _first_turn(project.games[1], d, "先声夺人")
    assert "start with 人" in seen and "start with 人" in answer
    rules, state, adapter = _code_review_first_review(project.games[2])
    assert "single word over" in rules and "single word over" in adapter.format_text(observe(state, 1))
    _say(state, "over")
    assert state.ended_by() == "consensus" and "Its tests:" in state.judge_text()
    # Machine Translation: the project preset keeps the first rubric, its game strings and its match ids
    bots = ("mt_reference_translator", "mt_identity_proofreader")
    plans = {preset: plan_matches(_spec(preset, [MT], bots)) for preset in (None, "project", "paper")}
    assert [(m.game, m.match_id) for m in plans["project"]] == [(m.game, m.match_id) for m in plans[None]]
    assert "rubric" not in plans[None][0].game and "rubric=paper" in plans["paper"][0].game
    state = load_game(MT).new_initial_state()
    for text in ("Bonjour.", "Bonjour !"):
        state.apply_action(state.intern_utterance(state.current_player(), text))
    assert "faithful, complete and fluent French rendering" in state.judge_text()


def _say(state: Any, text: str) -> None:
    state.apply_action(state.intern_utterance(state.current_player(), text))


def _code_review_first_review(game_string: str) -> tuple[str, Any, Any]:
    """(rules text, the state at the first review, the adapter)."""
    game = load_game(game_string)
    state = game.new_initial_state()
    _say(state, "def remove_Occ(s, c): return s")
    return game.rules_text(), state, adapter_for(game)


def test_a_preset_changes_the_game_strings_and_so_the_match_ids() -> None:
    bots = ("pgg_free_rider", "pgg_full_contributor")
    plans = {preset: plan_matches(_spec(preset, [PGG], bots)) for preset in (None, "paper", "project")}
    games = {preset: {m.game for m in plan} for preset, plan in plans.items()}
    # the defaults are the paper's, except the referee's rewriting (unusable=reformat), the free-text answer
    # (answer=free) and the feedback (feedback=paper): options, so earlier game strings keep their match ids
    paper_only = ("answer=free,", "feedback=paper,", ",unusable=reformat")
    assert {functools.reduce(lambda g, p: g.replace(p, ""), paper_only, g) for g in games["paper"]} == games[None]
    assert games[None] != games["project"]
    assert all(all(p in g for p in paper_only) for g in games["paper"])
    assert all("goal=max" in g for g in games["project"]) and all("goal=most" in g for g in games["paper"])
    ids = {preset: {m.match_id for m in plan} for preset, plan in plans.items()}
    assert ids["paper"].isdisjoint(ids["project"])  # never resumed or pooled into each other


def test_a_preset_fills_only_what_the_game_string_and_the_sweep_leave_open() -> None:
    assert preset_parameters("deepeval_idiom_solitaire(hint=true)", "paper") == {}
    assert apply_preset("deepeval_idiom_solitaire", "project") == "deepeval_idiom_solitaire(hint=true)"
    assert apply_preset("tic_tac_toe", "paper") == "tic_tac_toe"  # a game without presets is left as it is
    assert apply_preset(PGG, None) == PGG
    swept = _spec("project", [PGG], ("pgg_free_rider", "pgg_free_rider"), sweep={"goal": ["most"]})
    assert {m.game.count("goal=most") for m in plan_matches(swept)} == {1}  # the sweep wins
    with pytest.raises(SpecError, match="preset"):
        _spec("papper", [PGG], ("pgg_free_rider", "pgg_free_rider"))


def _idiom_spec(preset: str | None, game: str, *, judge: bool) -> Any:
    document: dict[str, Any] = {
        "experiment": {"game": game, **({"preset": preset} if preset else {})},
        "players": [{"name": "a", "bot": "idiom_dictionary"}, {"name": "b", "bot": "idiom_dictionary"}],
    }
    if judge:
        document["judge"] = {"bot": "judge_idiom_list", "params": {"accept": ["与时俱进"]}}
    return parse_spec(document)


def test_the_paper_preset_lets_a_named_judge_rule_on_answers_outside_the_dictionary() -> None:
    assert preset_parameters("deepeval_idiom_solitaire", "paper") == {"hint": False}
    assert preset_parameters("deepeval_idiom_solitaire", "paper", judge=True) == {
        "hint": False,
        "validity": "dictionary+judge",
    }
    assert preset_parameters("deepeval_idiom_solitaire", "project", judge=True) == {"hint": True}
    assert preset_parameters(PGG, "paper", judge=True) == preset_parameters(PGG, "paper")  # no judge entry: as before
    with_judge = _idiom_spec("paper", IDIOM, judge=True).games
    without = _idiom_spec("paper", IDIOM, judge=False).games
    assert ["validity=dictionary+judge" in g for g in with_judge + without] == [True, False]
    assert load_game(with_judge[0]).judged and not load_game(without[0]).judged
    assert "validity" not in _idiom_spec(None, IDIOM, judge=True).games[0]  # no preset: the game string decides
    explicit = _idiom_spec("paper", "deepeval_idiom_solitaire(validity=dictionary)", judge=True).games[0]
    assert "validity=dictionary+judge" not in explicit  # the game string wins over the preset
    plans = [plan_matches(_idiom_spec("paper", IDIOM, judge=j)) for j in (True, False)]
    assert {m.match_id for m in plans[0]}.isdisjoint(m.match_id for m in plans[1])  # never pooled
