"""Classical baselines (``random``, ``mcts``, ``exact``) on OpenSpiel's own games, run through ``deepeval-games run``
with both seatings, and the two-player metrics the report prints for them.

The fast tests play the issue's full numbers where they are cheap (tic_tac_toe: 100 games per pair with MCTS-1000;
kuhn_poker: 2,000 games of the solved policy against random) and a smaller connect_four match; the 100 connect_four
games of MCTS-1000 against random are marked ``slow``.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import pyspiel
import pytest

from analysis.tables.two_player import clopper_pearson, normalized_relative_advantage, two_player_summary
from deepeval_games.app.commands.cli import main
from deepeval_games.app.storage.store import Store
from deepeval_games.core.errors import SpecError
from deepeval_games.core.records import MatchRecord, TurnRecord
from deepeval_games.core.registry.bots import make_bot
from deepeval_games.core.registry.games import load_game
from llm_bots.local.server import local_model_available
from llm_bots.players.classical import (
    ExactBot,
    MCTSPlayer,
    classical_support,
    count_states,
    exact_refusal,
    mcts_refusal,
)


def _spec(tmp_path: Path, game: str, players: dict[str, str], *, repeats: int, seed: int = 0) -> Path:
    """A spec of scripted players (name -> TOML body of the player), every ordered pairing each repeat."""
    lines = [
        "[experiment]",
        'name = "classical"',
        f"game = {game!r}".replace("'", '"'),
        f"repeats = {repeats}",
        f"seed = {seed}",
        'pairing = "round_robin"',
    ]
    for name, body in players.items():
        lines += ["[[players]]", f'name = "{name}"', body]
    path = tmp_path / "spec.toml"
    path.write_text("\n".join(lines) + "\n")
    return path


def _run(tmp_path: Path, spec: Path, capsys: pytest.CaptureFixture[str]) -> tuple[list[MatchRecord], str]:
    code = main(["run", str(spec), "--out", str(tmp_path / "run"), "--no-progress"])
    out, err = capsys.readouterr()
    assert code == 0, err
    with Store(tmp_path / "run", read_only=True) as store:
        return list(store.records()), out


def _pair(records: list[MatchRecord], a: str, b: str) -> list[MatchRecord]:
    return [r for r in records if set(r.seats) == {a, b}]


def _result(record: MatchRecord, player: str) -> int:
    """+1 win, 0 draw, -1 loss for ``player``."""
    mine = record.returns[record.seats.index(player)]
    theirs = record.returns[1 - record.seats.index(player)]
    return int(np.sign(mine - theirs))


MCTS_1000 = 'bot = "mcts"\nparams = { simulations = 1000 }'


# -- must show: MCTS beats random, the exact player never loses (tic_tac_toe, 100 games each, both seatings) ----


def test_tic_tac_toe_mcts_beats_random_and_exact_never_loses(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    players = {"mcts": MCTS_1000, "random": 'bot = "random"', "exact": 'bot = "exact"'}
    records, out = _run(tmp_path, _spec(tmp_path, "tic_tac_toe", players, repeats=50), capsys)
    assert len(records) == 300  # 3 ordered pairs x 2 seatings x 50 repeats
    for a, b in [("mcts", "random"), ("exact", "mcts"), ("exact", "random")]:
        pair = _pair(records, a, b)
        assert len(pair) == 100
        assert sum(r.seats[0] == a for r in pair) == 50  # both seatings, equally often
    mcts_wins = sum(_result(r, "mcts") == 1 for r in _pair(records, "mcts", "random"))
    assert mcts_wins >= 90, mcts_wins
    for opponent in ("mcts", "random"):
        assert all(_result(r, "exact") >= 0 for r in _pair(records, "exact", opponent)), opponent
    assert sum(_result(r, "exact") == 1 for r in _pair(records, "exact", "random")) >= 50
    # the report's two-player block: W/D/L with CIs, NRA, first-mover split, illegal moves, game length
    assert (
        "Wins, draws, losses and advantage per pair" in out
        and "first mover: seat 0 wins" in out
        and "illegal-move rate:" in out
    )
    summary = two_player_summary(records)
    result = next(p for p in summary.pairs if (p.player, p.opponent) == ("mcts", "random"))
    assert result.wins == mcts_wins and result.win_rate.low > 0.8 and result.losses == 0
    decisive = result.wins + result.losses  # GTBench's NRA on +1/-1 payoffs: (W - L) / (W + L), draws left out
    assert result.nra.value == pytest.approx((result.wins - result.losses) / decisive)
    assert set(summary.illegal_rate) == {"mcts", "random", "exact"}
    assert all(rate.value == 0 for rate in summary.illegal_rate.values())
    assert 5 <= summary.mean_length <= 9
    # the minimax player's identity is in the record, with its method
    exact_seat = next(r for r in records if "exact" in r.seats)
    assert {"kind": "classical", "class": "ExactBot", "method": "minimax"}.items() <= exact_seat.players[
        exact_seat.seats.index("exact")
    ].items()


@pytest.mark.parametrize("games", [pytest.param(600, id="600-games"), pytest.param(2000, marks=pytest.mark.slow)])
def test_kuhn_poker_solved_policy_beats_random(games: int, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    players = {"exact": 'bot = "exact"', "random": 'bot = "random"'}
    records, _ = _run(tmp_path, _spec(tmp_path, "kuhn_poker", players, repeats=games // 2), capsys)
    assert len(records) == games and sum(r.seats[0] == "exact" for r in records) == games // 2
    summary = two_player_summary(records)
    (pair,) = summary.pairs
    assert (pair.player, pair.opponent, pair.games) == ("exact", "random", games)
    payoffs = [r.returns[r.seats.index("exact")] for r in records]
    assert pair.mean_payoff.value == pytest.approx(float(np.mean(payoffs))) and pair.mean_payoff.value > 0
    assert pair.mean_payoff.low < pair.mean_payoff.value < pair.mean_payoff.high  # on the chips' range [-2, 2]
    assert pair.nra.value > 0  # GTBench's NRA has the sign of the chips won


@pytest.mark.parametrize(
    ("repeats", "least_wins"),
    [pytest.param(5, 9, id="10-games"), pytest.param(50, 90, id="100-games", marks=pytest.mark.slow)],
)
def test_connect_four_mcts_beats_random(
    repeats: int, least_wins: int, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    players = {"mcts": MCTS_1000, "random": 'bot = "random"'}
    records, _ = _run(tmp_path, _spec(tmp_path, "connect_four", players, repeats=repeats), capsys)
    assert len(records) == 2 * repeats and sum(r.seats[0] == "mcts" for r in records) == repeats
    wins = sum(_result(r, "mcts") == 1 for r in records)
    assert wins >= least_wins, wins


# -- must show: no peeking (kuhn_poker: IS-MCTS's choices do not depend on the opponent's hidden card) -----------


def _deal(game: pyspiel.Game, cards: tuple[int, int], history: tuple[int, ...]) -> pyspiel.State:
    state = game.new_initial_state()
    for action in (*cards, *history):
        state.apply_action(action)
    return state


def _bet_rate(choose: object, game: pyspiel.Game, cards: tuple[int, int], history: tuple[int, ...], n: int) -> float:
    state = _deal(game, cards, history)
    picks = [choose(seed, state.clone()) for seed in range(n)]  # type: ignore[operator]
    return float(np.mean([a == 1 for a in picks]))  # 1: bet / call


def test_mcts_on_kuhn_poker_does_not_peek_at_the_hidden_card() -> None:
    game = load_game("kuhn_poker")
    n = 25

    def ismcts(seed: int, state: pyspiel.State) -> int:
        bot = MCTSPlayer(state.current_player(), np.random.default_rng(seed), game=game, simulations=100)
        assert bot.information_sets
        return bot.step(state)

    # every information state of the betting, for every own card: with the same seed, the same move whichever
    # card the opponent holds (the search only ever sees worlds resampled from the seat's information state)
    for history in [(), (0,), (1,), (0, 1)]:
        for own in range(3):
            others = [c for c in range(3) if c != own]
            mover = len(history) % 2
            moves = []
            for other in others:
                cards = (own, other) if mover == 0 else (other, own)
                state = _deal(game, cards, history)
                assert state.current_player() == mover
                moves.append([ismcts(seed, state.clone()) for seed in range(n)])
            assert moves[0] == moves[1], (history, own)
            assert moves[0] == [ismcts(seed, _deal(game, cards, history)) for seed in range(n)]  # reproducible
    # and it is not a constant: holding the King it bets, holding the Jack facing a bet it folds, mostly
    assert np.mean([ismcts(seed, _deal(game, (1, 2), (0,))) for seed in range(n)]) > 0.5
    assert np.mean([ismcts(seed, _deal(game, (1, 0), (1,))) for seed in range(n)]) < 0.5

    # the control: OpenSpiel's plain MCTS searches the true state, so holding the Queen it calls a bet exactly when
    # the opponent holds the Jack. The test above would catch that.
    def peeking(seed: int, state: pyspiel.State) -> int:
        evaluator = pyspiel.RandomRolloutEvaluator(1, seed)
        return int(pyspiel.MCTSBot(game, evaluator, 2.0, 200, 1000, False, seed, False).step(state))

    against_jack = _bet_rate(peeking, game, (0, 1), (1,), 40)
    against_king = _bet_rate(peeking, game, (2, 1), (1,), 40)
    assert abs(against_jack - against_king) > 0.5, (against_jack, against_king)


# -- which games each kind plays, and the refusals (at spec time, exit 2, nothing played) --------------------------


def test_classical_support_of_the_issue_games() -> None:
    support = {name: classical_support(load_game(name)) for name in ("tic_tac_toe", "kuhn_poker", "liars_dice")}
    assert support["tic_tac_toe"] == {"random": None, "mcts": None, "exact": None}
    assert support["kuhn_poker"] == {"random": None, "mcts": None, "exact": None}
    for name in ("liars_dice", "first_sealed_auction"):
        reason = mcts_refusal(load_game(name))
        assert reason is not None and "ResampleFromInfostate" in reason and name in reason
    assert "two-player zero-sum" in (exact_refusal(load_game("first_sealed_auction")) or "")
    assert "simultaneous" in (mcts_refusal(load_game("matrix_rps")) or "")
    assert count_states(load_game("tic_tac_toe"), 10_000) == 5478
    assert count_states(load_game("connect_four"), 1_000) is None


@pytest.mark.parametrize(
    ("game", "bot", "message"),
    [
        ("connect_four", 'bot = "exact"', "exact solves small games only; connect_four() has more than 100000"),
        ("liars_dice", 'bot = "mcts"', "liars_dice does not implement ResampleFromInfostate"),
        ("first_sealed_auction", 'bot = "mcts"', "first_sealed_auction does not implement ResampleFromInfostate"),
        ("matrix_rps", 'bot = "exact"', "exact solves games with one mover at a time"),
        ("tic_tac_toe", 'bot = "mcts"\nparams = { simulations = 0 }', "simulations and rollouts must be >= 1"),
    ],
)
def test_a_classical_bot_that_cannot_play_a_game_is_refused_at_spec_time(
    game: str, bot: str, message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = _spec(tmp_path, game, {"classical": bot, "random": 'bot = "random"'}, repeats=1)
    code = main(["run", str(spec), "--out", str(tmp_path / "run"), "--no-progress"])
    _, err = capsys.readouterr()
    assert code == 2 and message in err and "Traceback" not in err, err
    assert not (tmp_path / "run" / "results.sqlite").exists()


@pytest.mark.parametrize(
    "game_string",
    ["breakthrough(rows=6,columns=6)", "python_iterated_prisoners_dilemma", "liars_dice", "first_sealed_auction"],
)
def test_the_issue_game_strings_play_with_random_bots(
    game_string: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    players = {"a": 'bot = "random"', "b": 'bot = "random"'}
    records, out = _run(tmp_path, _spec(tmp_path, game_string, players, repeats=1), capsys)
    assert len(records) == 2 and all(r.status == "complete" for r in records)
    assert "Wins, draws, losses and advantage per pair" in out


def test_exact_plays_kuhn_poker_by_its_information_state_only() -> None:
    game = load_game("kuhn_poker")
    bot = make_bot("exact", game, 1, np.random.default_rng(0))
    assert isinstance(bot, ExactBot) and bot.identity()["method"] == "kuhn_poker exact Nash"
    # the solved policy never calls a bet holding the Jack, and always does holding the King
    assert all(bot.step(_deal(game, (other, 0), (1,))) == 0 for other in (1, 2) for _ in range(20))
    assert all(bot.step(_deal(game, (other, 2), (1,))) == 1 for other in (0, 1) for _ in range(20))
    cfr = ExactBot(0, np.random.default_rng(0), game=load_game("leduc_poker"), node_budget=200_000, iterations=20)
    assert cfr.identity()["method"] == "cfr 20"
    state = load_game("leduc_poker").new_initial_state()
    while state.is_chance_node():
        state.apply_action(state.chance_outcomes()[0][0])
    assert cfr.step(state) in state.legal_actions()


def test_a_state_bot_is_not_played_from_an_observation() -> None:
    from deepeval_games.core.bot import observe

    bot = make_bot("mcts", load_game("tic_tac_toe"), 0, np.random.default_rng(0), {"simulations": 10})
    assert bot.identity() == {
        "kind": "classical",
        "class": "MCTSPlayer",
        "search": "mcts",
        "simulations": 10,
        "uct_c": 2.0,
        "rollouts": 1,
    }
    assert make_bot("mcts", load_game("kuhn_poker"), 0, np.random.default_rng(0)).identity()["search"] == (
        "ismcts-seeded"
    )
    state = load_game("tic_tac_toe").new_initial_state()
    import asyncio

    with pytest.raises(TypeError, match="needs the game state"):
        asyncio.run(bot.act(observe(state, 0)))
    with pytest.raises(SpecError, match="ResampleFromInfostate"):
        make_bot("mcts", load_game("liars_dice"), 0, np.random.default_rng(0))


def test_games_all_lists_openspiel_games_with_llm_and_classical_support(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["games", "--all"]) == 0
    out, err = capsys.readouterr()
    lines = out.splitlines()

    def entry(name: str) -> tuple[str, str]:
        i = next(i for i, line in enumerate(lines) if line.startswith(f"{name}  "))
        return lines[i], lines[i + 1]

    assert "deepeval_public_goods" in out and "OpenSpiel's games" in out  # the tasks first, then OpenSpiel's
    assert entry("tic_tac_toe")[0].endswith("[LLM: yes; classical: random, mcts, exact*]")
    assert entry("kuhn_poker")[0].endswith("[LLM: yes; classical: random, mcts, exact*]")
    assert entry("liars_dice")[0].endswith("[LLM: yes; classical: random, exact*]")  # no resampling: no mcts
    assert entry("first_sealed_auction")[0].endswith("[LLM: yes; classical: random]")
    assert entry("connect_four")[1].strip() == "columns=7, egocentric_obs_tensor=False, rows=6, x_in_row=4"
    assert "LLM: no (crossword fails a random playout" in entry("crossword")[0]  # probed, not read from flags
    assert entry("crossword")[0].endswith("classical: none]")
    assert "not loadable with its defaults" in entry("efg_game")[0]
    assert not any(line.startswith("testkit_") for line in lines)
    assert "OpenSpiel exception" not in err  # OpenSpiel's C++ refusals stay out of the listing
    # games only: every entry is a game's line and its parameters' line, nothing else (no bot list, no footnote)
    known = {game_type.short_name for game_type in pyspiel.registered_games()}
    body = [line for line in lines if line and not line.startswith("OpenSpiel's games")]
    families = [i for i, line in enumerate(body) if any(f in line for f in ("pettingzoo:", "textarena:", "clem:"))]
    body = body[: families[0]] if families else body  # the adapted environments follow, each with its verdict
    assert body[-1].startswith("    ") and len(body) % 2 == 0
    for name_line, params_line in zip(body[::2], body[1::2], strict=True):
        assert name_line.split("  ", 1)[0] in known and params_line.startswith("    "), name_line


# -- must show: the real local model plays full matches against MCTS offline; the report has its rates -----------

_LOCAL_REASON = local_model_available("local/smollm2")


@pytest.mark.local_model
@pytest.mark.skipif(_LOCAL_REASON is not None, reason=_LOCAL_REASON or "")
def test_the_local_model_plays_tic_tac_toe_and_kuhn_poker_against_mcts(
    repo_root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # the study spec's players (examples/classical_baselines.toml), on its two short games, one repeat
    example = (repo_root / "examples" / "classical_baselines.toml").read_text()
    assert 'model = "local/smollm2"' in example and 'bot = "mcts"' in example
    players = {
        "smollm2": 'model = "local/smollm2"\ntemperature = 0.2\nmax_tokens = 48',
        "mcts": 'bot = "mcts"\nparams = { simulations = 200 }',
    }
    spec = _spec(tmp_path, "tic_tac_toe", players, repeats=1)
    games = 'games = ["tic_tac_toe", "kuhn_poker"]\nmax_concurrency = 1'  # one request at a time: a small server
    spec.write_text(spec.read_text().replace('game = "tic_tac_toe"', games))
    records, out = _run(tmp_path, spec, capsys)
    assert sorted((r.game, tuple(r.seats)) for r in records) == [
        ("kuhn_poker()", ("mcts", "smollm2")),
        ("kuhn_poker()", ("smollm2", "mcts")),
        ("tic_tac_toe()", ("mcts", "smollm2")),
        ("tic_tac_toe()", ("smollm2", "mcts")),
    ]
    for record in records:  # full matches: replayed to the end, the model's turns on record
        state = load_game(record.game).new_initial_state()
        for turn in record.turns:
            if turn.seat >= 0 and record.seats[turn.seat] == "smollm2":
                assert turn.raw_replies and turn.tokens_in > 0
            state.apply_action(turn.action)
        assert state.is_terminal() and list(state.returns()) == record.returns
    for game in ("tic_tac_toe()", "kuhn_poker()"):
        block = out.split(game, 1)[1]
        assert "Wins, draws, losses and advantage per pair" in block and re.search(
            r"\n +mcts +smollm2 +2 +\d+% \[", block
        )
        assert "illegal-move rate: mcts 0% " in block and "smollm2 " in block.split("illegal-move rate:")[1]


# -- the two-player metrics on hand-made records ----------------------------------------------------------------


def _record(
    seats: tuple[str, str], returns: tuple[float, float], turns: int = 3, invalid: tuple[int, ...] = ()
) -> MatchRecord:
    moves = [
        TurnRecord(
            index=i, round=i + 1, seat=i % 2, action=0, action_string="a", outcome="invalid" if i in invalid else "ok"
        )
        for i in range(turns)
    ]
    return MatchRecord(
        match_id=f"{seats}{returns}{turns}{invalid}",
        game="g()",
        seats=list(seats),
        roles=["player", "player"],
        players=[{"kind": "bot"}, {"kind": "bot"}],
        seed=0,
        turns=moves,
        returns=list(returns),
        status="complete",
    )


def test_two_player_metrics_on_known_records() -> None:
    assert normalized_relative_advantage([3], [1]) == pytest.approx(0.5)
    assert normalized_relative_advantage([-1], [1]) == -1 and normalized_relative_advantage([0], [0]) == 0
    records = [
        _record(("a", "b"), (1, -1)),  # a first, wins
        _record(("a", "b"), (1, -1)),
        _record(("b", "a"), (0, 0)),  # a second, draws
        _record(("b", "a"), (2, -2), turns=4, invalid=(0, 2)),  # a second, loses; b (seat 0) made two invalid moves
    ]
    summary = two_player_summary(records)
    (pair,) = summary.pairs
    assert (pair.wins, pair.draws, pair.losses) == (2, 1, 1)
    assert pair.first.value == 1.0 and pair.second.value == 0.0
    assert pair.mean_payoff.value == pytest.approx((1 + 1 + 0 - 2) / 4)
    assert pair.nra.value == pytest.approx(0.0)  # summed first: a's +2 and -2 cancel
    assert math.isinf(pair.nra.high) and pair.nra.describe() == "+0.00 [n/a]"  # game "g()": no payoff range
    assert summary.seat_wins[0].value == 0.75 and summary.seat_wins[2].value == 0.25
    assert summary.mean_length == pytest.approx(13 / 4)
    assert summary.illegal_rate["b"].value == pytest.approx(2 / 6) and summary.illegal_rate["a"].value == 0
    interval = clopper_pearson(9, 10)
    assert interval.value == 0.9 and 0.55 < interval.low < 0.56 and 0.99 < interval.high <= 1.0


def _match(game: str, seats: tuple[str, str], returns: tuple[float, float], index: int) -> MatchRecord:
    return MatchRecord(
        match_id=f"m{index:03d}", game=game, seats=list(seats), roles=["player", "player"], turns=[],
        returns=list(returns), status="complete", repeat=index // 2,
    )  # fmt: skip


def test_nra_is_gtbench_summed_over_the_matches_with_draws_scored_zero() -> None:
    # 6 wins, 3 draws, 1 loss on +1/-1 payoffs: (sum of scores - theirs) / (sum of sizes) = (5 + 5) / 14 = 5/7
    outcomes = [(1.0, -1.0)] * 6 + [(0.0, 0.0)] * 3 + [(-1.0, 1.0)]
    order = np.random.default_rng(0).permutation(len(outcomes))
    records = [
        _match("tic_tac_toe", ("a", "b") if i % 2 else ("b", "a"), outcomes[k] if i % 2 else outcomes[k][::-1], i)
        for i, k in enumerate(order)
    ]
    (pair,) = two_player_summary(records).pairs
    assert (pair.wins, pair.draws, pair.losses) == (6, 3, 1)
    assert pair.nra.value == pytest.approx(5 / 7)  # 0.714; the mean of per-match ratios was 0.5
    assert -1.0 <= pair.nra.low < 5 / 7 < pair.nra.high <= 1.0  # 10 matches: wide, and never a point


def test_nra_has_the_sign_of_the_chips_won() -> None:
    # Kuhn poker, hand-made: the exact player loses 6 hands of one chip and wins 4 of two: +2 chips over 10 hands
    hands = [(2.0, -2.0)] * 4 + [(-1.0, 1.0)] * 6
    records = [_match("kuhn_poker", ("exact", "random"), hand, i) for i, hand in enumerate(hands)]
    (pair,) = two_player_summary(records).pairs
    assert pair.mean_payoff.value == pytest.approx(0.2) and pair.wins < pair.losses
    assert pair.nra.value == pytest.approx(2 / 14) and pair.nra.value > 0  # (2 + 2) / (14 + 14)
    assert np.mean([(m - t) / (abs(m) + abs(t)) for m, t in hands]) < 0  # the old per-match mean had the other sign
    assert -1.0 <= pair.nra.low < pair.nra.value < pair.nra.high <= 1.0
