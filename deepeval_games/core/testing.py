"""The game conformance kit: checks that any OpenSpiel game is fit to evaluate LLMs with.

Library code, usable on your own game (like PettingZoo's ``api_test``)::

    from deepeval_games.core.testing import check_game
    check_game("kuhn_poker")   # raises ConformanceError listing failures

Checks, over seeded random playouts (random legal moves, now and then the referee's penalty move):

* ``terminates`` — every playout ends within the game's ``max_game_length`` decisions (chance moves are
  counted apart, against ``max_chance_nodes_in_history``, as OpenSpiel counts them);
* ``action_strings`` — every legal action (and the penalty action) has a non-empty string;
* ``returns_bounded`` — terminal returns lie within ``min_utility..max_utility``;
* ``clone`` — a clone has the same history, string, observations and returns;
* ``serialize`` — ``serialize_game_and_state`` round-trips to an equal state;
* ``deterministic`` — the same seed gives the same transcript (histories and observation strings);
* ``observation_types`` — the game honours OpenSpiel's observation types: its public observation
  (``public_info=True``, ``private_info=NONE``) and private observation (``public_info=False``,
  ``private_info=SINGLE_PLAYER``), with and without ``perfect_recall`` as the game gives its strings, do not
  raise; a seat's public and private texts differ (an observer that ignores the type it is made for gives
  one text for both); a game of perfect information has no private text; and where chance went, the public
  observation tells every seat alike;
* ``replays`` — a few seeded matches of seats that read their views and play random legal moves, each recorded in
  full and as its moves (``transcript = "moves"``), the latter written, read back and replayed
  (:func:`~deepeval_games.core.transcript.with_messages`): field for field the full record. A game whose views or
  move names depend on more than its history and chance outcomes fails, and must say ``replays_from_moves = False``
  (its matches are then stored in full; the check is left out, with a note);
* ``no_leak`` — an observation never shows a seat what the rules hide:

  - chance: at every chance node the kit also follows the histories where chance chose another outcome
    (a few, drawn), applying the playout's later moves to them too. While the game's own public
    observation and a seat's own private observation (both with and without perfect recall) are the same
    in such a history as in the playout, that seat may not tell the two apart, so what it is shown
    (observation and information-state strings, observation fields) must be the same too. A hidden card
    or value dealt to another seat and shown to this one fails, naming the seat and both outcomes;
  - simultaneous moves: joint moves that the game declares indistinguishable for a seat
    (``state.indistinguishable_variants``) leave that seat's observation, fields and information state
    unchanged, and its public and private observations too;
  - no observation contains any of the ``forbidden`` words (e.g. model or bot names).

What a seat may not see is read from the game's own public and private observations (OpenSpiel's
observation types), which the ``observation_types`` check holds to their definitions: the chance check
finds a seat shown more than those say; a game whose public observation itself shows every seat a dealt
value is taken at its word. A game that cannot make those observation types (many of OpenSpiel's C++ games
make only their default observers) gets neither check; the report's ``notes`` say so.

Same-round moves of other seats cannot leak through the engine: at a simultaneous node every seat's
observation is taken from the same state before any move is applied.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import numpy as np
import pyspiel
from open_spiel.python.observation import make_observation

from deepeval_games.core import task
from deepeval_games.core.bot import Decision, Observation, SyncBot
from deepeval_games.core.errors import ConformanceError
from deepeval_games.core.message_pool import seat_label
from deepeval_games.core.records import MatchRecord, RecordError
from deepeval_games.core.referee import TranscriptNotDerivable, play_match
from deepeval_games.core.registry.games import load_game
from deepeval_games.core.transcript import finished, with_messages

__all__ = ["ConformanceReport", "check_game", "openspiel_random_sim_test"]

_MAX_STRINGS_CHECKED = 64
_TOLERANCE = 1e-9
_CHANCE_VARIANTS = 3
"""Other outcomes followed per chance node."""
_MAX_SHADOWS = 12
"""Histories followed beside the playout at once (the newest are kept)."""
_NONE, _SINGLE_PLAYER = pyspiel.PrivateInfoType.NONE, pyspiel.PrivateInfoType.SINGLE_PLAYER


@dataclass
class ConformanceReport:
    """What :func:`check_game` checked and what failed."""

    game: str
    checks: dict[str, int] = field(default_factory=dict)
    """How many times each check ran."""
    failures: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    """Checks that could not run on this game, and why."""

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


def _typed_observers(game: pyspiel.Game) -> dict[tuple[str, bool], Any] | None:
    """The game's public and private observers, without and with perfect recall as the game gives its strings
    (keys ``("public" | "private", perfect_recall)``); None when the game cannot make them."""
    game_type = game.get_type()
    recalls = [
        recall
        for recall, given in (
            (False, game_type.provides_observation_string),
            (True, game_type.provides_information_state_string),
        )
        if given
    ]
    observers = {}
    for recall in recalls:
        for name, public, private in (("public", True, _NONE), ("private", False, _SINGLE_PLAYER)):
            kind = pyspiel.IIGObservationType(public_info=public, perfect_recall=recall, private_info=private)
            try:
                observer = make_observation(game, kind)
            except Exception:  # a game that makes only its own observers (many of OpenSpiel's C++ games)
                return None
            if observer is None:
                return None
            observers[(name, recall)] = observer
    return observers or None


@dataclass
class _Shadow:
    """A history that differs from the playout's in one chance outcome, played on in step with it."""

    state: pyspiel.State
    move: int
    """Where the histories part: the index of the chance move in the playout's history."""
    played: str
    """The playout's outcome there, by name."""
    other: str
    """This history's outcome there, by name."""
    seats: list[int]
    """The seats that the game's own public and private observations have not told which (so far)."""


class _Checker:
    def __init__(self, game: pyspiel.Game, report: ConformanceReport, forbidden: Sequence[str]) -> None:
        self.game = game
        self.report = report
        self.forbidden = [w for w in forbidden if w]
        self.n = game.num_players()
        self.observers = _typed_observers(game)
        self.perfect_information = game.get_type().information == pyspiel.GameType.Information.PERFECT_INFORMATION
        self.shadows: list[_Shadow] = []
        self.types_failed: set[str] = set()
        self.leaks_found: set[tuple[int, int]] = set()
        """(seat, chance move) of the chance leaks reported: one finding each, whatever the outcomes or playout."""
        if self.observers is None:
            report.notes.append(
                "observation_types and the chance part of no_leak did not run: the game cannot make OpenSpiel's "
                "public and private observation types"
            )

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

    def typed_view(self, state: pyspiel.State, seat: int) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """What the game's own public and private observations (OpenSpiel's types) show ``seat``: the public
        texts, then the private ones (each without, then with perfect recall, as the game gives its strings)."""
        assert self.observers is not None
        public = tuple(o.string_from(state, seat) for (name, _), o in self.observers.items() if name == "public")
        private = tuple(o.string_from(state, seat) for (name, _), o in self.observers.items() if name == "private")
        return public, private

    def check_types(self, state: pyspiel.State) -> None:
        if self.observers is None or state.is_chance_node() or len(self.types_failed) > 1:
            return
        self.report.count("observation_types")
        try:
            views = [self.typed_view(state, seat) for seat in range(self.n)]
        except Exception as exc:
            self.fail_types("raised", f"a public or private observation raised {type(exc).__name__}: {exc}", state)
            return
        for seat, (public, private) in enumerate(views):
            if any(text and text == shown for text, shown in zip(private, public, strict=True)):
                text = next(text for text in private if text)
                self.fail_types(
                    "untyped",
                    f"seat {seat}'s public and private observations are the same text, {text[:80]!r}: the "
                    "observer ignores the observation type it is made for",
                    state,
                )
            elif self.perfect_information and any(private):
                text = next(text for text in private if text)
                self.fail_types(
                    "private",
                    f"seat {seat}'s private observation is {text[:80]!r}: a game of perfect information has no "
                    "private information",
                    state,
                )

    def fail_types(self, kind: str, problem: str, state: pyspiel.State) -> None:
        """Report an ``observation_types`` failure, once per kind of failure."""
        if kind not in self.types_failed:
            self.types_failed.add(kind)
            self.report.fail("observation_types", f"{problem} (history {state.history()})")

    def add_chance_variants(self, state: pyspiel.State, played: int, rng: np.random.Generator) -> None:
        """Follow the histories where chance chose another outcome than ``played`` at ``state`` (a few)."""
        if self.observers is None:
            return
        others = [action for action, _ in state.chance_outcomes() if action != played]
        if len(others) > _CHANCE_VARIANTS:
            others = [int(a) for a in rng.choice(others, size=_CHANCE_VARIANTS, replace=False)]
        chance = pyspiel.PlayerId.CHANCE
        for other in others:
            shadow = state.clone()
            shadow.apply_action(other)
            names = (state.action_to_string(chance, played), state.action_to_string(chance, other))
            self.shadows.append(_Shadow(shadow, len(state.history()), *names, seats=list(range(self.n))))
        del self.shadows[:-_MAX_SHADOWS]

    def follow(self, move: Callable[[pyspiel.State], None]) -> None:
        """Apply the playout's move to every followed history; drop those where it cannot be played."""
        kept = []
        for shadow in self.shadows:
            try:
                move(shadow.state)
            except Exception:  # not a legal move there: the histories part for good
                continue
            kept.append(shadow)
        self.shadows = kept

    def compare_shadows(self, state: pyspiel.State) -> None:
        """A seat that the game's public and private observations do not tell which outcome chance chose must be
        shown the same in both histories."""
        if state.is_chance_node() or not self.shadows:
            return
        try:
            typed = [self.typed_view(state, seat) for seat in range(self.n)]
        except Exception:  # check_types reports it; nothing to compare against
            self.shadows = []
            return
        shown: dict[int, tuple[Any, ...]] = {}  # the playout's seat views, made when first needed
        kept = []
        for shadow in self.shadows:
            other = shadow.state
            if other.is_chance_node() or other.is_terminal() != state.is_terminal():
                continue
            try:
                views = [(typed[seat], self.typed_view(other, seat)) for seat in range(self.n)]
            except Exception:  # an observation that fails in that history only: stop following it
                continue
            told = [mine[0] != theirs[0] for mine, theirs in views]  # by the public observation
            if any(told) and not all(told):
                self.fail_types(
                    "public",
                    f"the public observation tells seat {told.index(True)} but not seat {told.index(False)} whether "
                    f"chance gave {shadow.played!r} or {shadow.other!r} (move {shadow.move}): public information "
                    "is the same for every seat",
                    state,
                )
            blind = []
            for seat in shadow.seats:
                if views[seat][0] != views[seat][1]:
                    continue  # the game tells this seat which outcome it was: it may see it from now on
                self.report.count("no_leak")
                if seat not in shown:
                    shown[seat] = _seat_view(state, seat)
                if _seat_view(other, seat) == shown[seat]:
                    blind.append(seat)
                    continue
                if (seat, shadow.move) in self.leaks_found:
                    continue
                self.leaks_found.add((seat, shadow.move))
                self.report.fail(
                    "no_leak",
                    f"seat {seat} ({seat_label(seat)}) is shown the hidden chance outcome {shadow.played!r}: its "
                    f"view differs from the history where chance gave {shadow.other!r} instead (move {shadow.move} "
                    f"of history {state.history()}), though the game's public observation and the seat's private "
                    "observation are the same in both",
                )
            if blind:
                shadow.seats = blind
                kept.append(shadow)
        self.shadows = kept

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
                if self.observers is not None and self.typed_view(other, seat) != self.typed_view(base, seat):
                    self.report.fail(
                        "no_leak",
                        f"the game's public or private observation tells seat {seat} joint moves {list(joint)} and "
                        f"{list(variant)} apart, which the rules hide from it",
                    )
                    return

    def choose(self, state: pyspiel.State, player: int, rng: np.random.Generator) -> tuple[int, str | None]:
        """A move for ``player``: its action, and its text at a free-text turn (else None)."""
        legal = state.legal_actions(player)
        self.check_strings(state, player, legal, rng)
        penalty = task.penalty_action(state, player)
        if penalty is not None and rng.random() < 0.1:
            return penalty, None
        if task.is_free_text_turn(state, player):
            text = f"utterance {int(rng.integers(1_000_000))}"
            return task.intern_utterance(state, player, text), text
        return int(rng.choice(legal)), None

    def inspect(self, state: pyspiel.State) -> None:
        """The checks made at every state of a playout."""
        self.check_copies(state)
        self.check_forbidden(state)
        self.check_types(state)
        self.compare_shadows(state)

    def playout(self, rng: np.random.Generator) -> list[tuple[Any, ...]]:
        state = self.game.new_initial_state()
        transcript = [_snapshot(state)]
        limit = max(self.game.max_game_length(), 1)  # OpenSpiel counts decisions in it, chance moves apart
        try:
            chance_limit = self.game.max_chance_nodes_in_history()
        except Exception:  # a game that does not say
            chance_limit = limit
        steps = chance_steps = 0
        self.shadows = []
        variants = rng.spawn(1)[0]  # its own stream: the playout's moves stay those of the seed
        while not state.is_terminal():
            chance = state.is_chance_node()
            if (chance_steps if chance else steps) >= (chance_limit if chance else limit):
                over = f"{chance_limit} chance moves" if chance else f"max_game_length={limit} moves"
                self.report.fail("terminates", f"playout did not end within {over}")
                return transcript
            self.inspect(state)
            if chance:
                chance_steps += 1
                outcomes = state.chance_outcomes()
                self.check_strings(state, pyspiel.PlayerId.CHANCE, [a for a, _ in outcomes], rng)
                actions, probs = zip(*outcomes, strict=True)
                action = int(rng.choice(actions, p=np.asarray(probs) / np.sum(probs)))
                self.follow(partial(_apply_chance, action=action))
                self.add_chance_variants(state, action, variants)
                state.apply_action(action)
            elif state.is_simultaneous_node():
                steps += 1
                moves = [
                    self.choose(state, seat, rng) if state.legal_actions(seat) else (pyspiel.INVALID_ACTION, None)
                    for seat in range(self.n)
                ]
                joint = [action for action, _ in moves]
                self.check_hidden(state, joint)
                state.apply_actions(joint)
                self.follow(partial(_apply_joint, moves=moves))
            else:
                steps += 1
                player = state.current_player()
                action, text = self.choose(state, player, rng)
                state.apply_action(action)
                self.follow(partial(_apply_move, player=player, action=action, text=text))
            transcript.append(_snapshot(state))
        self.report.count("terminates")
        self.inspect(state)
        self.report.count("returns_bounded")
        low, high = self.game.min_utility(), self.game.max_utility()
        for seat, value in enumerate(state.returns()):
            if not low - _TOLERANCE <= value <= high + _TOLERANCE:
                self.report.fail("returns_bounded", f"seat {seat} returned {value}, outside [{low}, {high}]")
        return transcript


def _apply_chance(state: pyspiel.State, action: int) -> None:
    if not state.is_chance_node() or action not in dict(state.chance_outcomes()):
        raise ValueError("not a chance outcome here")
    state.apply_action(action)


def _apply_joint(state: pyspiel.State, moves: Sequence[tuple[int, str | None]]) -> None:
    if not state.is_simultaneous_node():
        raise ValueError("not a simultaneous node")
    state.apply_actions(
        [
            action if text is None else task.intern_utterance(state, seat, text)
            for seat, (action, text) in enumerate(moves)
        ]
    )


def _apply_move(state: pyspiel.State, player: int, action: int, text: str | None) -> None:
    if state.is_chance_node() or state.is_simultaneous_node() or state.current_player() != player:
        raise ValueError("another seat is to move")
    state.apply_action(action if text is None else task.intern_utterance(state, player, text))


class _RandomViewer(SyncBot):
    """A seat that is sent its views and plays a random legal move (the ``replays`` check)."""

    def respond(self, observation: Observation) -> Decision:
        legal = observation.legal_actions
        return Decision.move(int(legal[int(self.rng.integers(len(legal)))]) if legal else None)


def _check_replays(game: pyspiel.Game, report: ConformanceReport, seed: int, matches: int = 3) -> None:
    """The ``replays`` check: matches recorded as their moves read back, replayed, as the same matches in full."""
    if not task.replays_from_moves(game):
        report.notes.append("replays: not checked: the game says its moves do not replay it (stored in full)")
        return
    if task.is_judged(game):  # a judge's verdicts are an exchange: such a match is stored in full
        return
    for index in range(matches):
        played = []
        for transcript in ("full", "moves"):
            bots = [_RandomViewer(s, np.random.default_rng([seed, index, s])) for s in range(game.num_players())]
            try:
                played.append(finished(play_match(game, bots, seed=index, transcript=transcript)))
            except TranscriptNotDerivable:  # free-text or other answers that are not plain moves: stored in full
                return
            except Exception:  # a game that fails while played fails the playouts' checks, not this one
                return
        full, moves = played
        if moves.transcript != "moves":  # stored in full (a judge may decide it): nothing to replay
            return
        report.count("replays")
        try:
            read = with_messages(MatchRecord.from_json(moves.to_json())).canonical()
        except RecordError as exc:
            read = {"error": str(exc)}
        if read != full.canonical():
            report.fail(
                "replays",
                f"match {index} stored as its moves does not read back as the match recorded in full (its views or "
                "move names depend on more than the moves and chance outcomes): set replays_from_moves = False on "
                "the game to store its matches in full",
            )
            return


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
    _check_replays(game, report, seed)
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
