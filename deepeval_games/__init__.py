"""deepeval-games: evaluate LLMs by making them play OpenSpiel games (the DeepEval method).

Two subpackages, so that a file's path tells its layer:

* :mod:`deepeval_games.core`: the referee (:func:`play_match`, the paper's Algorithm 1), the message pool, match
  records, the task contract (:mod:`deepeval_games.core.task`), the registries and the conformance kit
  (:mod:`deepeval_games.core.testing`). It names no built-in task or bot.
* :mod:`deepeval_games.app`: spec, schedule, runner and executors, store, reports, CLI. It sits above the tasks and
  players; its names exported here (``run_experiment``, ``load_spec``, ...) are imported on first use, so importing
  the core never imports the layers above it.

A module is imported by its path in one of them (``deepeval_games.core.task``,
``deepeval_games.app.execution.run``, ...); the flat paths of earlier versions (``deepeval_games.task``,
``deepeval_games.runner``, ...) were removed. The names exported here stay importable from ``deepeval_games`` itself.
"""

from typing import TYPE_CHECKING

from deepeval_games.core.bot import Decision, DeepEvalBot, Observation, Outcome, SyncBot, observe
from deepeval_games.core.errors import (
    ConformanceError,
    DeepEvalError,
    FatalRunError,
    InfrastructureError,
    ResumeMismatchError,
    SpecError,
    UnknownBotError,
    UnknownGameError,
)
from deepeval_games.core.message_pool import Message, MessagePool
from deepeval_games.core.records import MatchRecord, TurnRecord
from deepeval_games.core.referee import play_match
from deepeval_games.core.registry.bots import make_bot, register_bot, register_scorer, registered_bots
from deepeval_games.core.registry.entry_points import lazy_names
from deepeval_games.core.registry.games import load_game, registered_games

if TYPE_CHECKING:
    from deepeval_games.app.execution.run import run_experiment, run_experiment_async
    from deepeval_games.app.execution.run_result import RunResult
    from deepeval_games.app.spec.loading import load_spec
    from deepeval_games.app.spec.players import PlayerSpec
    from deepeval_games.app.spec.spec import ExperimentSpec, parse_spec

__version__ = "0.1.0"

__all__ = [
    "ConformanceError",
    "Decision",
    "DeepEvalBot",
    "DeepEvalError",
    "ExperimentSpec",
    "FatalRunError",
    "InfrastructureError",
    "MatchRecord",
    "Message",
    "MessagePool",
    "Observation",
    "Outcome",
    "PlayerSpec",
    "ResumeMismatchError",
    "RunResult",
    "SpecError",
    "SyncBot",
    "TurnRecord",
    "UnknownBotError",
    "UnknownGameError",
    "load_game",
    "load_spec",
    "make_bot",
    "observe",
    "parse_spec",
    "play_match",
    "register_bot",
    "register_scorer",
    "registered_bots",
    "registered_games",
    "run_experiment",
    "run_experiment_async",
]

_APPLICATION = {
    "RunResult": "deepeval_games.app.execution.run_result",
    "run_experiment": "deepeval_games.app.execution.run",
    "run_experiment_async": "deepeval_games.app.execution.run",
    "ExperimentSpec": "deepeval_games.app.spec.spec",
    "PlayerSpec": "deepeval_games.app.spec.players",
    "load_spec": "deepeval_games.app.spec.loading",
    "parse_spec": "deepeval_games.app.spec.spec",
}

__getattr__ = lazy_names(__name__, _APPLICATION)  # the application layer's names, imported on first use
