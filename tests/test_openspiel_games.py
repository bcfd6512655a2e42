"""Any OpenSpiel game played by an LLM with no task code: the generic adapter, the playability probe, the
random-legal-move penalty and its count in the report (against the fake OpenAI endpoint, no network)."""

from __future__ import annotations

import asyncio
import itertools
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pyspiel
import pytest

import game_defs.openspiel_games  # noqa: F401  (rules cards, OpenSpiel's Python games)
from analysis.tables.outcomes import format_turn_outcomes, turn_outcomes
from deepeval_games.app.commands.cli import main
from deepeval_games.app.storage.store import Store
from deepeval_games.core import binding, task
from deepeval_games.core.bot import Decision, DeepEvalBot, Observation
from deepeval_games.core.errors import SpecError
from deepeval_games.core.records import MatchRecord, TurnRecord
from deepeval_games.core.referee import play_match
from deepeval_games.core.registry.games import load_game
from llm_bots.adapters import GenericAdapter, adapter_for
from llm_bots.local.server import local_model_available
from tests import broken_games
from tests.fake_openai_server import Behaviour, FakeOpenAIServer, first_legal_move

UNSURE = "I am not sure"


def _reply(body: dict[str, Any]) -> str:
    """The fake models: ``unsure`` never names a move, every other model names the first legal one."""
    return UNSURE if body.get("model") == "unsure" else first_legal_move(body)


@pytest.fixture(scope="module")
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer(default=Behaviour.responder(_reply)) as fake:
        yield fake


def _spec(tmp_path: Path, server: FakeOpenAIServer, games: list[str], models: list[str], **experiment: Any) -> str:
    table = {"name": "openspiel", "games": games, "cache": False, "max_concurrency": 1, **experiment}
    lines = ["[experiment]", *(f"{k} = {json.dumps(v)}" for k, v in table.items())]
    for model in models:
        lines += [
            "[[players]]",
            f'name = "{model}"',
            f'model = "openai/{model}"',
            f'api_base = "{server.api_base}"',
            'api_key_env = "FAKE_PROVIDER_KEY"',
            "max_reasks = 1",
        ]
    path = tmp_path / "spec.toml"
    path.write_text("\n".join(lines) + "\n")
    return str(path)


def _records(run_dir: Path) -> list[MatchRecord]:
    with Store(run_dir) as store:
        return sorted(store.records(), key=lambda r: r.match_id)


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(argv)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


# -- 1a. OpenSpiel's own games, through `deepeval-games run`, every LLM turn ok ------------------------------


def test_tic_tac_toe_and_kuhn_poker_run_through_the_cli_with_no_task_code(
    tmp_path: Path, server: FakeOpenAIServer, fake_provider_key: str, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = _spec(tmp_path, server, ["tic_tac_toe", "kuhn_poker"], ["good", "also-good"], repeats=1)
    code, out, err = _run(["run", spec, "--out", str(tmp_path / "run"), "--no-progress"], capsys)
    assert code == 0, err
    assert "tic_tac_toe()" in out and "kuhn_poker()" in out and "Eq. 1" in out
    assert "Turn outcomes" not in out  # every turn ok: nothing to report
    records = _records(tmp_path / "run")
    assert {r.game for r in records} == {"tic_tac_toe()", "kuhn_poker()"} and len(records) == 4
    assert {(r.game, tuple(r.seats)) for r in records} == {  # the default pairing: both seatings
        (game, seats)
        for game in ("tic_tac_toe()", "kuhn_poker()")
        for seats in (("good", "also-good"), ("also-good", "good"))
    }
    for record in records:
        game = load_game(record.game)
        card = task.rules_card(game.get_type().short_name)
        moves = [t for t in record.turns if t.seat >= 0]
        assert moves and all(t.outcome == "ok" and t.retries == 0 and not t.error for t in moves)
        state = game.new_initial_state()
        for turn in record.turns:
            if turn.seat >= 0:
                assert turn.action == state.legal_actions(turn.seat)[0]  # what the fake model named
                assert json.loads(turn.raw_replies[0]) == {"move": turn.action_string}
                first = turn.prompts[0]
                assert card in first[0]["content"]  # the rules card, broadcast through the pool
                assert binding.observation_text(state, turn.seat) in first[-1]["content"]
                assert "Your legal moves now:" in first[-1]["content"]
            state.apply_action(turn.action)
        assert state.is_terminal() and list(state.returns()) == record.returns
    kuhn = next(r for r in records if r.game == "kuhn_poker()")
    assert [t.seat for t in kuhn.turns[:2]] == [-1, -1]  # the deal: chance outcomes from the match seed
    assert all(r.players[0]["prompt_version"] == "generic-3" for r in records)


# -- 1c. a model that never answers validly: invalid turns, seeded random legal moves, counted in the report -


def _unsure_moves(record: MatchRecord) -> list[tuple[int, bool]]:
    """The unsure seat's moves, each with whether it was the first legal move of its state."""
    seat = record.seats.index("unsure")
    state = load_game(record.game).new_initial_state()
    moves = []
    for turn in record.turns:
        if turn.seat == seat:
            moves.append((turn.action, turn.action == state.legal_actions(seat)[0]))
        state.apply_action(turn.action)
    return moves


def test_a_model_that_never_answers_plays_seeded_random_legal_moves(
    tmp_path: Path, server: FakeOpenAIServer, fake_provider_key: str, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = _spec(tmp_path, server, ["tic_tac_toe"], ["good", "unsure"], repeats=2, seed=7)
    code, out, err = _run(["run", spec, "--out", str(tmp_path / "a"), "--no-progress"], capsys)
    assert code == 0, err
    records = _records(tmp_path / "a")
    assert len(records) == 4  # two repeats, both seatings
    unsure_turns = 0
    for record in records:
        seat = record.seats.index("unsure")
        for turn in (t for t in record.turns if t.seat == seat):
            unsure_turns += 1
            assert turn.outcome == "invalid" and turn.retries == 1
            assert turn.raw_replies == [UNSURE, UNSURE] and len(turn.prompts) == 2
            assert "could not be used" in turn.prompts[1][-1]["content"]  # the re-ask, with its reason
            assert f"a random legal move ({turn.action_string}) was played" in turn.error
        assert all(t.outcome == "ok" for t in record.turns if t.seat == 1 - seat)
    moves = [m for r in records for m in _unsure_moves(r)]
    assert not all(first for _, first in moves)  # random, not the first legal move
    # the report counts the invalid turns, after `run` and after `report`
    assert "Turn outcomes:" in out and f"invalid {unsure_turns} (of {unsure_turns})" in out
    code, report, _ = _run(["report", str(tmp_path / "a")], capsys)
    assert code == 0 and f"invalid {unsure_turns} (of {unsure_turns})" in report
    assert "good" in report.split("Turn outcomes:")[1] and "ok " in report.split("Turn outcomes:")[1]
    # the same spec into a fresh directory: the same random moves
    code, _, err = _run(["run", spec, "--out", str(tmp_path / "b"), "--no-progress"], capsys)
    assert code == 0, err
    again = _records(tmp_path / "b")
    assert [r.match_id for r in again] == [r.match_id for r in records]
    assert [[t.action for t in r.turns] for r in again] == [[t.action for t in r.turns] for r in records]


# -- 2. playability is probed, not read from flags ---------------------------------------------------------


class _FirstMove(DeepEvalBot):
    """Plays the first legal move and keeps every observation it was shown."""

    def __init__(self, player_id: int) -> None:
        super().__init__(player_id, np.random.default_rng(0))
        self.seen: list[Observation] = []

    async def act(self, observation: Observation) -> Decision:
        self.seen.append(observation)
        return Decision(action=observation.legal_actions[0])


@pytest.mark.parametrize(
    ("game_string", "kind", "flags"),
    [
        ("liars_dice", "information_state", (False, True)),
        ("python_iterated_prisoners_dilemma(max_game_length=4)", "observation", (False, False)),
        ("kuhn_poker", "observation", (True, True)),
    ],
)
def test_the_probe_picks_the_string_the_game_really_provides(
    game_string: str, kind: str, flags: tuple[bool, bool]
) -> None:
    game = load_game(game_string)
    game_type = game.get_type()
    assert (game_type.provides_observation_string, game_type.provides_information_state_string) == flags
    playable = binding.playability(game)
    assert playable.ok and playable.observation == kind and playable.reason == ""
    assert isinstance(adapter_for(game), GenericAdapter)
    bots = [_FirstMove(seat) for seat in range(game.num_players())]
    record = asyncio.run(play_match(game, bots, seed=3))
    # replay the match: each seat was shown, at each of its turns, the string the probe chose
    method = "observation_string" if kind == "observation" else "information_state_string"
    state = game.new_initial_state()
    shown: dict[int, list[str]] = {seat: [] for seat in range(game.num_players())}
    for _, group in itertools.groupby(record.turns, key=lambda t: t.round):
        turns = list(group)
        for turn in turns:
            if turn.seat >= 0:
                shown[turn.seat].append(getattr(state, method)(turn.seat))
        if state.is_simultaneous_node():
            state.apply_actions([t.action for t in sorted(turns, key=lambda t: t.seat)])
        else:
            (turn,) = turns
            state.apply_action(turn.action)
    assert state.is_terminal() and list(state.returns()) == record.returns
    for bot in bots:
        texts = [o.text for o in bot.seen]
        assert texts and all(texts) and texts == shown[bot.player_id]
        delivered = [
            m["text"] for m in record.messages if m["kind"] == "observation" and bot.player_id in m["recipients"]
        ]
        assert set(texts) <= set(delivered)


class _BlindObserver:
    """An observer whose strings fail, as a game's that provides none."""

    def __init__(self, iig_obs_type: Any = None, params: Any = None) -> None:
        self.tensor = np.zeros(0)
        self.dict: dict[str, Any] = {}

    def set_from(self, state: pyspiel.State, player: int) -> None:
        return None

    def string_from(self, state: pyspiel.State, player: int) -> str:
        raise ValueError("this game shows its seats nothing")


class BlindGame(broken_games.CountingGame):
    """The counting game, but neither its observation nor its information state can be turned into a string."""

    game_type = broken_games.renamed_type(broken_games._SEQ_TYPE, "testkit_blind")

    def make_py_observer(self, iig_obs_type: Any = None, params: Any = None) -> _BlindObserver:
        return _BlindObserver(iig_obs_type, params)


class _SameNameState(broken_games.CountingState):
    def _action_to_string(self, player: int, action: int) -> str:
        return "say something"


class SameNameGame(broken_games.CountingGame):
    """The counting game whose two moves have one name: a text player could never choose the second."""

    game_type = broken_games.renamed_type(broken_games._SEQ_TYPE, "testkit_same_name")

    def new_initial_state(self) -> _SameNameState:
        return _SameNameState(self)


pyspiel.register_game(BlindGame.game_type, BlindGame)
pyspiel.register_game(SameNameGame.game_type, SameNameGame)


def test_probe_refuses_a_game_without_strings_or_move_names() -> None:
    blind = binding.playability(load_game("testkit_blind"))
    assert not blind.ok and blind.observation is None and blind.action_names
    assert "neither an observation string nor an information-state string" in blind.reason
    unnamed = binding.playability(load_game("testkit_counting(empty_strings=true)"))
    assert not unnamed.ok and unnamed.observation == "observation" and not unnamed.action_names
    assert "a name (action_to_string) for every legal move" in unnamed.reason
    same = binding.playability(load_game("testkit_same_name"))
    assert not same.ok and "a distinct name for every legal move" in same.reason and "'say something'" in same.reason
    assert binding.playability(load_game("testkit_counting")).ok
    with pytest.raises(SpecError, match="an LLM cannot play testkit_blind"):
        adapter_for(load_game("testkit_blind"))


@pytest.mark.parametrize(
    ("game_string", "missing"),
    [
        ("testkit_blind", "neither an observation string nor an information-state string"),
        ("testkit_counting(empty_strings=true)", "a name (action_to_string) for every legal move"),
        ("testkit_same_name", "a distinct name for every legal move"),
    ],
)
def test_an_unplayable_game_is_refused_at_spec_time(
    game_string: str,
    missing: str,
    tmp_path: Path,
    server: FakeOpenAIServer,
    fake_provider_key: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    before = server.request_count
    spec = _spec(tmp_path, server, [game_string], ["good", "also-good"])
    code, _, err = _run(["run", spec, "--out", str(tmp_path / "run"), "--no-progress"], capsys)
    assert code == 2
    short = game_string.split("(")[0]
    assert "an LLM cannot play" in err and f"{short} provides {missing}" in err
    assert server.request_count == before  # refused before any match: no model was asked
    if (tmp_path / "run" / "results.sqlite").exists():
        assert _records(tmp_path / "run") == []


# -- 1b and 4. the real local model (llama.cpp, SmolLM2), offline: the JSON schema keeps it to legal names ----

_LOCAL_REASON = local_model_available("local/smollm2")


@pytest.mark.local_model
@pytest.mark.skipif(_LOCAL_REASON is not None, reason=_LOCAL_REASON or "")
def test_the_local_model_plays_openspiel_games_from_the_example(
    repo_root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    example = repo_root / "examples" / "openspiel_local_model.toml"
    code, out, err = _run(["run", str(example), "--out", str(tmp_path / "run"), "--no-progress"], capsys)
    assert code == 0, err
    assert "tic_tac_toe()" in out and "kuhn_poker()" in out
    records = _records(tmp_path / "run")
    assert {r.game for r in records} == {"tic_tac_toe()", "kuhn_poker()"}
    for record in records:
        assert {p["model"] for p in record.players} == {"local/smollm2"}
        state = load_game(record.game).new_initial_state()
        for turn in record.turns:
            if turn.seat >= 0:
                names = [state.action_to_string(turn.seat, a) for a in state.legal_actions(turn.seat)]
                # every outcome is on record, with what was sent and what came back
                assert turn.prompts and turn.raw_replies and len(turn.prompts) == len(turn.raw_replies)
                assert "Your legal moves now:" in turn.prompts[0][-1]["content"]
                assert turn.tokens_in > 0 and turn.model
                # llama.cpp enforces the schema: every reply is {"move": <a legal name>}, so no turn is invalid
                assert turn.outcome in ("ok", "reasked"), (turn.outcome, turn.raw_replies, turn.error)
                assert json.loads(turn.raw_replies[-1])["move"] in names
                assert turn.action_string in names
            state.apply_action(turn.action)
        assert state.is_terminal() and list(state.returns()) == record.returns
    from llm_bots.local import server as local_server

    assert not local_server._SHARED and not any(s.running for s in local_server._LIVE)  # stopped with the run


def test_turn_outcomes_count_the_players_turns_only() -> None:
    def turn(seat: int, outcome: str) -> TurnRecord:
        return TurnRecord(index=0, round=1, seat=seat, action=0, action_string="a", outcome=outcome)

    turns = [turn(-1, "ok"), turn(0, "ok"), turn(1, "invalid"), turn(0, "reasked"), turn(1, "ok"), turn(-2, "ok")]
    records = [
        MatchRecord(
            match_id=str(i),
            game="g",
            seats=seats,
            returns=[0.0, 0.0],
            turns=turns,
        )
        for i, seats in enumerate([["a", "bb"], ["bb", "a"]])
    ]
    outcomes = turn_outcomes(records)
    assert list(outcomes) == ["a", "bb"]
    assert dict(outcomes["a"].counts) == {"ok": 2, "reasked": 1, "invalid": 1}
    assert outcomes["a"].describe() == "ok 2, reasked 1, invalid 1 (of 4)" and outcomes["a"].valid == 3
    assert not outcomes["bb"].all_ok
    assert format_turn_outcomes(outcomes).splitlines() == [
        "Turn outcomes:",
        "  a   ok 2, reasked 1, invalid 1 (of 4)",
        "  bb  ok 2, reasked 1, invalid 1 (of 4)",
        "(reasked: a valid move after the model was asked again; invalid, refusal, truncated, context_overflow: no "
        "valid move after the re-asks, so the game's penalty move, or a random legal move where the game has none, "
        "was played in its place, and the match's result counts as the player's own)",
    ]
    assert "a random legal move was played in its place" in format_turn_outcomes(outcomes, penalty=False)
