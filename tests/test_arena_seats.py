"""TextArena's environments of one, three and four seats (issue 44): played through ``deepeval-games run`` by
``random`` seats and by a model on the fake endpoint, and replayed from their records."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("textarena")

import game_defs.arena.textarena  # noqa: F401  (the entry point's module: registers the family)
from deepeval_games.app.commands.cli import main
from deepeval_games.core.errors import UnknownGameError
from deepeval_games.core.registry.games import load_game
from tests.arena_play import bracketed_move, records, replayed, write_spec
from tests.fake_openai_server import Behaviour, FakeOpenAIServer, model_player

SEATS = [
    ("textarena:FrozenLake-v0", 1),
    ("textarena:ThreePlayerTicTacToe-v0", 3),
    ("textarena:Surround-v0(players=4)", 4),
]
"""A single-player puzzle, a three-seat game and a four-seat one, each naming its moves (so ``random`` plays it)."""


def _run(tmp_path: Path, game: str, players: list[dict[str, object]]) -> list[object]:
    spec = write_spec(tmp_path / "spec.toml", {"name": "arena-seats", "game": game, "repeats": 1, "seed": 3}, players)
    assert main(["run", str(spec), "--out", str(tmp_path / "run"), "--no-progress"]) == 0
    return list(records(tmp_path / "run"))


@pytest.mark.parametrize(("game", "seats"), SEATS)
def test_random_seats_play_every_seat_count_through_run_and_the_records_replay(
    tmp_path: Path, game: str, seats: int
) -> None:
    played = _run(tmp_path, game, [{"name": f"random-{i}", "bot": "random"} for i in range(seats)])
    assert played
    for record in played:
        assert record.status == "complete" and len(record.returns) == seats == len(record.seats)
        state = replayed(record)
        assert state.is_terminal() and list(state.returns()) == list(record.returns)


@pytest.mark.parametrize(("game", "seats"), SEATS)
def test_a_model_on_the_fake_endpoint_takes_a_seat_beside_random_ones(
    tmp_path: Path, fake_provider_key: str, game: str, seats: int
) -> None:
    with FakeOpenAIServer(default=Behaviour.responder(bracketed_move), max_hang_s=5) as server:
        players = [model_player("fake-model", server)]
        players += [{"name": f"random-{i}", "bot": "random"} for i in range(seats - 1)]
        played = _run(tmp_path, game, players)
        assert server.request_count > 0
    assert played and all(r.status == "complete" and len(r.returns) == seats for r in played)
    seated = [r for r in played if "fake-model" in r.seats]
    assert seated and all(list(replayed(r).returns()) == list(r.returns) for r in seated)


def test_a_player_count_the_environment_does_not_take_is_refused_with_the_counts_it_takes() -> None:
    assert load_game("textarena:Taboo-v0").num_players() == 4
    assert load_game("textarena:Taboo-v0(players=6)").num_players() == 6
    with pytest.raises(UnknownGameError, match=r"plays with 4, 6, 8 players, not 5"):
        load_game("textarena:Taboo-v0(players=5)")


def test_the_default_count_stays_out_of_the_game_string() -> None:
    assert str(load_game("textarena:Poker-v0")) == "textarena:Poker-v0(seeds=1024)"
    assert str(load_game("textarena:Poker-v0(players=2)")) == "textarena:Poker-v0(seeds=1024)"
    four = load_game("textarena:Poker-v0(players=4)")
    assert four.num_players() == 4 and "players=4" in str(four)
    assert "with 3 other players" in four.rules_text()
    assert "on your own" in load_game("textarena:FrozenLake-v0").rules_text()
