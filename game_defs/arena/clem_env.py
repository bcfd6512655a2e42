"""clembench's games driven through clemcore's PettingZoo environment: where the games are, and one live episode.

Where the games are (:func:`clembench_folder`, the one place the setting is read): the folder that
``DEEPEVAL_GAMES_CLEMBENCH`` names (a clone of clembench, or any folder of clemgames: a folder per game with its
``clemgame.json``), else the pinned release that ``deepeval-games data fetch clembench`` put in the user cache
(:data:`RELEASE_RELPATH`), unpacked beside it on first use. GitHub does not promise that an archive's bytes stay the
same, so what is checked on unpacking is the release's game files: the sha256 of their manifest (every file's sha256
and path, sorted; the static benchmarks under ``static/`` left out), :data:`RELEASE_GAMES_SHA256`.

An episode (:class:`Episode`) is clemcore's ``GameMasterEnv`` (the AEC environment that
``clemcore.clemgame.envs.pettingzoo.env`` builds) on one instance of the game, made here from a registry of the
named folder rather than of the working directory, every seat's model the programmatic stand-in (this project's
referee asks the seats, never clemcore's backends). An in-memory recorder takes the episode's interactions, from which
the game's own scorer computes its episode scores (``Main Score``, ``Success``, ``Aborted``) once it ends.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import logging
import math
import os
import re
import sys
import tarfile
import tempfile
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from game_defs.data_files import CLEMBENCH_COMMIT, CLEMBENCH_RELPATH

__all__ = [
    "CLEMBENCH_ENV",
    "EXTRA_HINT",
    "RELEASE_COMMIT",
    "RELEASE_GAMES_SHA256",
    "RELEASE_RELPATH",
    "ClembenchMissing",
    "Episode",
    "GameFacts",
    "clembench_folder",
    "game_facts",
    "game_names",
    "how_to_get",
    "instance_rows",
    "manifest_sha256",
    "nltk_hint",
    "nltk_missing",
]

CLEMBENCH_ENV = "DEEPEVAL_GAMES_CLEMBENCH"
"""The environment variable naming a folder of clemgames (a clone of clembench)."""
RELEASE_COMMIT = CLEMBENCH_COMMIT
RELEASE_RELPATH = CLEMBENCH_RELPATH
RELEASE_GAMES_SHA256 = "b4f3319e61565428a1c08163a2cd20298eab5b0e0335c8f4a1d83d1896d04284"
"""The sha256 of the manifest of the release's files outside ``static/`` (:func:`manifest_sha256`)."""
EXTRA_HINT = "pip install 'deepeval-games[clembench]'"
_PROBE_REPLY = "I cannot answer that."
_PROBE_STEPS = 30
_LOCK = threading.RLock()


class ClembenchMissing(LookupError):
    """No folder of clemgames is known, or the one named is not there."""


def how_to_get() -> str:
    """What a user does to get clembench's games."""
    return (
        f"fetch the pinned clembench release with 'deepeval-games data fetch clembench', or set {CLEMBENCH_ENV} "
        "to a clone of clembench (a folder of clemgames)"
    )


def manifest_sha256(root: Path) -> str:
    """The sha256 of the manifest of ``root``'s files outside ``static/``: ``<sha256>  <path>`` lines, by path."""
    lines = []
    for path in root.rglob("*"):
        rel = path.relative_to(root).as_posix()
        if path.is_file() and not rel.startswith("static/"):
            lines.append((rel, f"{hashlib.sha256(path.read_bytes()).hexdigest()}  {rel}"))
    text = "".join(f"{line}\n" for _, line in sorted(lines))
    return hashlib.sha256(text.encode()).hexdigest()


def _kept(member: tarfile.TarInfo) -> bool:
    """A file or folder of the release outside ``static/`` (the archive's top folder is the commit's)."""
    rel = member.name.split("/", 1)[1] if "/" in member.name else ""
    return (member.isdir() or member.isfile()) and rel != "static" and not rel.startswith("static/")


def _unpacked(archive: Path) -> Path:
    """The release's folder beside ``archive``, unpacked (without ``static/``) and checked on first use."""
    target = archive.with_name(f"clembench-{RELEASE_COMMIT}")
    if target.is_dir():
        return target
    with tempfile.TemporaryDirectory(dir=archive.parent) as tmp, tarfile.open(archive) as tar:
        tar.extractall(tmp, members=[m for m in tar.getmembers() if _kept(m)], filter="data")
        [top] = [p for p in Path(tmp).iterdir() if p.is_dir()]
        digest = manifest_sha256(top)
        if digest != RELEASE_GAMES_SHA256:
            raise ClembenchMissing(
                f"the clembench release in {archive} is not the pinned one: its game files' manifest has sha256 "
                f"{digest}, expected {RELEASE_GAMES_SHA256}; delete it and fetch it again"
            )
        top.rename(target)
    return target


def clembench_folder() -> Path | None:
    """The folder of clemgames: ``$DEEPEVAL_GAMES_CLEMBENCH``, else the fetched release (None: neither).

    Raises:
        ClembenchMissing: the variable names no folder, or the fetched release is not the pinned one.
    """
    named = os.environ.get(CLEMBENCH_ENV, "").strip()
    if named:
        folder = Path(named).expanduser()
        if not folder.is_dir():
            raise ClembenchMissing(f"{CLEMBENCH_ENV} names {named!r}, which is not a folder; {how_to_get()}")
        return folder.resolve()
    from deepeval_games.infra.files import DATA_ENV, cache_dir

    data = os.environ.get(DATA_ENV, "")
    places = [Path(data).expanduser() / RELEASE_RELPATH] if data else []
    for archive in [*places, cache_dir() / RELEASE_RELPATH]:
        if archive.is_file():
            with _LOCK:
                return _unpacked(archive)
    return None


def _folder() -> Path:
    folder = clembench_folder()
    if folder is None:
        raise ClembenchMissing(f"no clembench folder is known: {how_to_get()}")
    return folder


@functools.cache
def _clemcore() -> None:
    """Import clemcore once, without what its import does to the whole process: its ``__init__`` hands the logging
    module a configuration (``logging.config.dictConfig``) that disables every logger made before it, sends the root
    logger's INFO to a ``clembench.log`` it opens in the working directory and prints some loggers to stdout. Here
    that call does nothing while clemcore is imported; its own loggers are set to warnings only.

    Raises:
        ImportError: clemcore is not installed.
    """
    import logging.config
    from unittest import mock

    with mock.patch.object(logging.config, "dictConfig", lambda config: None):
        import clemcore  # noqa: F401
    logging.getLogger("clemcore").setLevel(logging.WARNING)


# -- the games of a folder --------------------------------------------------------------------------------------


@functools.cache
def _specs(folder: Path) -> dict[str, Any]:
    """The game specs of ``folder`` by game name (clemcore's registry of the folder's ``clemgame.json`` files)."""
    _clemcore()
    from clemcore.clemgame.registry import GameRegistry

    registry = GameRegistry()
    registry.register_from_directories(str(folder), 0, max_depth=3)
    return {spec.game_name: spec for spec in registry.get_game_specs()}


def game_names() -> list[str]:
    """Every game of the clembench folder, sorted.

    Raises:
        ClembenchMissing: no folder is known.
        ImportError: clemcore is not installed.
    """
    return sorted(_specs(_folder()))


_LOADED: dict[str, set[str]] = {}
"""Per loaded game, the modules its master loaded beside it (two games' ``utils`` must not meet)."""


@functools.cache
def _benchmark(folder: Path, name: str) -> Any:
    """The game's ``GameBenchmark`` (its master module loaded once a process)."""
    _clemcore()
    from clemcore.clemgame.benchmark import GameBenchmark

    spec = _specs(folder).get(name)
    if spec is None:
        raise ClembenchMissing(
            f"clembench has no game {name!r} in {folder} (its games: {', '.join(sorted(_specs(folder)))})"
        )
    for modules in _LOADED.values():  # another game's helper modules (``utils``) out of the way of this one's
        for module in modules:
            sys.modules.pop(module, None)
    _clemcore_compat()
    with _quiet(), _nltk_watched(name):
        bench = GameBenchmark.load_from_spec(spec)
    _LOADED[name] = set(bench._extra_modules)
    return bench


_NLTK_ASKED: dict[str, set[str]] = {}
"""Per game, the NLTK data packages its modules asked ``nltk.download`` for while they loaded."""
_NLTK_KINDS = ("corpora", "tokenizers", "taggers", "chunkers", "stemmers", "models", "sentiment", "misc", "grammars")


@contextlib.contextmanager
def _nltk_watched(name: str) -> Iterator[None]:
    """While a game's modules load, note the NLTK data packages they ask ``nltk.download`` for (NLTK still
    downloads them where it can: clembench's games fetch their NLTK data themselves)."""
    try:
        import nltk
    except ImportError:
        yield
        return
    asked = _NLTK_ASKED.setdefault(name, set())
    original = nltk.download

    def download(info_or_id: Any = None, *args: Any, **kwargs: Any) -> Any:
        ids = [info_or_id] if isinstance(info_or_id, str) else list(info_or_id or [])
        asked.update(str(package) for package in ids)
        return original(info_or_id, *args, **kwargs)

    with _LOCK:
        nltk.download = download
        try:
            yield
        finally:
            nltk.download = original


_NLTK_CALL = re.compile(r"""nltk\.download\(\s*['"]([\w.-]+)['"]""")


def _nltk_named(name: str) -> set[str]:
    """The NLTK data packages the game's sources ask ``nltk.download`` for by name (its instance generators'
    left out): those a load cut short by the first missing one did not get to ask for."""
    spec = _specs(_folder()).get(name)
    if spec is None or "game_path" not in spec:
        return set()
    named: set[str] = set()
    for source in Path(str(spec["game_path"])).rglob("*.py"):
        if "generat" not in source.name:
            named.update(_NLTK_CALL.findall(source.read_text(errors="replace")))
    return named


def nltk_missing(name: str) -> list[str]:
    """The NLTK data packages the game asks for that NLTK cannot find (not downloaded, and no download here)."""
    if not _NLTK_ASKED.get(name):
        return []
    asked = sorted(_NLTK_ASKED[name] | _nltk_named(name))
    import nltk

    def found(package: str) -> bool:
        for kind in _NLTK_KINDS:
            try:
                nltk.data.find(f"{kind}/{package}")
            except LookupError:
                continue
            return True
        return False

    return [package for package in asked if not found(package)]


def nltk_hint(packages: list[str]) -> str:
    """The refusal of a game whose NLTK data is missing: what is missing and how a user gets it."""
    names = " ".join(packages)
    what = f"packages {', '.join(packages)}, which are" if len(packages) > 1 else f"package {packages[0]}, which is"
    return (
        f"it needs NLTK's data {what} not installed here and could not be downloaded; get it once with "
        f"'python -m nltk.downloader {names}' (into ~/nltk_data, or a folder that NLTK_DATA names)"
    )


def _clemcore_compat() -> None:
    """clemcore 3.7's ``GameMaster.state`` setter carries the base fields (``outcome``, ``game_id``, ...) over to a
    new state and reads them from it, so a game master that sets a state object of its own without them (clembench's
    wordle, written for clemcore 3.2 to 3.6, where ``state`` was a plain attribute) fails with AttributeError. The
    setter is replaced by one that reads a missing field as unset (it is then carried over): the same for every
    state that has the fields, what clemcore before 3.7 did for one that has not. Done once; nothing where
    clemcore's ``state`` is not such a property."""
    _clemcore()
    from clemcore.clemgame.master import GameMaster

    prop = GameMaster.__dict__.get("state")
    if not isinstance(prop, property) or prop.fset is None or getattr(prop.fset, "_tolerant", False):
        return
    fields = tuple(getattr(GameMaster, "_GAME_STATE_FIELDS", ()))

    def tolerant(self: Any, new_state: Any) -> None:
        old = getattr(self, "_state", None)
        if old is not None:
            for field in fields:
                if getattr(new_state, field, None) is None:
                    setattr(new_state, field, getattr(old, field, None))
        self._state = new_state

    tolerant._tolerant = True  # type: ignore[attr-defined]
    GameMaster.state = property(prop.fget, tolerant, prop.fdel, prop.__doc__)


@functools.cache
def _rows(folder: Path, name: str) -> tuple[Mapping[str, Any], ...]:
    """The game's instances (experiment, game instance), in the order of its instances file."""
    _clemcore()
    from clemcore.clemgame.instances import GameInstances

    return tuple(GameInstances.from_game_spec(_specs(folder)[name]))


def instance_rows(name: str, experiment: str = "") -> tuple[int, ...]:
    """The indices of the game's instances (those of ``experiment`` where named) in its instances file.

    Raises:
        ValueError: the game has no such experiment.
    """
    rows = _rows(_folder(), name)
    chosen = tuple(i for i, row in enumerate(rows) if not experiment or row["experiment"]["name"] == experiment)
    if not chosen:
        known = sorted({str(row["experiment"]["name"]) for row in rows})
        raise ValueError(f"clembench's {name} has no experiment {experiment!r} (its experiments: {', '.join(known)})")
    return chosen


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    """clemcore's run logger silenced (it reports every loaded game and instance at INFO)."""
    logger = logging.getLogger("clemcore")
    level = logger.level
    logger.setLevel(logging.WARNING)
    try:
        yield
    finally:
        logger.setLevel(level)


@dataclass(frozen=True)
class GameFacts:
    """What loading a game and probing an episode found, and why it is refused (if it is)."""

    name: str
    players: int
    roles: tuple[str, ...]
    instances: int
    description: str
    refusal: str | None = None


def _probe_line(name: str) -> list[str]:
    """The contexts of a fixed line of play (the same reply at every turn) of the game's first instance."""
    episode = Episode(name, 0)
    seen = []
    for _ in range(_PROBE_STEPS):
        if episode.done:
            break
        seen.append(episode.context(episode.to_move()))
        episode.step(_PROBE_REPLY)
    return [*seen, repr(sorted(episode.scores().items()))]


@functools.cache
def _facts(folder: Path, name: str) -> GameFacts:
    spec = _specs(folder).get(name)
    if spec is None:
        raise ClembenchMissing(
            f"clembench has no game {name!r} in {folder} (its games: {', '.join(sorted(_specs(folder)))})"
        )
    players = int(spec["players"]) if "players" in spec else 1
    roles = tuple(str(role) for role in spec["roles"]) if "roles" in spec else ()
    facts = GameFacts(name, players, roles, 0, str(spec["description"]) if "description" in spec else "")
    image = str(spec["image"]) if "image" in spec else "none"
    if image != "none":
        return _refused(facts, f"its players are shown images ({image}); this project's seats read text only")
    try:
        rows = len(_rows(folder, name))
        first, second = _probe_line(name), _probe_line(name)
    except Exception as exc:  # a game that does not load or play here: said with its reason
        missing = nltk_missing(name)
        return _refused(facts, nltk_hint(missing) if missing else _why(exc))
    missing = nltk_missing(name)  # a game may read its NLTK data only later in play (codenames' lemmatizer)
    if missing:
        return _refused(facts, nltk_hint(missing))
    if first != second:
        return _refused(facts, "it is not deterministic: the same replies gave two different episodes")
    return GameFacts(name, players, roles or tuple(f"player {i + 1}" for i in range(players)), rows, facts.description)


def _why(exc: BaseException) -> str:
    """An exception as a refusal: its type and its message's first line that says something (NLTK's start blank)."""
    lines = [line.strip(" *") for line in str(exc).splitlines()]
    first = next((line for line in lines if line), "")
    return f"{type(exc).__name__}: {first[:200]}".rstrip(": ")


def _refused(facts: GameFacts, why: str) -> GameFacts:
    return GameFacts(facts.name, facts.players, facts.roles, facts.instances, facts.description, why)


def game_facts(name: str) -> GameFacts:
    """What the game ``name`` of the clembench folder is, and why it cannot be played (if it cannot).

    Raises:
        ClembenchMissing: no folder is known, or it holds no such game.
        ImportError: clemcore is not installed.
    """
    return _facts(_folder(), name)


# -- one episode ------------------------------------------------------------------------------------------------


class _Recorder:
    """A clemcore callback keeping the episode's interactions in memory (as clemcore's file saver records them)."""

    def __init__(self) -> None:
        self.recorder: Any = None

    def on_benchmark_start(self, game_benchmark: Any) -> None:
        """Nothing to do."""

    def on_benchmark_end(self, game_benchmark: Any) -> None:
        """Nothing to do."""

    def on_game_start(self, game_master: Any, game_instance: dict[str, Any]) -> None:
        """Attach a recorder to the episode's master, its players logged."""
        _clemcore()
        from clemcore.clemgame.recorder import GameInteractionsRecorder

        recorder = GameInteractionsRecorder(
            game_master.game_spec.game_name, game_master.experiment["name"], game_instance["game_id"], "", {}
        )
        for player in game_master.get_players():
            recorder.log_player(player.name, player.game_role, player.model.name)
        game_master.register(recorder)
        self.recorder = recorder

    def on_game_step(self, game_master: Any, game_instance: dict[str, Any], game_step: Any) -> None:
        """Nothing to do."""

    def on_branching_point(self, game_master: Any, game_instance: dict[str, Any], snapshot: Any) -> None:
        """Nothing to do."""

    def on_game_end(self, game_master: Any, game_instance: dict[str, Any], *args: Any, **kwargs: Any) -> None:
        """Nothing to do: the scores are computed when asked for."""


class Episode:
    """One instance of a clemgame played move by move through clemcore's ``GameMasterEnv``."""

    def __init__(self, name: str, row: int) -> None:
        _clemcore()
        from clemcore.clemgame.callbacks.base import GameBenchmarkCallbackList
        from clemcore.clemgame.envs.pettingzoo import GameMasterEnv

        folder = _folder()
        rows = _rows(folder, name)
        self.name = name
        self.row = rows[row]
        self._bench = _benchmark(folder, name)
        self._recording = _Recorder()
        self.env = GameMasterEnv(self._bench, callbacks=GameBenchmarkCallbackList([self._recording]))
        self.done = False
        self._scores: dict[str, Any] | None = None
        with _quiet():
            self.env.reset(options={"experiment": self.row["experiment"], "game_instance": self.row["game_instance"]})
        self.agents: list[str] = list(self.env.possible_agents)

    @property
    def instance(self) -> str:
        """The instance played: ``<experiment> #<game_id>``."""
        return f"{self.row['experiment']['name']} #{self.row['game_instance'].get('game_id')}"

    def to_move(self) -> int:
        """The seat the game master asks next."""
        return self.agents.index(self.env.agent_selection)

    def context(self, seat: int) -> str:
        """What the game master shows ``seat`` now (its context; the initial prompt merged into the first)."""
        observed = self.env.observe(self.agents[seat])
        return str(observed.get("content", "")) if isinstance(observed, Mapping) else str(observed)

    def player(self, seat: int) -> Any:
        """The clemgame's player object at ``seat``."""
        return self.env.player_by_agent_id[self.agents[seat]]

    def step(self, text: str) -> None:
        """The seat to move answers ``text``; the game master goes on (and the seats leave once it ends)."""
        with _quiet():
            self.env.step(text)
            if all(self.env.terminations.get(agent, False) for agent in self.agents):
                self.done = True
                while self.env.agents:
                    self.env.step(None)

    def scores(self) -> dict[str, Any]:
        """The game's episode scores, computed by its own scorer once the episode is over ({} before)."""
        if not self.done:
            return {}
        if self._scores is None:
            recorder = self._recording.recorder
            scorer = self._bench.create_game_scorer(self.row["experiment"], self.row["game_instance"])
            with _quiet():
                scorer.compute_scores(recorder.interactions)
            self._scores = {k: _number(v) for k, v in scorer.scores["episode scores"].items()}
        return dict(self._scores)


def _number(value: Any) -> float | None:
    """A score as a float (None for NaN or a value that is not a number)."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(number) else number
