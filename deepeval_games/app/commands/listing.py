"""The commands that describe this installation: ``data`` (the data files, and fetching them), ``games``, ``bots``,
``schema`` and ``sandbox-info``."""

from __future__ import annotations

import argparse
import hashlib
import importlib.metadata
import json
import logging
import os
import re
import sys
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

from deepeval_games.core.errors import DeepEvalError
from deepeval_games.core.records import MatchRecord
from deepeval_games.core.registry.bots import registered_bots
from deepeval_games.core.registry.games import registered_games

__all__ = ["LISTING_CACHE_NAME", "cmd_bots", "cmd_data", "cmd_games", "cmd_sandbox_info", "cmd_schema", "listing_key"]

log = logging.getLogger(__name__)

LISTING_CACHE_NAME = "games-all.json"
"""The file in the user cache (:func:`~deepeval_games.infra.files.cache_dir`) that keeps what ``games --all`` found."""

_LISTING_DISTRIBUTIONS = ("deepeval-games", "open_spiel", "textarena", "pettingzoo", "clemcore")
"""The distributions whose versions decide the verdicts of ``games --all``: another version, another probe."""

_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b[@-_]")
"""An ANSI escape sequence (CSI, or a two-character escape), as third-party warnings colour their text."""


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
        openspiel, families = _all_games(openspiel_listing, family_listing)
        print("\n".join(openspiel))
        print("\n".join(families))
    return 0


def listing_key() -> dict[str, Any]:
    """What the verdicts of ``games --all`` depend on: the versions of this package and of the libraries whose games
    it probes, Python's, the games registered, and which data files are found (TextArena's word lists). A cached
    listing made under another key is probed again."""
    import pyspiel

    from deepeval_games.app.commands import data
    from deepeval_games.infra.files import DATA_ENV, downloads_disabled

    versions: dict[str, str | None] = {}
    for name in _LISTING_DISTRIBUTIONS:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            versions[name] = None
    names = "\n".join(sorted(pyspiel.registered_names()))
    files: dict[str, list[Any] | None] = {}
    for source in data.sources():
        if source.package is not None:
            continue
        found = next((path for _, path in data.data_places(source.name) if path.is_file()), None)
        files[source.name] = [str(found), found.stat().st_size] if found is not None else None
    from deepeval_games.core.registry.games import game_families

    family_keys = {f.prefix: f.listing_key() for f in game_families() if f.listing_key is not None}
    return {
        "families": family_keys,
        "versions": versions,
        "python": sys.version.split()[0],
        "games": hashlib.sha256(names.encode()).hexdigest(),
        "data_dir": os.environ.get(DATA_ENV, ""),
        "offline": downloads_disabled(),
        "data_files": files,
    }


def _all_games(
    openspiel_listing: Callable[..., list[str]], family_listing: Callable[..., list[str]]
) -> tuple[list[str], list[str]]:
    """The lines of OpenSpiel's games and of the game families: from the user cache when it holds them under
    today's :func:`listing_key`, else probed (with progress on standard error) and kept there."""
    from deepeval_games.infra.files import cache_dir

    path = cache_dir() / LISTING_CACHE_NAME
    key = listing_key()
    try:
        cached = json.loads(path.read_text(encoding="utf-8"))
        if cached.get("key") == key:
            log.info("games --all: the listing kept in %s", path)
            return list(cached["openspiel"]), list(cached["families"])
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        pass  # none yet, or unreadable: probe again
    progress = _Progress(sys.stderr)
    with warnings.catch_warnings(record=True) as caught:  # gymnasium's coloured UserWarnings, among others
        warnings.simplefilter("always")
        try:
            openspiel = openspiel_listing(progress=progress)
            families = family_listing(progress=progress)
        finally:
            progress.close()
    for message in dict.fromkeys(strip_ansi(str(w.message)) for w in caught):  # each once, no escape codes
        log.info("while probing the games: %s", message)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        document = {"key": key, "openspiel": openspiel, "families": families}
        tmp.write_text(json.dumps(document, ensure_ascii=False, indent=1), encoding="utf-8")
        os.replace(tmp, path)
    except OSError as exc:  # a read-only home: the listing is printed all the same
        log.warning("could not keep the games listing in %s: %s", path, exc)
    return openspiel, families


def strip_ansi(text: str) -> str:
    """``text`` without ANSI escape sequences (the colours third-party libraries put in their warnings)."""
    return _ANSI.sub("", text)


class _Progress:
    """Progress of a first ``games --all`` on standard error: on a terminal one line rewritten per game probed,
    elsewhere a line when probing starts and one with the count when it ends."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.tty = stream.isatty()
        self.count = 0
        self.width = 0
        if not self.tty:
            self._line("probing every game once (kept in the user cache for the next 'games --all') ...\n")

    def __call__(self, name: str) -> None:
        """One more game, ``name``, is being probed."""
        self.count += 1
        if self.tty:
            text = f"probing the games (kept for the next 'games --all'): {self.count} {strip_ansi(name)[:60]}"
            self._line("\r" + text.ljust(self.width))
            self.width = len(text)

    def close(self) -> None:
        """Clear the progress line (a terminal) or say how many games were probed."""
        if self.tty:
            self._line("\r" + " " * self.width + "\r")
        else:
            self._line(f"probed {self.count} games\n")

    def _line(self, text: str) -> None:
        try:
            self.stream.write(text)
            self.stream.flush()
        except (OSError, ValueError):  # a closed standard error: progress is only a courtesy
            pass


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
