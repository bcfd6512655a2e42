"""clembench's dialogue games (clemgames) played as OpenSpiel games: ``clem:<game>``, ``clem:<game>(experiment=X)``.

``clem:taboo`` is the clemgame ``taboo`` of the clembench folder (:func:`game_defs.arena.clem_env.clembench_folder`:
``DEEPEVAL_GAMES_CLEMBENCH``, else the release ``deepeval-games data fetch clembench`` fetched), played through
clemcore's PettingZoo environment (``GameMasterEnv``; ``pip install 'deepeval-games[clembench]'``). Loading the name
registers a Python pyspiel game for it (this module registers the ``clem:`` family when its entry point loads;
nothing imports clemcore until a ``clem:`` game is asked for). The adaptation, as PettingZoo's and TextArena's
(:mod:`game_defs.arena.common`):

* seats are the game master's players in the order it adds them (``player_0`` is seat 0); the player function is
  the game master's turn order (whom it asks next);
* a match starts with a chance node choosing the episode's instance among the game's instances (those of one
  experiment with ``experiment=<name>``), equally likely: the instance is the match seed's;
* every move is free text (the clemgame parses the reply itself): the referee interns a reply in the state's
  utterance pool and the move is its id; nothing names the legal moves, so ``random`` is refused;
* a seat is shown its context, what the game master set for it and nothing else (the game's initial prompt comes
  with its first); the rules every seat is told are one paragraph naming the game and the seat's role;
* the payoff of every seat (the games are cooperative) is the episode's ``Main Score`` as the clemgame's scorer
  computes it, 0 for an aborted episode (on 0..100): its mean over episodes is clembench's score of the game for the
  players (quality times the share played); the match metrics keep the episode scores (main score, success, aborted,
  lose) for the report's clembench table (:mod:`analysis.tables.clembench`);
* a state keeps its instance, its moves and its pool; a copy replays them on a fresh episode, and so does a record
  when it is read; a game whose same replies give two different episodes is refused, as is one whose players are
  shown images (the seats read text), with the reason;
* the clemgame's own programmatic player answers for a seat whose bot is ``clem_programmatic``
  (:mod:`llm_bots.clembench.scripted`): its reply is the seat's observation field ``programmatic_reply``.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pyspiel

from deepeval_games.core.registry.games import GameFamily, register_game_family
from deepeval_games.core.task import register_data_source
from game_defs.arena import clem_env
from game_defs.arena.common import ReplayedEnv, SeatObserver, TextPool, game_type, listing_rows, seat_observer
from game_defs.data_files import file_sources

__all__ = ["DATA_TASK", "PREFIX", "ClemGame", "ClemState", "listing", "payoff", "register"]

PREFIX = "clem:"
DATA_TASK = "clembench"
"""The name ``deepeval-games data fetch clembench`` selects the release by."""
EMPTY = 0
"""The empty utterance: the penalty move, and the placeholder legal action."""
MAX_MOVES = 200
"""The most replies a match may take (a clemgame ends itself well before: its own turn limits)."""
MAX_SCORE = 100.0
_PROMPTS = Path(__file__).with_name("clembench.toml")


def payoff(scores: Mapping[str, Any]) -> float:
    """A seat's payoff from an episode's scores: its ``Main Score``, 0 where it was aborted or has none."""
    main = scores.get("Main Score")
    if scores.get("Aborted") or main is None:
        return 0.0
    return float(min(MAX_SCORE, max(0.0, float(main))))


class ClemGame(pyspiel.Game):
    """A clemgame as an OpenSpiel game (one class per game, made by :func:`register`)."""

    clem_name: str = ""
    facts: clem_env.GameFacts
    game_type: pyspiel.GameType
    replays_from_moves = True

    def __init__(self, params: Mapping[str, Any] | None = None) -> None:
        params = dict(params or {})
        self.experiment = str(params.get("experiment", ""))
        self.rows = clem_env.instance_rows(self.clem_name, self.experiment)
        super().__init__(
            self.game_type,
            pyspiel.GameInfo(
                num_distinct_actions=1 + MAX_MOVES,
                max_chance_outcomes=max(self.rows) + 1,
                num_players=self.facts.players,
                min_utility=0.0,
                max_utility=MAX_SCORE,
                utility_sum=None,
                max_game_length=MAX_MOVES,
            ),
            params,
        )

    def new_initial_state(self) -> ClemState:
        """A new match, at its chance node (the instance)."""
        return ClemState(self)

    def make_py_observer(
        self, iig_obs_type: pyspiel.IIGObservationType | None = None, params: Mapping[str, Any] | None = None
    ) -> SeatObserver:
        """Each seat's own view (its context)."""
        return seat_observer(iig_obs_type, params, typed=False, what=f"{PREFIX}{self.clem_name}")

    def rules_text(self) -> str:
        """The game's description from its ``clemgame.json`` and how to answer; the game master gives the rules."""
        roles = ", ".join(self.facts.roles)
        who = "on your own" if self.facts.players == 1 else f"with {self.facts.players} players ({roles})"
        return (
            f"You are playing clembench's {self.clem_name} {who}: {self.facts.description}\n"
            "The game master tells you the rules and what to answer; answer in the format it asks for."
        ).strip()

    def seat_roles(self) -> list[str]:
        """The game's roles, in the order its game master adds the players."""
        return list(self.facts.roles)

    def prompt_file(self) -> Path:
        """The LLM players' answer texts: the reply in the format the game master asked for."""
        return _PROMPTS

    def unlisted_moves(self) -> str | None:
        """Why the legal actions are not the game's moves: every move is free text."""
        return f"clembench's {self.clem_name} takes free-text replies, which a random player cannot write"


class ClemState(TextPool, pyspiel.State):
    """A match: the instance chosen, the replies (utterance ids), the pool, the live episode (rebuilt by replay)."""

    def __init__(self, game: ClemGame) -> None:
        super().__init__(game)
        # plain values only: OpenSpiel copies a state by deep-copying its attributes and serializes it by pickling
        self._name = game.clem_name
        self._players = game.facts.players
        self._roles = list(game.facts.roles)
        self._rows = list(game.rows)
        self._capacity = game.num_distinct_actions()
        self._row: int | None = None
        self._pool: list[str] = [""]
        self._moves: list[int] = []
        self._live: ReplayedEnv[clem_env.Episode] = ReplayedEnv()

    def _env(self) -> clem_env.Episode:
        return self._live.get(self._replay)

    def _replay(self) -> clem_env.Episode:
        assert self._row is not None
        episode = clem_env.Episode(self._name, self._row)
        for action in self._moves:
            episode.step(self._pool[action])
        return episode

    def current_player(self) -> int:
        """CHANCE until the instance is chosen; the seat the game master asks, or TERMINAL."""
        if self._row is None:
            return pyspiel.PlayerId.CHANCE
        if self.is_terminal():
            return pyspiel.PlayerId.TERMINAL
        return self._env().to_move()

    def _legal_actions(self, player: int) -> list[int]:
        """The placeholder (any interned reply is accepted) for the seat to move."""
        return [EMPTY] if self.current_player() == player else []

    def chance_outcomes(self) -> list[tuple[int, float]]:
        """The instances, equally likely (before one is chosen)."""
        if self._row is not None:
            return []
        return [(row, 1.0 / len(self._rows)) for row in self._rows]

    def _apply_action(self, action: int) -> None:
        if self._row is None:
            if action not in self._rows:
                raise ValueError(f"instance {action} is not one of this game's ({len(self._rows)} instances)")
            self._row = int(action)
            return
        if not 0 <= action < len(self._pool):
            raise ValueError(f"action {action} is not an utterance id of this state (0..{len(self._pool) - 1})")
        self._moves.append(int(action))
        self._env().step(self._pool[action])

    def _action_to_string(self, player: int, action: int) -> str:
        if player == pyspiel.PlayerId.CHANCE or self._row is None:
            return f"instance {action}"
        if not 0 <= action < len(self._pool):
            return f"<utterance {action}>"
        return self._pool[action] or "(an empty reply)"

    def is_terminal(self) -> bool:
        """The game master ended the episode, or it reached the move limit (then it scores 0)."""
        return self._row is not None and (self._env().done or len(self._moves) >= MAX_MOVES)

    def returns(self) -> np.ndarray:
        """Every seat's payoff (:func:`payoff`) once the episode is over (0 before, and for one cut at the limit)."""
        if self._row is None or not self._env().done:
            return np.zeros(self._players)
        return np.full(self._players, payoff(self._env().scores()))

    def seat_view(self, seat: int) -> str:
        """What the game master shows ``seat`` now (its context)."""
        if self._row is None:
            return "The match has not started."
        env = self._env()
        text = env.context(seat)
        if self.is_terminal():
            text += f"\n\nThe episode is over; it scored {self.returns()[seat]:g} of {MAX_SCORE:g}."
        return text

    def __str__(self) -> str:
        if self._row is None:
            return "instance not chosen"
        return f"instance {self._row}; replies {[self._pool[a] for a in self._moves]}"

    # -- DeepEval protocol ---------------------------------------------------------------------------

    def penalty_action(self, player: int) -> int:
        """The empty reply (the clemgame treats it as a reply it cannot parse)."""
        return EMPTY

    def observation_fields(self, player: int) -> dict[str, Any]:
        """The seat's role and, on its turn, what the clemgame's own programmatic player would reply (None where it
        has none): the ``clem_programmatic`` baseline's move."""
        fields: dict[str, Any] = {"role": self._roles[player] if player < len(self._roles) else f"player {player + 1}"}
        if self._row is not None and self.current_player() == player:
            fields["programmatic_reply"] = _programmatic_reply(self._env(), player)
        return fields

    def match_metrics(self) -> dict[str, Any]:
        """The episode's instance and its scores as the clemgame computes them (main score, success, aborted, ...)."""
        if self._row is None:
            return {}
        env = self._env()
        scores = env.scores()
        return {
            "clem_game": self._name,
            "clem_instance": env.instance,
            "clem_main_score": None if scores.get("Aborted") else scores.get("Main Score"),
            "clem_success": scores.get("Success"),
            "clem_aborted": scores.get("Aborted"),
            "clem_lose": scores.get("Lose"),
            "clem_episode_scores": scores,
        }


def _programmatic_reply(env: clem_env.Episode, seat: int) -> str | None:
    """The reply of the clemgame's player at ``seat`` as its programmatic version gives it, asked on a copy (the live
    player keeps its state); None where the player has none."""
    try:
        player = copy.deepcopy(env.player(seat))
        reply = player._custom_response({"role": "user", "content": env.context(seat)})
    except Exception:  # an abstract or failing stand-in: this seat has no programmatic player
        return None
    return reply if isinstance(reply, str) else None


def register(name: str) -> None:
    """Register the pyspiel game ``clem:<game>``; ValueError when it cannot be played (no clembench folder, no
    clemcore, a game that does not load, shows images or does not replay alike), saying why."""
    game = name[len(PREFIX) :]
    try:
        facts = clem_env.game_facts(game)
    except ImportError as exc:
        raise ValueError(f"clemcore cannot be imported ({exc}); {clem_env.EXTRA_HINT}") from exc
    except clem_env.ClembenchMissing as exc:
        raise ValueError(str(exc)) from exc
    if facts.refusal is not None:
        raise ValueError(f"clembench's {game} cannot be played: {facts.refusal}")
    cls: type[ClemGame] = type(
        f"Clem_{re.sub(r'[^0-9A-Za-z]', '_', game)}",
        (ClemGame,),
        {
            "clem_name": game,
            "facts": facts,
            "game_type": game_type(
                name,
                f"clembench {game}",
                players=facts.players,
                simultaneous=False,
                chance=True,
                perfect_information=False,
                zero_sum=False,
                parameters={"experiment": ""},
            ),
        },
    )
    pyspiel.register_game(cls.game_type, cls)


def listing() -> list[tuple[str, str | None]]:
    """Every game of the clembench folder, with why it cannot be played (None: it can); one row saying how to get
    the games where no folder is known."""
    try:
        names = clem_env.game_names()
    except clem_env.ClembenchMissing as exc:
        return [(f"{PREFIX}*", str(exc))]
    except ImportError:
        return [(f"{PREFIX}*", f"clemcore is not installed ({clem_env.EXTRA_HINT})")]
    return listing_rows(PREFIX, names, register)


def listing_key() -> str:
    """What the listing depends on beyond the installed versions: the clembench folder."""
    try:
        return str(clem_env.clembench_folder() or "")
    except clem_env.ClembenchMissing as exc:
        return str(exc)


for _source in file_sources(DATA_TASK, [clem_env.RELEASE_RELPATH]):
    register_data_source(_source)

register_game_family(
    GameFamily(
        PREFIX,
        register,
        listing,
        description=f"clembench's dialogue games (folder: ${clem_env.CLEMBENCH_ENV}, or deepeval-games data fetch "
        f"{DATA_TASK})",
        listing_key=listing_key,
    )
)
