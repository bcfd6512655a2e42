"""What the TextArena adapter knows of some environments beyond what probing finds: whose state is public.

A game of perfect information lets ``mcts`` search its true state: nothing is hidden from a seat in it. TextArena
does not say which of its environments are such games, so :data:`PUBLIC_STATE` declares them (by the name before
the version: ``TicTacToe`` covers ``TicTacToe-v0`` and its variants), and the adapter checks each declaration when
it probes the environment (:mod:`game_defs.arena.textarena_env`): every seat is shown the same messages, its own
prompt aside, and the play does not depend on the seed (a seed drawn at the start that decided later dice would be
known to a search ahead of time). A declaration that fails its check is not used, and ``games --all`` says why.

A search also needs every legal move: ``mcts`` plays the declared environments that name their moves (TicTacToe,
Othello, SimpleTak, SantoriniBaseFixed); the others are listed as games of perfect information that it cannot
search (their moves are free text).
"""

from __future__ import annotations

__all__ = ["PUBLIC_STATE", "base_name", "public_state_declared"]

PUBLIC_STATE: frozenset[str] = frozenset(
    {
        "Alquerque",
        "Breakthrough",
        "Chopsticks",
        "ConnectFour",
        "LinesOfAction",
        "Nim",
        "Othello",
        "QuantumTicTacToe",
        "SantoriniBaseFixed",
        "SimpleTak",
        "Tak",
        "TicTacToe",
        "UltimateTicTacToe",
        "WildTicTacToe",
    }
)
"""TextArena 0.7's board games whose whole state is public: the board and every move shown to every seat, no
hidden card, no die."""


def base_name(env_id: str) -> str:
    """The environment's name without its version and variant (``ConnectFour`` of ``ConnectFour-v0-large``)."""
    return env_id.split("-", 1)[0]


def public_state_declared(env_id: str) -> bool:
    """Whether :data:`PUBLIC_STATE` declares the environment's state public."""
    return base_name(env_id) in PUBLIC_STATE
