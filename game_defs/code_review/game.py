"""Code Review on MBPP, the DeepEval paper's first asymmetric (writer–editor) task.

Load string::

    deepeval_code_review(task_id=11, max_rounds=3)

Rules card
----------
* Two seats with different roles: seat 0 is the **programmer** ("Player 1"), seat 1 the **reviewer**
  ("Player 2"). The game is sequential and of perfect information: both seats see the whole dialogue.
* The referee states MBPP problem ``task_id``: its text and, as MBPP prompts usually do, *all* of its
  ``test_list`` asserts as examples of the expected behaviour (and function name). The same asserts are the
  ground truth the scorer (:mod:`game_defs.code_review.scorer`) runs the final program against, so a
  programmer is told exactly what it is tested on, as in MBPP's own evaluation. ``challenge_test_list`` is
  neither shown nor run.
* A round: the programmer submits a program (free text: pure Python), then the reviewer comments on it
  (correctness, clarity, efficiency). If the reviewer's reply, as a whole, is the word ``over``, the
  reviewer is satisfied: the dialogue ends by **consensus**. Otherwise the programmer revises and a new round
  starts, until ``max_rounds`` programs have been submitted and reviewed (the **round cap**).
  "The whole reply is over" is checked after Unicode NFKC, removal of code fences, surrounding white space,
  quotes, backticks and final ``.``/``!``, and case folding: ``Over.``, ``"OVER"`` and ``over!`` end the
  dialogue, ``over, but rename x`` does not.
* The **final program** is the last one the programmer submitted.
* Then a **verdict node**: a chance node at which :meth:`CodeReviewState.is_judge_turn` is true. Its
  outcomes are every pair (programmer score, reviewer score), each an integer 1..10, numbered as in
  :mod:`game_defs.verdicts` (``(p - 1) * 10 + (r - 1)``); the referee asks the judge, whose choice becomes
  the recorded outcome (sampled uniformly by tools that know no judge, such as OpenSpiel's tests).
* Returns: the programmer gets the programmer score and the reviewer the reviewer score, a pure function of
  the terminal history. Before the verdict both are 0.

Free-text moves
---------------
A move at a dialogue node is the *id of an utterance in the state's pool* (DESIGN §2):
:meth:`CodeReviewState.intern_utterance` stores a text and returns its id (the same text always gets the
same id), :meth:`action_to_string` returns the text, and ``clone()``/pickling/``serialize`` carry the pool,
so the id history plus the pool replays the game exactly. Id 0 (:data:`EMPTY`) is the empty utterance
(shown as ``<empty reply>``). It is the only id listed in ``legal_actions`` at a text node (a placeholder,
so that OpenSpiel's random tests and the conformance kit can play), but every interned id is accepted.
A blank text interns to id 0.

**Penalty**: a seat that gives no usable answer (invalid after the re-asks, a refusal, a context overflow)
makes the empty move, id 0: an empty program for the programmer (it passes no test), an empty review for the
reviewer (which is not ``over``, so the programmer must revise).

Parameters:

* ``task_id`` (int, default 11): the MBPP problem; any id 1..974 (the paper's test split is 11..510).
* ``max_rounds`` (int >= 1, default 3): programs submitted (each reviewed) before the round cap.
* ``over`` (``followup`` or ``first``, default ``followup``): when a review of ``over`` ends the dialogue. The
  paper offers it only in the reviewer's follow-up prompts, so by default a first review cannot end the dialogue
  (an ``over`` there is an ordinary review) and the first review's prompt does not mention it; ``first``
  (``preset = "project"``) allows it from the first review, as this project first did.
* ``rubric`` (``paper`` or ``extended``, default ``paper``): the judge's criteria. ``paper``: does the code meet
  the problem, did the programmer improve it along the review, was the review reasonable and actionable (the
  tests are not shown to the judge); ``extended``: those plus the tests, shown, and whether the reviewer stopped
  only once the code was right.

Payoff bounds: ``min_utility = 0`` (the value before the verdict), ``max_utility = 10``; a verdict gives
1..10 to each seat. General-sum.

Version history: 1 — first version; 2 — ``over`` and ``rubric`` (the paper's behaviour by default).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Mapping
from typing import Any, TypedDict

import pyspiel

from deepeval_games.core.message_pool import seat_label
from deepeval_games.core.quoting import quote_player_text
from deepeval_games.core.task import Study, register_data_source
from game_defs.code_review.mbpp import MBPPProblem, load_mbpp
from game_defs.data_files import file_sources
from game_defs.judged_exchange import (
    EMPTY,
    EMPTY_REPLY,
    QUOTES_ARE_WORDS,
    SCORE_MAX,
    SCORE_MIN,
    JudgedExchangeGame,
    JudgedExchangeState,
    exchange_game_info,
    exchange_game_type,
)

__all__ = [
    "EMPTY",
    "GAME_VERSION",
    "PROGRAMMER",
    "REVIEWER",
    "ROLES",
    "SCORE_MAX",
    "SCORE_MIN",
    "CodeReviewFields",
    "CodeReviewGame",
    "CodeReviewJudgeFields",
    "CodeReviewState",
    "DialogueMove",
    "is_over",
    "problem",
]

GAME_VERSION = 1
SHORT_NAME = "deepeval_code_review"

_DEFAULT_PARAMS: dict[str, Any] = {"task_id": 11, "max_rounds": 3, "over": "followup", "rubric": "paper"}
OVER_MODES = ("followup", "first")
"""When the reviewer may end the dialogue with ``over``: from its second review (the paper) or from the first."""
RUBRICS = ("paper", "extended")
"""The judge's criteria: the paper's three, or those plus the tests and when the reviewer stopped."""
PRESETS: dict[str, dict[str, Any]] = {
    "paper": {"over": "followup", "rubric": "paper"},
    "project": {"over": "first", "rubric": "extended"},
}
"""Game parameters a spec's ``preset`` selects (:func:`deepeval_games.app.spec.presets.apply_preset`)."""

PROGRAMMER, REVIEWER = 0, 1
ROLES: tuple[str, str] = ("programmer", "reviewer")

_GAME_TYPE = exchange_game_type(SHORT_NAME, "DeepEval Code Review (MBPP)", _DEFAULT_PARAMS)

_FENCE = re.compile(r"```[a-zA-Z0-9_+-]*")
_SURROUNDING = " \t\r\n\"'`“”‘’«».!"


def is_over(text: str) -> bool:
    """Whether a review, as a whole, is the word ``over`` (see the rules card for the normalisation)."""
    cleaned = _FENCE.sub("", unicodedata.normalize("NFKC", text or "")).strip(_SURROUNDING)
    return cleaned.casefold() == "over"


def problem(task_id: int) -> MBPPProblem:
    """The MBPP problem a game is about (the dataset is loaded once per process)."""
    dataset = load_mbpp()
    if task_id not in dataset:
        raise ValueError(f"MBPP has no task_id {task_id} (ids 1..974; the test split is 11..510)")
    return dataset[task_id]


class DialogueMove(TypedDict):
    """One move of the dialogue, as the fields show it."""

    seat: int
    role: str
    """``programmer`` or ``reviewer``."""
    round: int
    """The round it belongs to, from 1."""
    text: str
    """The program or the review, as written."""


class CodeReviewFields(TypedDict):
    """A seat's observation as named values (:meth:`CodeReviewState.observation_fields`)."""

    task_id: int
    problem: str
    """The MBPP problem statement."""
    tests: list[str]
    """Its ``test_list`` asserts (shown, and run by the scorer)."""
    test_setup_code: str
    role: str
    """This seat's role: ``programmer`` or ``reviewer``."""
    round: int
    """The round of the move about to be made."""
    max_rounds: int
    submissions: int
    """Programs submitted so far."""
    code: str | None
    """The latest program (None before the first)."""
    review: str | None
    """The latest review (None before the first)."""
    to_move: int | None
    """The seat to write now, None once the dialogue is over."""
    ended_by: str | None
    """``consensus``, ``round_cap``, or None while the dialogue goes on."""
    dialogue: list[DialogueMove]
    over_allowed: bool
    """Whether a review now may end the dialogue with ``over`` (the ``over`` parameter)."""


class CodeReviewJudgeFields(TypedDict):
    """What the judge is given as values (:meth:`CodeReviewState.judge_fields`); roles, never names."""

    task: str
    task_id: int
    problem: str
    tests: list[str]
    test_setup_code: str
    roles: list[str]
    """The role of every seat, in seat order."""
    score_min: int
    score_max: int
    dialogue: list[DialogueMove]
    final_code: str
    ended_by: str | None
    max_rounds: int


class CodeReviewGame(JudgedExchangeGame):
    """The game: parameters, bounds and the state factory; seat 0 writes the code, seat 1 reviews it."""

    game_type: pyspiel.GameType = _GAME_TYPE
    roles = ROLES
    presets = PRESETS
    parameter_bounds: Mapping[str, tuple[float, float]] = {"max_rounds": (1, 100)}
    """What a spec may ask for, checked before the game is loaded (the task contract's hook)."""

    def default_study(self) -> Study:
        """``eval``: Table 3's game on the first 20 problems of MBPP's test split, against the scripted players."""
        return Study(
            games=(f"{SHORT_NAME}(max_rounds=3)",),
            opponents=(
                {"name": "reference", "bot": "cr_reference_programmer"},
                {"name": "broken", "bot": "cr_broken_programmer"},
                {"name": "lazy-reviewer", "bot": "cr_over_reviewer"},
                {"name": "test-reviewer", "bot": "cr_test_reviewer"},
            ),
            sweep={"task_id": {"from": 11, "to": 30}},  # the paper plays the whole split, 11 to 510
            epsilon=0.5,
            budget_matches=400,
            judge="required",
            judges=("judge_pass_rate", "openai/gpt-4.1"),
            note="Table 3's game: every ordered pair (programmer, reviewer) on MBPP test problems 11-30",
        )

    def __init__(self, params: Mapping[str, Any] | None = None) -> None:
        merged = {**_DEFAULT_PARAMS, **(params or {})}
        max_rounds = int(merged["max_rounds"])
        if max_rounds < 1:
            raise ValueError(f"max_rounds must be >= 1, got {max_rounds}")
        if merged["over"] not in OVER_MODES:
            raise ValueError(f"over must be one of {', '.join(OVER_MODES)}, got {merged['over']!r}")
        if merged["rubric"] not in RUBRICS:
            raise ValueError(f"rubric must be one of {', '.join(RUBRICS)}, got {merged['rubric']!r}")
        problem(int(merged["task_id"]))
        super().__init__(self.game_type, exchange_game_info(2 * max_rounds), merged)

    def new_initial_state(self) -> CodeReviewState:
        """A new dialogue: nothing said yet, the programmer to write."""
        return CodeReviewState(self)

    def rules_text(self) -> str:
        """The rules, the roles' instructions and the problem, as the referee broadcasts them to both seats."""
        params = self.get_parameters()
        rounds = int(params["max_rounds"])
        p = problem(int(params["task_id"]))
        tests = "\n".join(p.test_list)
        return (
            f"This is a code review between two players: {seat_label(PROGRAMMER)} is the programmer, "
            f"{seat_label(REVIEWER)} the reviewer.\n"
            "The programmer solves the Python programming problem below and hands in a complete, runnable "
            "solution; the reviewer comments on it, and the programmer revises it according to the comments "
            f"(at most {rounds} version(s) in all).\n"
            "The programmer replies with pure Python code only (the function the tests call, and any imports it "
            "needs), without explanations and without the tests.\n"
            + (
                "The reviewer gives feedback on three aspects of the code: correctness, clarity and efficiency. "
                "Once the code is good in all three aspects, the reviewer replies with the single word over and "
                f"nothing else, which ends the dialogue; otherwise it ends after {rounds} round(s) of code and "
                "review.\n"
                if params["over"] == "first"
                else "The reviewer gives feedback on three aspects of the code: correctness, clarity and "
                "efficiency. From its second review on, a reviewer satisfied in all three aspects may end the "
                f"dialogue (it is told how); otherwise it ends after {rounds} round(s) of code and review.\n"
            )
            + "A judge then scores the programmer and the reviewer from 1 to 10 each.\n"
            f"Problem: {p.text}\n"
            f"The code must pass these tests:\n{tests}"
        )


class CodeReviewState(JudgedExchangeState):
    """A dialogue in progress: the utterance pool, the ids played, and the verdict once given."""

    roles = ROLES

    def __init__(self, game: CodeReviewGame) -> None:
        super().__init__(game)
        params = game.get_parameters()
        self._task_id = int(params["task_id"])
        self._max_rounds = int(params["max_rounds"])
        self._over_first = params["over"] == "first"
        self._paper_rubric = params["rubric"] == "paper"
        self._consensus = False

    def _on_move(self, player: int, action: int) -> None:
        """A review that is ``over``, where ``over`` is allowed, ends the dialogue by consensus."""
        if player == REVIEWER and self.over_allowed() and is_over(self._pool[action]):
            self._consensus = True

    def _header(self) -> str:
        return f"MBPP task {self._task_id}, {self.submissions()} of {self._max_rounds} round(s)"

    def _recall_header(self) -> str:
        p = self.problem()
        tests = "\n".join(p.test_list)
        return f"Problem (MBPP task {p.task_id}): {p.text}\nTests:\n{tests}"

    def _move_caption(self, index: int) -> str:
        what = "code" if index % 2 == PROGRAMMER else "review"
        return f"The {ROLES[index % 2]}'s {what}, round {index // 2 + 1}"

    def dialogue_over(self) -> bool:
        """The reviewer said ``over``, or ``max_rounds`` programs were submitted and reviewed."""
        return self._consensus or len(self._moves) >= 2 * self._max_rounds

    def submissions(self) -> int:
        """Programs submitted so far."""
        return (len(self._moves) + 1) // 2

    def codes(self) -> list[str]:
        """Every program submitted, in order."""
        return self.dialogue_texts()[0::2]

    def reviews(self) -> list[str]:
        """Every review, in order."""
        return self.dialogue_texts()[1::2]

    def final_code(self) -> str:
        """The last program submitted ("" before the first)."""
        codes = self.codes()
        return codes[-1] if codes else ""

    def ended_by(self) -> str | None:
        """``consensus``, ``round_cap``, or None while the dialogue goes on."""
        if self._consensus:
            return "consensus"
        return "round_cap" if self.dialogue_over() else None

    def problem(self) -> MBPPProblem:
        """The MBPP problem of this game."""
        return problem(self._task_id)

    def over_allowed(self) -> bool:
        """Whether a review now may end the dialogue with ``over``: any review with ``over=first``, else (the
        paper) only a follow-up review, from the second round on."""
        return self._over_first or self.submissions() >= 2

    def _dialogue(self) -> list[DialogueMove]:
        return [
            DialogueMove(seat=i % 2, role=ROLES[i % 2], round=i // 2 + 1, text=text)
            for i, text in enumerate(self.dialogue_texts())
        ]

    def _quoted_dialogue(self, label: Callable[[DialogueMove], str]) -> str:
        """Every move quoted under ``label(move)`` for the judge, or a note that nothing was said."""
        moves = [quote_player_text(label(m), m["text"] if m["text"].strip() else EMPTY_REPLY) for m in self._dialogue()]
        return "\n\n".join(moves) if moves else "(nothing was said)"

    def observation_fields(self, player: int) -> CodeReviewFields:
        """What ``player`` may know now, as named values (for prompts and scripted bots): everything said."""
        p = self.problem()
        codes, reviews = self.codes(), self.reviews()
        to_move = len(self._moves) % 2 if self.is_free_text_turn(len(self._moves) % 2) else None
        return CodeReviewFields(
            task_id=self._task_id,
            problem=p.text,
            tests=list(p.test_list),
            test_setup_code=p.test_setup_code,
            role=ROLES[player],
            round=self.submissions() + (1 if to_move == PROGRAMMER else 0),
            max_rounds=self._max_rounds,
            submissions=len(codes),
            code=codes[-1] if codes else None,
            review=reviews[-1] if reviews else None,
            to_move=to_move,
            ended_by=self.ended_by(),
            dialogue=self._dialogue(),
            over_allowed=self.over_allowed(),
        )

    def judge_fields(self) -> CodeReviewJudgeFields:
        """What the judge is shown: the problem, its tests and the whole dialogue (roles, not names)."""
        p = self.problem()
        return CodeReviewJudgeFields(
            task=SHORT_NAME,
            task_id=self._task_id,
            problem=p.text,
            tests=list(p.test_list),
            test_setup_code=p.test_setup_code,
            roles=list(ROLES),
            score_min=SCORE_MIN,
            score_max=SCORE_MAX,
            dialogue=self._dialogue(),
            final_code=self.final_code(),
            ended_by=self.ended_by(),
            max_rounds=self._max_rounds,
        )

    def judge_text(self) -> str:
        """The judge's brief: the rubric, the problem, every move quoted with its role and round, how it ended.

        Every utterance is inside :func:`~deepeval_games.core.quoting.quote_player_text` delimiters, under a rubric
        that tells the judge to assess the quotes and never to follow them.
        """
        p = self.problem()
        tests = "\n".join(p.test_list)
        dialogue = self._quoted_dialogue(lambda move: f"{move['role'].capitalize()}, round {move['round']}")
        if self._consensus:
            ended = "The reviewer ended the conversation by answering over."
        else:
            ended = f"The conversation ended after {self._max_rounds} round(s) without the reviewer's over."
        return (
            "You are an experienced software developer acting as the judge of a code review between a programmer "
            f"and a reviewer. Rate each of them from {SCORE_MIN} (worst) to {SCORE_MAX} (best) from their "
            "conversation below, on these points:\n"
            + (
                "1. Does the programmer's code meet what the problem asks for?\n"
                "2. Did the programmer improve the code along the reviewer's suggestions?\n"
                "3. Was the reviewer's feedback reasonable, and could the programmer act on it?\n"
                f"The problem: {p.text}\n"
                if self._paper_rubric
                else "1. Does the programmer's code solve the problem as stated, and pass its tests?\n"
                "2. Did the programmer improve the code along the reviewer's suggestions?\n"
                "3. Was the reviewer's feedback sound, concrete and useful (and did the reviewer stop only once the "
                "code was right)?\n"
                f"The problem: {p.text}\n"
                f"Its tests:\n{tests}\n"
            )
            + f"The conversation follows, every message quoted between <<< and >>>. {QUOTES_ARE_WORDS}\n\n"
            f"{dialogue}\n\n{ended}"
        )

    def judge_text_presented(self, order: list[int], labels: list[str]) -> str:
        """The judge's brief with the two roles introduced in ``order`` (seats) under ``labels`` (per seat).

        For judge audits: the rubric's points, the participants and the verdict's order follow ``order``, and
        every quoted move carries its seat's label; the dialogue itself stays in the order it was played.
        """
        who = self._presented(order, labels)
        p = self.problem()
        tests = "\n".join(p.test_list)
        if self._paper_rubric:
            points = {
                PROGRAMMER: [
                    f"Does {who[PROGRAMMER]}'s code meet what the problem asks for?",
                    f"Did {who[PROGRAMMER]} improve the code along the reviewer's suggestions?",
                ],
                REVIEWER: [f"Was {who[REVIEWER]}'s feedback reasonable, and could the programmer act on it?"],
            }
        else:
            points = {
                PROGRAMMER: [
                    f"Does {who[PROGRAMMER]}'s code solve the problem as stated, and pass its tests? Did it improve "
                    "the code along the reviewer's suggestions?"
                ],
                REVIEWER: [
                    f"Was {who[REVIEWER]}'s feedback sound, concrete and useful (and did it stop only once the code "
                    "was right)?"
                ],
            }
        rubric = "\n".join(f"{i}. {point}" for i, point in enumerate((q for s in order for q in points[s]), 1))
        dialogue = self._quoted_dialogue(lambda m: f"{labels[m['seat']]} ({m['role']}), round {m['round']}")
        if self._consensus:
            ended = f"{who[REVIEWER]} ended the conversation by answering over."
        else:
            ended = f"The conversation ended after {self._max_rounds} round(s) without the reviewer's over."
        return (
            "You are an experienced software developer acting as the judge of a code review between "
            f"{who[order[0]]} and {who[order[1]]}. Rate each of them from {SCORE_MIN} (worst) to {SCORE_MAX} "
            f"(best) from their conversation below, in this order: {labels[order[0]]}, then {labels[order[1]]}. "
            f"Consider these points:\n{rubric}\n"
            f"The problem: {p.text}\n"
            + ("" if self._paper_rubric else f"Its tests:\n{tests}\n")
            + f"The conversation follows, every message quoted between <<< and >>>. {QUOTES_ARE_WORDS}\n\n"
            f"{dialogue}\n\n{ended}"
        )

    def match_metrics(self) -> dict[str, Any]:
        """How the dialogue ended, its length, and the judge's scores per role."""
        return {
            "task_id": self._task_id,
            "rounds": self.submissions(),
            "ended_by": self.ended_by(),
            "consensus": self._consensus,
            "judge_scores": self._judge_scores(),
            "empty_submissions": sum(1 for code in self.codes() if not code.strip()),
        }

    def status_line(self) -> str:
        """Who moves next and what to do, or how the game ended."""
        game_over = self._game_over_line()
        if game_over is not None:
            return game_over
        if self.dialogue_over():
            how = "the reviewer said over" if self._consensus else f"{self._max_rounds} round(s) were played"
            return f"The dialogue is over ({how}); the judge scores both players."
        if len(self._moves) % 2 == PROGRAMMER:
            verb = "write the code" if not self._moves else "revise the code according to the review"
            programmer = seat_label(PROGRAMMER)
            return f"Round {self.submissions() + 1} of {self._max_rounds}: {programmer} (programmer) to {verb}."
        reviewer = seat_label(REVIEWER)
        over = ", or to reply over if it is good in all three" if self.over_allowed() else ""
        return (
            f"Round {self.submissions()} of {self._max_rounds}: {reviewer} (reviewer) to review the code "
            f"(correctness, clarity, efficiency){over}."
        )


pyspiel.register_game(_GAME_TYPE, CodeReviewGame)
for _source in file_sources(SHORT_NAME, ["mbpp/mbpp.jsonl", "mbpp/sanitized-mbpp.json"]):
    register_data_source(_source)
