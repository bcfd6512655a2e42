"""The schedule: every match of an experiment, each with a stable id.

A match id is a hash of the game string, the players in seat order (their full spec), the experiment
seed and the repeat number. It does not depend on the order in which the spec lists players or games,
so a resumed or extended run finds the matches it already has.

Pairing policies (``[experiment] pairing``):

* ``permute`` — the spec lists exactly as many players as the game has seats; each repeat seats them in
  a fresh random order drawn from the seed (seats are permuted across repeats);
* ``round_robin`` — every ordered choice of distinct players for the seats (for two-player games: all
  pairs, both orders), each played ``repeats`` times;
* ``combinations`` — every set of distinct players that fills the seats, seated in a fresh random order
  each repeat;
* ``self_play`` — seating with replacement, a player may fill several seats: for two seats every ordered
  pair, a player against itself included; for more seats every multiset of players, seated in a fresh random
  order each repeat (the empirical meta-game that α-Rank reads);
* ``fixed`` — the spec lists exactly as many players as the game has seats, and they sit in the order listed,
  every repeat (``deepeval-games play`` seats a person so: ``--seat 1`` is ``Player 1``);
* ``active`` — the seatings of ``round_robin`` (two seats) or ``combinations`` (more), but a repeat after the first
  ``repeats`` plays only complete round robins of windows of players whose adjacent order is still open, and the
  run stops by the anytime-valid rule (:mod:`analysis.stats.active`; the runner drives it, a pure function of the
  committed records);
* ``auto`` (default) — ``round_robin`` for a two-seat game with a first mover (sequential, both seats in one
  role: tic_tac_toe, kuhn_poker; not a game whose seats are roles), so that both seatings of every pair
  are played every repeat and the report shows what moving first is worth; otherwise ``permute`` when the players
  fill the seats exactly, else ``round_robin`` for two seats and ``combinations`` for more. A match id depends only
  on the game, the seats, the seed and the repeat: the seating ``permute`` drew for a repeat keeps its id under
  ``round_robin``, so a run planned before this rule resumes and plays only the other seating.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import logging
import math
from pathlib import Path

import numpy as np
import pyspiel

from deepeval_games.app.spec.experiment import MAX_MATCHES_CEILING, SweepRange
from deepeval_games.app.spec.extends import pool_names, stored_spec, with_pool
from deepeval_games.app.spec.plan import Plan, PlannedMatch
from deepeval_games.app.spec.players import PlayerSpec
from deepeval_games.app.spec.spec import ExperimentSpec
from deepeval_games.app.spec.stopping import StoppingRule
from deepeval_games.app.storage.admission import Admission
from deepeval_games.core import task
from deepeval_games.core.errors import DeepEvalError, SpecError
from deepeval_games.core.registry.games import check_file_parameters, load_game

__all__ = [
    "Plan",
    "PlanIndex",
    "PlannedMatch",
    "check_plan_size",
    "check_round_budget",
    "count_matches",
    "plan_matches",
    "stable_hash",
    "stored_admission",
]

log = logging.getLogger(__name__)


def _canonical_json(value: object) -> str:
    """The canonical JSON of ``value`` (sorted keys, Python's default separators; what :func:`stable_hash`
    hashes)."""
    return json.dumps(value, sort_keys=True, default=str)


def stable_hash(value: object, length: int = 20) -> str:
    """Hex sha256 of the canonical JSON of ``value``."""
    return hashlib.sha256(_canonical_json(value).encode()).hexdigest()[:length]


def _identity(player: PlayerSpec, game: pyspiel.Game, seat: int = 0) -> dict[str, object]:
    """A player's part of a match id; for an LLM, the version of the prompts it is given and its effective
    settings too (defaults resolved, the reply cap resolved against the task's limit for the seat's role), so a
    changed default never mixes into an old run directory."""
    identity = player.identity()
    if player.kind == "model":
        from llm_bots.adapters import adapter_for
        from llm_bots.model_config import effective_settings, resolve_max_tokens

        adapter = adapter_for(game)
        identity["prompt_version"] = adapter.prompt_version
        settings = effective_settings(player.params)
        if settings.get("context") == adapter.context_policy:  # the task's default: the identity it had before
            del settings["context"]
            played = identity["params"]
            assert isinstance(played, dict)
            identity["params"] = {k: v for k, v in played.items() if k != "context"}
        limit = task.reply_limit(game, task.seat_roles(game)[seat])
        settings["max_tokens"] = resolve_max_tokens(settings["max_tokens"], limit)
        identity["settings"] = settings
    return identity


def _has_first_mover(game: pyspiel.Game) -> bool:
    """Two seats, one role, moves in turn: which seat moves first matters, so both seatings are played."""
    sequential = game.get_type().dynamics == pyspiel.GameType.Dynamics.SEQUENTIAL
    return game.num_players() == 2 and sequential and len(set(task.seat_roles(game))) == 1


def _resolve_pairing(spec: ExperimentSpec, game: pyspiel.Game) -> str:
    if spec.pairing == "active":  # a repeat's candidates; the runner selects among them
        return "round_robin" if game.num_players() == 2 else "combinations"
    if spec.pairing != "auto":
        return spec.pairing
    seats = game.num_players()
    if len(spec.players) == seats and not _has_first_mover(game):
        return "permute"
    return "round_robin" if seats == 2 else "combinations"


def _seatings(
    spec: ExperimentSpec, loaded: pyspiel.Game, only_repeat: int | None = None
) -> list[tuple[int, tuple[str, ...]]]:
    game, seats = str(loaded), loaded.num_players()
    names = sorted(p.name for p in spec.players)  # listing order never matters
    if len(names) < seats:
        raise SpecError(f"{game} has {seats} seats but the spec lists only {len(names)} players")
    pairing = _resolve_pairing(spec, loaded)
    if pairing in ("permute", "fixed") and len(names) != seats:
        raise SpecError(f"pairing {pairing!r} needs exactly {seats} players for {game}, the spec lists {len(names)}")

    group_hashes: dict[tuple[str, ...], int] = {}  # one per group, not per repeat

    def shuffled(group: tuple[str, ...], repeat: int) -> tuple[str, ...]:
        if group not in group_hashes:
            group_hashes[group] = int(stable_hash([game, list(group)], 8), 16)
        entropy = [spec.seed, group_hashes[group], repeat]
        # default_rng(SeedSequence(entropy))'s stream, without default_rng's checks of its argument
        order = np.random.Generator(np.random.PCG64(np.random.SeedSequence(entropy))).permutation(len(group))
        return tuple(group[i] for i in order)

    out: list[tuple[int, tuple[str, ...]]] = []
    for repeat in range(spec.repeats) if only_repeat is None else (only_repeat,):
        if pairing == "permute":
            out.append((repeat, shuffled(tuple(names), repeat)))
        elif pairing == "fixed":
            out.append((repeat, tuple(p.name for p in spec.players)))
        elif pairing == "round_robin":
            out.extend((repeat, group) for group in itertools.permutations(names, seats))
        elif pairing == "self_play" and seats == 2:
            out.extend((repeat, group) for group in itertools.product(names, repeat=seats))
        elif pairing == "self_play":
            groups = itertools.combinations_with_replacement(names, seats)
            out.extend((repeat, shuffled(group, repeat)) for group in groups)
        else:
            out.extend((repeat, shuffled(group, repeat)) for group in itertools.combinations(names, seats))
    return out


def _sweep_size(spec: ExperimentSpec) -> int:
    """How many parameter combinations ``[experiment.sweep]`` makes (without listing them)."""
    sizes = [
        values.to - values.from_ + 1 if isinstance(values, SweepRange) else len(values)
        for values in spec.experiment.sweep.values()
    ]
    return math.prod(sizes)


def count_matches(spec: ExperimentSpec, *, repeats: int | None = None, stop_above: int | None = None) -> int:
    """How many matches :func:`plan_matches` plans for ``spec`` (with ``repeats`` instead of the spec's), counted
    without building the plan; past ``stop_above`` it stops and returns a number above it (a lower bound).

    Raises:
        SpecError, UnknownGameError: a game cannot be loaded or seated (as :func:`plan_matches` would).
    """
    repeats = spec.repeats if repeats is None else repeats
    lower = len(spec.games) * _sweep_size(spec) * repeats  # at least one seating per repeat
    if stop_above is not None and lower > stop_above:
        return lower
    keys = sorted(spec.sweep)
    total = 0
    for game_string, values in itertools.product(spec.games, itertools.product(*(spec.sweep[k] for k in keys))):
        overrides = dict(zip(keys, values, strict=True))
        check_file_parameters(game_string, overrides, data_dir=spec.experiment.data_dir)
        total += _seatings_per_repeat(spec, load_game(game_string, overrides)) * repeats
        if stop_above is not None and total > stop_above:
            return total
    return total


def _seatings_per_repeat(spec: ExperimentSpec, game: pyspiel.Game) -> int:
    """How many seatings of ``game`` one repeat plays (see :func:`_seatings`), without listing them."""
    players, seats = len(spec.players), game.num_players()
    if players < seats:
        raise SpecError(f"{game} has {seats} seats but the spec lists only {players} players")
    pairing = _resolve_pairing(spec, game)
    if pairing in ("permute", "fixed"):
        return 1
    if pairing == "self_play":
        return players**seats if seats == 2 else math.comb(players + seats - 1, seats)
    return math.perm(players, seats) if pairing == "round_robin" else math.comb(players, seats)


def _too_many(spec: ExperimentSpec, count: int, repeats: int) -> SpecError:
    limit = spec.experiment.max_matches
    fix = (
        "set [experiment] max_matches to at least that many to run them, or plan fewer"
        if count <= MAX_MATCHES_CEILING
        else f"no run may plan more than {MAX_MATCHES_CEILING:,}: split the experiment or plan fewer"
    )
    return SpecError(
        f"[experiment]: the spec plans at least {count:,} matches (games x sweep values x seatings x {repeats:,} "
        f"repeats), above the limit of {limit:,}; {fix}"
    )


def check_plan_size(spec: ExperimentSpec, *, repeats: int | None = None) -> int:
    """The number of planned matches (see :func:`count_matches`) if within ``[experiment] max_matches``.

    Raises:
        SpecError: the plan is larger: nothing is planned, played or written.
    """
    repeats = spec.repeats if repeats is None else repeats
    count = count_matches(spec, repeats=repeats, stop_above=spec.experiment.max_matches)
    if count > spec.experiment.max_matches:
        raise _too_many(spec, count, repeats)
    return count


def check_round_budget(spec: ExperimentSpec, rule: StoppingRule | None) -> None:
    """The adaptive stopping rule plays whole rounds and starts none that would pass its match budget: a budget
    below one round of every seating would play nothing at all, so it is an error before the run, not an empty run.

    Raises:
        SpecError: ``rule`` is adaptive and its ``budget_matches`` is below one round.
    """
    if rule is None or rule.rule != "adaptive" or rule.budget_matches is None:
        return
    first = len(plan_matches(spec, only_repeat=0))  # the round the rule plays first (a pool's new seatings only)
    if rule.budget_matches < first:
        raise SpecError(
            f"[experiment.until_stable] budget_matches = {rule.budget_matches} (eval's --max-matches) is below one "
            f"round of every seating ({first} matches), the least the stopping rule plays: no match would be played; "
            f"set it to at least {first}"
        )


def plan_matches(spec: ExperimentSpec, *, only_repeat: int | None = None) -> Plan:
    """Every match of the experiment, in a deterministic order (a :class:`~deepeval_games.app.spec.plan.Plan`: columns,
    each :class:`PlannedMatch` made when it is read); with ``only_repeat``, only the matches of that
    repeat (the same ids as in a plan with more repeats: a round of the adaptive stopping rule). A spec that
    ``extends`` a pool plans the seatings of pool and listed players that seat a player new to the pool
    (:mod:`deepeval_games.app.spec.extends`), with the ids a round robin of them all would give.

    Raises:
        SpecError: the plan would exceed ``[experiment] max_matches`` (checked before it is built), a game cannot
            be seated, a game parameter names a file outside ``[experiment] data_dir``, or the pool of ``extends``
            cannot be read or was played with other settings.
    """
    spec = with_pool(spec)
    pool = pool_names(spec)  # extending a study: only the seatings with a new player
    limit = spec.experiment.max_matches
    lower = len(spec.games) * _sweep_size(spec) * spec.repeats
    if lower > limit:  # before a sweep is spelled out
        raise _too_many(spec, lower, spec.repeats)
    plan = Plan()
    keys = sorted(spec.sweep)
    variants = [dict(zip(keys, values, strict=True)) for values in itertools.product(*(spec.sweep[k] for k in keys))]
    for game_string, overrides in itertools.product(spec.games, variants):
        check_file_parameters(game_string, overrides, data_dir=spec.experiment.data_dir)
        game = load_game(game_string, overrides)
        planned = len(plan) + _seatings_per_repeat(spec, game) * spec.repeats
        if planned > limit:  # before this game's seatings are listed
            raise _too_many(spec, planned, spec.repeats)
        canonical = str(game)
        # A match's key is {"game", "seats": [identities], "seed", "repeat"}, hashed as stable_hash(key, 64) hashes
        # it. Its canonical JSON is assembled here from parts made once per game (each identity's JSON once per
        # player and seat): the same text, without json.dumps walking the whole key for every match.
        prefix = f'{{"game": {_canonical_json(canonical)}, "repeat": '
        suffix = f'], "seed": {_canonical_json(spec.seed)}}}'
        identities: dict[tuple[str, int], str] = {}  # per player and seat of this game, not per match
        seatings: dict[tuple[str, ...], tuple[str, ...]] = {}  # one tuple per seating, not per match
        for repeat, listed in _seatings(spec, game, only_repeat):
            seats = seatings.setdefault(listed, listed)
            if pool and pool.issuperset(seats):
                continue
            for seat, name in enumerate(seats):
                if (name, seat) not in identities:
                    identities[name, seat] = _canonical_json(_identity(spec.player(name), game, seat))
            seated = ", ".join([identities[name, seat] for seat, name in enumerate(seats)])
            text = f'{prefix}{repeat}, "seats": [{seated}{suffix}'
            digest = hashlib.sha256(text.encode()).hexdigest()
            plan.append(digest[:20], canonical, seats, repeat, int(digest[20:36], 16) & (2**63 - 1))
    return plan


class PlanIndex:
    """A run's plan as a lookup by (match id, repeat): what :class:`~deepeval_games.app.storage.admission.Admission`
    checks a record read back against. The plan is made when first asked (a fresh run asks nothing), and made again
    with more repeats when a record names a later repeat (a run extended by its stopping rule, or resumed with more
    ``repeats``), as far as ``[experiment] max_matches`` allows: a repeat past it is in no plan."""

    def __init__(self, spec: ExperimentSpec, plan: Plan | None = None) -> None:
        """``plan``: ``spec``'s plan when the caller has made it already."""
        self.spec = spec
        self._given = plan
        self._plan = Plan()
        self._ids: dict[str, int] = {}
        self._repeats = 0
        """The repeats the plan covers (0: not made yet)."""
        self._ceiling: int | None = None
        """The first repeat no plan within ``max_matches`` reaches, once found."""

    def __call__(self, match_id: str, repeat: int) -> PlannedMatch | None:
        """The planned match of ``match_id`` (None when the plan has no such match of ``repeat``)."""
        if repeat < 0 or (self._ceiling is not None and repeat >= self._ceiling):
            return None
        if repeat >= self._repeats and not self._grow(repeat):
            return None
        index = self._ids.get(match_id)
        return None if index is None else self._plan[index]

    def _grow(self, repeat: int) -> bool:
        """Make the plan cover ``repeat`` (doubling the repeats it covers); False when no plan within the limit does.

        Raises:
            DeepEvalError: the plan cannot be made (a game that no longer loads, a pool that cannot be read).
        """
        if self._given is not None and self._repeats == 0 and repeat < self.spec.repeats:
            plan, repeats = self._given, self.spec.repeats
        else:
            plan, repeats = None, max(repeat + 1, self.spec.repeats, 2 * self._repeats)
            for tried in dict.fromkeys((repeats, repeat + 1)):
                try:
                    plan, repeats = plan_matches(self.spec.with_experiment(repeats=tried)), tried
                    break
                except SpecError:
                    if tried == repeat + 1:
                        self._ceiling = repeat if self._ceiling is None else min(self._ceiling, repeat)
                        return False
        assert plan is not None
        self._plan, self._repeats = plan, repeats
        self._ids = {match_id: i for i, match_id in enumerate(plan.match_ids())}
        return True


def stored_admission(run_dir: str | Path) -> Admission:
    """The admission of a run directory's records for a reader: against the plan of the spec it keeps (every check
    but the plan's when it keeps none that still plans)."""
    try:
        spec = stored_spec(run_dir)
        if spec is None:
            return Admission()
        index = PlanIndex(spec)
        index("", 0)  # made now: a plan that cannot be made is known before any record is read
    except DeepEvalError as exc:
        log.info("%s: its records are read without its plan, which cannot be made: %s", run_dir, exc)
        return Admission()
    return Admission(index)
