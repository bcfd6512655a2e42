"""Data files in the user cache: where a public data file is found, downloading it with a checksum, and the record
of every data source a process read (for a run's manifest).

A data file is named by its path relative to a data folder laid out like ``../shared/data``
(``mbpp/mbpp.jsonl``, ``iwslt2017/<pair>.tgz``). :func:`find_data_file` looks for it, in this order:

1. an explicit ``path`` given by the caller (the file itself, or a data folder holding ``relpath``);
   when given, nothing else is tried;
2. the data folder named by the environment variable ``DEEPEVAL_GAMES_DATA``;
3. the user cache, ``$XDG_CACHE_HOME/deepeval-games`` (default ``~/.cache/deepeval-games``);
4. a download from the file's URL into the user cache (written to a temporary file in the same folder, checked,
   then renamed into place; its sha256 is written beside it as ``<name>.sha256``). Downloads are off when
   ``DEEPEVAL_GAMES_OFFLINE=1``.

Every file read is hashed, in 1 MiB chunks; when its expected sha256 is given a mismatch is a :class:`DatasetError`
naming the path and both hashes. A file is measured before it is hashed: one far larger than its source's published
size (:func:`size_limit`), or than :data:`MAX_DATA_FILE_BYTES` when no size is published, is refused naming both
sizes, and a download stops at the same bound. Which files exist, their URLs and checksums, is the tasks' business
(:mod:`game_defs.data_files` for the built-in tasks).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import tempfile
import threading
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import TypeAlias

from deepeval_games.core.errors import DeepEvalError

__all__ = [
    "DATA_ENV",
    "MAX_DATA_FILE_BYTES",
    "OFFLINE_ENV",
    "DatasetError",
    "PathLike",
    "ResolvedFile",
    "cache_dir",
    "data_sources",
    "download",
    "downloads_disabled",
    "file_sha256",
    "find_data_file",
    "note_data_source",
    "size_limit",
]

PathLike: TypeAlias = "str | os.PathLike[str]"

DATA_ENV = "DEEPEVAL_GAMES_DATA"
OFFLINE_ENV = "DEEPEVAL_GAMES_OFFLINE"
_CACHE_NAME = "deepeval-games"

MAX_DATA_FILE_BYTES = 2 << 30
"""The largest data file read (or downloaded) when its source publishes no size: 2 GiB."""
_SLACK_BYTES = 1 << 20


class DatasetError(DeepEvalError):
    """A data file is missing, unreadable, corrupt, or not the file it should be."""


@dataclass(frozen=True)
class ResolvedFile:
    """A data file found on disk.

    Attributes:
        path: the file that was found (absolute).
        sha256: hex sha256 of its bytes.
        origin: where it came from: ``"explicit"``, ``"env"``, ``"cache"`` or ``"download"``.
    """

    path: Path
    sha256: str
    origin: str


def cache_dir() -> Path:
    """The user cache folder for downloaded data (``$XDG_CACHE_HOME/deepeval-games``)."""
    base = os.environ.get("XDG_CACHE_HOME") or ""
    root = Path(base).expanduser() if base else Path.home() / ".cache"
    return root / _CACHE_NAME


def downloads_disabled() -> bool:
    """True when ``DEEPEVAL_GAMES_OFFLINE`` is set to a true value (``1``, ``true``, ``yes``)."""
    return os.environ.get(OFFLINE_ENV, "").strip().lower() in {"1", "true", "yes", "on"}


_sha_memo: dict[tuple[str, int, int, int], str] = {}
_sha_lock = threading.Lock()


def size_limit(expected_size: int | None) -> int:
    """The most bytes a data file may hold: twice its published size plus 1 MiB (so a file "far larger" than the
    published one is refused, a re-packed one is not), or :data:`MAX_DATA_FILE_BYTES` when no size is published."""
    return MAX_DATA_FILE_BYTES if expected_size is None else 2 * expected_size + _SLACK_BYTES


def _too_large(where: str, size: int, expected_size: int | None) -> DatasetError:
    limit = size_limit(expected_size)
    said = (
        f"far larger than the {expected_size:,} bytes its source publishes (at most {limit:,} are read)"
        if expected_size is not None
        else f"larger than the {limit:,} bytes a data file with no published size may hold"
    )
    return DatasetError(
        f"data file {where} is {size:,} bytes, {said}; it is not the published file and was not hashed. "
        "Delete it (then 'deepeval-games data fetch' gets the published one)."
    )


def file_sha256(path: PathLike, *, expected_size: int | None = None) -> str:
    """Hex sha256 of a file, read in 1 MiB chunks and memoised per (path, inode, size, mtime) so an unchanged file
    is read once.

    Raises:
        DatasetError: the file holds more than :func:`size_limit` of ``expected_size`` bytes (measured before it
            is read, and counted while it is read: a file that grows is stopped at the bound too).
    """
    p = Path(path).resolve()
    st = p.stat()
    limit = size_limit(expected_size)
    if st.st_size > limit:
        raise _too_large(str(p), st.st_size, expected_size)
    key = (str(p), st.st_ino, st.st_size, st.st_mtime_ns)
    with _sha_lock:
        known = _sha_memo.get(key)
    if known is not None:
        return known
    h = hashlib.sha256()
    read = 0
    with p.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            read += len(chunk)
            if read > limit:
                raise _too_large(str(p), read, expected_size)
            h.update(chunk)
    digest = h.hexdigest()
    with _sha_lock:
        _sha_memo[key] = digest
    return digest


def _checked(path: Path, origin: str, expected: str | None, expected_size: int | None = None) -> ResolvedFile:
    path = path.resolve()
    try:
        digest = file_sha256(path, expected_size=expected_size)
    except OSError as e:
        raise DatasetError(f"cannot read data file {path}: {e}") from e
    if expected is not None and digest != expected:
        hint = " Delete it to download it again." if origin == "cache" else ""
        raise DatasetError(
            f"sha256 mismatch for {path}: expected {expected}, got {digest}. The file is corrupt or not the "
            f"published version.{hint} (Pass verify=False to read it anyway.)"
        )
    return ResolvedFile(path=path, sha256=digest, origin=origin)


def _missing(relpath: str, looked: list[str], reason: str) -> DatasetError:
    places = "\n".join(f"  - {place}" for place in looked)
    return DatasetError(
        f"data file {relpath!r} not found; looked in:\n{places}\nand {reason}.\n"
        f"Fix: fetch it ahead of time with 'deepeval-games data fetch {relpath}' (then it is in the user cache), "
        f"set {DATA_ENV} to a folder holding {relpath} (laid out like ../shared/data), or pass an explicit path. "
        f"'deepeval-games data' lists every data file and where it is looked for."
    )


def download(
    url: str,
    dest: Path,
    expected_sha256: str | None = None,
    *,
    timeout_s: float = 60.0,
    expected_size: int | None = None,
) -> str:
    """Download ``url`` to ``dest`` atomically and return the sha256 of the bytes written.

    The bytes go to a temporary file beside ``dest``, are checked against ``expected_sha256`` (when given),
    then renamed onto ``dest``; ``dest.sha256`` records the hash. On any failure nothing is left behind. The
    download stops once it passes :func:`size_limit` of ``expected_size``.

    Raises:
        DatasetError: the download's sha256 is not ``expected_sha256``, or it is far larger than ``expected_size``.
        OSError: the download failed (``urllib.error.URLError`` is an ``OSError``).
    """
    if not url.startswith(("http://", "https://")):
        raise DatasetError(f"refusing to download {url!r}: only http(s) URLs are allowed")
    dest.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{dest.name}.", suffix=".part", dir=dest.parent)
    tmp = Path(tmp_name)
    h = hashlib.sha256()
    limit, received = size_limit(expected_size), 0
    try:
        with os.fdopen(fd, "wb") as out, urllib.request.urlopen(url, timeout=timeout_s) as resp:
            for chunk in iter(lambda: resp.read(1 << 16), b""):
                received += len(chunk)
                if received > limit:
                    raise _too_large(f"{url} (to be saved as {dest})", received, expected_size)
                h.update(chunk)
                out.write(chunk)
            out.flush()
            os.fsync(out.fileno())
        digest = h.hexdigest()
        if expected_sha256 is not None and digest != expected_sha256:
            raise DatasetError(
                f"sha256 mismatch for {url} (to be saved as {dest}): expected {expected_sha256}, "
                f"got {digest}; nothing was saved."
            )
        os.replace(tmp, dest)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
        raise
    sidecar = dest.with_name(dest.name + ".sha256")
    sidecar_tmp = sidecar.with_name(f".{sidecar.name}.{os.getpid()}.part")
    sidecar_tmp.write_text(f"{digest}  {dest.name}\n", encoding="ascii")
    os.replace(sidecar_tmp, sidecar)
    return digest


_SOURCES: dict[str, dict[str, str]] = {}
_SOURCES_LOCK = threading.Lock()


def note_data_source(key: str, **info: str) -> None:
    """Remember a data source this process read (a file, a packaged dictionary), for the run manifest."""
    with _SOURCES_LOCK:
        _SOURCES[key] = {k: str(v) for k, v in info.items()}


def data_sources() -> dict[str, dict[str, str]]:
    """Every data source read by this process so far: key -> its path or package, sha256, version, origin.

    Data files found by :func:`resolve_data_file` are keyed by their relative path (``iwslt2017/en-zh.tgz``).
    """
    with _SOURCES_LOCK:
        return {key: dict(info) for key, info in sorted(_SOURCES.items())}


def find_data_file(
    relpath: str,
    path: PathLike | None = None,
    *,
    expected_sha256: str | None = None,
    url: str | None = None,
    expected_size: int | None = None,
) -> ResolvedFile:
    """Find (or download from ``url``) the data file ``relpath`` and check its sha256 against ``expected_sha256``
    (when given); see the module's docstring for the places looked at, in order.

    Raises:
        DatasetError: the file is nowhere and cannot be downloaded (the message names every place looked at and
            how to fix it), its sha256 is wrong, or it is far larger than ``expected_size`` (both sizes named).
    """
    expected = expected_sha256
    size = expected_size
    if path is not None:
        p = Path(path).expanduser()
        if p.is_dir():
            p = p / relpath
        if not p.is_file():
            raise DatasetError(f"data file {relpath!r}: the explicit path {p} is not an existing file")
        return _checked(p, "explicit", expected, size)

    looked: list[str] = []
    env = os.environ.get(DATA_ENV, "")
    if env:
        p = Path(env).expanduser() / relpath
        if p.is_file():
            return _checked(p, "env", expected, size)
        looked.append(f"{p} (from ${DATA_ENV})")
    else:
        looked.append(f"${DATA_ENV} (not set)")

    cached = cache_dir() / relpath
    if cached.is_file():
        return _checked(cached, "cache", expected, size)
    looked.append(f"{cached} (user cache)")

    source = url
    if downloads_disabled():
        raise _missing(relpath, looked, f"downloads are disabled (${OFFLINE_ENV}={os.environ[OFFLINE_ENV]})")
    if source is None:
        raise _missing(relpath, looked, "no download URL is known for it")
    try:
        digest = download(source, cached, expected, expected_size=size)
    except OSError as e:
        raise _missing(relpath, looked, f"the download from {source} failed ({e})") from e
    return ResolvedFile(path=cached.resolve(), sha256=digest, origin="download")
