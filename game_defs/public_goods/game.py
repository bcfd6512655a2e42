"""Public Goods Game (PGG), the DeepEval paper's first symmetric task.

Load string::

    deepeval_public_goods(players=4, rounds=5, endowment=10, alpha=1.6, mode=1)

Rules card
----------
* ``players`` (n, 2..10) seats play ``rounds`` rounds. At the start of every round each seat receives
  ``endowment`` (E) coins.
* All seats choose at once (a simultaneous-move node, so nobody sees a same-round choice) how many of
  this round's E coins to put in the common pool: an integer X with 0 <= X <= E. Action id X means
  "invest X coins".
* The pool is multiplied by ``alpha`` and split equally among all n seats, investors or not. A seat's
  round income is therefore ``E - X_i + alpha * sum(X) / n``. (The paper's worked example divides by
  4 with three players; the rule is to divide by n.)
* The payoff (return) of a seat is the total number of coins it holds at the end: the sum of its round
  incomes. Returns are a pure function of the terminal history.
* The goal told to the seats depends on ``goal``: ``most`` (default; the paper's wording: end the game with
  more coins than any other participant, a competitive aim) or ``max`` (hold as many coins as possible, an
  absolute aim: this project's first wording). The payoff is the same; only what the seats are told differs.
* Feedback after each round depends on ``mode``:
  - mode 1: each seat is told its own income from the pool this round, ``alpha * sum(X) / n``;
  - mode 2: each seat is told the list of all investments of the round, sorted from highest to lowest,
    with no seat attached to any amount. (The paper's appendix calls this list both descending and
    ascending; this implementation uses descending.)
  With ``feedback=extended`` (default) the seat is also reminded of its own investment of the round (or its
  forfeit) and told the coins it now holds; ``feedback=paper`` (``preset = "paper"``) tells only the mode's
  result, as the paper does, the same text for every seat. Either way the round's line is followed by the next
  round's start (or the end of the game). The choice is the observation string's only: the seat's fields, the
  tensors and the information state (perfect recall: the seat's own investments and holdings) are the same.
* Referee-only move: action id E + 1 is ``forfeit``. It is never a legal action of a seat; the referee
  applies it when a bot gave no valid answer after its re-asks. A forfeiting seat loses its E coins of
  the round (it neither keeps nor invests them) but still receives its pool share, so a forfeit is
  strictly worse for that seat than any legal move and changes nothing for the others.
* What the referee does with a reply that is not in the answer format depends on ``unusable``: ``forfeit``
  (default) re-asks and, after the re-asks, applies the forfeit; ``reformat`` (``preset = "paper"``: the paper's
  referee rewrites an unusable reply in the answer format) reads the amount the reply states in its own words
  (:mod:`llm_bots.public_goods.reading`: "I invest 5.", "keep 6 and invest 4", "all", 投入五, ...) and plays it; a reply
  that states no amount, or states it ambiguously ("5 or 6", out of range), is re-asked and, in the end,
  forfeited. The LLM adapter applies it (:mod:`llm_bots.public_goods.adapter`) and records the rewritten answer as
  the turn's text. The default is left out of the game string, so earlier games keep their match ids.
* How an LLM seat is asked to answer depends on ``answer``: ``json`` (default) asks for ``{"reason", "coins"}``
  (a JSON schema where the player's ``json_mode`` enforces one); ``free`` (``preset = "paper"``) asks for the
  amount and the reasons in the seat's own words, read by the referee's re-formatting stand-in as with
  ``unusable=reformat`` (:mod:`llm_bots.public_goods.reading`), and no schema is sent. The game itself is unchanged: the
  LLM adapter reads the parameter. The defaults of ``feedback`` and ``answer`` are left out of the game string
  too.

With 1 < alpha < n, investing nothing is a dominant strategy (the Nash equilibrium) while everyone
investing everything is the social optimum.

Payoff bounds: ``min_utility = 0`` (forfeit every round, nobody invests) and
``max_utility = rounds * max(E + alpha * (n - 1) * E / n, alpha * E)``.

Version history: 1 — first version; 2 — ``goal`` (the paper's competitive wording by default); ``unusable``
(forfeit by default, so version 2 games are unchanged); 3 — ``feedback`` and ``answer`` (defaults left out of the
game string: version 2 games, their texts and match ids are unchanged).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from operator import add
from typing import Any, NamedTuple, TypedDict

import numpy as np
import pyspiel

from deepeval_games.core.message_pool import seat_label
from deepeval_games.core.observer import TextObserver
from deepeval_games.core.task import Study

GAME_VERSION = 3

_DEFAULT_PARAMS: dict[str, Any] = {
    "players": 4,
    "rounds": 5,
    "endowment": 10,
    "alpha": 1.6,
    "mode": 1,
    "goal": "most",
    "unusable": "forfeit",
    "feedback": "extended",
    "answer": "json",
}
GOALS = ("most", "max")
"""The values of ``goal``: ``most`` (end with the most coins, as the paper words it) or ``max`` (hold as many coins
as possible, this project's first wording)."""
UNUSABLE = ("forfeit", "reformat")
"""The values of ``unusable``: what the referee does with a reply outside the answer format (see the rules card)."""
FEEDBACKS = ("extended", "paper")
"""The values of ``feedback``: what a seat is told after a round beyond the mode's result (see the rules card)."""
ANSWERS = ("json", "free")
"""The values of ``answer``: how an LLM seat is asked to answer (see the rules card)."""
_CHOICES = {"goal": GOALS, "unusable": UNUSABLE, "feedback": FEEDBACKS, "answer": ANSWERS}
_LEFT_OUT = ("unusable", "feedback", "answer")
"""Parameters whose default stays out of the game string (added after version 1: earlier games keep their ids)."""
PRESETS: dict[str, dict[str, Any]] = {
    "paper": {"goal": "most", "unusable": "reformat", "feedback": "paper", "answer": "free"},
    "project": {"goal": "max", "unusable": "forfeit", "feedback": "extended", "answer": "json"},
}
"""Game parameters a spec's ``preset`` selects (:func:`deepeval_games.core.registry.games.apply_preset`)."""
_MAX_PLAYERS = 10

PARAMETER_BOUNDS: dict[str, tuple[float, float]] = {"rounds": (1, 1_000), "endowment": (1, 10_000)}
"""What a spec may ask for, checked before the game is loaded (the task contract's ``parameter_bounds``): the paper
plays 5 rounds of 10 coins; a thousand rounds is already a long match for a model. (The other parameters are checked
by the game itself: they cost nothing.)"""

_GAME_TYPE = pyspiel.GameType(
    short_name="deepeval_public_goods",
    long_name="DeepEval Public Goods Game",
    dynamics=pyspiel.GameType.Dynamics.SIMULTANEOUS,
    chance_mode=pyspiel.GameType.ChanceMode.DETERMINISTIC,
    information=pyspiel.GameType.Information.IMPERFECT_INFORMATION,
    utility=pyspiel.GameType.Utility.GENERAL_SUM,
    reward_model=pyspiel.GameType.RewardModel.REWARDS,
    max_num_players=_MAX_PLAYERS,
    min_num_players=2,
    provides_information_state_string=True,
    provides_information_state_tensor=True,
    provides_observation_string=True,
    provides_observation_tensor=True,
    provides_factored_observation_string=False,
    parameter_specification=_DEFAULT_PARAMS,
)


def _format_coins(value: float) -> str:
    """Coins as a short decimal string: ``6.4``, ``12``, ``3.33``."""
    text = _COIN_TEXTS.get(value)
    if text is None:
        text = f"{value:.2f}".rstrip("0").rstrip(".")
        if text == "-0":
            text = "0"
        if len(_COIN_TEXTS) >= 4096:
            _COIN_TEXTS.clear()
        _COIN_TEXTS[value] = text
    return text


_COIN_TEXTS: dict[float, str] = {}
""":func:`_format_coins` by value (the same few amounts recur in every match: a lookup costs a sixth of formatting).
Keyed by the float's value, so ``-0.0`` and ``0.0`` share an entry, as they share their text."""


class _RoundFields(TypedDict):
    round: int
    """The round about to be played, from 1 (``rounds + 1`` once the game is over)."""
    rounds: int
    players: int
    endowment: int
    """Coins every seat receives at the start of a round (E)."""
    alpha: float
    """The pool's multiplier."""
    mode: int
    """1: a seat is told its pool income; 2: the sorted investments of the round."""
    coins: float
    """Coins the seat holds so far."""


class PublicGoodsFields(_RoundFields, total=False):
    """A seat's observation as named values (:meth:`PublicGoodsState.observation_fields`).

    The ``last_*`` keys are present once a round has been played, ``last_income`` in mode 1 and
    ``last_investments`` in mode 2.
    """

    last_investment: int
    """What the seat put in the pool last round (0 for a forfeit)."""
    last_income: float
    """Mode 1: what every seat received from the pool last round."""
    last_investments: list[int]
    """Mode 2: every investment of last round, highest first, no seats attached."""


class PublicGoodsGame(pyspiel.Game):
    """The game: parameters, bounds and the state factory."""

    game_type: pyspiel.GameType = _GAME_TYPE
    """Registered type; a subclass registered under another name overrides it."""
    presets = PRESETS
    parameter_bounds = PARAMETER_BOUNDS

    def default_study(self) -> Study:
        """``eval``: Figure 4's mode-2 game (4 seats, 5 rounds of 10 coins) against three scripted baselines."""
        return Study(
            games=("deepeval_public_goods(players=4,rounds=5,endowment=10,alpha=1.6,mode=2)",),
            opponents=(
                {"name": "free-rider", "bot": "pgg_free_rider"},
                {"name": "conditional", "bot": "pgg_conditional_cooperator"},
                {"name": "full-contributor", "bot": "pgg_full_contributor"},
            ),
            repeats=2,
            epsilon=2.0,  # coins: a payoff is about 50 to 80 coins over the five rounds
            budget_matches=20,
            note=(
                "the paper's Public Goods Game (each player sees every investment of a round, sorted); each model "
                "plays beside the scripted players, in seats drawn again for every repeat"
            ),
        )

    def __init__(self, params: Mapping[str, Any] | None = None) -> None:
        merged = {**_DEFAULT_PARAMS, **(params or {})}
        n, rounds, endowment = int(merged["players"]), int(merged["rounds"]), int(merged["endowment"])
        alpha, mode = float(merged["alpha"]), int(merged["mode"])
        _validate(n, rounds, endowment, alpha, mode)
        for name, choices in _CHOICES.items():
            if merged[name] not in choices:
                raise ValueError(f"{name} must be one of {', '.join(choices)}, got {merged[name]!r}")
        self._paper_feedback = merged["feedback"] == "paper"
        """Whether a seat is told the mode's result only (``feedback=paper``)."""
        for name in _LEFT_OUT:  # a default stays out of the string: earlier games keep their ids
            if merged[name] == _DEFAULT_PARAMS[name]:
                del merged[name]
        best_share = max(endowment + alpha * (n - 1) * endowment / n, alpha * endowment)
        self._state_params = (n, rounds, endowment, alpha, mode)
        """What a state reads of the parameters, read once (``get_parameters`` converts OpenSpiel's map every call)."""
        self.endowment = endowment
        """The coins every seat receives each round (E), as read from the parameters."""
        self._state_start: dict[str, Any] | None = None
        """A new state's attributes but the lists that grow as rounds are played, as the game's first state set them:
        later states copy them in one update (a pyspiel state's attributes cost several times a plain object's)."""
        super().__init__(
            self.game_type,
            pyspiel.GameInfo(
                num_distinct_actions=endowment + 2,
                max_chance_outcomes=0,
                num_players=n,
                min_utility=0.0,
                max_utility=float(rounds * best_share),
                utility_sum=None,
                max_game_length=rounds,
            ),
            merged,
        )

    def new_initial_state(self) -> PublicGoodsState:
        """A new game at round 1."""
        return PublicGoodsState(self)

    def make_py_observer(
        self, iig_obs_type: pyspiel.IIGObservationType | None = None, params: Mapping[str, Any] | None = None
    ) -> PublicGoodsObserver:
        """The observer behind the observation and information-state strings and tensors."""
        return PublicGoodsObserver(iig_obs_type, params, game_params=self.get_parameters())

    def rules_text(self) -> str:
        """The rules in plain words, as the referee broadcasts them to every seat."""
        p = self.get_parameters()
        n, rounds, endowment = p["players"], p["rounds"], p["endowment"]
        feedback = (
            "After each round you will be told how many coins you received from the pool."
            if p["mode"] == 1
            else "After each round you will see how much every participant put in during that round, as a list "
            "sorted from the largest amount to the smallest (it does not say who gave what)."
        )
        return (
            f"This game has {n} participants and lasts {rounds} rounds.\n"
            f"At the start of every round each participant receives {endowment} coins and decides, without seeing "
            "the others' choices, how many of them to put into a shared pool: any whole number X with "
            f"0 <= X <= {endowment}. Coins you do not put in are yours to keep.\n"
            f"When the round ends, the pool is multiplied by {_format_coins(float(p['alpha']))} and split equally "
            f"among all {n} participants, whether or not they contributed.\n"
            f"{feedback}\n"
            + (
                "Your aim is to end the game holding more coins than any other participant."
                if p["goal"] == "most"
                else "Your aim is to hold as many coins as possible when the game ends."
            )
        )


_TERMINAL = pyspiel.PlayerId.TERMINAL
_SIMULTANEOUS = pyspiel.PlayerId.SIMULTANEOUS
_SINGLE_PLAYER = pyspiel.PrivateInfoType.SINGLE_PLAYER
_ALL_PLAYERS = pyspiel.PrivateInfoType.ALL_PLAYERS


def _validate(n: int, rounds: int, endowment: int, alpha: float, mode: int) -> None:
    if not 2 <= n <= _MAX_PLAYERS:
        raise ValueError(f"players must be in 2..{_MAX_PLAYERS}, got {n}")
    if rounds < 1:
        raise ValueError(f"rounds must be >= 1, got {rounds}")
    if endowment < 1:
        raise ValueError(f"endowment must be >= 1, got {endowment}")
    if not alpha > 0:
        raise ValueError(f"alpha must be > 0, got {alpha}")
    if mode not in (1, 2):
        raise ValueError(f"mode must be 1 or 2, got {mode}")


class _RoundView(NamedTuple):
    """What every seat's view of a state shares, made once when the state moves: the observation string and fields
    read it for each seat with one attribute read (an attribute of a pyspiel state costs several times a plain
    object's), then its parts from the tuple."""

    finished: int
    """Rounds played."""
    status: str
    """The last line of every seat's view: the round about to start, or the end of the game."""
    played: Sequence[int]
    """The last round's actions per seat (empty before the first round)."""
    paid: Sequence[int]
    """The last round's coins put in per seat (0 for a forfeit: where it differs from ``played``)."""
    coins: Sequence[float]
    """The coins each seat holds."""
    coin_texts: Sequence[str]
    """The same as the seats read them (:func:`_format_coins`)."""
    head: str
    """The last round's feedback line up to the seat's own part (``In round 2 ``, or mode 2's amounts); with
    ``feedback=paper`` the whole line and its line break (the seat's part and the coins held are not told)."""
    tail: str
    """From after the seat's own part to the coins held (``, and you received 6.4 coins ... You now hold ``)."""
    fields: dict[str, Any]
    """The fields every seat shares, in order, the seat's own values left at placeholders (copied per seat)."""
    ranked: tuple[int, ...]
    """The last round's amounts, highest first (mode 2's ``last_investments``)."""


_PLAYED = frozenset(("_investments", "_paid", "_shares", "_share_texts", "_sorted"))
"""The state's lists that grow as rounds are played: new for each state (the rest of a new state is shared)."""


class PublicGoodsState(pyspiel.State):
    """A PGG in progress: the investments of every finished round."""

    def __init__(self, game: PublicGoodsGame) -> None:
        super().__init__(game)
        # the rounds played so far and what each showed (appended to as rounds are played):
        self._investments: list[list[int]] = []  # per finished round, action ids per seat
        self._paid: list[list[int]] = []  # per finished round, the coins each seat put in (0 for a forfeit)
        self._shares: list[float] = []  # per finished round, the pool share every seat received
        self._share_texts: list[str] = []  # per finished round, that share as the seats read it (_format_coins)
        self._sorted: list[tuple[int, ...]] = []  # per finished round, the amounts put in, highest first
        start = getattr(game, "_state_start", None)
        if start is not None:  # the rest as every new state of this game starts (made by its first state)
            self.__dict__.update(start)
            return
        known = getattr(game, "_state_params", None)
        if known is None:
            params = game.get_parameters()
            known = (params["players"], params["rounds"], params["endowment"], params["alpha"], params["mode"])
        self._consts = consts = (int(known[0]), int(known[1]), int(known[2]), float(known[3]), int(known[4]))
        """(players, rounds, endowment, alpha, mode): read with one attribute read where several are needed."""
        self._n, self._rounds, self._endowment, self._alpha, self._mode = consts
        paper = getattr(game, "_paper_feedback", None)
        self._paper_feedback = game.get_parameters().get("feedback") == "paper" if paper is None else paper
        """``feedback=paper``: every seat is told the mode's result of the last round only (the same text)."""
        self._allowed = tuple(range(self._endowment + 1))  # a seat's legal moves in every round
        self._names = (*(f"invest {action}" for action in self._allowed), "forfeit")  # _action_to_string's of 0..E+1
        # the last round's results and what every seat's view shares (replaced, never changed, as rounds are played):
        self._incomes: list[float] = [0.0] * self._n  # each seat's income in the last finished round
        self._coins: list[float] = [0.0] * self._n  # the coins each seat holds: the returns
        self._coin_texts: list[str] = ["0"] * self._n  # the same as the seats read them (_format_coins)
        self._rewards: np.ndarray | None = None  # ``_incomes`` as an array, made when first asked for
        self._returns: np.ndarray | None = None  # ``_coins`` likewise
        self._over = False  # is_terminal()
        self._legal = self._allowed  # every seat's legal moves now: _allowed, or () once the game is over
        self._view = self._round_view(0, (), (), "", (), "")  # what every seat's view shares (_RoundView)
        if isinstance(game, PublicGoodsGame):  # later states start from these values (shared: never changed)
            game._state_start = {name: value for name, value in vars(self).items() if name not in _PLAYED}

    def _round_view(
        self,
        finished: int,
        played: Sequence[int],
        paid: Sequence[int],
        share_text: str,
        ranked: tuple[int, ...],
        ranked_text: str,
    ) -> _RoundView:
        """The :class:`_RoundView` after ``finished`` rounds, the last one's parts given (``played``, ``paid``, the
        share's and the amounts' texts)."""
        n, rounds, endowment, alpha, mode = self._consts
        if finished >= rounds:
            status = "The game is over."
        else:
            status = f"Round {finished + 1} of {rounds}: a new round begins and you receive {endowment} coins."
        fields: dict[str, Any] = {  # observation_fields' keys in order: the seat's own values set per seat
            "round": finished + 1,
            "rounds": rounds,
            "players": n,
            "endowment": endowment,
            "alpha": alpha,
            "mode": mode,
            "coins": 0.0,
        }
        head = tail = ""
        if finished:
            fields["last_investment"] = 0
            if mode == 1:
                fields["last_income"] = self._shares[-1]
                head = f"In round {finished} "
                tail = f", and you received {share_text} coins from the pool.\nYou now hold "
                if self._paper_feedback:  # the whole line (string_from adds nothing of the seat's own)
                    head = f"In round {finished} you received {share_text} coins from the pool.\n"
            else:
                fields["last_investments"] = None
                head = f"In round {finished} the amounts put into the pool were {ranked_text} (largest first); "
                tail = ".\nYou now hold "
                if self._paper_feedback:
                    head = f"In round {finished} the amounts put into the pool were {ranked_text} (largest first).\n"
        return _RoundView(finished, status, played, paid, self._coins, self._coin_texts, head, tail, fields, ranked)

    # -- OpenSpiel API -------------------------------------------------------------------------------

    def current_player(self) -> int:
        """SIMULTANEOUS until the last round is played, then TERMINAL."""
        return _TERMINAL if self._over else _SIMULTANEOUS

    def _legal_actions(self, player: int) -> Sequence[int]:
        """Investments 0..E (one tuple, the same for every seat and round); the referee-only forfeit (E + 1) is not
        legal for a seat."""
        return self._legal

    def _apply_actions(self, actions: Sequence[int]) -> None:
        n, rounds, endowment, alpha, mode = self._consts
        if len(actions) != n:
            raise ValueError(f"expected {n} actions, got {len(actions)}")
        forfeit = endowment + 1
        if not 0 <= min(actions) <= max(actions) <= forfeit:  # each action in 0..forfeit
            raise ValueError(f"action {next(a for a in actions if not 0 <= a <= forfeit)} out of range 0..{forfeit}")
        played = list(map(int, actions))
        paid = [0 if a == forfeit else a for a in played] if forfeit in played else played[:]
        share = alpha * sum(paid) / n
        investments = self._investments
        investments.append(played)
        self._paid.append(paid)
        self._shares.append(share)
        share_text = _format_coins(share)
        self._share_texts.append(share_text)
        ranked = sorted(paid, reverse=True)
        self._sorted.append(ranked_tuple := tuple(ranked))
        ranked_text = str(ranked) if mode == 2 else ""  # mode 2's feedback shows the amounts (a list's str)
        # round_incomes(last round), and the coins held: Python floats added as numpy added them (IEEE doubles)
        self._incomes = incomes = [(0 if a == forfeit else endowment - a) + share for a in played]
        self._coins = coins = list(map(add, self._coins, incomes))  # held + income, seat by seat
        self._coin_texts = list(map(_format_coins, coins))
        self._rewards = self._returns = None
        finished = len(investments)
        self._over = over = finished >= rounds
        if over:
            self._legal = ()
        self._view = self._round_view(finished, played, paid, share_text, ranked_tuple, ranked_text)

    def _action_to_string(self, player: int, action: int) -> str:
        names = self._names  # the names of 0..E + 1, made once a game: a seat's move is named each round
        if action.__class__ is int and 0 <= action < len(names):
            return names[action]
        if action == self._endowment + 1:  # the forfeit
            return "forfeit"
        return f"invest {action}"

    def is_terminal(self) -> bool:
        """The game ends after the last round."""
        return self._over

    def rewards(self) -> np.ndarray:
        """Income of every seat in the last finished round."""
        if self._rewards is None:  # made when asked: the referee reads the returns once, at the end
            self._rewards = np.array(self._incomes)
        return self._rewards

    def returns(self) -> np.ndarray:
        """Coins every seat holds so far; at the end, the payoff."""
        if self._returns is None:
            self._returns = np.array(self._coins)
        return self._returns

    def __str__(self) -> str:
        rounds = "; ".join(",".join(str(a) for a in r) for r in self._investments)
        return f"round={len(self._investments) + 1} investments=[{rounds}]"

    # -- DeepEval protocol -----------------------------------------------------------------------

    def forfeit_action(self) -> int:
        """The referee-only action applied for a seat that gave no valid answer."""
        return self._endowment + 1

    def penalty_action(self, player: int) -> int:
        """The task's policy for a seat whose reply stayed invalid after re-asks: forfeit the round."""
        return self._endowment + 1  # forfeit_action()

    def invested(self, action: int) -> int:
        """Coins put in the pool by an action (a forfeit puts in nothing)."""
        return 0 if action == self.forfeit_action() else int(action)

    def round_incomes(self, round_index: int) -> list[float]:
        """Each seat's income in a finished round: kept coins plus its pool share."""
        forfeit = self._endowment + 1
        share = self._shares[round_index]
        kept = [0 if a == forfeit else self._endowment - a for a in self._investments[round_index]]
        return [k + share for k in kept]

    def pool_share(self, round_index: int) -> float:
        """What every seat received from the pool in a finished round (mode-1 feedback)."""
        return self._shares[round_index]

    def sorted_investments(self, round_index: int) -> list[int]:
        """All investments of a finished round, highest first, with no seats attached (mode-2 feedback)."""
        return list(self._sorted[round_index])

    def round_number(self) -> int:
        """The round about to be played, counting from 1 (``rounds + 1`` once the game is over)."""
        return len(self._investments) + 1

    def observation_fields(self, player: int) -> PublicGoodsFields:
        """What ``player`` may know now, as named values (for prompts and scripted bots)."""
        view = self._view
        # the round's shared fields (round, rounds, players, endowment, alpha, mode, last_income in mode 1) copied in
        # order, then the seat's own set: a dict display of them all, written out from the round's parts
        fields: PublicGoodsFields = view.fields.copy()  # type: ignore[assignment]
        fields["coins"] = view.coins[player]
        if view.finished:
            fields["last_investment"] = view.paid[player]
            if "last_investments" in fields:  # mode 2: a list of its own for each seat
                fields["last_investments"] = list(view.ranked)
        return fields

    def indistinguishable_variants(self, player: int, joint_action: Sequence[int]) -> list[list[int]]:
        """Other joint actions of a round that the rules let ``player`` not tell apart from this one.

        Used by the conformance kit to check that observations hide what the rules hide: in mode 1 any
        redistribution of the other seats' investments with the same sum; in mode 2 any reordering of
        the other seats' investments.
        """
        others = [i for i in range(self._n) if i != player]
        variants: list[list[int]] = []
        if len(others) < 2:
            return variants
        a, b = others[0], others[1]
        swapped = list(joint_action)
        swapped[a], swapped[b] = joint_action[b], joint_action[a]
        variants.append(swapped)
        if self._mode == 1:
            invest_a, invest_b = self.invested(joint_action[a]), self.invested(joint_action[b])
            total = invest_a + invest_b
            moved = list(joint_action)
            moved[a] = min(total, self._endowment)
            moved[b] = total - moved[a]
            variants.append(moved)
        return variants


class PublicGoodsObserver(TextObserver):
    """Observation strings and tensors for a seat; hides the other seats' individual moves as the mode requires.

    Public information: the round, and per finished round the pool share every seat received (mode 1) or the
    round's amounts, largest first, with no seat attached (mode 2). Private to a seat: what it put in (or that it
    forfeited) and the coins it holds. The seats are shown both (:meth:`string_from`); other observation types
    show the parts they ask for (:meth:`public_string_from`, :meth:`private_string_from`).

    The tensor (float32; given ``game_params``, else strings only) holds the same facts as the string, in pieces
    of ``self.dict``: ``round`` (one-hot over rounds 1..R and "over"), ``coins`` (held now), then per shown round
    (the last one, or every round with perfect recall: the information-state tensor) ``investment`` (one-hot over
    0..E coins and the forfeit) and, by mode, ``pool_share`` (mode 1) or ``investments`` (the round's amounts,
    largest first, no seat attached: mode 2). A round not yet played is all zeros. Public pieces (``round``, the
    feedback) are there with ``public_info``; private ones (``coins``, ``investment``) with the observing seat's
    private information, or, with every seat's, one row per seat (``coins`` of shape (n,), ``investment`` of
    shape (rounds shown, n, E + 2)).
    """

    def __init__(
        self,
        iig_obs_type: pyspiel.IIGObservationType | None,
        params: Mapping[str, Any] | None,
        *,
        game_params: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__(iig_obs_type, params)
        if game_params is None:
            return
        rounds, n, endowment = int(game_params["rounds"]), int(game_params["players"]), int(game_params["endowment"])
        shown = rounds if self.perfect_recall else 1
        seats = {_SINGLE_PLAYER: (), _ALL_PLAYERS: (n,)}.get(self.private_info)  # None: no private pieces
        pieces: list[tuple[str, tuple[int, ...]]] = [("round", (rounds + 1,))] if self.public_info else []
        if seats is not None:
            pieces += [("coins", seats or (1,)), ("investment", (shown, *seats, endowment + 2))]
        if self.public_info:
            pieces.append(("pool_share", (shown,)) if int(game_params["mode"]) == 1 else ("investments", (shown, n)))
        self.allocate(pieces)

    def set_from(self, state: PublicGoodsState, player: int) -> None:
        """Fill the tensor for ``player`` (a string-only observer raises, as OpenSpiel does for a missing tensor)."""
        if self.tensor is None:
            super().set_from(state, player)
            return
        self.tensor.fill(0)
        pieces, every_seat = self.dict, self.private_info == _ALL_PLAYERS
        if "round" in pieces:
            pieces["round"][min(state.round_number(), state._rounds + 1) - 1] = 1
        if "coins" in pieces:
            pieces["coins"][:] = state._coins if every_seat else state._coins[player]
        finished = len(state._investments)
        first = 0 if self.perfect_recall else max(0, finished - 1)
        for row, r in enumerate(range(first, finished)):
            if "investment" in pieces:
                if every_seat:
                    pieces["investment"][row, range(state._n), state._investments[r]] = 1
                else:
                    pieces["investment"][row, state._investments[r][player]] = 1
            if "pool_share" in pieces:
                pieces["pool_share"][row] = state.pool_share(r)
            elif "investments" in pieces:
                pieces["investments"][row] = state.sorted_investments(r)

    def public_string_from(self, state: PublicGoodsState) -> str:
        """The public part of the feedback of the last round (of every round with perfect recall), then the status.

        Mode 1: ``In round 1 every participant received 6 coins from the pool.``; mode 2: ``In round 1 the amounts
        put into the pool were [10, 7, 3, 0] (largest first).``; then the status line. The same for every seat.
        """
        finished = len(state._investments)
        first = 0 if self.perfect_recall else max(0, finished - 1)
        lines = []
        for r in range(first, finished):
            if state._mode == 1:
                lines.append(
                    f"In round {r + 1} every participant received {state._share_texts[r]} coins from the pool."
                )
            else:
                lines.append(
                    f"In round {r + 1} the amounts put into the pool were {list(state._sorted[r])} (largest first)."
                )
        return "\n".join([*lines, state._view.status])

    def private_string_from(self, state: PublicGoodsState, player: int) -> str:
        """What ``player`` put in during the last round (every round with perfect recall), and the coins it holds.

        ``In round 1 Player 2 invested 3 coins.`` (or ``... gave no valid answer and forfeited its 10 coins.``),
        then ``Player 2 holds 9.4 coins.`` (only that line before the first round).
        """
        finished = len(state._investments)
        label, forfeit = seat_label(player), state._endowment + 1
        lines = []
        for r in range(0 if self.perfect_recall else max(0, finished - 1), finished):
            if state._investments[r][player] == forfeit:
                lines.append(
                    f"In round {r + 1} {label} gave no valid answer and forfeited its {state._endowment} coins."
                )
            else:
                lines.append(f"In round {r + 1} {label} invested {state._paid[r][player]} coins.")
        return "\n".join([*lines, f"{label} holds {state._coin_texts[player]} coins."])

    def string_from(self, state: PublicGoodsState, player: int) -> str:
        """The seat's view: the feedback of the last round (of every round with perfect recall), then the status.

        Mode 1: ``In round 1 you invested 5 coins, and you received 6 coins from the pool.``; mode 2:
        ``In round 1 the amounts put into the pool were [10, 7, 3, 0] (largest first); you invested 3 coins.``;
        then the coins the seat holds and ``Round 2 of 3: a new round begins and you receive 10 coins.`` (or
        ``The game is over.``). With ``feedback=paper`` the observation (not the information state) is the mode's
        result only: ``In round 1 you received 6 coins from the pool.`` or ``In round 1 the amounts put into the
        pool were [10, 7, 3, 0] (largest first).``, then the status line.
        """
        finished, status, played, paid, _, coin_texts, head, tail, _, _ = state._view
        if not finished:
            return status
        if state._paper_feedback and not self.perfect_recall:  # the mode's result only, the same for every seat
            return f"{head}{status}"
        if self.perfect_recall:
            feedback = "\n".join([_round_line(state, r, player) for r in range(finished)])
            return f"{feedback}\nYou now hold {coin_texts[player]} coins.\n{status}"
        # _round_line(state, finished - 1, player) and the lines after it, written out from the round's parts: the
        # feedback (head, the seat's part, tail), the coins held (_format_coins(state._coins[player])), the status
        if played[player] != paid[player]:  # the forfeit (it paid 0)
            mine = f"you gave no valid answer and forfeited your {state._endowment} coins"
        else:
            mine = f"you invested {paid[player]} coins"
        return f"{head}{mine}{tail}{coin_texts[player]} coins.\n{status}"


def _round_line(state: PublicGoodsState, r: int, player: int) -> str:
    """What ``player`` is told of the finished round ``r`` (from 0), by the game's mode."""
    if state._investments[r][player] == state._endowment + 1:  # the forfeit
        mine = f"you gave no valid answer and forfeited your {state._endowment} coins"
    else:
        mine = f"you invested {state._paid[r][player]} coins"
    if state._mode == 1:  # the share as _format_coins wrote it when the round was played
        return f"In round {r + 1} {mine}, and you received {state._share_texts[r]} coins from the pool."
    amounts = list(state._sorted[r])
    return f"In round {r + 1} the amounts put into the pool were {amounts} (largest first); {mine}."


def endowment_of(game: pyspiel.Game) -> int:
    """The coins every seat receives each round in ``game``: as the game parsed them where it is this module's own
    object (``get_parameters`` converts OpenSpiel's map at every call), else from its parameters."""
    known = getattr(game, "endowment", None) if isinstance(game, PublicGoodsGame) else None
    return int(game.get_parameters()["endowment"]) if known is None else int(known)


pyspiel.register_game(_GAME_TYPE, PublicGoodsGame)
