"""Seeded matches whose records pin down what the engine (referee, pool, observations, bots) produces.

``tests/fixtures/engine_records.jsonl`` holds their canonical records (no timings), written by the engine as it
was before its per-move cost was cut (issue 9/14, at commit ``ad357ff``); ``tests/test_engine_records.py`` plays
them again and compares. The cases with a ``random``, ``mcts`` or ``exact`` seat were rewritten once on purpose
(second pass): ``random`` became OpenSpiel's C++ uniform random bot (other moves from the same seed), and those
three read no view, so their seats are sent the rules and the final view only (fewer pool messages). Every case
without them is still the old engine's record. Regenerate only on purpose, when a change of the records is intended::

    python -m tests.engine_cases --write

Besides the registered bots, :class:`DigestBot` plays a random legal move and writes into its utterance a digest of
everything its :class:`~deepeval_games.core.bot.Observation` held (text, fields, legal moves and their names, penalty
move, inbox): an LLM seat's prompt is made of exactly these, so equal digests mean equal prompts.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyspiel

from deepeval_games import Decision, DeepEvalBot, Observation, load_game, make_bot, play_match
from deepeval_games.core.records import MatchRecord
from deepeval_games.core.registry.bots import scorers_for
from deepeval_games.core.transcript import with_messages

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "engine_records.jsonl"


def observation_digest(observation: Observation) -> str:
    """A short hash of every part of an observation a prompt may be built from."""
    names = [observation.action_to_string(a) for a in observation.legal_actions] if not observation.free_text else []
    inbox = [
        (m.index, m.round, m.sender, list(m.recipients), m.kind, m.text, m.action, sorted(m.fields.items()))
        for m in observation.inbox
    ]
    parts = [
        observation.seat,
        observation.num_seats,
        observation.game,
        sorted(observation.params.items()),
        observation.round,
        observation.text,
        sorted((k, repr(v)) for k, v in observation.fields.items()),
        list(observation.legal_actions),
        names,
        observation.penalty_action,
        observation.free_text,
        inbox,
    ]
    return hashlib.sha256(repr(parts).encode()).hexdigest()[:16]


class DigestBot(DeepEvalBot):
    """A random legal move, its utterance the move's name and a digest of the whole observation."""

    async def act(self, observation: Observation) -> Decision:
        legal = observation.legal_actions
        action = int(legal[int(self.rng.integers(len(legal)))])
        name = observation.action_to_string(action)
        return Decision(action=action, text=f"{name} #{observation_digest(observation)}")


class IllegalEveryOther(DeepEvalBot):
    """An illegal move on odd turns (the penalty path), else the first legal one."""

    turn = 0

    async def act(self, observation: Observation) -> Decision:
        self.turn += 1
        if self.turn % 2:
            return Decision(action=10_000, text="an illegal move")
        return Decision(action=observation.legal_actions[0], text=observation_digest(observation))


@dataclass(frozen=True)
class Case:
    """One seeded match: the game, the bot in each seat (a registered name, or a test bot), an optional judge."""

    name: str
    game: str
    seats: tuple[str, ...]
    seed: int
    params: tuple[tuple[tuple[str, Any], ...], ...] = ()
    judge: str | None = None


_TEST_BOTS: dict[str, Callable[[int, np.random.Generator], DeepEvalBot]] = {
    "digest": lambda seat, rng: DigestBot(seat, rng),
    "illegal": lambda seat, rng: IllegalEveryOther(seat, rng),
}

PGG = "deepeval_public_goods(players=4,rounds=5,mode=2,alpha=1.6)"
PGG1 = "deepeval_public_goods(players=4,rounds=5,mode=1,alpha=1.6)"
SCRIPTED = ("pgg_free_rider", "pgg_conditional_cooperator", "pgg_grim_trigger", "pgg_random")

CASES: tuple[Case, ...] = (
    *(Case(f"pgg-scripted-{s}", PGG, SCRIPTED, s) for s in range(2)),
    Case("pgg-mode1", PGG1, ("pgg_random", "pgg_conditional_cooperator", "digest", "pgg_full_contributor"), 4),
    Case("pgg-digest", PGG, ("digest", "pgg_random", "illegal", "digest"), 5),
    *(Case(f"ttt-random-{s}", "tic_tac_toe", ("random", "random"), s) for s in range(3)),
    Case("ttt-digest", "tic_tac_toe", ("digest", "random"), 7),
    Case("ttt-illegal", "tic_tac_toe", ("illegal", "digest"), 8),
    Case("ttt-mcts", "tic_tac_toe", ("mcts", "random"), 9, ((("simulations", 50),), ())),
    Case("ttt-exact", "tic_tac_toe", ("random", "exact"), 10),
    Case("c4-random", "connect_four", ("random", "digest"), 11),
    *(Case(f"kuhn-random-{s}", "kuhn_poker", ("random", "random"), s) for s in range(4)),
    Case("kuhn-digest", "kuhn_poker", ("digest", "illegal"), 12),
    Case("kuhn-mcts", "kuhn_poker", ("mcts", "digest"), 13, ((("simulations", 50),), ())),
    Case("kuhn-exact", "kuhn_poker", ("exact", "random"), 14),
    Case("liars-dice", "liars_dice", ("digest", "random"), 15),
    Case("ipd", "python_iterated_prisoners_dilemma(max_game_length=12)", ("digest", "random"), 16),
    # the dictionary of the fixture's time, named (the default moved on): the case checks the engine, not the dictionary
    Case(
        "idiom",
        "deepeval_idiom_solitaire(start=一马当先,max_turns=6,dictionary=xinhua+cedict-1)",
        ("idiom_dictionary", "idiom_strategic"),
        17,
    ),
    Case(
        "translation",
        "deepeval_translation(pair=en-zh,paragraph=2455-p2,words=40)",
        ("mt_word_drop_translator", "mt_reference_proofreader"),
        18,
        judge="judge_chrf",
    ),
)


def _bot(name: str, game: pyspiel.Game, seat: int, rng: np.random.Generator, params: dict[str, Any]) -> DeepEvalBot:
    if name in _TEST_BOTS:
        return _TEST_BOTS[name](seat, rng)
    return make_bot(name, game, seat, rng, params)


async def play(case: Case) -> dict[str, Any]:
    """The canonical record (timings left out) of one case, written and read back as the store does."""
    game = load_game(case.game)
    bots = []
    for seat, name in enumerate(case.seats):
        params = dict(case.params[seat]) if seat < len(case.params) else {}
        bots.append(_bot(name, game, seat, np.random.default_rng([case.seed, seat]), params))
    judge = make_bot(case.judge, game, -2, np.random.default_rng([case.seed, 99])) if case.judge else None
    scorers = scorers_for(game.get_type().short_name) if case.judge else ()
    record = await play_match(
        game,
        bots,
        seed=case.seed,
        match_id=case.name,
        seat_names=list(case.seats),
        judge=judge,
        scorers=scorers,
        transcript="moves",
    )
    # as a run stores it and reads it back: a match stored as its moves is materialised by replaying them
    record = with_messages(MatchRecord.from_json(record.to_json()))
    return {"case": case.name, "record": record.canonical()}


def play_all() -> list[dict[str, Any]]:
    """Every case, in order."""
    return [asyncio.run(play(case)) for case in CASES]


def _normal(value: Any) -> Any:
    """A record as it reads back from JSON (tuples become lists)."""
    return json.loads(json.dumps(value, ensure_ascii=False))


def main(argv: list[str]) -> int:
    """``--write``: (re)write the fixture from the engine as it is now."""
    if argv != ["--write"]:
        print(__doc__)
        return 2
    os.environ.setdefault("DEEPEVAL_GAMES_DATA", str(Path(__file__).resolve().parents[2] / "shared" / "data"))
    lines = [json.dumps(_normal(entry), ensure_ascii=False, sort_keys=True) for entry in play_all()]
    FIXTURE.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"wrote {len(lines)} records to {FIXTURE}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
