"""The game conformance kit: checks that any OpenSpiel game is fit to evaluate LLMs with.

Library code, usable on your own game (like PettingZoo's ``api_test``)::

    from deepeval_games.core.testing import check_game
    check_game("kuhn_poker")   # raises ConformanceError listing failures

Checks, over seeded random playouts (random legal moves, now and then the referee's penalty move):

* ``terminates`` — every playout ends within the game's ``max_game_length``;
* ``action_strings`` — every legal action (and the penalty action) has a non-empty string;
* ``returns_bounded`` — terminal returns lie within ``min_utility..max_utility``;
* ``clone`` — a clone has the same history, string, observations and returns;
* ``serialize`` — ``serialize_game_and_state`` round-trips to an equal state;
* ``deterministic`` — the same seed gives the same transcript (histories and observation strings);
* ``no_leak`` — an observation never shows a seat what the rules hide: at simultaneous nodes, joint
  moves that the game declares indistinguishable for a seat (``state.indistinguishable_variants``)
  leave that seat's observation, fields and information state unchanged; and no observation contains
  any of the ``forbidden`` words (e.g. model or bot names).

Same-round moves of other seats cannot leak through the engine: at a simultaneous node every seat's
observation is taken from the same state before any move is applied.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyspiel

from deepeval_games.core import task
from deepeval_games.core.errors import ConformanceError
from deepeval_games.core.games import load_game

__all__ = ["ConformanceReport", "check_game", "openspiel_random_sim_test"]

_MAX_STRINGS_CHECKED = 64
_TOLERANCE = 1e-9


@dataclass
class ConformanceReport:
    """What :func:`check_game` checked and what failed."""

    game: str
    checks: dict[str, int] = field(default_factory=dict)
    """How many times each check ran."""
    failures: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """True when no check failed."""
        return not self.failures

    def count(self, check: str) -> None:
        self.checks[check] = self.checks.get(check, 0) + 1

    def fail(self, check: str, message: str) -> None:
        self.failures.append(f"[{check}] {message}")


def _seat_view(state: pyspiel.State, seat: int) -> tuple[Any, ...]:
    game_type = state.get_game().get_type()
    obs = state.observation_string(seat) if game_type.provides_observation_string else None
    info = state.information_state_string(seat) if game_type.provides_information_state_string else None
    return (obs, info, repr(sorted(task.observation_fields(state, seat).items())))


def _snapshot(state: pyspiel.State) -> tuple[Any, ...]:
    n = state.get_game().num_players()
    returns = tuple(float(r) for r in state.returns())
    return (tuple(state.history()), str(state), returns, tuple(_seat_view(state, s) for s in range(n)))


class _Checker:
    def __init__(self, game: pyspiel.Game, report: ConformanceReport, forbidden: Sequence[str]) -> None:
        self.game = game
        self.report = report
        self.forbidden = [w for w in forbidden if w]
        self.n = game.num_players()

    def check_strings(
        self, state: pyspiel.State, player: int, actions: Sequence[int], rng: np.random.Generator
    ) -> None:
        self.report.count("action_strings")
        sample = list(actions)
        if len(sample) > _MAX_STRINGS_CHECKED:
            sample = list(rng.choice(sample, size=_MAX_STRINGS_CHECKED, replace=False))
        penalty = task.penalty_action(state, player) if player >= 0 else None
        if penalty is not None:
            sample.append(penalty)
        for action in sample:
            try:
                text = state.action_to_string(player, int(action))
            except Exception as exc:  # any failure is a finding
                self.report.fail("action_strings", f"action {action} of player {player} has no string: {exc}")
                return
            if not text or not text.strip():
                self.report.fail("action_strings", f"action {action} of player {player} has an empty string")
                return

    def check_copies(self, state: pyspiel.State) -> None:
        self.report.count("clone")
        if _snapshot(state.clone()) != _snapshot(state):
            self.report.fail("clone", f"clone differs from the original at history {state.history()}")
        self.report.count("serialize")
        try:
            text = pyspiel.serialize_game_and_state(self.game, state)
            _, restored = pyspiel.deserialize_game_and_state(text)
        except Exception as exc:
            self.report.fail("serialize", f"serialize/deserialize failed at history {state.history()}: {exc}")
            return
        if _snapshot(restored) != _snapshot(state):
            self.report.fail("serialize", f"deserialized state differs at history {state.history()}")

    def check_forbidden(self, state: pyspiel.State) -> None:
        if not self.forbidden:
            return
        self.report.count("no_leak")
        for seat in range(self.n):
            for part in _seat_view(state, seat):
                for word in self.forbidden:
                    if part and word in part:
                        self.report.fail("no_leak", f"seat {seat} can read the forbidden word {word!r}")
                        return

    def check_hidden(self, state: pyspiel.State, joint: Sequence[int]) -> None:
        for seat in range(self.n):
            base = state.clone()
            base.apply_actions(list(joint))
            for variant in task.indistinguishable_variants(state, seat, joint):
                self.report.count("no_leak")
                other = state.clone()
                other.apply_actions(list(variant))
                if _seat_view(other, seat) != _seat_view(base, seat):
                    self.report.fail(
                        "no_leak",
                        f"seat {seat} can tell joint moves {list(joint)} and {list(variant)} apart, "
                        "which the rules hide from it",
                    )
                    return

    def choose(self, state: pyspiel.State, player: int, rng: np.random.Generator) -> int:
        legal = state.legal_actions(player)
        self.check_strings(state, player, legal, rng)
        penalty = task.penalty_action(state, player)
        if penalty is not None and rng.random() < 0.1:
            return penalty
        if task.is_free_text_turn(state, player):
            return task.intern_utterance(state, player, f"utterance {int(rng.integers(1_000_000))}")
        return int(rng.choice(legal))

    def playout(self, rng: np.random.Generator) -> list[tuple[Any, ...]]:
        state = self.game.new_initial_state()
        transcript = [_snapshot(state)]
        limit = max(self.game.max_game_length(), 1)
        steps = 0
        while not state.is_terminal():
            if steps >= limit:
                self.report.fail("terminates", f"playout did not end within max_game_length={limit} moves")
                return transcript
            steps += 1
            self.check_copies(state)
            self.check_forbidden(state)
            if state.is_chance_node():
                outcomes = state.chance_outcomes()
                self.check_strings(state, pyspiel.PlayerId.CHANCE, [a for a, _ in outcomes], rng)
                actions, probs = zip(*outcomes, strict=True)
                state.apply_action(int(rng.choice(actions, p=np.asarray(probs) / np.sum(probs))))
            elif state.is_simultaneous_node():
                joint = [
                    self.choose(state, seat, rng) if state.legal_actions(seat) else pyspiel.INVALID_ACTION
                    for seat in range(self.n)
                ]
                self.check_hidden(state, joint)
                state.apply_actions(joint)
            else:
                state.apply_action(self.choose(state, state.current_player(), rng))
            transcript.append(_snapshot(state))
        self.report.count("terminates")
        self.check_copies(state)
        self.check_forbidden(state)
        self.report.count("returns_bounded")
        low, high = self.game.min_utility(), self.game.max_utility()
        for seat, value in enumerate(state.returns()):
            if not low - _TOLERANCE <= value <= high + _TOLERANCE:
                self.report.fail("returns_bounded", f"seat {seat} returned {value}, outside [{low}, {high}]")
        return transcript


def check_game(
    game: pyspiel.Game | str,
    *,
    playouts: int = 10,
    seed: int = 0,
    forbidden: Iterable[str] = (),
    raise_on_failure: bool = True,
) -> ConformanceReport:
    """Run the conformance checks on ``game`` (a game object or a game string).

    Raises :class:`~deepeval_games.core.errors.ConformanceError` listing every failure, unless
    ``raise_on_failure`` is False; returns the report either way.
    """
    if isinstance(game, str):
        game = load_game(game)
    report = ConformanceReport(game=str(game))
    checker = _Checker(game, report, list(forbidden))
    for index in range(playouts):
        first = checker.playout(np.random.default_rng([seed, index]))
        report.count("deterministic")
        if index == 0 and checker.playout(np.random.default_rng([seed, index])) != first:
            report.fail("deterministic", "the same seed gave two different transcripts")
        if len(report.failures) > 50:
            break
    if report.failures and raise_on_failure:
        shown = "\n  ".join(report.failures[:20])
        more = f"\n  ... and {len(report.failures) - 20} more" if len(report.failures) > 20 else ""
        raise ConformanceError(f"{report.game} fails the conformance kit:\n  {shown}{more}")
    return report


def openspiel_random_sim_test(game: pyspiel.Game | str, *, num_sims: int = 5, serialize: bool = True) -> None:
    """OpenSpiel's own ``random_sim_test`` (needs the game's ``make_py_observer``)."""
    if isinstance(game, str):
        game = load_game(game)
    pyspiel.random_sim_test(game, num_sims=num_sims, serialize=serialize, verbose=False)
