"""A person at the table: a seat or the judge played from a plain terminal (registered as the bot ``human``).

:class:`HumanBot` is shown, each turn, exactly what a model in its seat is shown
(:func:`llm_bots.turns.turn_message`: the pool messages the referee delivered since its last turn, other seats'
words quoted under their anonymous ids, then the task's answer format), plus the legal moves where the game has a
small finite set. The answer is read by the same task adapter as a model's (:func:`llm_bots.turns.safe_parse`); a
move may also be typed by its listed name (``invest 3``). An invalid answer gets the task's re-ask, at most
``max_reasks`` times (as for models), then the task's penalty applies. Free-text moves (code, reviews, paragraphs)
are typed over several lines, ended by a line holding only the ``terminator`` (``.`` by default), which the prompt
states; other moves take one line.

At a verdict node (seat :data:`~deepeval_games.core.records.JUDGE_SEAT`) the person is shown the judge's brief, what an
LLM judge is shown, and asked, role by role in the order the brief presents them, for a whole-number score and the
reasons; the verdict is read by :func:`llm_bots.judge.parse_judge_reply` like an LLM judge's reply, and the record
keeps the typed scores and reasons (the verdict's text) and every line typed (``raw_replies``).

Nothing shown names another seat's model or bot: the texts come from the pool and from ``prompts/human.toml``.
The terminal is plain line input (no curses; works over SSH), read without blocking the event loop
(:class:`Terminal`). Ctrl-C stops the run at once: the match in progress is not committed, and the same command
resumes; the end of input (Ctrl-D) raises :class:`HumanLeft`, which stops the run the same way.
"""

from __future__ import annotations

import asyncio
import queue
import re
import sys
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, TextIO

import msgspec
import numpy as np
import pyspiel

from deepeval_games.core.bot import Decision, DeepEvalBot, Observation, Outcome
from deepeval_games.core.errors import FatalRunError
from deepeval_games.core.quoting import valid_text
from deepeval_games.core.records import JUDGE_SEAT
from deepeval_games.core.registry.bots import register_bot
from llm_bots.adapters import Parsed, TaskAdapter, adapter_for, read_move_name
from llm_bots.judge import Verdict, parse_judge_reply, role_labels
from llm_bots.parsing import normalize, whole_number
from llm_bots.prompts import PromptSet, load_prompts
from llm_bots.turns import delivered_text, safe_parse, turn_message

__all__ = ["HUMAN", "MAX_LISTED_MOVES", "HumanBot", "HumanJudgeSource", "HumanLeft", "Terminal"]

HUMAN = "human"
"""The registered name (``deepeval_games.app.spec.players.HUMAN_BOT`` spells it too; a test checks they agree)."""

MAX_LISTED_MOVES = 40
"""Legal moves are listed by name when there are at most this many (idiom solitaire's dictionary is not)."""

_PROMPTS = "human"


class HumanLeft(FatalRunError):
    """The person's input ended (Ctrl-D, a closed terminal): the match in progress is not recorded."""


def _prompts() -> PromptSet:
    return load_prompts(_PROMPTS)


POLL_S = 0.05
"""How often a waiting read looks for a typed line (the event loop stays free: other seats' model calls go on)."""


@dataclass
class Terminal:
    """Plain line input and output for a person (standard input and output unless given).

    Lines are read by a daemon thread into a queue, and a read awaits the next one without blocking the event
    loop: model seats of the same round keep talking to their providers (their timeouts never run out because a
    person is typing), and Ctrl-C reaches asyncio's own handler, which cancels the run at once (the match in
    progress is not committed; ``KeyboardInterrupt`` ends the command with exit status 130). A line typed is never
    lost to a cancelled read: it stays in the queue.
    """

    stdin: TextIO | None = None
    stdout: TextIO | None = None
    lines_read: list[str] = field(default_factory=list, repr=False)
    _lines: queue.SimpleQueue[str | None] | None = field(default=None, repr=False)

    @classmethod
    def standard(cls) -> Terminal:
        """The terminal on standard input and output, one per process: every human seat and judge of a run reads
        through the same queue (a second reader thread would take lines meant for the next match)."""
        global _STANDARD
        if _STANDARD is None:
            _STANDARD = cls()
        return _STANDARD

    def show(self, text: str) -> None:
        """Write ``text`` and a newline."""
        out = self.stdout or sys.stdout
        out.write(text + "\n")
        out.flush()

    def _queue(self) -> queue.SimpleQueue[str | None]:
        if self._lines is None:
            self._lines = queue.SimpleQueue()
            threading.Thread(target=self._pump, args=(self._lines,), name="human-input", daemon=True).start()
        return self._lines

    def _pump(self, lines: queue.SimpleQueue[str | None]) -> None:
        source = self.stdin or sys.stdin
        while True:
            try:
                line = source.readline()
            except (OSError, ValueError):  # a closed terminal or stream
                line = ""
            lines.put(line or None)
            if not line:
                return

    async def read_line(self, prompt: str) -> str:
        """One line typed after ``prompt``, without its newline; :class:`HumanLeft` at the end of input."""
        out = self.stdout or sys.stdout
        out.write(prompt)
        out.flush()
        lines = self._queue()
        while True:
            try:
                line = lines.get_nowait()
                break
            except queue.Empty:
                await asyncio.sleep(POLL_S)
        if line is None:
            lines.put(None)  # every later read ends too
            raise HumanLeft("the input ended (Ctrl-D or a closed terminal): the match in progress is not recorded")
        # a terminal decoded with surrogateescape turns bytes that are not UTF-8 into surrogates: never stored
        line = valid_text(line.rstrip("\r\n"))[0]
        self.lines_read.append(line)
        return line

    async def read_block(self, terminator: str, prompt: str) -> str:
        """Lines up to one holding only ``terminator`` (surrounding spaces ignored), joined; the terminator dropped."""
        lines: list[str] = []
        while True:
            line = await self.read_line(prompt)
            if line.strip() == terminator:
                return "\n".join(lines)
            lines.append(line)


_STANDARD: Terminal | None = None


_NUMBER = re.compile(r"[-+]?\d+(?:\.\d+)?")


def _numbered_move(typed: str, names: Mapping[str, int]) -> int | None:
    """The move a bare number names where the moves are numbered (``4`` for ``invest 4``): the only listed move
    whose name holds that number and no other; None when the answer is not a bare number or names no one move."""
    said = typed.strip()
    if not _NUMBER.fullmatch(said):
        return None
    found = {action for name, action in names.items() if [float(n) for n in _NUMBER.findall(name)] == [float(said)]}
    return found.pop() if len(found) == 1 else None


@register_bot(HUMAN)
class HumanBot(DeepEvalBot):
    """A person at the terminal: plays a seat, or judges at a verdict node (``human = true``)."""

    def __init__(
        self,
        player_id: int,
        rng: np.random.Generator | None = None,
        *,
        game: pyspiel.Game,
        terminator: str = ".",
        max_reasks: int = 2,
        terminal: Terminal | None = None,
    ) -> None:
        """``terminator``: the line that ends a multi-line answer; ``max_reasks``: re-asks after an invalid move;
        ``terminal``: where to talk (standard input and output by default)."""
        super().__init__(player_id, rng, game=game)
        if not isinstance(terminator, str) or not terminator.strip() or "\n" in terminator:
            raise ValueError(f"terminator must be a non-blank single line, got {terminator!r}")
        if isinstance(max_reasks, bool) or not isinstance(max_reasks, int) or max_reasks < 0:
            raise ValueError(f"max_reasks must be a whole number >= 0, got {max_reasks!r}")
        if terminal is not None and not isinstance(terminal, Terminal):
            raise ValueError("terminal must be a llm_bots.players.human.Terminal")
        self.terminator = terminator.strip()
        self.max_reasks = max_reasks
        self.terminal = terminal or Terminal.standard()
        self.adapter: TaskAdapter | None = None if player_id == JUDGE_SEAT else adapter_for(game)
        self._seen = 0

    def identity(self) -> dict[str, Any]:
        return {"kind": "human", "interface": "terminal", "terminator": self.terminator}

    async def act(self, observation: Observation) -> Decision:
        """Ask the person for this turn's move (or, as the judge, for the verdict)."""
        if observation.seat == JUDGE_SEAT:
            return await self._verdict(observation)
        return await self._move(observation)

    # -- a seat ------------------------------------------------------------------------------------------

    def _input_hint(self, observation: Observation) -> str:
        prompts = _prompts()
        if observation.free_text:
            return prompts.render("seat", "multi_line", terminator=self.terminator)
        return prompts.render("seat", "one_line")

    def _moves_hint(self, observation: Observation) -> str:
        if observation.free_text or not observation.legal_actions:
            return ""
        if len(observation.legal_actions) > MAX_LISTED_MOVES:
            return _prompts().render("seat", "many_moves", count=len(observation.legal_actions))
        return _prompts().render("seat", "moves", moves=", ".join(observation.action_names()))

    async def _read(self, observation: Observation) -> str:
        prompt = _prompts().render("seat", "prompt")
        if observation.free_text:
            return await self.terminal.read_block(self.terminator, prompt)
        return await self.terminal.read_line(prompt)

    def _parse(self, typed: str, observation: Observation) -> Parsed:
        assert self.adapter is not None
        parsed = safe_parse(self.adapter, typed, observation)
        if parsed.ok or observation.free_text or len(observation.legal_actions) > MAX_LISTED_MOVES:
            return parsed
        names = observation.action_names()
        by_name = read_move_name(typed.strip(), names)  # a listed move typed by its name
        if by_name.ok:
            return Parsed(action=by_name.action, text=typed)
        by_number = _numbered_move(typed, names)  # "4" for "invest 4": the one move whose only number it is
        return Parsed(action=by_number, text=typed) if by_number is not None else parsed

    async def _move(self, observation: Observation) -> Decision:
        assert self.adapter is not None
        prompts = _prompts()
        text, self._seen = turn_message(self.adapter, observation, self._seen)
        label = self.adapter.seat_label(observation)
        header = prompts.render("seat", "header", seat_label=label, round=observation.round)
        shown = "\n\n".join(part for part in (header, text, self._moves_hint(observation)) if part)
        asks: list[str] = []
        typed: list[str] = []
        error = "no answer"
        for ask in range(self.max_reasks + 1):
            message = f"{shown}\n{self._input_hint(observation)}"
            self.terminal.show(message)
            asks.append(shown)
            answer = await self._read(observation)
            typed.append(answer)
            parsed = self._parse(answer, observation)
            if parsed.ok:
                return self._decision(asks, typed, Outcome.OK if ask == 0 else Outcome.REASKED, parsed)
            error = parsed.error or "invalid answer"
            if ask < self.max_reasks:
                note = prompts.render("seat", "reask", reason=error, ask=ask + 2, asks=self.max_reasks + 1)
                shown = f"{note}\n\n{self.adapter.reask_text(observation, error)}"
                moves = self._moves_hint(observation)
                shown = f"{shown}\n\n{moves}" if moves else shown
        self.terminal.show(prompts.render("seat", "penalty"))
        return msgspec.structs.replace(self._decision(asks, typed, Outcome.INVALID, None), error=error)

    @staticmethod
    def _decision(asks: list[str], typed: list[str], outcome: Outcome, parsed: Parsed | None) -> Decision:
        """The turn: what was shown at each ask (as one user message each, like a model's prompts), every answer
        typed, and the move (None: the penalty applies)."""
        return Decision(
            action=parsed.action if parsed is not None else None,
            text=(parsed.text or typed[-1]) if parsed is not None else typed[-1],
            outcome=outcome,
            raw_replies=tuple(typed),
            prompts=tuple(({"role": "user", "content": shown},) for shown in asks),
            retries=len(typed) - 1,
        )

    # -- the judge ---------------------------------------------------------------------------------------

    async def _verdict(self, observation: Observation) -> Decision:
        prompts = _prompts()
        fields = observation.fields
        labels = role_labels(fields["roles"])
        low, high = int(fields["score_min"]), int(fields["score_max"])
        order = [int(seat) for seat in fields.get("presented_order", range(len(labels)))]
        parts, self._seen = delivered_text(observation, self._seen)
        intro = prompts.render("judge", "intro", low=low, high=high)
        shown = "\n\n".join([prompts.render("judge", "header"), *parts, intro])
        self.terminal.show(shown)
        typed: list[str] = []
        attempts = 0
        while True:
            scores: dict[int, int] = {}
            reasons: dict[int, str] = {}
            for seat in order:
                scores[seat] = await self._ask_score(labels[seat], low, high, typed)
                reasons[seat] = await self._ask_reasons(labels[seat], typed)
            verdict = Verdict(
                tuple(scores[s] for s in range(len(labels))), tuple(reasons[s] for s in range(len(labels)))
            )
            parsed = parse_judge_reply(verdict.to_json(labels), observation)
            if parsed.ok:
                self.terminal.show(prompts.render("judge", "done"))
                return Decision(
                    action=parsed.action,
                    text=parsed.text,
                    outcome=Outcome.OK if attempts == 0 else Outcome.REASKED,
                    raw_replies=tuple(typed),
                    prompts=(({"role": "user", "content": shown},),),
                    retries=attempts,
                )
            attempts += 1
            self.terminal.show(prompts.render("judge", "reask", reason=parsed.error or "not a verdict"))

    async def _ask_score(self, label: str, low: int, high: int, typed: list[str]) -> int:
        prompts = _prompts()
        while True:
            line = await self.terminal.read_line(
                prompts.render("judge", "score", label=label, low=low, high=high) + " "
            )
            typed.append(line)
            score = whole_number(normalize(line).removesuffix("/10").strip())
            if score is not None and low <= score <= high:
                return score
            reason = load_prompts("judge").render("reasons", "bad_score", label=label, low=low, high=high, got=line)
            self.terminal.show(prompts.render("judge", "reask", reason=reason.strip()))

    async def _ask_reasons(self, label: str, typed: list[str]) -> str:
        prompts = _prompts()
        while True:
            self.terminal.show(prompts.render("judge", "reasons", label=label, terminator=self.terminator))
            block = await self.terminal.read_block(self.terminator, "| ")
            typed.append(block)
            if block.strip():
                return block.strip()
            reason = load_prompts("judge").render("reasons", "no_evaluation", label=label)
            self.terminal.show(prompts.render("judge", "reask", reason=reason.strip()))


class HumanJudgeSource:
    """A person as the judge of ``deepeval-games rejudge --human`` (a
    :class:`deepeval_games.app.execution.rejudge.JudgeSource`).

    Each judgement is asked of a :class:`HumanBot` at the judge seat: the person sees only the judge's brief (the
    roles and their quoted texts, never who played), one transcript at a time; ``rejudge`` shuffles the order.
    """

    def __init__(self, who: str = HUMAN, *, terminator: str = ".", terminal: Terminal | None = None) -> None:
        """``who``: the person's name (judgements are named ``human:<who>``, so several people stay apart)."""
        if not who.strip():
            raise ValueError("a human judge needs a non-blank name")
        self.who = who.strip()
        self.terminator = terminator
        self.terminal = terminal or Terminal.standard()

    @property
    def name(self) -> str:
        """``human:<who>``."""
        return f"{HUMAN}:{self.who}"

    @property
    def model(self) -> str | None:
        """None: no model judges."""
        return None

    def identity(self) -> dict[str, Any]:
        """The person's name and the input settings (part of every judgement id)."""
        return {"kind": "human", "name": self.who, "terminator": self.terminator}

    def build(self, game: pyspiel.Game, rng: np.random.Generator, *, judgement_id: str) -> HumanBot:
        """The judge bot of one judgement: a person at :attr:`terminal`."""
        return HumanBot(JUDGE_SEAT, rng, game=game, terminator=self.terminator, terminal=self.terminal)

    def close(self) -> None:
        """Nothing to release."""
