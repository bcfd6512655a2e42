"""A person plays one seat of a game at the terminal: ``deepeval-games play GAME [--seat N] [--against ...]``.

A quick game without a spec file, for someone designing a task (are the rules clear, is the prompt fair, can it be
won?) or setting a human baseline. :func:`play_spec` writes the experiment spec such a game is: the person in seat
``N`` (``--seat 1`` is the seat the players call ``Player 1``) as a ``human = true`` player, the other seats
filled with the named scripted bots or models in seat order (pairing ``fixed``), an optional judge (a person, a
scripted judge or a model), no model-call cache. It runs like any spec: the match is committed once, whole, to the
run directory (by default ``plays/<game>-<spec hash>``, so the same command resumes the same game after Ctrl-C,
and ``--seed`` starts another one). :func:`final_view` is what the person is shown at the end: the last view the
referee delivered to the seat and the seats' returns, under their anonymous ids only.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from deepeval_games.app.spec.players import HUMAN_BOT
from deepeval_games.app.spec.spec import ExperimentSpec, parse_spec
from deepeval_games.core import task
from deepeval_games.core.errors import SpecError, UnknownBotError
from deepeval_games.core.message_pool import seat_label
from deepeval_games.core.records import MatchRecord
from deepeval_games.core.registry.bots import lookup_bot, registered_bots
from deepeval_games.core.registry.games import check_file_parameters, load_game
from deepeval_games.core.transcript import with_messages

__all__ = ["HUMAN_NAME", "default_opponent", "default_out", "final_view", "play_spec"]

HUMAN_NAME = "human"
"""The person's player name in the match record."""


def default_opponent(game_string: str) -> str:
    """The scripted bot that fills the other seats when ``--against`` is not given: the first registered bot made
    for this game (by name), else ``random``."""
    short = load_game(game_string).get_type().short_name
    own = [entry.name for entry in registered_bots() if short in entry.games]
    return own[0] if own else "random"


def _player(what: str, name: str) -> dict[str, Any]:
    """The spec table of a seat (or the judge) named on the command line: ``human``, a registered bot or a model."""
    if what == HUMAN_BOT:
        return {"name": name, "human": True}
    try:
        lookup_bot(what)
    except UnknownBotError as exc:
        if "/" not in what:
            raise UnknownBotError(
                f"{exc} A model is a litellm model string with its provider, e.g. openai/gpt-4o."
            ) from exc
        return {"name": name, "model": what}
    return {"name": name, "bot": what}


def play_spec(
    game_string: str,
    *,
    seat: int = 1,
    against: Sequence[str] = (),
    judge: str | None = None,
    seed: int = 0,
    terminator: str = ".",
    data_dir: str | Path | None = None,
) -> ExperimentSpec:
    """The spec of a game with a person in seat ``seat`` (1 = ``Player 1``) and ``against`` in the others.

    ``against`` names one bot or model for every other seat, or one per other seat in seat order (empty:
    :func:`default_opponent`). ``judge`` (``human``, a scripted judge or a model) is required by judged games.
    ``data_dir`` is the spec's ``[experiment] data_dir``: the only folder a game parameter may name a file in
    (``efg_game(filename=...)``), checked before the game is loaded, as for ``run``.

    Raises:
        SpecError: the seat, the number of opponents or the judge does not fit the game.
        UnknownBotError: an opponent is neither a registered bot nor a model string.
        UnknownGameError: the game cannot be loaded, or a parameter names a file outside ``data_dir``.
    """
    check_file_parameters(game_string, data_dir=data_dir)  # before OpenSpiel opens (and quotes) the file
    game = load_game(game_string)
    seats = game.num_players()
    if not 1 <= seat <= seats:
        raise SpecError(f"--seat must be 1..{seats} for {game_string} ({seats} seats), got {seat}")
    others = list(against) or [default_opponent(game_string)]
    if len(others) == 1:
        others *= seats - 1
    if len(others) != seats - 1:
        raise SpecError(
            f"{game_string} has {seats - 1} other seats: name one bot or model for all of them, or one per seat "
            f"(got {len(others)})"
        )
    players: list[dict[str, Any]] = []
    for index in range(seats):
        if index == seat - 1:
            players.append({"name": HUMAN_NAME, "human": True, "params": {"terminator": terminator}})
            continue
        what = others.pop(0)
        players.append(_player(what, f"{what} ({seat_label(index)})"))
    document: dict[str, Any] = {
        "experiment": {
            "name": f"play {game.get_type().short_name}",
            "game": game_string,
            "pairing": "fixed",
            "seed": seed,
            "cache": False,
            "max_concurrency": 1,
            **({"data_dir": str(data_dir)} if data_dir is not None else {}),
        },
        "players": players,
    }
    if task.is_judged(game):
        if judge is None:
            raise SpecError(
                f"{game_string} is judged: name its judge with --judge (human, a scripted judge such as judge_fixed, "
                "or a model)"
            )
        table = _player(judge, "human judge" if judge == HUMAN_BOT else judge)
        if judge == HUMAN_BOT:
            table["params"] = {"terminator": terminator}
        document["judge"] = table
    elif judge is not None:
        raise SpecError(f"{game_string} has no judge: --judge does not apply")
    return parse_spec(document)


def default_out(spec: ExperimentSpec) -> Path:
    """The run directory of a game played with ``play`` and no ``--out``: one per spec (the same command resumes)."""
    short = spec.games[0].split("(", 1)[0]
    return Path("plays") / f"{short}-{spec.content_hash()[:10]}"


def final_view(record: MatchRecord, seat: int) -> str:
    """What the person in ``seat`` (0-based) is shown when the match is over: the referee's last view for the seat
    and every seat's return, by anonymous id only (never a player's name, bot or model)."""
    last = None
    for message in with_messages(record).messages:  # a record stored as its exchanges: its pool replayed
        if message.get("kind") == "observation" and seat in message.get("recipients", ()):
            last = message.get("text")
    returns = ", ".join(
        f"{seat_label(index)}{' (you)' if index == seat else ''} {value:+g}"
        for index, value in enumerate(record.returns)
    )
    parts = ["==================== The game is over ====================", last or "", f"Returns: {returns}"]
    return "\n\n".join(part for part in parts if part)
