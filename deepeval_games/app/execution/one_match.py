"""Plays one planned match in this process: the seats' bots built from the match's seed, the referee run.

:class:`MatchPlayer` is what the driver (:mod:`~deepeval_games.app.execution.play_and_commit`) and every worker of an
executor (:mod:`~deepeval_games.app.execution.worker_side`) play matches with, so a match plays the same wherever it
runs: the same bots, seeded the same way, give the same record.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pyspiel

from deepeval_games.app.spec.plan import PlannedMatch, as_plan
from deepeval_games.app.spec.players import PlayerSpec
from deepeval_games.app.spec.spec import ExperimentSpec
from deepeval_games.core.bot import DeepEvalBot, SeatSeed
from deepeval_games.core.errors import FatalRunError, SpecError
from deepeval_games.core.records import JUDGE_SEAT, MatchRecord
from deepeval_games.core.referee import TranscriptNotDerivable, blind_seats, play_match
from deepeval_games.core.registry.bots import BotFactory, bot_factory, make_bot, scorers_for
from deepeval_games.core.registry.games import load_game
from deepeval_games.core.transcript import without_messages
from llm_bots import model_info

__all__ = [
    "MatchPlayer",
    "build_player",
    "cache_path",
    "check_cache",
    "check_credentials",
    "open_runtime",
    "seat_rng",
]


def build_player(
    player: PlayerSpec,
    game: pyspiel.Game,
    seat: int,
    rng: np.random.Generator,
    *,
    match_id: str = "",
    runtime: Any = None,
) -> DeepEvalBot:
    """The bot for one seat: a registered scripted bot, or an LLM bot sharing the run's ``runtime``."""
    if player.bot is not None:
        return make_bot(player.bot, game, seat, rng, player.params)
    assert player.model is not None
    if seat == JUDGE_SEAT:  # the judge: temperature 0, no default verdict (llm_bots.judge)
        from llm_bots.judge.llm import make_llm_judge  # imported only when a model judges: litellm is slow

        return make_llm_judge(player.model, player.params, game, rng, match_id=match_id, runtime=runtime)
    from llm_bots.llm_bot import make_llm_bot  # imported only when a model plays: litellm is slow to import

    return make_llm_bot(player.model, player.params, game, seat, rng, match_id=match_id, runtime=runtime)


def seat_rng(seed: int, seat: int) -> np.random.Generator:
    """The generator of one seat of a match with ``seed`` (the judge's: seat ``num_players``): the stream of
    ``np.random.SeedSequence(seed).spawn(num_players + 1)[seat]``, built without spawning the others (and without
    ``default_rng``'s checks of its argument: the same generator)."""
    return SeatSeed(seed, seat).generator()


def cache_path(spec: ExperimentSpec) -> Path | None:
    """The model-call cache a run of ``spec`` opens: None without model players, with a person at the table (the
    models answer live, never from replayed calls) or with ``cache = false``."""
    if not spec.uses_models() or spec.has_humans() or spec.cache is False:
        return None
    if spec.cache is True:
        from deepeval_games.infra.files import cache_dir

        return cache_dir() / "model-calls.sqlite"
    return Path(spec.cache)


def check_cache(spec: ExperimentSpec) -> None:
    """The run's model-call cache can be opened, before anything is written (a device, a file of ``/proc``, a text
    file are refused, never overwritten)."""
    path = cache_path(spec)
    if path is None:
        return
    from llm_bots.transport.call_cache import cache_path_problem

    problem = cache_path_problem(path)
    if problem is not None:
        raise SpecError(f"[experiment] cache: {problem}")


def open_runtime(spec: ExperimentSpec) -> Any:
    """The model runtime (call cache, budget) when the spec has LLM players, else None."""
    if not spec.uses_models():
        return None
    from llm_bots.llm_bot import ModelRuntime

    return ModelRuntime.open(cache_path(spec), spec.budget_usd)


def check_credentials(player: PlayerSpec) -> None:
    """A model player's API key is where it will be looked for, and a local model can be served (before anything is
    written or sent)."""
    assert player.model is not None
    if model_info.is_local(player.model):
        from llm_bots.local.server import local_model_available

        reason = local_model_available(player.model)
        if reason is not None:
            raise FatalRunError(f"player {player.name!r}: {reason}")
        return
    key_env, api_base = player.params.get("api_key_env"), player.params.get("api_base")
    if key_env is not None:
        if not os.environ.get(str(key_env)):
            raise FatalRunError(
                f"model {player.model!r} (player {player.name!r}): the environment variable {key_env} "
                "(api_key_env) is not set or empty"
            )
        return

    keys = model_info.missing_api_keys(player.model, None if api_base is None else str(api_base))
    if keys:
        raise FatalRunError(
            f"model {player.model!r} (player {player.name!r}): no API key; set {', '.join(keys)} "
            "or name the variable holding it in api_key_env"
        )


class MatchPlayer:
    """Plays planned matches of one spec in this process: each seat's bot built from the match's seed, the referee
    run, the record returned (not committed). The runner drives it; a worker process
    (:mod:`deepeval_games.app.execution.process_executor`) runs one of its own."""

    def __init__(self, spec: ExperimentSpec, runtime: Any) -> None:
        self.spec = spec
        self.runtime = runtime
        self.games: dict[str, pyspiel.Game] = {}
        self._factories: dict[tuple[str, str], BotFactory | None] = {}
        self._scorers: dict[str, list[Callable[..., Mapping[str, Any]]]] = {}

    def game(self, game_string: str) -> pyspiel.Game:
        """The loaded game of ``game_string`` (loaded once)."""
        if game_string not in self.games:
            self.games[game_string] = load_game(game_string)
        return self.games[game_string]

    def _bot_factory(self, game_string: str, name: str) -> BotFactory | None:
        """The scripted player ``name``'s bot for ``game_string``, resolved once per player and game (None for a
        model player: its bot is built per match by :func:`build_player`)."""
        key = (game_string, name)
        if key not in self._factories:
            player = self.spec.player(name)
            factory = None if player.bot is None else bot_factory(player.bot, self.game(game_string), player.params)
            self._factories[key] = factory
        return self._factories[key]

    def validate(self, plan: Sequence[PlannedMatch]) -> None:
        """Build every player once per game before any match starts, so spec errors surface at once; then check
        the model players' API keys (and local models) and the model-call cache."""
        for game_string in sorted(as_plan(plan).games()):
            game = self.game(game_string)
            for player in self.spec.players:
                build_player(player, game, 0, np.random.default_rng(0), runtime=self.runtime)
            # judged games: a judge is required, and an LLM judge is no player's model unless forced
            from llm_bots.judge import check_judge

            judge = self.spec.judge
            check_judge(
                game,
                judge_configured=judge is not None,
                judge_model=judge.model if judge is not None else None,
                judge_params=judge.params if judge is not None else None,
                player_models={p.name: p.model for p in self.spec.players if p.model is not None},
            )
            if self.spec.judge is not None:
                build_player(self.spec.judge, game, -2, np.random.default_rng(0), runtime=self.runtime)
        for player in (*self.spec.players, *([self.spec.judge] if self.spec.judge else [])):
            if player.kind == "model":
                check_credentials(player)
        check_cache(self.spec)

    async def play(self, planned: PlannedMatch) -> MatchRecord:
        """Play one planned match here and return its record.


        Under the spec's ``transcript = "auto"`` (the default) a match of fields bots is recorded as its moves
        (:func:`~deepeval_games.core.referee.play_match`'s ``transcript="moves"``); should a seat answer an illegal
        move, the match is played again from the start, with new bots from the same seeds, and recorded in full. A match
        where a model or a person spoke is stored as its exchanges, its pool derived (:func:`without_messages`)."""
        game = self.game(planned.game)
        transcript: Literal["full", "moves"] = "moves" if self.spec.experiment.transcript == "auto" else "full"
        try:
            record = await self._play(planned, game, transcript)
        except TranscriptNotDerivable:
            record = await self._play(planned, game, "full")
        record.experiment = self.spec.name
        record.repeat = planned.repeat
        return record

    async def _play(
        self, planned: PlannedMatch, game: pyspiel.Game, transcript: Literal["full", "moves"]
    ) -> MatchRecord:
        bots = []
        for seat, name in enumerate(planned.seats):
            factory = self._bot_factory(planned.game, name)
            if factory is not None:  # its generator made only if it draws (when its class allows: takes_seat_seed)
                bots.append(factory(seat, SeatSeed(planned.seed, seat)))
            else:
                player, rng = self.spec.player(name), seat_rng(planned.seed, seat)
                bots.append(build_player(player, game, seat, rng, match_id=planned.match_id, runtime=self.runtime))
        judge = None
        if self.spec.judge is not None:
            rng = seat_rng(planned.seed, game.num_players())
            judge = build_player(self.spec.judge, game, -2, rng, match_id=planned.match_id, runtime=self.runtime)
        scorers = self._scorers.get(planned.game)
        if scorers is None:
            scorers = self._scorers[planned.game] = scorers_for(game.get_type().short_name)
        record = await play_match(
            game,
            bots,
            seed=planned.seed,
            match_id=planned.match_id,
            seat_names=planned.seats,
            judge=judge,
            scorers=scorers,
            transcript=transcript,
        )
        if transcript == "moves" and record.transcript == "full":  # a model or a person spoke: its turns, no pool
            record = without_messages(record, blind_seats(bots))
        return record
