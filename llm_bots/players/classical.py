"""Classical baselines for any OpenSpiel game: ``random``, ``mcts`` and ``exact``, OpenSpiel's own players wrapped.

* ``random`` — a uniformly random legal move (any game with a finite move set): OpenSpiel's C++ uniform random bot
  (``pyspiel.make_uniform_random_bot``), seeded from the seat's generator.
* ``mcts`` — OpenSpiel's C++ Monte-Carlo tree search with random rollouts (``pyspiel.MCTSBot``) on
  perfect-information games (plain UCT, no MCTS-Solver: against weak play it keeps reaching for wins where a
  solver settles for a proven draw); on imperfect-information games OpenSpiel's information-set MCTS
  (``open_spiel.python.algorithms.ismcts``), which searches worlds resampled from the seat's information state, never
  the true hidden state, each resample drawn from the bot's own seeded generator. A game whose states
  OpenSpiel cannot resample (``liars_dice``, ``first_sealed_auction``) is refused. Parameters: ``simulations``
  (1000), ``uct_c`` (2.0), ``rollouts`` (1 random rollout per leaf).
* ``exact`` — a solved player for small two-player zero-sum sequential games: on deterministic
  perfect-information games OpenSpiel's minimax solver (``open_spiel.python.algorithms.minimax_solver``), on
  imperfect-information games the exact Nash policy of two-player Kuhn poker (``pyspiel.kuhn_poker``) or else the
  average policy of OpenSpiel's CFR (``pyspiel.CFRSolver``, ``iterations``), read by the seat's information state.
  A game with more than ``node_budget`` distinct states (``connect_four``) is refused. Solutions are cached per
  game string for the process.

Reproducibility: every kind gives the same moves for the same match seed. (OpenSpiel's C++ ``pyspiel.ISMCTSBot``
does not: it resamples worlds with an unseeded sampler, and two runs with the same seeds agreed on 28 of 60
kuhn_poker decisions. Its Python twin is used instead, its resampling drawn from the bot's generator.)

All three are :class:`~deepeval_games.core.bot.StateBot` s: trusted code that the referee hands the state (``mcts`` and
``exact`` a copy; ``random``, which only reads it, the live one). None reads views (``reads_views = False``): their
seats are sent the rules and the final view only, and the referee asks them through ``StateBot.pick`` without
building an observation. :func:`classical_support` says which of them can play a game, and why not.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyspiel

from deepeval_games.core import task
from deepeval_games.core.bot import Decision, DeepEvalBot, Observation, StateBot
from deepeval_games.core.errors import SpecError
from deepeval_games.core.registry.bots import register_bot

__all__ = [
    "DEFAULT_NODE_BUDGET",
    "ExactBot",
    "MCTSPlayer",
    "RandomBot",
    "classical_support",
    "count_states",
    "exact_refusal",
    "mcts_refusal",
]

DEFAULT_NODE_BUDGET = 100_000
"""Distinct states an exact solve may meet; a bigger game is refused (connect_four has about 4.5 trillion)."""

_Type = pyspiel.GameType


def _seed(rng: np.random.Generator) -> int:
    return int(rng.integers(0, 2**31 - 1))


def _short(game: pyspiel.Game) -> str:
    return str(game.get_type().short_name)


# -- which games each kind plays --------------------------------------------------------------------------------


_CHANCE_STEPS = 1000
"""Chance moves sampled before a seat's first move, at most (a deal of a few decks)."""


def _first_decision(game: pyspiel.Game) -> pyspiel.State | None:
    """The first state where a seat moves, chance outcomes drawn by a seeded generator (always the first outcome
    can loop for ever: crazy_eights re-offers a card it cannot deal); None when none is met."""
    rng = np.random.default_rng(0)
    state = game.new_initial_state()
    for _ in range(_CHANCE_STEPS):
        if state.is_terminal():
            return None
        if not state.is_chance_node():
            return state
        outcomes, probs = zip(*state.chance_outcomes(), strict=True)
        state.apply_action(int(rng.choice(outcomes, p=np.asarray(probs) / np.sum(probs))))
    return None


@contextlib.contextmanager
def _quiet_stderr() -> Iterator[None]:
    """Silence file descriptor 2 (OpenSpiel's C++ prints a refusal there before it raises)."""
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        with open(os.devnull, "w") as null:
            os.dup2(null.fileno(), 2)
            yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


_RESAMPLES: dict[str, bool] = {}


def _can_resample(game: pyspiel.Game) -> bool:
    """Whether OpenSpiel can resample a state of ``game`` from a seat's information state (probed once a game)."""
    key = str(game)
    if key not in _RESAMPLES:
        state = _first_decision(game)
        ok = state is not None
        if state is not None:
            try:
                with _quiet_stderr():
                    sampler = pyspiel.UniformProbabilitySampler(0, 0.0, 1.0)
                    state.resample_from_infostate(state.current_player(), sampler)
            except Exception:  # a SpielError: "ResampleFromInfostate() not implemented"
                ok = False
        _RESAMPLES[key] = ok
    return _RESAMPLES[key]


_PLAYOUT_STEPS = 200
"""Moves of the seeded random playout that :func:`random_refusal` tries."""


def random_refusal(game: pyspiel.Game) -> str | None:
    """Why ``random`` cannot play ``game`` (None: it can): the game says its legal actions are not its moves, or a
    seeded random playout of its first moves fails."""
    unlisted = task.unlisted_moves(game)
    if unlisted is not None:
        return f"random plays listed legal moves; {unlisted}"
    rng = np.random.default_rng(0)
    state = game.new_initial_state()
    try:
        with _quiet_stderr():
            for _ in range(_PLAYOUT_STEPS):
                if state.is_terminal():
                    break
                if state.is_chance_node():
                    outcomes, probs = zip(*state.chance_outcomes(), strict=True)
                    state.apply_action(int(rng.choice(outcomes, p=np.asarray(probs) / np.sum(probs))))
                elif state.is_simultaneous_node():
                    seats = range(game.num_players())
                    state.apply_actions([int(rng.choice(state.legal_actions(p) or [0])) for p in seats])
                else:
                    state.apply_action(int(rng.choice(state.legal_actions())))
    except Exception as exc:  # e.g. a game that has no legal-action list (crossword) or a mean-field node
        detail = str(exc).split("OpenSpiel exception:")[-1].strip().splitlines()[0][:120]
        return f"random plays legal moves; a random playout of {_short(game)} fails ({type(exc).__name__}: {detail})"
    return None


def mcts_refusal(game: pyspiel.Game) -> str | None:
    """Why ``mcts`` cannot play ``game`` (None: it can): a search needs every legal move listed, one mover at a
    time, and the true state to search or OpenSpiel's resampling of it."""
    unlisted = task.unlisted_moves(game)
    if unlisted is not None:
        return f"mcts searches listed legal moves; {unlisted}"
    game_type = game.get_type()
    if game_type.dynamics != _Type.Dynamics.SEQUENTIAL:
        return f"mcts plays games with one mover at a time; {_short(game)} has simultaneous moves"
    if game_type.information != _Type.Information.PERFECT_INFORMATION and not _can_resample(game):
        return (
            f"mcts on an imperfect-information game searches information sets (ISMCTS), which needs OpenSpiel to "
            f"resample a state from a seat's information state; {_short(game)} does not implement "
            "ResampleFromInfostate, and searching its true state would see hidden information"
        )
    return None


def _exact_shape_refusal(game: pyspiel.Game) -> str | None:
    game_type = game.get_type()
    if game.num_players() != 2 or game_type.utility != _Type.Utility.ZERO_SUM:
        return f"exact solves two-player zero-sum games; {_short(game)} is not one"
    if game_type.dynamics != _Type.Dynamics.SEQUENTIAL:
        return f"exact solves games with one mover at a time; {_short(game)} has simultaneous moves"
    perfect = game_type.information == _Type.Information.PERFECT_INFORMATION
    if perfect and game_type.chance_mode != _Type.ChanceMode.DETERMINISTIC:
        return f"exact (minimax) solves deterministic perfect-information games; {_short(game)} has chance moves"
    return None


def count_states(game: pyspiel.Game, budget: int) -> int | None:
    """The number of distinct states of ``game`` (by their strings), or None when it exceeds ``budget``."""
    seen: set[str] = set()
    stack = [game.new_initial_state()]
    while stack:
        state = stack.pop()
        key = str(state)
        if key in seen:
            continue
        seen.add(key)
        if len(seen) > budget:
            return None
        if state.is_terminal():
            continue
        actions = [a for a, _ in state.chance_outcomes()] if state.is_chance_node() else state.legal_actions()
        stack.extend(state.child(action) for action in actions)
    return len(seen)


def exact_refusal(game: pyspiel.Game, node_budget: int = DEFAULT_NODE_BUDGET, *, search: bool = True) -> str | None:
    """Why ``exact`` cannot play ``game`` (None: it can); with ``search=False`` only the game's type is checked."""
    reason = _exact_shape_refusal(game)
    if reason is not None or not search:
        return reason
    if count_states(game, node_budget) is None:
        return (
            f"exact solves small games only; {game} has more than {node_budget} distinct states "
            "(raise node_budget, or play mcts)"
        )
    return None


def classical_support(game: pyspiel.Game, *, search: bool = False) -> dict[str, str | None]:
    """Per classical bot kind, why it cannot play ``game`` (None: it can).

    With ``search=False`` (a quick listing) ``exact`` is judged by the game's type only, not by its size.
    """
    return {"random": random_refusal(game), "mcts": mcts_refusal(game), "exact": exact_refusal(game, search=search)}


# -- the bots ---------------------------------------------------------------------------------------------------


def _identity(bot: DeepEvalBot, **params: Any) -> dict[str, Any]:
    return {"kind": "classical", "class": type(bot).__name__, **params}


@register_bot("random")
class RandomBot(StateBot):
    """A uniformly random legal move (any game whose moves are a finite set): OpenSpiel's own uniform random bot
    (``pyspiel.make_uniform_random_bot``), its move drawn in C++, seeded once from the bot's generator.

    It reads the state's legal moves and nothing else (no view: :attr:`reads_views` is False), and never changes the
    state (the referee hands it the live one). Same seed, same moves; the C++ draw (``std::mt19937`` through
    ``std::uniform_int_distribution``) is the standard library's, so a wheel built with another C++ library (macOS's
    libc++) may draw other moves from the same seed, as OpenSpiel's MCTS may.
    """

    reads_views = False
    copies_state = False

    def __init__(
        self, player_id: int, rng: np.random.Generator | None = None, *, game: pyspiel.Game | None = None
    ) -> None:
        super().__init__(player_id, rng, game=game)
        unlisted = task.unlisted_moves(game) if game is not None else None
        if unlisted is not None:
            raise SpecError(f"random plays listed legal moves; {unlisted}")
        self._bot = pyspiel.make_uniform_random_bot(player_id, _seed(self.rng))

    def choose(self, state: pyspiel.State) -> int:
        if not state.legal_actions(self.player_id):  # OpenSpiel's bot would index an empty list (a crash)
            raise ValueError(f"seat {self.player_id} has no legal move in this state")
        return int(self._bot.step(state))

    def pick(self, state: pyspiel.State, legal: list[int]) -> int:
        return int(self._bot.step(state))  # the referee checked that the seat has a legal move

    def respond(self, observation: Observation) -> Decision:
        """A uniformly random legal move of an observation, from the bot's generator (for callers that hold an
        observation and no state; the referee uses :meth:`pick`)."""
        legal = observation.legal_actions
        action = int(legal[int(self.rng.integers(len(legal)))])
        return Decision.move(action, observation.action_to_string(action))

    async def act(self, observation: Observation) -> Decision:
        return self.respond(observation)

    def identity(self) -> dict[str, Any]:
        return _identity(self)


def _seeded_ismcts(
    game: pyspiel.Game, random_state: np.random.RandomState, *, simulations: int, uct_c: float, rollouts: int
) -> pyspiel.Bot:
    """OpenSpiel's Python ISMCTS, its worlds resampled from ``random_state`` (so a seed gives the same moves).

    The final policy is the normalized visit count, sampled: mixed play where the search finds it, as poker needs.
    """
    from open_spiel.python.algorithms import ismcts, mcts

    class SeededISMCTS(ismcts.ISMCTSBot):
        def resample_from_infostate(self, state: pyspiel.State) -> pyspiel.State:
            sampler = pyspiel.UniformProbabilitySampler(int(random_state.randint(2**31 - 1)), 0.0, 1.0)
            return state.resample_from_infostate(state.current_player(), sampler)

    evaluator = mcts.RandomRolloutEvaluator(rollouts, random_state)
    return SeededISMCTS(
        game,
        evaluator,
        uct_c,
        simulations,
        random_state=random_state,
        final_policy_type=ismcts.ISMCTSFinalPolicyType.NORMALIZED_VISITED_COUNT,
        # a game with no information-state string (an adapted PettingZoo game): its nodes by the seat's observation
        use_observation_string=not game.get_type().provides_information_state_string,
    )


def _python_game(game: pyspiel.Game) -> bool:
    """Whether ``game`` is written in Python (OpenSpiel's own C++ games are classes of the ``pyspiel`` module)."""
    return type(game).__module__.split(".", 1)[0] != "pyspiel"


@register_bot("mcts")
class MCTSPlayer(StateBot):
    """OpenSpiel's MCTS with random rollouts; information-set MCTS on imperfect-information games."""

    reads_views = False

    def __init__(
        self,
        player_id: int,
        rng: np.random.Generator | None = None,
        *,
        game: pyspiel.Game,
        simulations: int = 1000,
        uct_c: float = 2.0,
        rollouts: int = 1,
    ) -> None:
        super().__init__(player_id, rng, game=game)
        if int(simulations) < 1 or int(rollouts) < 1 or float(uct_c) <= 0:
            raise ValueError(
                f"simulations and rollouts must be >= 1 and uct_c > 0 (got {simulations}, {rollouts}, {uct_c})"
            )
        reason = mcts_refusal(game)
        if reason is not None:
            raise SpecError(reason)
        self.information_sets = game.get_type().information != _Type.Information.PERFECT_INFORMATION
        self.params: dict[str, Any] = {
            "search": "ismcts-seeded" if self.information_sets else "mcts",  # in match ids: what searched
            "simulations": int(simulations),
            "uct_c": float(uct_c),
            "rollouts": int(rollouts),
        }
        self.search: pyspiel.Bot
        if self.information_sets:
            state_rng = np.random.RandomState(_seed(self.rng))
            self.search = _seeded_ismcts(
                game, state_rng, simulations=int(simulations), uct_c=float(uct_c), rollouts=int(rollouts)
            )
        elif _python_game(game):
            # OpenSpiel's C++ search crashes on a game written in Python (its clones outlive their Python side):
            # its Python search, the same algorithm, seeded from the bot's generator
            from open_spiel.python.algorithms import mcts

            self.params["search"] = "mcts-python"
            state_rng = np.random.RandomState(_seed(self.rng))
            self.search = mcts.MCTSBot(
                game,
                float(uct_c),
                int(simulations),
                mcts.RandomRolloutEvaluator(int(rollouts), state_rng),
                solve=False,
                random_state=state_rng,
            )
        else:
            evaluator = pyspiel.RandomRolloutEvaluator(int(rollouts), _seed(self.rng))
            self.search = pyspiel.MCTSBot(
                game, evaluator, float(uct_c), int(simulations), 1000, False, _seed(self.rng), False
            )

    def choose(self, state: pyspiel.State) -> int:
        return int(self.search.step(state))

    def identity(self) -> dict[str, Any]:
        return _identity(self, **self.params)


@dataclass(frozen=True)
class _Solution:
    """A solved game: minimax action values by state string, or a policy by information-state string."""

    minimax: Any = None
    """``MinimaxSolver`` with its table filled (perfect information)."""
    policy: Mapping[str, list[tuple[int, float]]] | None = None
    """Information-state string -> (action, probability) (imperfect information)."""
    method: str = ""


_SOLVED: dict[tuple[str, int, int], _Solution] = {}


def _solve(game: pyspiel.Game, node_budget: int, iterations: int) -> _Solution:
    key = (str(game), node_budget, iterations)
    if key in _SOLVED:
        return _SOLVED[key]
    reason = exact_refusal(game, node_budget)
    if reason is not None:
        raise SpecError(reason)
    if game.get_type().information == _Type.Information.PERFECT_INFORMATION:
        from open_spiel.python.algorithms.minimax_solver import MinimaxSolver

        solver = MinimaxSolver(str(game))
        solver.solve()
        solution = _Solution(minimax=solver, method="minimax")
    elif _short(game) == "kuhn_poker":
        table = pyspiel.kuhn_poker.get_optimal_policy(0.0).policy_table()
        solution = _Solution(policy=dict(table), method="kuhn_poker exact Nash")
    else:
        cfr = pyspiel.CFRSolver(game)
        for _ in range(iterations):
            cfr.evaluate_and_update_policy()
        solution = _Solution(policy=dict(cfr.tabular_average_policy().policy_table()), method=f"cfr {iterations}")
    _SOLVED[key] = solution
    return solution


@register_bot("exact")
class ExactBot(StateBot):
    """A solved player for small two-player zero-sum games: minimax, or a Nash/CFR policy by information state."""

    reads_views = False

    def __init__(
        self,
        player_id: int,
        rng: np.random.Generator | None = None,
        *,
        game: pyspiel.Game,
        node_budget: int = DEFAULT_NODE_BUDGET,
        iterations: int = 1000,
    ) -> None:
        super().__init__(player_id, rng, game=game)
        if int(node_budget) < 1 or int(iterations) < 1:
            raise ValueError(f"node_budget and iterations must be >= 1 (got {node_budget}, {iterations})")
        self.solution = _solve(game, int(node_budget), int(iterations))

    def choose(self, state: pyspiel.State) -> int:
        legal = state.legal_actions(self.player_id)
        if self.solution.minimax is not None:
            values = self.solution.minimax.action_values_from_state(state)
            best = max(values[a] for a in legal)
            return int(self.rng.choice([a for a in legal if values[a] >= best - 1e-9]))
        assert self.solution.policy is not None
        key = state.information_state_string(self.player_id)  # the seat's information only
        actions, probs = zip(*[(a, p) for a, p in self.solution.policy[key] if a in legal], strict=True)
        weights = np.asarray(probs, dtype=float)
        if weights.sum() <= 0:
            weights = np.ones(len(actions))
        return int(self.rng.choice(actions, p=weights / weights.sum()))

    def identity(self) -> dict[str, Any]:
        return _identity(self, method=self.solution.method)


# -- the listing of OpenSpiel's games ----------------------------------------------------------------------------


def family_listing(prefix: str | None = None, *, progress: Callable[[str], None] | None = None) -> list[str]:
    """Per registered game family (:func:`deepeval_games.core.registry.games.register_game_family`: another library's
    environments), a header, then one line per environment it finds: who can play it (an LLM seat, probed by a
    playout; the classical bots), or why nothing can. ``prefix``: that family alone (``"textarena:"``);
    ``progress``: called with each environment's name before it is probed."""
    from deepeval_games.core.binding import playability
    from deepeval_games.core.registry.games import game_families, load_game

    lines = []
    for family in game_families():
        if prefix is not None and family.prefix != prefix:
            continue
        rows = family.listing()
        lines.append(f"\n{family.description} ({family.prefix}..., {len(rows)} found):")
        for name, refusal in rows:
            if progress is not None:
                progress(name)
            if refusal is None:
                try:
                    with _quiet_stderr():
                        game = load_game(name)
                        playable = playability(game)
                        support = classical_support(game)
                except Exception as exc:  # an environment that fails only when played
                    refusal = f"{type(exc).__name__}: {str(exc)[:160]}"
            if refusal is not None:
                lines.append(f"{name}  [refused: {refusal.splitlines()[0]}]")
                continue
            who = ["LLM"] if playable.ok else []
            who += [kind for kind, reason in support.items() if reason is None and kind != "exact"]
            why = [f"{kind}: {reason}" for kind, reason in support.items() if reason is not None and kind != "exact"]
            if not playable.ok:
                why.insert(0, f"LLM: {playable.reason.splitlines()[0]}")
            lines.append(f"{name}  [playable by {', '.join(who) or 'nobody'}]{_family_notes(game)}")
            lines.extend(f"    not {line}" for line in why)
    return lines


def _family_notes(game: pyspiel.Game) -> str:
    """What a listing line adds about a game beyond who plays it: its seats where they are not two, whether its
    state is public, whether it needs a judge."""
    game_type = game.get_type()
    low, high, seats = game_type.min_num_players, game_type.max_num_players, game.num_players()
    notes = []
    if seats != 2 or low != high:
        notes.append(f"{seats} player{'s' * (seats != 1)}" + (f", players={low}..{high}" if low != high else ""))
    if game_type.information == _Type.Information.PERFECT_INFORMATION:
        notes.append("perfect information")
    if task.is_judged(game):
        notes.append("judged: the spec's judge answers it")
    return f" ({'; '.join(notes)})" if notes else ""


def openspiel_listing(*, progress: Callable[[str], None] | None = None) -> list[str]:
    """Two lines per OpenSpiel game (not the ``deepeval_`` tasks): its parameters, whether an LLM seat can play it
    (probed by a playout, :func:`deepeval_games.core.binding.playability`), and which classical bots play it.
    ``progress``: called with each game's name before it is probed.

    ``exact`` is judged by the game's type only here; whether a game is small enough is found when a spec names it.
    """
    from deepeval_games.core.binding import playability

    lines = []
    for game_type in sorted(pyspiel.registered_games(), key=lambda t: t.short_name):
        name = game_type.short_name
        if name.startswith("deepeval_") or name.startswith("testkit_") or ":" in name:  # ":": a game family's
            continue
        if progress is not None:
            progress(name)
        params = ", ".join(  # a multi-line value (a grid) on one line, so every entry is two lines
            f"{k}={v}".replace("\n", "\\n") for k, v in sorted(game_type.parameter_specification.items())
        )
        params = params or "(no parameters)"
        try:
            with _quiet_stderr():  # OpenSpiel's C++ prints each refusal before it raises
                game = pyspiel.load_game(name)
                playable = playability(game)
                support = classical_support(game)
        except Exception as exc:  # a game that needs a parameter (efg_game's filename) or cannot load alone
            detail = str(exc).split("OpenSpiel exception:")[-1].strip().splitlines()[0][:120] if str(exc) else ""
            lines += [f"{name}  (not loadable with its defaults: {detail})", f"    {params}"]
            continue
        llm = "LLM: yes" if playable.ok else f"LLM: no ({playable.reason.splitlines()[0]})"
        bots = [kind + ("*" if kind == "exact" else "") for kind, reason in support.items() if reason is None]
        lines += [f"{name}  [{llm}; classical: {', '.join(bots) or 'none'}]", f"    {params}"]
    return lines
