"""The jury of TextArena's judged environments, played by the match's judge: every verdict a recorded move.

TextArena's Debate and ScenarioPlanning ask a jury of models (``OpenRouterJury``) to vote among options, and
GuessWho and TwentyQuestions ask a gamemaster model (``OpenRouterAgent``) to answer a question with one of its
options, all over a remote service, from inside the environment's ``reset`` or ``step``. Here each question is
answered by the recorded verdicts of the match instead (:class:`RecordedVerdicts`): the environment is built with a
stand-in jury (Debate's and ScenarioPlanning's ``jury_class``) or a stand-in gamemaster (put in place of
``textarena.agents.OpenRouterAgent`` while the environment is built), which reads the next verdict. Where none is
recorded yet, the stand-in raises :class:`VerdictNeeded` with the question and the options: the adapted state then
stands at a judge node, the referee asks the spec's judge, the verdict is recorded as a move, and the environment is
replayed from its moves and verdicts to where it asked. So the returns stay a function of the history, a match
replays from its record, and ``deepeval-games rejudge`` can ask another judge the same question.

A jury of one: a vote is the judge's option (all the votes), so TextArena's shares are 1 for it and 0 for the others.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

__all__ = [
    "JURY_ENVIRONMENTS",
    "RecordedVerdicts",
    "VerdictNeeded",
    "VerdictRequest",
    "stand_in_gamemaster",
]

JURY_ENVIRONMENTS: dict[str, str] = {
    "Debate": "jury",
    "ScenarioPlanning": "jury",
    "GuessWho": "gamemaster",
    "TwentyQuestions": "gamemaster",
}
"""TextArena 0.7's environments that ask models, by the name before the version (``Debate`` of ``Debate-v0``):
``jury`` takes a ``jury_class``; ``gamemaster`` builds an ``OpenRouterAgent`` and reads its
``gamemaster_options``."""


@dataclass(frozen=True)
class VerdictRequest:
    """A question the environment asks its jury: the text it would send, and the options to choose from."""

    question: str
    options: tuple[str, ...]


class VerdictNeeded(Exception):
    """The environment asked a question that no recorded verdict answers yet."""

    def __init__(self, request: VerdictRequest) -> None:
        super().__init__(f"a verdict is needed among {list(request.options)}")
        self.request = request


class RecordedVerdicts:
    """The verdicts of one match, in order (an option's index each), read by the stand-ins as they are asked.

    With ``auto`` (probing an environment, no judge at hand) a question with no verdict gets the first option.
    """

    def __init__(self, verdicts: Sequence[int] = (), *, auto: bool = False) -> None:
        self.verdicts = list(verdicts)
        self.auto = auto
        self.asked = 0

    def answer(self, question: str, options: Sequence[str]) -> str:
        """The recorded option for the next question; :class:`VerdictNeeded` when none is recorded."""
        if not options:
            raise ValueError("a jury question with no options")
        if self.asked >= len(self.verdicts):
            if not self.auto:
                raise VerdictNeeded(VerdictRequest(question, tuple(options)))
            self.verdicts.append(0)
        choice = self.verdicts[self.asked]
        self.asked += 1
        if not 0 <= choice < len(options):
            raise ValueError(f"verdict {choice} is not an option of {list(options)}")
        return str(options[choice])

    def jury_class(self) -> Callable[..., _Jury]:
        """The ``jury_class`` of Debate and ScenarioPlanning: a jury of one that reads these verdicts."""

        def make(options: Sequence[str], jury_size: int = 1, **_: Any) -> _Jury:
            return _Jury(self, list(options))

        return make


class _Jury:
    """TextArena's jury interface (``evaluate(context) -> {option: share}``), answered by the recorded verdicts."""

    def __init__(self, verdicts: RecordedVerdicts, options: list[str]) -> None:
        self.verdicts = verdicts
        self.options = options

    def evaluate(self, context: str) -> dict[str, float]:
        chosen = self.verdicts.answer(context, self.options)
        return {option: float(option == chosen) for option in self.options}


class _Gamemaster:
    """TextArena's agent interface (``agent(prompt) -> reply``), answered by the recorded verdicts; its options are
    the environment's ``gamemaster_options``, set once the environment is built."""

    def __init__(self, verdicts: RecordedVerdicts) -> None:
        self.verdicts = verdicts
        self.options: list[str] = []

    def __call__(self, prompt: str) -> str:
        return self.verdicts.answer(prompt, self.options)


@contextmanager
def stand_in_gamemaster(verdicts: RecordedVerdicts) -> Iterator[Callable[[Any], None]]:
    """While open, ``textarena.agents.OpenRouterAgent(...)`` makes a gamemaster that reads ``verdicts`` (the caller
    holds the lock around every call into TextArena). Yields ``connect(env)``, which gives the gamemasters the
    environment built the environment's ``gamemaster_options``."""
    import textarena

    made: list[_Gamemaster] = []

    def agent(*args: Any, **kwargs: Any) -> _Gamemaster:
        made.append(_Gamemaster(verdicts))
        return made[-1]

    def connect(env: Any) -> None:
        options = [str(option) for option in getattr(env, "gamemaster_options", None) or []]
        for gamemaster in made:
            gamemaster.options = options

    original = textarena.agents.OpenRouterAgent
    textarena.agents.OpenRouterAgent = agent
    try:
        yield connect
    finally:
        textarena.agents.OpenRouterAgent = original
