"""Benchmark: ``mcts`` against ``random`` on TextArena's games of perfect information (issue 44), through the engine.

Run on demand (not a test): ``python bench/bench_arena.py [--matches N] [--simulations S] [--games G ...]``.

Each game is played ``--matches`` times (20 by default), ``mcts`` (OpenSpiel's Python MCTS with random rollouts, on
the adapted environment's true state: its whole state is public) in the first seat in even matches and the second
in odd ones, ``random`` in the other, through :func:`deepeval_games.core.referee.play_match`. Printed per game: the
wins, draws and losses of ``mcts``, its mean return, moves per match and the wall time. The exit status is 1 when
``mcts`` does not win more matches than it loses on a game.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import game_defs.arena.textarena  # noqa: F401  (registers the textarena: family)
from deepeval_games.core.referee import play_match
from deepeval_games.core.registry.games import load_game
from llm_bots.players.classical import MCTSPlayer, RandomBot

GAMES = ["textarena:TicTacToe-v0", "textarena:SimpleTak-v0", "textarena:Othello-v0-tiny"]


def _play(name: str, matches: int, simulations: int) -> tuple[list[float], list[int], float]:
    game = load_game(name)
    returns, moves = [], []
    started = time.perf_counter()
    for match in range(matches):
        seat = match % 2
        bots = [
            MCTSPlayer(seat, np.random.default_rng(match), game=game, simulations=simulations)
            if s == seat
            else RandomBot(s, np.random.default_rng(1000 + match), game=game)
            for s in range(2)
        ]
        record = asyncio.run(play_match(game, bots, seed=match, seat_names=["mcts", "random"][:: 1 - 2 * seat]))
        returns.append(float(record.returns[seat]))
        moves.append(sum(1 for turn in record.turns if turn.seat >= 0))
    return returns, moves, time.perf_counter() - started


def main(argv: list[str] | None = None) -> int:
    """Play every game and print its line; 1 when ``mcts`` does not beat ``random`` on one."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--matches", type=int, default=20)
    parser.add_argument("--simulations", type=int, default=100)
    parser.add_argument("--games", nargs="*", default=GAMES)
    args = parser.parse_args(argv)
    failed = False
    print(f"mcts ({args.simulations} simulations) against random, {args.matches} matches a game, seats alternating")
    for name in args.games:
        returns, moves, wall = _play(name, args.matches, args.simulations)
        wins, losses = sum(r > 0 for r in returns), sum(r < 0 for r in returns)
        draws = len(returns) - wins - losses
        print(
            f"{name}: mcts {wins} won, {draws} drawn, {losses} lost; mean return {np.mean(returns):+.2f}; "
            f"{np.mean(moves):.1f} moves a match; {wall:.0f} s"
        )
        failed |= wins <= losses
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
