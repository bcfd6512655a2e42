"""Three fake models of different strength behind one fake OpenAI-compatible endpoint, for the journey tests
(a user's path through the CLI: ``eval`` -> ``report`` -> ``leaderboard`` -> ``report --html`` -> ``export``).

The server (:class:`tests.fake_openai_server.FakeOpenAIServer`) answers every chat completion with :func:`respond`,
which routes on the requested model's name (``openai/strong`` reaches the server as ``strong``: litellm strips the
provider) to one of three players:

* ``strong`` plays well. Tic-tac-toe (or any game whose prompt shows a tic-tac-toe board and the generic adapter's
  ``Your legal moves now: [...]``): perfect play, a minimax over the board read from the prompt. Public Goods Game:
  it puts nothing in the pool every round. With ``1 < alpha < n`` that is the dominant move for the coins a seat
  ends with, which are its payoff; it is also what serves ``goal=most`` (end with more coins than anyone) best,
  since every coin put in raises the others' holdings as much as one's own share of it.
* ``weak`` plays legally but badly. Tic-tac-toe: the legal move a minimax says is worst (the first of them), so it
  throws away every game its opponent can win. Public Goods Game: it puts its whole endowment in every round.
* ``broken`` never answers in the format: prose without a move or an amount (:data:`BROKEN_REPLY`), so every turn
  it plays is re-asked and finally counted ``invalid``.

Another game shown through the generic adapter gets the first legal move from ``strong`` and ``weak`` alike (no
board to read); a model name not in :data:`MODELS` gets a reply naming the mistake (no move in it).

    with three_models() as server:
        assert main(eval_argv("tic_tac_toe", tmp_path / "run", server.api_base, fake_provider_key)) == 0
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Callable, Iterator
from functools import cache
from pathlib import Path
from typing import Any

from tests.fake_openai_server import Behaviour, FakeOpenAIServer, fake_eval_argv, last_user_message

__all__ = [
    "BROKEN_REPLY",
    "MODELS",
    "REPLIES",
    "broken_reply",
    "eval_argv",
    "model_name",
    "respond",
    "strong_reply",
    "three_models",
    "weak_reply",
]

MODELS = ("strong", "weak", "broken")
"""The models the endpoint serves, strongest first; ``--model openai/<name>`` asks for one."""

BROKEN_REPLY = "I am not sure what to do here."
"""What ``broken`` replies to every request: no move name, no JSON, no amount of coins."""

_MOVES = "Your legal moves now: "
"""What the generic adapter's prompt says before the JSON list of legal move names."""
_BOARD = re.compile(r"^([xo.]{3})\n([xo.]{3})\n([xo.]{3})$", re.M)
"""Tic-tac-toe's board as its observation shows it: three lines of three marks, the top row first."""
_CELL = re.compile(r"^([xo])\((\d),(\d)\)$")
"""A tic-tac-toe move's name: ``x(r,c)``."""
_LINES = ((0, 1, 2), (3, 4, 5), (6, 7, 8), (0, 3, 6), (1, 4, 7), (2, 5, 8), (0, 4, 8), (2, 4, 6))
_PGG_ASK = re.compile(r"How many of your (\d+) coins do you put into the pool")
"""The Public Goods Game's question (both answer formats), naming the endowment."""
_PGG_RANGE = re.compile(r"whole number from 0 to (\d+)")
"""The Public Goods Game's re-ask, naming the endowment."""
_PGG_JSON = '"coins": <a whole number'
"""What the Public Goods Game's prompt says when it asks for ``{"reason", "coins"}`` (``answer=json``)."""


def model_name(body: dict[str, Any]) -> str:
    """The requested model of a chat request body, without a provider prefix (``openai/strong`` -> ``strong``)."""
    return str(body.get("model", "")).rsplit("/", 1)[-1]


def _legal_moves(text: str) -> list[str] | None:
    """The legal move names the generic adapter's prompt lists last in ``text``; None when it lists none."""
    start = text.rfind(_MOVES)
    if start < 0:
        return None
    moves, _ = json.JSONDecoder().raw_decode(text, start + len(_MOVES))
    return [str(move) for move in moves]


def _board(text: str) -> str | None:
    """The last tic-tac-toe board shown in ``text`` before its list of legal moves, as 9 characters (row by row)."""
    end = text.rfind(_MOVES)
    found = _BOARD.findall(text[: end if end >= 0 else len(text)])
    return "".join(found[-1]) if found else None


def _winner(board: str) -> str | None:
    """``x`` or ``o`` when that mark holds a line of ``board``, else None."""
    for a, b, c in _LINES:
        if board[a] != "." and board[a] == board[b] == board[c]:
            return board[a]
    return None


@cache
def _value(board: str, mark: str) -> int:
    """The game-theoretic value of ``board`` for ``mark``, ``mark`` to move: +1 a win, 0 a draw, -1 a loss."""
    won = _winner(board)
    if won is not None:
        return 1 if won == mark else -1
    if "." not in board:
        return 0
    other = "o" if mark == "x" else "x"
    return max(-_value(board[:i] + mark + board[i + 1 :], other) for i, cell in enumerate(board) if cell == ".")


def _move_value(board: str, name: str) -> int | None:
    """The value for the mover of playing the move named ``name`` on ``board`` (None: not a tic-tac-toe move)."""
    cell = _CELL.match(name)
    if cell is None:
        return None
    mark, row, col = cell.group(1), int(cell.group(2)), int(cell.group(3))
    i = 3 * row + col
    if board[i] != ".":
        return None
    other = "o" if mark == "x" else "x"
    return -_value(board[:i] + mark + board[i + 1 :], other)


def _board_move(text: str, best: bool) -> str | None:
    """A ``{"move": ...}`` reply for a generic-adapter prompt: on a tic-tac-toe board the first move of best (or
    worst) minimax value, on another game the first legal move; None when ``text`` lists no legal moves."""
    moves = _legal_moves(text)
    if not moves:
        return None
    board = _board(text)
    values = [_move_value(board, move) for move in moves] if board is not None else []
    if values and all(value is not None for value in values):
        scored = [(value, i) for i, value in enumerate(values) if value is not None]
        _, pick = max(scored, key=lambda vi: (vi[0], -vi[1])) if best else min(scored)
        return json.dumps({"move": moves[pick]})
    return json.dumps({"move": moves[0]})


def _pgg_reply(body: dict[str, Any], coins: Callable[[int], int], reason: str) -> str | None:
    """A Public Goods Game answer putting ``coins(endowment)`` in the pool, in the format the prompt asks for
    (``{"reason", "coins"}`` or the amount in words); None when ``body`` is not a Public Goods Game prompt."""
    text = last_user_message(body)
    asked = _PGG_ASK.search(text) or _PGG_RANGE.search(text)
    if asked is None:
        return None
    amount = coins(int(asked.group(1)))
    whole = "\n".join(str(m.get("content", "")) for m in body.get("messages") or [])
    if _PGG_JSON in whole:
        return json.dumps({"reason": reason, "coins": amount})
    return f"I put {amount} coins into the pool. {reason}"


def strong_reply(body: dict[str, Any]) -> str:
    """``strong``'s answer: perfect tic-tac-toe; nothing in the Public Goods Game's pool."""
    text = last_user_message(body)
    move = _board_move(text, best=True)
    if move is not None:
        return move
    pgg = _pgg_reply(body, lambda endowment: 0, "Keeping every coin is worth more to me than any share of the pool.")
    return pgg if pgg is not None else BROKEN_REPLY


def weak_reply(body: dict[str, Any]) -> str:
    """``weak``'s answer: tic-tac-toe's worst legal move; the whole endowment into the Public Goods Game's pool."""
    text = last_user_message(body)
    move = _board_move(text, best=False)
    if move is not None:
        return move
    pgg = _pgg_reply(body, lambda endowment: endowment, "Everyone gains when the pool is full.")
    return pgg if pgg is not None else BROKEN_REPLY


def broken_reply(body: dict[str, Any]) -> str:
    """``broken``'s answer to anything: :data:`BROKEN_REPLY`."""
    return BROKEN_REPLY


REPLIES: dict[str, Callable[[dict[str, Any]], str]] = {
    "strong": strong_reply,
    "weak": weak_reply,
    "broken": broken_reply,
}
"""Each model's reply, computed from a chat request's JSON body."""


def respond(body: dict[str, Any]) -> str:
    """The reply of the model ``body`` asks for (:data:`REPLIES`); an unknown model's reply names the mistake."""
    name = model_name(body)
    reply = REPLIES.get(name)
    if reply is None:
        return f"There is no fake model {name!r} here; ask for one of {', '.join(MODELS)}."
    return reply(body)


@contextlib.contextmanager
def three_models(*, max_hang_s: float = 5.0) -> Iterator[FakeOpenAIServer]:
    """A running fake OpenAI-compatible server answering as :data:`MODELS` (by the requested model's name); its
    ``api_base`` goes to ``-M api_base=...``. It stops when the ``with`` block ends."""
    with FakeOpenAIServer(default=Behaviour.responder(respond), max_hang_s=max_hang_s) as server:
        yield server


def eval_argv(game: str, out: str | Path, api_base: str, key_env: str, *extra: str) -> list[str]:
    """The argv of ``deepeval-games eval GAME`` for :func:`deepeval_games.app.commands.cli.main`: the three models
    at ``api_base`` (:func:`tests.fake_openai_server.fake_eval_argv`), the run in ``out``; ``extra`` is appended."""
    return fake_eval_argv(game, out, api_base, key_env, *extra, models=tuple(f"openai/{name}" for name in MODELS))
