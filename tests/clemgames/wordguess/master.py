"""wordguess: a two-player clemgame written against clemcore's API for deepeval-games' tests (see README.md)."""

from __future__ import annotations

from typing import Any

from clemcore.backends import Model
from clemcore.clemgame import DialogueGameMaster, GameBenchmark, GameScorer, ParseError, Player
from clemcore.clemgame.metrics import BENCH_SCORE, METRIC_ABORTED, METRIC_LOSE, METRIC_SUCCESS

SCORES = {1: 100, 2: 50, 3: 25}


class Describer(Player):
    """Gives clues; programmatic: the word's first letter."""

    def __init__(self, model: Model, target: str) -> None:
        super().__init__(model)
        self.target = target

    def _custom_response(self, context: dict[str, Any]) -> str:
        return f"CLUE: it starts with the letter {self.target[0]}"


class Guesser(Player):
    """Guesses; programmatic: the instance's candidates, in order."""

    def __init__(self, model: Model, candidates: list[str]) -> None:
        super().__init__(model)
        self.candidates = candidates
        self.guesses = 0

    def _custom_response(self, context: dict[str, Any]) -> str:
        said = context["content"].count("CLUE:")
        return f"GUESS: {self.candidates[min(said, len(self.candidates)) - 1]}"


class WordGuess(DialogueGameMaster):
    """The describer and the guesser take turns; the episode ends on the right guess or after ``max_rounds``."""

    def _on_setup(self, **game_instance: Any) -> None:
        self.target = game_instance["target"]
        self.max_rounds = int(self.experiment["max_rounds"])
        self.describer = Describer(self.player_models[0], self.target)
        self.guesser = Guesser(self.player_models[1], list(game_instance["candidates"]))
        self.add_player(
            self.describer,
            initial_context=f"You describe the word '{self.target}' without saying it. Answer: CLUE: <your clue>",
        )
        self.add_player(
            self.guesser,
            initial_prompt="You guess a word from clues. Answer: GUESS: <one word>",
        )
        self.rounds = 0
        self.aborted = self.success = False
        self.clues: list[str] = []

    def _parse_response(self, player: Player, response: str) -> str:
        prefix = "CLUE:" if player is self.describer else "GUESS:"
        text = response.strip()
        if not text.startswith(prefix):
            raise ParseError(f"the reply does not start with {prefix}", response)
        return text[len(prefix) :].strip()

    def _on_parse_error(self, error: ParseError) -> None:
        self.aborted = True
        self.state.abort()

    def _advance_game(self, player: Player, parsed_response: str) -> None:
        if player is self.describer:
            if self.target.lower() in parsed_response.lower():
                self.aborted = True
                self.state.abort()
                return
            self.clues.append(parsed_response)
            clues = "\n".join(f"CLUE: {clue}" for clue in self.clues)
            self.set_context_for(self.guesser, clues)
            return
        self.rounds += 1
        if parsed_response.lower() == self.target.lower():
            self.success = True
            self.state.succeed()
        elif self.rounds >= self.max_rounds:
            self.state.failed()
        else:
            self.set_context_for(self.describer, f"The guess was '{parsed_response}': wrong. Give another clue.")

    def _on_after_game(self) -> None:
        self.log_key(METRIC_ABORTED, int(self.aborted))
        self.log_key(METRIC_SUCCESS, int(self.success))
        self.log_key(METRIC_LOSE, int(not self.aborted and not self.success))
        self.log_key("rounds", self.rounds)


class WordGuessScorer(GameScorer):
    """Main score: 100, 50 or 25 for a guess in round 1, 2 or 3; NaN for an aborted episode (clembench's way)."""

    def compute_round_score(self, round_idx: int, round_events: list[dict[str, Any]]) -> None:
        pass

    def compute_episode_scores(self, interactions: dict[str, Any]) -> None:
        if interactions[METRIC_ABORTED]:
            self.log_episode_score(BENCH_SCORE, float("nan"))
            return
        score = SCORES.get(int(interactions["rounds"]), 0) if interactions[METRIC_SUCCESS] else 0
        self.log_episode_score(BENCH_SCORE, score)


class WordGuessBenchmark(GameBenchmark):
    """The benchmark clemcore loads from this file."""

    def create_game_master(self, experiment: dict[str, Any], player_models: list[Model]) -> DialogueGameMaster:
        return WordGuess(self.game_spec, experiment, player_models)

    def create_game_scorer(self, experiment: dict[str, Any], game_instance: dict[str, Any]) -> GameScorer:
        return WordGuessScorer(self.game_name, experiment, game_instance)


__all__ = ["WordGuessBenchmark"]
