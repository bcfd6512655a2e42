"""Bench: what an LLM seat is sent in long games, under each context policy (issue 30).

    python bench/bench_context.py [--plies 40]

Two figures, every model call answered by the fake OpenAI endpoint (``tests/fake_openai_server.py``, with its prompt
cache on: a prompt counts a token per 4 characters, and the prefix it shares with an earlier request is reported as
cached tokens):

1. **Prompt-cache share, Public Goods Game.** A 5-round PGG with one LLM seat (and three scripted ones): for each of
   the seat's calls, the share of its prompt that repeats the previous call's prompt from the start (the longest
   common prefix of the two requests' messages), in tokens (litellm's ``gpt-4o-mini`` count) and in characters,
   averaged over calls 2-5, and the cached share the endpoint reported. Goal under ``full``, in tokens, on the
   engine's default game: >= 80%; the game ``eval`` plays (mode 2, the paper preset) is shown beside it. Under
   ``full`` the chat only grows (every prompt starts with the whole one before), so a call's share is the previous
   prompt's length over its own: what each round adds (the seat's reply, the round's news and the next question,
   all pinned texts) sets it, not the engine. ``window`` and ``state`` are shown as measured: they rebuild the
   turn's message, so only the rules repeat.
2. **Prompt tokens per LLM move, breakthrough and connect four.** A fixed move sequence (a seeded random playout of
   ``--plies`` plies, the same for every policy) is played by two LLM seats whose replies name the sequence's next
   move; each move's prompt tokens (litellm's count for ``gpt-4o-mini``) are printed per policy. Growth: under
   ``state`` the largest over the smallest prompt from ply 2 on; under ``window`` (``k`` rounds) the same over plies
   2k+2 .. 2k+10, once the window is full; goal <= 1.2 for both. ``full`` is shown as measured.

It exits 1 when a goal is missed.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import sys
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from deepeval_games import parse_spec, run_experiment
from deepeval_games.core.registry.games import load_game
from llm_bots.model_info import litellm
from tests.fake_openai_server import (
    Behaviour,
    FakeOpenAIServer,
    common_prefix,
    first_legal_move,
    model_player,
    prompt_text,
)

POLICIES = ("full", "window", "state")
PGG = "deepeval_public_goods(players=4,rounds=5)"
"""The engine's default PGG (mode 1, a JSON answer)."""
PGG_PAPER = (
    "deepeval_public_goods(players=4,rounds=5,endowment=10,alpha=1.6,mode=2,"
    "unusable=reformat,feedback=paper,answer=free)"
)
"""The game ``eval deepeval_public_goods`` plays (the task's default study: mode 2, the paper preset)."""
WINDOW_ROUNDS = 4
GOAL_SHARE = 0.80
GOAL_GROWTH = 1.2
KEY_ENV = "FAKE_PROVIDER_KEY"


@contextmanager
def _endpoint(behaviour: Behaviour) -> Iterator[FakeOpenAIServer]:
    os.environ.setdefault(KEY_ENV, "sk-bench-not-a-secret")
    with FakeOpenAIServer(default=behaviour, prefix_cache=True) as server:
        yield server


def _play(game: str, players: list[dict[str, Any]]) -> Any:
    spec = {
        "experiment": {
            "name": "ctx",
            "game": game,
            "seed": 7,
            "cache": False,
            "max_concurrency": 1,
            "pairing": "fixed",
        },
        "players": players,
    }
    with tempfile.TemporaryDirectory() as tmp:
        [record] = run_experiment(parse_spec(spec), Path(tmp) / "run").records
    return record


def pgg_cache_share(policy: str, game: str = PGG) -> tuple[list[float], list[float], list[float], list[float]]:
    """Per call of the LLM seat: the share of its prompt repeating the previous call's, the share of the previous
    prompt it repeats (1.0: nothing rewritten, the whole previous prompt is a cacheable prefix), the cached share
    the endpoint reported (a token per 4 characters), and the first share in tokens (litellm's ``gpt-4o-mini``
    count of the shared prefix over the prompt's)."""
    with _endpoint(Behaviour.reply('{"reason": "r", "coins": 3}')) as server:
        llm = model_player("llm", server, context=policy, context_window_rounds=2)
        scripted = [{"name": n, "bot": n} for n in ("pgg_free_rider", "pgg_full_contributor", "pgg_random")]
        record = _play(game, [llm, *scripted])
        texts = [prompt_text(body) for body in server.requests]
    seat = record.seats.index("llm")
    turns = [t for t in record.turns if t.seat == seat]
    pairs = list(itertools.pairwise(texts))
    repeats = [common_prefix(before, after) / len(after) for before, after in pairs]
    kept = [common_prefix(before, after) / len(before) for before, after in pairs]
    reported = [t.cached_tokens / t.tokens_in for t in turns]
    count = litellm().token_counter
    tokens = [
        count(model="gpt-4o-mini", text=before[: common_prefix(before, after)]) / count(model="gpt-4o-mini", text=after)
        for before, after in pairs
    ]
    return repeats, kept, reported, tokens


def fixed_sequence(game: str, plies: int, seed: int = 0) -> list[str]:
    """A seeded random playout of ``game``: the names of its first ``plies`` moves (fewer if it ends sooner)."""
    rng = np.random.default_rng(seed)
    state = load_game(game).new_initial_state()
    names: list[str] = []
    while not state.is_terminal() and len(names) < plies:
        action = int(rng.choice(state.legal_actions()))
        names.append(state.action_to_string(state.current_player(), action))
        state.apply_action(action)
    return names


def move_tokens(game: str, moves: Sequence[str], policy: str) -> list[int]:
    """Prompt tokens of each LLM move of ``moves`` (both seats LLM, one request per move, in order)."""
    replies = iter(moves)

    def reply(body: dict[str, Any]) -> str:  # the sequence's next move; past its end the first legal one
        move = next(replies, None)
        return first_legal_move(body) if move is None else json.dumps({"move": move})

    answer = Behaviour.responder(reply)
    with _endpoint(answer) as server:
        players = [
            model_player(name, server, context=policy, context_window_rounds=WINDOW_ROUNDS, max_reasks=0)
            for name in ("a", "b")
        ]
        _play(game, players)
        bodies = list(server.requests)
    count = litellm().token_counter
    return [int(count(model="gpt-4o-mini", messages=body["messages"])) for body in bodies[: len(moves)]]


def _growth(tokens: Sequence[int], start: int, end: int) -> float:
    """The largest over the smallest prompt of plies ``start`` .. ``end`` (1-based, inclusive)."""
    part = tokens[start - 1 : end]
    return max(part) / min(part)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--plies", type=int, default=40)
    args = parser.parse_args(argv)
    ok = True

    print("1. Public Goods Game, 4 seats, 5 rounds, one LLM seat: prompt repeating the previous call's prefix")
    print("   (goal >= 80% of the prompt's tokens under full, the engine's default game; the eval study's shown too)")
    for game, label in ((PGG, "default game"), (PGG_PAPER, "eval's game (mode 2, paper preset)")):
        print(f"  {label}: {game}")
        for policy in POLICIES:
            repeats, kept, reported, tokens = pgg_cache_share(policy, game)
            mean, mean_tokens = float(np.mean(repeats[:4])), float(np.mean(tokens[:4]))  # calls 2-5
            verdict = ""
            if policy == "full" and game == PGG:
                verdict = " (goal >= 80%: " + ("met)" if mean_tokens >= GOAL_SHARE else "MISSED)")
                ok &= mean_tokens >= GOAL_SHARE
            shares = ", ".join(f"{100 * r:.0f}%" for r in repeats)
            cached = ", ".join(f"{100 * r:.0f}%" for r in reported[1:])
            print(
                f"    {policy:6s} calls 2-5: {100 * mean_tokens:.1f}% of the tokens{verdict}, {100 * mean:.1f}% of the "
                f"characters  [per call {shares}; cached reported {cached}]"
            )
            print(f"           the previous prompt repeated: {100 * float(np.mean(kept[:4])):.1f}% of it")

    print(f"\n2. Prompt tokens per LLM move on a fixed {args.plies}-ply sequence (litellm's gpt-4o-mini count)")
    lo, hi = 2 * WINDOW_ROUNDS + 2, 2 * WINDOW_ROUNDS + 10
    for game in ("breakthrough", "connect_four"):
        moves = fixed_sequence(game, args.plies)
        print(f"  {game}: {len(moves)} plies")
        for policy in POLICIES:
            counts = move_tokens(game, moves, policy)
            line = f"    {policy:6s} " + " ".join(str(t) for t in counts)
            if policy == "state":
                growth = _growth(counts, 2, len(counts))
                line += f"\n           growth (plies 2..{len(counts)}): {growth:.2f}x (goal <= {GOAL_GROWTH})"
                ok &= growth <= GOAL_GROWTH
            elif policy == "window" and len(counts) >= hi:
                growth = _growth(counts, lo, hi)
                line += (
                    f"\n           growth (plies {lo}..{hi}, k={WINDOW_ROUNDS}): {growth:.2f}x (goal <= {GOAL_GROWTH})"
                )
                ok &= growth <= GOAL_GROWTH
            elif policy == "full":
                line += f"\n           ply {len(counts)} / ply 1: {counts[-1] / counts[0]:.1f}x (as measured)"
            print(line)
    print("\nall goals met" if ok else "\na goal was MISSED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
