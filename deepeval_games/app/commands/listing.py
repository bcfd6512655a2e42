"""The commands that describe this installation: ``data`` (the data files, and fetching them), ``games``, ``bots``,
``schema`` and ``sandbox-info``."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from deepeval_games.core.errors import DeepEvalError
from deepeval_games.core.records import MatchRecord
from deepeval_games.core.registry.bots import registered_bots
from deepeval_games.core.registry.games import registered_games

__all__ = ["cmd_bots", "cmd_data", "cmd_games", "cmd_sandbox_info", "cmd_schema"]


def cmd_data(args: argparse.Namespace) -> int:
    """``data``: list every data source and where it is; ``data fetch [NAME]``: download and check files."""
    from deepeval_games.app.commands import data

    if args.action == "fetch":
        for line in data.fetch(args.name, into=Path(args.dir) if args.dir else None):
            print(line)
        return 0
    if args.name is not None:
        raise DeepEvalError(f"'data' takes no name (did you mean 'data fetch {args.name}'?)")
    statuses = [data.source_status(source) for source in data.sources()]
    print(data.format_status(statuses))
    return 0 if all(s.verified is not False for s in statuses) else 1


def cmd_games(args: argparse.Namespace) -> int:
    """``games [--all]``: the registered tasks with their parameters (``--all``: OpenSpiel's games too)."""
    for info in registered_games():
        params = ", ".join(f"{k}={v}" for k, v in sorted(info.parameters.items()))
        players = (
            f"{info.min_players}" if info.min_players == info.max_players else f"{info.min_players}-{info.max_players}"
        )
        print(f"{info.short_name}  ({info.long_name}; {players} players; {info.dynamics})\n    {params}")
    if args.all:  # OpenSpiel's own games: LLM-playable (probed), classical bots that play them
        from llm_bots.players.classical import DEFAULT_NODE_BUDGET, family_listing, openspiel_listing

        print(
            "\nOpenSpiel's games (LLM: playable through the generic adapter, probed by a playout; classical: the "
            f"bots that play it, exact* only up to {DEFAULT_NODE_BUDGET} states, checked when a spec names it):"
        )
        print("\n".join(openspiel_listing()))
        print("\n".join(family_listing()))
    return 0


def cmd_bots(args: argparse.Namespace) -> int:
    """``bots``: the registered scripted bots and the games each plays."""
    for entry in registered_bots():
        games = ", ".join(entry.games) or "any game"
        print(f"{entry.name}  [{games}]\n    {entry.description}")
    return 0


def cmd_schema(args: argparse.Namespace) -> int:
    """``schema [--record]``: the JSON Schema of the experiment spec (or of a match record)."""
    import json

    if args.record:
        from deepeval_games.core.records import SCHEMA_VERSION

        schema = {
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            **MatchRecord.model_json_schema(),
            "x-schema-version": SCHEMA_VERSION,
        }
    else:
        from deepeval_games.app.spec.spec import spec_json_schema

        schema = spec_json_schema()
    print(json.dumps(schema, indent=2, ensure_ascii=False))
    return 0


def cmd_sandbox_info(args: argparse.Namespace) -> int:
    """``sandbox-info``: which protection bounds the code sandbox's memory here; 2 when one is unavailable."""
    from deepeval_games.infra.sandbox import MEMORY_MODE_ENV
    from deepeval_games.infra.sandbox.protection import describe

    if args.memory_mode:
        os.environ[MEMORY_MODE_ENV] = args.memory_mode
    rows = describe()
    width = max(len(label) for label, _ in rows)
    for label, value in rows:
        print(f"{label:<{width}}  {value}")
    return 2 if any(value.startswith("UNAVAILABLE") for _, value in rows) else 0
