"""``deepeval-games data``: every data source the registered tasks read, where it is, and fetching it ahead of time.

The tasks register their sources through the task contract (:func:`deepeval_games.core.task.data_sources`) when
their entry points load; this module names none. A file is looked for where the loaders look
(:mod:`game_defs.data_files`): the folder ``DEEPEVAL_GAMES_DATA`` names, then the user cache; ``data fetch``
downloads into the user cache (or ``--dir``), checking the sha256 before the file is put in place; with
``DEEPEVAL_GAMES_OFFLINE=1`` it downloads nothing and says so (exit 2). A file far larger than its source's published
size is not hashed: it is listed as too large, and ``data fetch`` replaces it.
"""

from __future__ import annotations

import importlib.metadata
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from deepeval_games.core import task
from deepeval_games.core.errors import DeepEvalError, did_you_mean
from deepeval_games.core.registry.games import registered_games
from deepeval_games.infra.files import (
    DATA_ENV,
    OFFLINE_ENV,
    DatasetError,
    cache_dir,
    download,
    downloads_disabled,
    file_sha256,
)

__all__ = ["SourceStatus", "data_places", "fetch", "format_status", "source_status", "sources"]

FETCH_COMMAND = "deepeval-games data fetch"


def sources() -> list[task.DataSource]:
    """Every registered data source (the task packages loaded first)."""
    registered_games()  # loads every task's entry point: each registers its sources
    return task.data_sources()


@dataclass(frozen=True)
class SourceStatus:
    """Where one source was found, if anywhere, and whether its bytes are the published ones."""

    source: task.DataSource
    path: Path | None
    """The file found (None: missing, or a packaged source)."""
    where: str
    """``$DEEPEVAL_GAMES_DATA``, ``user cache``, ``package VERSION`` or ``missing``."""
    sha256: str | None = None
    """The sha256 of the file found."""
    oversize: int | None = None
    """The file's size when it is far larger than the published one (then it is not hashed)."""

    @property
    def present(self) -> bool:
        """Found (a file) or installed (a package)."""
        return self.where != "missing"

    @property
    def verified(self) -> bool | None:
        """Whether the file's sha256 is the published one (None: nothing to compare; False: far too large)."""
        if self.oversize is not None:
            return False
        if self.sha256 is None or self.source.sha256 is None:
            return None
        return self.sha256 == self.source.sha256


def data_places(name: str) -> list[tuple[str, Path]]:
    """Where the loaders look for the data file ``name``, in order: (label, path)."""
    env = os.environ.get(DATA_ENV, "")
    places = [(f"${DATA_ENV}", Path(env).expanduser() / name)] if env else []
    return [*places, ("user cache", cache_dir() / name)]


def source_status(source: task.DataSource) -> SourceStatus:
    """Look for ``source`` where the loaders look."""
    if source.package is not None:
        try:
            version = importlib.metadata.version(source.package)
        except importlib.metadata.PackageNotFoundError:
            return SourceStatus(source, None, "missing")
        return SourceStatus(source, None, f"package {source.package} {version}")
    for where, path in data_places(source.name):
        if path.is_file():
            try:
                return SourceStatus(source, path, where, file_sha256(path, expected_size=source.size))
            except DatasetError:  # far larger than published: measured, not hashed
                return SourceStatus(source, path, where, oversize=path.stat().st_size)
    return SourceStatus(source, None, "missing")


def format_status(statuses: Sequence[SourceStatus]) -> str:
    """The table ``deepeval-games data`` prints, with the command that fetches what is missing."""
    env = os.environ.get(DATA_ENV, "")
    lines = [
        f"Data files are looked for in ${DATA_ENV} ({env or 'not set'}), then the user cache ({cache_dir()}).",
        "",
    ]
    for status in statuses:
        source = status.source
        if not status.present:
            state = "MISSING" + (f" (fetch: {FETCH_COMMAND} {source.name})" if source.url else " (pip install it)")
        elif status.path is None:
            state = f"installed ({status.where})"
        elif status.oversize is not None:
            published = f"{source.size:,} bytes published" if source.size is not None else "no size published"
            state = f"TOO LARGE, not hashed ({status.oversize:,} bytes; {published}) ({status.where}: {status.path})"
        else:
            check = {True: "sha256 ok", False: "SHA256 MISMATCH", None: "sha256 not published"}[status.verified]
            state = f"present, {check} ({status.where}: {status.path})"
        lines.append(f"{source.name}  [{source.task}]  {state}")
        if source.sha256:
            lines.append(f"    sha256 {source.sha256}" + (f"  from {source.url}" if source.url else ""))
    missing = [s for s in statuses if not s.present and s.source.url]
    if missing:
        lines += ["", f"{len(missing)} file(s) missing: '{FETCH_COMMAND}' downloads and checks them all."]
    return "\n".join(lines)


def _selected(name: str | None) -> list[task.DataSource]:
    """The file sources ``name`` selects: one by its name, a task's by the task's name, every one without."""
    files = [s for s in sources() if s.url is not None]
    if name is None:
        return files
    chosen = [s for s in files if name in (s.name, s.task, s.task.removeprefix("deepeval_"))]
    if not chosen:
        names = sorted({s.name for s in files} | {s.task for s in files})
        raise DeepEvalError(f"no data source {name!r}.{did_you_mean(name, names)} Sources: {', '.join(names)}")
    return chosen


def fetch(name: str | None = None, *, into: Path | None = None) -> list[str]:
    """Download the files ``name`` selects that are not already present (and right), checking their sha256.

    Returns one line per file saying what was done.

    Raises:
        DeepEvalError: an unknown name, downloads are off (``DEEPEVAL_GAMES_OFFLINE``) while a file is to be
            fetched, or a download failed, did not match its sha256 or was far larger than published.
    """
    lines, todo = [], []
    for source in _selected(name):
        status = source_status(source)
        if into is None and status.present and status.verified is not False:
            lines.append(f"{source.name}: already present ({status.where}: {status.path})")
        else:
            todo.append(source)
    if todo and downloads_disabled():
        raise DeepEvalError(
            f"downloads are disabled (${OFFLINE_ENV} is set); not fetched: "
            f"{', '.join(s.name for s in todo)}. Unset {OFFLINE_ENV} to fetch them, or set {DATA_ENV} to a folder "
            "that holds them."
        )
    for source in todo:
        dest = (into or cache_dir()) / source.name
        assert source.url is not None  # _selected keeps files only
        try:
            digest = download(source.url, dest, source.sha256, expected_size=source.size)
        except OSError as exc:
            raise DeepEvalError(f"{source.name}: the download from {source.url} failed ({exc})") from exc
        lines.append(f"{source.name}: fetched to {dest} (sha256 {digest}, as published)")
    return lines
