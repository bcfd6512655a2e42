"""Ultimatum game with a free-text negotiation phase: a complete deepeval-games task in one short file.

Load string::

    deepeval_ultimatum(coins=10, talk_rounds=1, combined=false)

Rules card
----------
* Two seats with different roles: seat 0 is the **proposer** ("Player 1"), seat 1 the **responder**
  ("Player 2"). Sequential, perfect information: both seats see everything said and offered.
* **Talk**: ``talk_rounds`` rounds (default 1, may be 0); in each the proposer writes a message, then the
  responder answers. Messages are free text and bind nobody.
* **Offer**: the proposer offers the responder k of the ``coins`` (default 10) coins, 0 <= k <= coins.
  Action k is named ``offer k``. With ``combined=true`` the offer is a *combined turn*: one reply carries a
  message to the responder and the offer (one model call for the talk-and-offer decision).
* **Response**: the responder plays ``accept`` (action 1) or ``reject`` (action 0).
* **Payoffs**: (coins - k, k) on accept, (0, 0) on reject: a pure function of the terminal history.
  ``min_utility = 0``, ``max_utility = coins``; general-sum.

Free-text moves: a talk move is the *id of the utterance in the state's pool* (``intern_utterance``); id 0 is
the empty message, the one placeholder in ``legal_actions`` at a talk node (any interned id is accepted), so
OpenSpiel's random tests and the conformance kit can play. Clone, pickle and serialize carry the pool.

Penalties (a seat with no usable answer after its re-asks): talk, the empty message; offer, ``offer <coins>``
(the proposer gives the whole pot away, its worst payoff); response, ``reject`` (the responder's worst payoff,
which costs the proposer its share too: in a two-seat game one seat's failure always touches the other).

Version history: 1 — first version; 2 — the ``combined`` parameter (default false: the game as it was).
"""

from pathlib import Path
from typing import Any, TypedDict

import numpy as np
import pyspiel

from deepeval_games.core.message_pool import seat_label
from deepeval_games.core.observer import TextObserver
from deepeval_games.core.quoting import quote_player_text

SHORT_NAME = "deepeval_ultimatum"
ROLES = ("proposer", "responder")  # seat 0, seat 1
EMPTY, REJECT, ACCEPT = 0, 0, 1  # EMPTY: the empty utterance (talk); REJECT, ACCEPT: the answers (response)
_DEFAULT_PARAMS: dict[str, Any] = {"coins": 10, "talk_rounds": 1, "combined": False}
_RULES = """Ultimatum game over {coins} coins. Player 1 is the proposer, Player 2 the responder. First {talk_rounds}
round(s) of talk: the proposer writes a message, the responder answers. Then the proposer offers k of the coins
(0 <= k <= {coins}) to the responder, who accepts (proposer gets {coins} - k, responder k) or rejects (both get 0)."""
# The type is kept on a few lines on purpose (one keyword a line would double its length).
# fmt: off
_GAME_TYPE = pyspiel.GameType(
    short_name=SHORT_NAME, long_name="DeepEval Ultimatum Game with negotiation", max_num_players=2, min_num_players=2,
    dynamics=pyspiel.GameType.Dynamics.SEQUENTIAL, chance_mode=pyspiel.GameType.ChanceMode.DETERMINISTIC,
    information=pyspiel.GameType.Information.PERFECT_INFORMATION, utility=pyspiel.GameType.Utility.GENERAL_SUM,
    reward_model=pyspiel.GameType.RewardModel.TERMINAL, parameter_specification=_DEFAULT_PARAMS,
    provides_information_state_string=True, provides_information_state_tensor=False,
    provides_observation_string=True, provides_observation_tensor=False,
)
# fmt: on


# A seat's observation as values (scripted bots read these): the pot; the phase (``talk``, ``offer``, ``respond`` or
# ``over``); the coins offered to the responder, once offered.
UltimatumFields = TypedDict("UltimatumFields", {"coins": int, "phase": str, "offer": int | None})  # noqa: UP013 (short file)


class UltimatumGame(pyspiel.Game):
    """The game: parameters, bounds, and the task hooks of the game (rules, roles, prompt file)."""

    def __init__(self, params: dict[str, Any] | None = None) -> None:
        p = {**_DEFAULT_PARAMS, **(params or {})}
        coins, talk = int(p["coins"]), int(p["talk_rounds"])
        if coins < 1 or talk < 0:
            raise ValueError(f"need coins >= 1 and talk_rounds >= 0, got coins={coins}, talk_rounds={talk}")
        # GameInfo(num_distinct_actions, max_chance_outcomes, num_players, min/max_utility, utility_sum, max_length);
        # actions: the offers 0..coins, and the utterance ids (the empty one, and one per message at most)
        info = pyspiel.GameInfo(max(coins + 1, 2 * talk + 1), 0, 2, 0.0, float(coins), None, 2 * talk + 2)
        super().__init__(_GAME_TYPE, info, p)

    def new_initial_state(self) -> "UltimatumState":
        """A new match: nothing said, no offer."""
        return UltimatumState(self)

    def make_py_observer(self, iig_obs_type: Any = None, params: Any = None) -> "UltimatumObserver":
        """The observer behind ``observation_string`` and ``information_state_string``."""
        return UltimatumObserver(iig_obs_type, params)

    def seat_roles(self) -> list[str]:
        """Seat 0 proposes, seat 1 responds (the report scores each player per role, Eq. 2)."""
        return list(ROLES)

    def prompt_file(self) -> Path:
        """The LLM players' answer texts (the generic layout: format and re-ask, for moves and for messages)."""
        return Path(__file__).with_name("ultimatum.prompt.toml")

    def rules_text(self) -> str:
        """The rules in plain words, broadcast by the referee to both seats before the first move."""
        return " ".join(_RULES.format(**self.get_parameters()).split())  # one paragraph


class UltimatumState(pyspiel.State):
    """A match in progress: the utterance pool and the moves (talk ids, then the offer, then the answer)."""

    def __init__(self, game: pyspiel.Game) -> None:
        super().__init__(game)
        self.coins, self.talk = int(game.get_parameters()["coins"]), 2 * int(game.get_parameters()["talk_rounds"])
        self.combined = bool(game.get_parameters()["combined"])
        self.pool: dict[str, int] = {"": EMPTY}  # utterance text -> id, in id order (id 0: the empty message)
        self.moves: list[int] = []

    def phase(self) -> str:
        """``talk``, ``offer``, ``respond`` or ``over``."""
        return "talk" if len(self.moves) < self.talk else ("offer", "respond", "over")[len(self.moves) - self.talk]

    def offer(self) -> int | None:
        """The coins offered to the responder, once offered."""
        return self.moves[self.talk] if len(self.moves) > self.talk else None

    def current_player(self) -> int:
        """The seats alternate, proposer first: talk, talk, ..., offer (proposer), answer (responder)."""
        return pyspiel.PlayerId.TERMINAL if self.is_terminal() else len(self.moves) % 2

    def _legal_actions(self, player: int) -> list[int]:  # OpenSpiel asks only for the player to move
        return {"talk": [EMPTY], "offer": list(range(self.coins + 1)), "respond": [REJECT, ACCEPT]}[self.phase()]

    def _apply_action(self, action: int) -> None:
        if self.phase() == "talk" and not 0 <= action < len(self.pool):
            raise ValueError(f"action {action} is not an utterance id of this state (0..{len(self.pool) - 1})")
        self.moves.append(int(action))

    def _action_to_string(self, player: int, action: int) -> str:
        if self.phase() == "talk":
            return self.text(action) if 0 <= action < len(self.pool) else f"<id {action}>"
        return f"offer {action}" if self.phase() == "offer" else "accept" if action == ACCEPT else "reject"

    def text(self, utterance: int) -> str:
        """The text of an utterance id (``<empty message>`` for id 0)."""
        return list(self.pool)[utterance] or "<empty message>"

    def is_terminal(self) -> bool:
        """The responder has answered."""
        return len(self.moves) == self.talk + 2

    def returns(self) -> np.ndarray:
        """(coins - k, k) once an offer of k is accepted; (0, 0) otherwise."""
        k = self.offer() or 0
        return np.array([self.coins - k, k] if self.is_terminal() and self.moves[-1] == ACCEPT else [0, 0], float)

    def __str__(self) -> str:
        return f"said={[self.text(i) for i in self.moves[: self.talk]]!r} then={self.moves[self.talk :]}"

    # -- the task contract's state hooks (deepeval_games.core.task) ----------------------------------------------

    def is_free_text_turn(self, player: int) -> bool:
        """True when ``player`` is to write a message."""
        return self.phase() == "talk" and player == self.current_player()

    def intern_utterance(self, player: int, text: str) -> int:
        """Store ``text`` in the pool and return its id (blank text is id 0; a known text keeps its id)."""
        text = text if text and text.strip() else ""
        if text not in self.pool and len(self.pool) >= self.get_game().num_distinct_actions():
            raise ValueError("the utterance pool is full: intern only the utterances that are played")
        return self.pool.setdefault(text, len(self.pool))

    def is_combined_turn(self, player: int) -> bool:
        """With ``combined``, the offer comes with a message in one reply (the referee sends it to the responder)."""
        return self.combined and self.phase() == "offer"

    def penalty_action(self, player: int) -> int:
        """Talk: the empty message; offer: the whole pot (``offer <coins>``); response: ``reject``."""
        return {"offer": self.coins, "respond": REJECT}.get(self.phase(), EMPTY)

    def observation_fields(self, player: int) -> UltimatumFields:
        """What ``player`` may know now, as values (the messages are in the observation string)."""
        return UltimatumFields(coins=self.coins, phase=self.phase(), offer=self.offer())

    def match_metrics(self) -> dict[str, Any]:
        """The offer and whether it was accepted."""
        return {"offer": self.offer(), "accepted": self.is_terminal() and self.moves[-1] == ACCEPT}


class UltimatumObserver(TextObserver):
    """A seat's view: its role, every message (quoted: a player's words, never the referee's), the offer."""

    def string_from(self, state: UltimatumState, player: int) -> str:
        """The pot and the seat's role, the dialogue, the offer, and whose turn it is (or the result)."""
        lines = [f"Pot: {state.coins} coins. You are {seat_label(player)}, the {ROLES[player]}."]
        for i, utterance in enumerate(state.moves[: state.talk]):
            lines.append(quote_player_text(f"{seat_label(i % 2)} ({ROLES[i % 2]})", state.text(utterance)))
        seat, k = len(state.moves) % 2, state.offer()
        todo = {"talk": "to talk", "offer": "to make an offer", "respond": f"to accept or reject an offer of {k} coins"}
        over = f"Game over: the offer of {k} coins was {'accepted' if sum(state.returns()) else 'rejected'}."
        lines.append(over if state.is_terminal() else f"{seat_label(seat)} ({ROLES[seat]}) {todo[state.phase()]}.")
        return "\n".join(lines)


pyspiel.register_game(_GAME_TYPE, UltimatumGame)
