"""deepeval-games: evaluate LLMs by making them play OpenSpiel games (the DeepEval method).

The core: the referee (:func:`play_match`, the paper's Algorithm 1), the message pool, match records, the
task contract (:mod:`deepeval_games.task`), the registries and the conformance kit
(:mod:`deepeval_games.testing`). The application (spec, schedule, runner, store, CLI) sits above the tasks
and players; its names exported here (``run_experiment``, ``load_spec``, ...) are imported on first use,
so importing the core never imports the layers above it.
"""

from typing import TYPE_CHECKING

from deepeval_games.bot import Decision, DeepEvalBot, Observation, Outcome, SyncBot, observe
from deepeval_games.errors import (
    ConformanceError,
    DeepEvalError,
    FatalRunError,
    InfrastructureError,
    ResumeMismatchError,
    SpecError,
    UnknownBotError,
    UnknownGameError,
)
from deepeval_games.games import load_game, registered_games
from deepeval_games.message_pool import Message, MessagePool
from deepeval_games.plugins import lazy_names
from deepeval_games.records import MatchRecord, TurnRecord
from deepeval_games.referee import play_match
from deepeval_games.registry import make_bot, register_bot, register_scorer, registered_bots

if TYPE_CHECKING:
    from deepeval_games.runner import RunResult, run_experiment, run_experiment_async
    from deepeval_games.spec import ExperimentSpec, PlayerSpec, load_spec, parse_spec

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
    "RunResult": "deepeval_games.runner",
    "run_experiment": "deepeval_games.runner",
    "run_experiment_async": "deepeval_games.runner",
    "ExperimentSpec": "deepeval_games.spec",
    "PlayerSpec": "deepeval_games.spec",
    "load_spec": "deepeval_games.spec",
    "parse_spec": "deepeval_games.spec",
}

__getattr__ = lazy_names(__name__, _APPLICATION)  # the application layer's names, imported on first use
