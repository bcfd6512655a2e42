"""Ratings from match results, for any number of seats, per role for asymmetric tasks.

* Two seats, one role (symmetric): each match is a comparison: the seat with the higher payoff wins, equal payoffs
  are a draw (half a win each). Bradley–Terry strengths are fitted (:func:`fit_strengths`) and reported on the Elo
  scale (400 · log10 of the strength, centred on the mean); beside each rating the player's share
  of the points (win 1, draw 1/2) with its fixed-n betting 95% interval on [0, 1] (:func:`points_share`), valid at any
  number of matches (a rating fitted from few matches has no interval that holds at small n: the share is what the
  matches can vouch for); sequential Elo beside it.
* Any number of seats, one role (the four-seat Public Goods Game): a Plackett–Luce rating from each match's order of
  payoffs, fitted in one pass from every pair of seats of every match, with its standard error
  (:func:`plackett_luce`).
* Asymmetric tasks (Code Review, Translation) are rated per role and never across roles (a programmer's payoff is
  not comparable with a reviewer's): within a role, two players are compared when they played that role against
  the same opponents on the same data item and repeat, a paired comparison, and Bradley–Terry strengths are fitted
  per role by ``choix`` (:func:`role_ratings`).
* α-Rank (:func:`alpha_rank`, OpenSpiel's ``open_spiel.python.egt.alpharank``) over the empirical meta-game payoff
  table (:func:`meta_game`): one population for symmetric games (a matrix for two seats, a heuristic payoff table for
  more), one population per role for asymmetric two-seat games. It needs the payoff of every seating with
  replacement, self-play included: ``pairing = "self_play"``. Nash averaging (:func:`nash_averaging`, OpenSpiel's
  ``open_spiel.python.algorithms.nash_averaging``, which needs ``cvxpy``: ``pip install deepeval-games[nash]``) of
  symmetric two-seat meta-games.

Only complete matches count. Self-play matches (a player against itself) are no comparison and are skipped by the
comparison-based ratings; α-Rank uses them.
"""

from __future__ import annotations

import itertools
from array import array
from collections import defaultdict
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

import numpy as np

from analysis import views
from analysis.stats.confseq import Interval
from analysis.stats.intervals import OLD_POLICY, IntervalPolicy
from deepeval_games.core.records import MatchRecord
from deepeval_games.core.registry.games import game_variant

__all__ = [
    "ELO",
    "AlphaRank",
    "MetaGame",
    "PairedComparison",
    "Rating",
    "alpha_rank",
    "alpha_rank_records",
    "bradley_terry",
    "elo",
    "fit_strengths",
    "meta_game",
    "nash_averaging",
    "paired_comparison",
    "pairwise_outcomes",
    "plackett_luce",
    "points_share",
    "role_ratings",
]


def _roles(record: MatchRecord) -> list[str]:
    return list(record.roles) or ["player"] * len(record.seats)


def _symmetric(record: MatchRecord) -> bool:
    return len(set(_roles(record))) <= 1


def pairwise_outcomes(records: Iterable[MatchRecord]) -> list[tuple[str, str, float]]:
    """(a, b, score of a) for every completed two-seat match of one role between two different players: 1 win,
    0.5 draw, 0 loss. Matches whose seats play different roles are no comparison (see :func:`role_ratings`)."""
    out = []
    for record in records:
        if record.status != "complete" or len(record.seats) != 2 or not _symmetric(record):
            continue
        if record.seats[0] == record.seats[1]:
            continue
        a, b = record.seats
        ra, rb = record.returns
        out.append((a, b, 1.0 if ra > rb else 0.5 if ra == rb else 0.0))
    return out


def fit_strengths(wins: np.ndarray, *, prior: float = 0.0, precision: float = 0.0, iterations: int = 100) -> np.ndarray:
    """Bradley–Terry strengths of the players of ``wins`` (``wins[i, j]``: how often ``i`` beat ``j``; fractions
    allowed, a draw being half a win each way) as natural-log strengths centred on 0: the maximum of the likelihood
    with ``prior`` virtual draws between every two players and a normal prior of ``precision`` on each strength
    (either keeps the fit finite when a player never lost or never won), by Newton's method from 0 (at most
    ``iterations`` steps; the same data give the same strengths). ``choix.ilsr_pairwise_dense`` finds the same
    maximum (``tests/test_ratings.py``); it is not called here because importing it (it imports ``scipy.stats``)
    costs more than a run's whole summary (``bench/README.md``)."""
    size = len(wins)
    counts = np.asarray(wins, dtype=float) + prior * (1 - np.eye(size)) / 2
    games = counts + counts.T
    # without a normal prior the strengths' common shift is seen by no comparison: the steps are taken centred
    centre = np.full((size, size), 0.0 if precision > 0 else 1.0 / max(size, 1))
    theta = np.zeros(size)
    for _ in range(iterations):
        chance = 1.0 / (1.0 + np.exp(theta[None, :] - theta[:, None]))  # [i, j]: i beats j
        gradient = (counts - games * chance).sum(axis=1) - precision * theta
        weight = games * chance * (1.0 - chance)
        step = np.linalg.solve(np.diag(weight.sum(axis=1) + precision) - weight + centre, gradient)
        theta += step
        if np.abs(step).max() < 1e-10:
            break
    return theta if precision > 0 else theta - theta.mean()  # (a normal prior's maximum is centred already)


ELO = 400.0 / np.log(10.0)
"""Elo points per unit of natural-log strength (a strength ratio of 10 is 400 points)."""


def bradley_terry(records: Iterable[MatchRecord], *, iterations: int = 500, prior: float = 0.5) -> dict[str, float]:
    """Bradley–Terry ratings on the Elo scale (centred on 0) of :func:`pairwise_outcomes`, fitted by
    :func:`fit_strengths`; ``prior`` adds that many virtual draws against every opponent."""
    games = pairwise_outcomes(records)
    players = sorted({p for a, b, _ in games for p in (a, b)})
    if not players:
        return {}
    index = {p: i for i, p in enumerate(players)}
    n = len(players)
    wins = np.zeros((n, n))
    for a, b, score in games:
        wins[index[a], index[b]] += score
        wins[index[b], index[a]] += 1.0 - score
    elo_scale = ELO * fit_strengths(wins, prior=prior, iterations=iterations)
    return {p: float(elo_scale[index[p]]) for p in players}


def elo(records: Iterable[MatchRecord], *, k: float = 16.0, start: float = 1500.0) -> dict[str, float]:
    """Sequential Elo over the matches in the order given (depends on that order, unlike Bradley–Terry)."""
    rating: dict[str, float] = defaultdict(lambda: start)
    for a, b, score in pairwise_outcomes(records):
        expected = 1.0 / (1.0 + 10 ** ((rating[b] - rating[a]) / 400.0))
        rating[a] += k * (score - expected)
        rating[b] -= k * (score - expected)
    return dict(rating)


def _ordered(records: Iterable[MatchRecord]) -> Sequence[MatchRecord]:
    """Complete records in the order of repetition (repeat, game, match id): the same for any listing order."""
    return views.in_repetition_order(views.complete(records))


def points_share(records: Iterable[MatchRecord], *, policy: IntervalPolicy = OLD_POLICY) -> dict[str, Interval]:
    """Each player's share of the points of its comparisons (:func:`pairwise_outcomes`: win 1, draw 1/2, loss 0),
    with the 95% interval of ``policy``
    (:meth:`~analysis.stats.intervals.IntervalPolicy.points_interval`: the fixed-n betting one on [0, 1] in
    version 1, the exact one on 0, 1/2, 1 after), over its matches in the order of repetition. Against a mix of
    opponents it is the share over that schedule."""
    points: dict[str, list[float]] = defaultdict(list)
    for a, b, score in pairwise_outcomes(_ordered(records)):
        points[a].append(score)
        points[b].append(1.0 - score)
    return {name: policy.points_interval(values) for name, values in sorted(points.items())}


@dataclass(frozen=True)
class Rating:
    """A Plackett–Luce rating (:func:`plackett_luce`): strength ``mu`` on the Elo scale, centred on 0, with its
    standard error ``sigma`` on the same scale."""

    mu: float
    sigma: float
    matches: int

    @property
    def ordinal(self) -> float:
        """A conservative skill estimate, ``mu - 3 sigma`` (what rankings sort by)."""
        return self.mu - 3.0 * self.sigma


def plackett_luce(records: Iterable[MatchRecord], *, task: str | None = None, prior: float = 0.5) -> dict[str, Rating]:
    """Plackett–Luce ratings from every complete one-role match of any number of seats, fitted in one pass.

    Each match ranks its seats by payoff. Under the Plackett–Luce model the chance that one seat finishes above
    another is the Bradley–Terry chance of their strengths, so every two seats of a match are a comparison (equal
    payoffs a draw, half a win each way) and the strengths are the maximum of the likelihood of all those pairs
    (a composite likelihood, consistent for the Plackett–Luce strengths), fitted by :func:`fit_strengths` with
    ``prior`` virtual draws between every two players; for two seats it is :func:`bradley_terry`. The fit does not
    depend on the order of the matches. ``sigma`` is the robust (sandwich) standard error of the composite
    likelihood, which counts the pairs of one match as the dependent comparisons they are. ``task`` keeps one game
    variant. Matches in which a player fills several seats (self-play) are skipped.

    Raises:
        ValueError: a record has seats of different roles (rate those per role with :func:`role_ratings`).
    """
    by_size: dict[int, tuple[list[list[str]], array[float]]] = defaultdict(lambda: ([], array("d")))
    for record in records:
        if record.status != "complete" or (task is not None and game_variant(record.game) != task):
            continue
        if not _symmetric(record):
            raise ValueError(
                f"match {record.match_id} has seats of different roles {sorted(set(_roles(record)))}: "
                "rate asymmetric tasks per role (role_ratings)"
            )
        if len(set(record.seats)) == len(record.seats) > 1:
            seats, returns = by_size[len(record.seats)]
            seats.append(record.seats)
            returns.extend(record.returns)  # one array of doubles a seat count: no object a match
    players = sorted({name for seats, _ in by_size.values() for match in seats for name in match})
    if not players:
        return {}
    index = {name: i for i, name in enumerate(players)}
    groups = [  # per number of seats: the players' indices and the payoffs (read in place), one array each
        (
            np.fromiter(
                (index[name] for match in seats for name in match), dtype=np.int32, count=len(seats) * size
            ).reshape(len(seats), size),
            np.frombuffer(returns, dtype=float).reshape(len(seats), size),
        )
        for size, (seats, returns) in by_size.items()
    ]
    by_size.clear()  # the seats' lists (the payoffs stay, read by the groups)
    wins = np.zeros((len(players), len(players)))
    for pair_seats, outcome in _seat_pairs(groups):
        np.add.at(wins, (pair_seats[:, 0], pair_seats[:, 1]), outcome)
        np.add.at(wins, (pair_seats[:, 1], pair_seats[:, 0]), 1.0 - outcome)
    theta = fit_strengths(wins, prior=prior)
    sigma = ELO * np.sqrt(np.clip(np.diag(_sandwich(theta, wins, groups, prior)), 0.0, None))
    matches = np.zeros(len(players), dtype=np.int64)
    for indices, _ in groups:  # a seat at a time (no array of every seat of every match at once)
        for column in indices.T:
            matches += np.bincount(column, minlength=len(players))
    return {name: Rating(float(ELO * theta[i]), float(sigma[i]), int(matches[i])) for name, i in sorted(index.items())}


def _seat_pairs(groups: Sequence[tuple[np.ndarray, np.ndarray]]) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """Per group of matches of one seat count (player indices, payoffs; a row a match) and per two seats ``i < j``:
    the two players of every match (a column each) and the first one's outcome (1 above, 1/2 equal, 0 below)."""
    for seats, returns in groups:
        for i, j in itertools.combinations(range(seats.shape[1]), 2):
            outcome = (returns[:, i] > returns[:, j]) + 0.5 * (returns[:, i] == returns[:, j])
            yield seats[:, [i, j]], outcome


def _sandwich(
    theta: np.ndarray, wins: np.ndarray, groups: Sequence[tuple[np.ndarray, np.ndarray]], prior: float
) -> np.ndarray:
    """The sandwich covariance ``H+ J H+`` of the centred strengths ``theta``: ``H`` the information of every pair
    (the prior's virtual draws included), ``J`` the sum over matches of the outer product of each match's score."""
    size = len(theta)
    chance = 1.0 / (1.0 + np.exp(theta[None, :] - theta[:, None]))  # [a, b]: a above b
    weight = (wins + wins.T + prior * (1 - np.eye(size))) * chance * chance.T  # comparisons x p (1 - p)
    information = np.diag(weight.sum(axis=1)) - weight
    spread = np.zeros((size, size))
    for seats, returns in groups:
        for start in range(0, len(seats), _CHUNK):
            part = slice(start, start + _CHUNK)
            rows = np.arange(len(seats[part]))
            score = np.zeros((len(rows), size))  # each match's score: the sum of its pairs' residuals
            for pair_seats, outcome in _seat_pairs([(seats[part], returns[part])]):
                residual = outcome - chance[pair_seats[:, 0], pair_seats[:, 1]]
                np.add.at(score, (rows, pair_seats[:, 0]), residual)
                np.add.at(score, (rows, pair_seats[:, 1]), -residual)
            spread += score.T @ score
    inverse = np.linalg.pinv(information)
    return np.asarray(inverse @ spread @ inverse)


_CHUNK = 4096
"""Matches whose scores are held at once by :func:`_sandwich`."""


def role_ratings(
    records: Iterable[MatchRecord], *, task: str | None = None, regularisation: float = 0.01
) -> dict[str, dict[str, float]]:
    """Per role, Bradley–Terry ratings (Elo scale, centred) from paired comparisons within that role.

    Two players are compared in a role when each played it in a match of the same game string (data item
    included), the same repeat and the same opponents in the other seats (by role): a paired comparison on a
    shared item. The one with the higher payoff wins; equal payoffs count half a win each way. Fitted by
    ``choix.ilsr_pairwise``. ``task`` keeps one game variant. Roles with fewer than two compared players are left
    out.
    """
    import choix

    groups = _paired_groups(records, task)
    comparisons: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for (role, *_), entries in sorted(groups.items()):
        for (a, pa), (b, pb) in itertools.combinations(entries, 2):
            if a == b:
                continue
            if pa >= pb:
                comparisons[role].append((a, b))
            if pb >= pa:
                comparisons[role].append((b, a))
    out: dict[str, dict[str, float]] = {}
    for role, pairs in sorted(comparisons.items()):
        players = sorted({name for pair in pairs for name in pair})
        if len(players) < 2:
            continue
        index = {name: i for i, name in enumerate(players)}
        params = choix.ilsr_pairwise(
            len(players), [(index[win], index[lose]) for win, lose in pairs], alpha=regularisation
        )
        elo_scale = 400.0 / np.log(10.0) * (params - params.mean())
        out[role] = {name: float(elo_scale[index[name]]) for name in players}
    return out


def _paired_groups(
    records: Iterable[MatchRecord], task: str | None
) -> dict[tuple[str, str, str, int, tuple[tuple[str, str], ...]], list[tuple[str, float]]]:
    """(role, game string, repeat, opponents by role) -> (player, payoff) of every seat that played it."""
    groups: dict[tuple[str, str, str, int, tuple[tuple[str, str], ...]], list[tuple[str, float]]] = defaultdict(list)
    for record in _ordered(records):
        if task is not None and game_variant(record.game) != task:
            continue
        roles = _roles(record)
        for seat, (name, role, payoff) in enumerate(zip(record.seats, roles, record.returns, strict=True)):
            others = tuple(sorted((roles[i], record.seats[i]) for i in range(len(roles)) if i != seat))
            groups[(role, game_variant(record.game), record.game, record.repeat, others)].append((name, float(payoff)))
    return groups


@dataclass(frozen=True)
class PairedComparison:
    """Two players' payoffs on the same items (data item, repeat, opponents), in one role, with a paired test."""

    a: str
    b: str
    role: str
    pairs: int
    """Items both played."""
    mean_difference: float
    """Mean of (payoff of ``a`` - payoff of ``b``) over the items."""
    p_value: float
    """Two-sided Wilcoxon signed-rank test of a zero median difference (1.0 when every difference is 0)."""


def paired_comparison(
    records: Iterable[MatchRecord], a: str, b: str, *, role: str = "player", task: str | None = None
) -> PairedComparison:
    """Compare players ``a`` and ``b`` in ``role`` on the items both played: the same game string (so the same
    data item: start idiom, MBPP task, paragraph), repeat and opponents in the other seats. A player filling several
    seats of one item counts by its mean payoff there.

    Raises:
        ValueError: no item was played by both.
    """
    from scipy.stats import wilcoxon

    differences = []
    for (group_role, *_), entries in sorted(_paired_groups(records, task).items()):
        if group_role != role:
            continue
        mine = [p for name, p in entries if name == a]
        theirs = [p for name, p in entries if name == b]
        if mine and theirs:
            differences.append(float(np.mean(mine) - np.mean(theirs)))
    if not differences:
        raise ValueError(f"{a} and {b} never played the same item in role {role!r}")
    values = np.asarray(differences)
    p_value = 1.0 if not values.any() else float(wilcoxon(values, zero_method="zsplit").pvalue)
    return PairedComparison(a, b, role, int(values.size), float(values.mean()), p_value)


@dataclass(frozen=True)
class MetaGame:
    """The empirical meta-game of one game variant: mean payoffs of every seating, one population per role.

    ``tables`` follow ``open_spiel.python.egt``: for a symmetric two-seat game one matrix (row player's mean payoff
    against the column player); for a symmetric game of more seats one heuristic payoff table (rows: how many
    seats each strategy fills, then each strategy's mean payoff there); for an asymmetric two-seat game one
    matrix per role, indexed [strategy of role 0, strategy of role 1].
    """

    players: tuple[str, ...]
    roles: tuple[str, ...]
    """The populations: one ``player`` role for symmetric games, else the seats' roles in seat order."""
    tables: tuple[np.ndarray, ...]
    heuristic: bool = False
    """Whether ``tables`` holds one heuristic payoff table (symmetric, more than two seats)."""


def _missing(what: str) -> ValueError:
    return ValueError(
        f"the meta-game lacks {what}: α-Rank needs every seating with replacement, self-play included "
        "(pairing = 'self_play')"
    )


def meta_game(records: Iterable[MatchRecord], *, task: str | None = None) -> MetaGame:
    """The empirical meta-game payoff table of one game variant (see :class:`MetaGame`).

    Raises:
        ValueError: no complete match, several variants without ``task``, or a seating that was never played.
    """
    done = views.select(records, lambda r: r.status == "complete" and (task is None or game_variant(r.game) == task))
    if not done:
        raise ValueError("no complete matches to build a meta-game from")
    variants = {game_variant(r.game) for r in done}
    if len(variants) > 1:
        raise ValueError(f"records of several game variants {sorted(variants)}: pick one with task=")
    players = tuple(sorted({name for r in done for name in r.seats}))
    index = {name: i for i, name in enumerate(players)}
    k, seats = len(players), len(done[0].seats)
    symmetric = all(_symmetric(r) for r in done)
    if symmetric and not any(r.seats == [players[0]] * seats for r in done):  # the first seating checked below,
        # looked for before anything is counted: most runs lack self-play
        raise _missing(
            f"a match of {players[0]} against {players[0]}" if seats == 2 else f"the seating {[players[0]] * seats}"
        )
    done = _ordered(done)
    if symmetric:
        if seats == 2:
            total, count = np.zeros((k, k)), np.zeros((k, k))
            for r in done:
                a, b = index[r.seats[0]], index[r.seats[1]]
                total[a, b] += r.returns[0]
                count[a, b] += 1
                total[b, a] += r.returns[1]
                count[b, a] += 1
            if (count == 0).any():
                i, j = map(int, np.argwhere(count == 0)[0])
                raise _missing(f"a match of {players[i]} against {players[j]}")
            return MetaGame(players, ("player",), (total / count,))
        profiles = [tuple(r.seats.count(p) for p in players) for r in done]
        seatings = {
            combo: tuple(combo.count(i) for i in range(k))
            for combo in itertools.combinations_with_replacement(range(k), seats)
        }
        played = set(profiles)
        for combo, profile in seatings.items():  # before any payoff is summed: most runs lack self-play
            if profile not in played:
                raise _missing(f"the seating {[players[i] for i in combo]}")
        sums = {profile: np.zeros(k) for profile in played}
        counts = {profile: np.zeros(k) for profile in played}
        for r, profile in zip(done, profiles, strict=True):
            for name, payoff in zip(r.seats, r.returns, strict=True):
                sums[profile][index[name]] += payoff
                counts[profile][index[name]] += 1
        rows = []
        for profile in seatings.values():
            means = np.divide(sums[profile], counts[profile], out=np.zeros(k), where=counts[profile] > 0)
            rows.append(np.concatenate([np.asarray(profile, dtype=float), means]))
        return MetaGame(players, ("player",), (np.asarray(rows),), heuristic=True)
    if seats != 2:
        raise ValueError("α-Rank meta-games of asymmetric games are built for two seats only")
    roles = tuple(_roles(done[0]))
    role_total, role_count = np.zeros((2, k, k)), np.zeros((2, k, k))
    for r in done:
        by_role = dict(zip(_roles(r), zip(r.seats, r.returns, strict=True), strict=True))
        (first, p_first), (second, p_second) = by_role[roles[0]], by_role[roles[1]]
        role_total[:, index[first], index[second]] += (p_first, p_second)
        role_count[:, index[first], index[second]] += 1
    if (role_count[0] == 0).any():
        i, j = map(int, np.argwhere(role_count[0] == 0)[0])
        raise _missing(f"a match of {players[i]} as {roles[0]} against {players[j]} as {roles[1]}")
    return MetaGame(players, roles, (role_total[0] / role_count[0], role_total[1] / role_count[1]))


@dataclass(frozen=True)
class AlphaRank:
    """α-Rank's stationary distribution: per population (role), each player's mass, best first."""

    ranking: dict[str, list[tuple[str, float]]]


def alpha_rank(game: MetaGame) -> AlphaRank:
    """α-Rank (infinite-α limit, OpenSpiel's ``alpharank.compute``) of a meta-game: the mass of each player in the
    stationary distribution, per population, best first.

    For two roles the joint distribution over (role 0, role 1) profiles is summed per role. OpenSpiel's
    single-population α-Rank reads two-player games only, so a symmetric game of more seats is ranked as one
    population per seat over the same heuristic payoff table, and a player's mass is averaged over the seats."""
    from open_spiel.python.egt import alpharank
    from open_spiel.python.egt import heuristic_payoff_table as hpt

    if game.heuristic:  # one population per seat, each reading the symmetric game's heuristic payoff table
        table = hpt.from_heuristic_payoff_table(game.tables[0])
        seats = int(game.tables[0][0, : len(game.players)].sum())
        pi = np.asarray(alpharank.compute([table] * seats, use_inf_alpha=True, inf_alpha_eps=0.01)[2], dtype=float)
        joint = pi.reshape((len(game.players),) * seats)
        axes = range(seats)
        masses = [np.mean([joint.sum(axis=tuple(a for a in axes if a != seat)) for seat in axes], axis=0)]
    else:
        pi = np.asarray(alpharank.compute(list(game.tables), use_inf_alpha=True, inf_alpha_eps=0.01)[2], dtype=float)
        if len(game.tables) == 1:
            masses = [pi]
        else:
            joint = pi.reshape(len(game.players), len(game.players))
            masses = [joint.sum(axis=1), joint.sum(axis=0)]
    ranking = {
        role: sorted(((p, float(m)) for p, m in zip(game.players, mass, strict=True)), key=lambda pm: (-pm[1], pm[0]))
        for role, mass in zip(game.roles, masses, strict=True)
    }
    return AlphaRank(ranking)


def alpha_rank_records(records: Sequence[MatchRecord], *, task: str | None = None) -> AlphaRank:
    """α-Rank of the empirical meta-game of ``records`` (:func:`meta_game`, then :func:`alpha_rank`)."""
    return alpha_rank(meta_game(records, task=task))


def nash_averaging(game: MetaGame) -> dict[str, tuple[float, float]]:
    """Nash averaging (Balduzzi et al. 2018) of a symmetric two-seat meta-game: player -> (its mass in the
    maximum-entropy Nash equilibrium, its mean payoff margin against that mixture).

    The meta-game is made zero-sum by antisymmetrising it, ``A = (M - M^T) / 2`` (how much more a player earns
    against an opponent than the opponent earns against it), then OpenSpiel's solver finds the maximum-entropy Nash
    mixture (a dominated player gets no mass; redundant copies of a player share theirs).

    Raises:
        ValueError: the meta-game is not one population of a two-seat game.
        RuntimeError: ``cvxpy`` (the solver's dependency) is not installed.
    """
    if game.heuristic or len(game.tables) != 1:
        raise ValueError("Nash averaging reads symmetric two-seat meta-games only")
    try:
        from open_spiel.python.algorithms import nash_averaging as solver
    except ImportError as exc:  # cvxpy is missing
        raise RuntimeError("Nash averaging needs cvxpy: pip install 'deepeval-games[nash]'") from exc
    import pyspiel

    table = np.asarray(game.tables[0], dtype=float)
    margin = (table - table.T) / 2.0
    matrix = pyspiel.create_matrix_game(margin.tolist(), (-margin).tolist())
    mixture, scores = solver.nash_averaging(matrix)
    mass = np.clip(np.asarray(mixture, dtype=float).ravel(), 0.0, 1.0)
    values = np.asarray(scores, dtype=float).ravel()
    return {p: (float(mass[i]), float(values[i])) for i, p in enumerate(game.players)}
