"""MBPP, Mostly Basic Python Problems (Austin et al. 2021), as typed, immutable records.

``mbpp.jsonl`` holds 974 problems, task ids 1..974, split by id (the paper's convention):

=============  =========  =====
split          task ids   count
=============  =========  =====
``prompt``     1-10       10 (few-shot examples)
``test``       11-510     500
``validation`` 511-600    90
``train``      601-974    374
=============  =========  =====

``sanitized-mbpp.json`` holds 427 hand-verified problems (a subset of the ids, reworded prompts).

The files are found by :func:`game_defs.data_files.resolve_data_file` (explicit path, then
``$DEEPEVAL_GAMES_DATA``, then the user cache, then a download) and their sha256 is checked and kept on the
dataset. A parsed dataset is cached in-process per (file, sha256), so resolving many task ids reads the
file once.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any

from deepeval_games.infra.files import DatasetError, PathLike
from game_defs.data_files import resolve_data_file

__all__ = [
    "MBPP_RELPATH",
    "SANITIZED_MBPP_RELPATH",
    "SPLITS",
    "MBPPDataset",
    "MBPPProblem",
    "SanitizedMBPPDataset",
    "SanitizedMBPPProblem",
    "load_mbpp",
    "load_sanitized_mbpp",
    "split_of",
]

MBPP_RELPATH = "mbpp/mbpp.jsonl"
SANITIZED_MBPP_RELPATH = "mbpp/sanitized-mbpp.json"
_MBPP_COUNT = 974
_SANITIZED_COUNT = 427

#: Split name -> task ids (inclusive ranges of the original MBPP release).
SPLITS: Mapping[str, range] = MappingProxyType(
    {
        "prompt": range(1, 11),
        "test": range(11, 511),
        "validation": range(511, 601),
        "train": range(601, 975),
    }
)


def split_of(task_id: int) -> str:
    """The split (``prompt``, ``test``, ``validation``, ``train``) that ``task_id`` belongs to."""
    for name, ids in SPLITS.items():
        if task_id in ids:
            return name
    raise KeyError(f"MBPP task id {task_id} is outside 1..{_MBPP_COUNT}")


def _check_split_name(split: str) -> range:
    try:
        return SPLITS[split]
    except KeyError:
        raise ValueError(f"unknown MBPP split {split!r}; splits: {', '.join(SPLITS)}") from None


@dataclass(frozen=True)
class MBPPProblem:
    """One MBPP problem.

    Attributes:
        task_id: 1..974.
        text: the problem statement given to the programmer.
        code: the reference solution.
        test_list: assert statements that a solution must pass.
        test_setup_code: code to run before the tests (usually empty).
        challenge_test_list: extra, harder asserts (usually empty).
    """

    task_id: int
    text: str
    code: str
    test_list: tuple[str, ...]
    test_setup_code: str
    challenge_test_list: tuple[str, ...]

    @property
    def split(self) -> str:
        """The split this problem belongs to."""
        return split_of(self.task_id)


@dataclass(frozen=True)
class SanitizedMBPPProblem:
    """One problem of sanitized MBPP.

    Attributes:
        task_id: the id of the same problem in ``mbpp.jsonl``.
        prompt: the (reworded) problem statement.
        code: the reference solution.
        test_imports: import lines the tests need.
        test_list: assert statements that a solution must pass.
        source_file: the annotation notebook the record came from.
    """

    task_id: int
    prompt: str
    code: str
    test_imports: tuple[str, ...]
    test_list: tuple[str, ...]
    source_file: str

    @property
    def split(self) -> str:
        """The split of this problem's task id."""
        return split_of(self.task_id)


class _Dataset:
    """Shared read-only behaviour: lookup by task id, iteration in task-id order, provenance."""

    __slots__ = ("_by_id", "_problems", "sha256", "source")

    def __init__(self, problems: tuple[Any, ...], source: Path, sha256: str) -> None:
        self._problems = problems
        self._by_id: Mapping[int, Any] = MappingProxyType({p.task_id: p for p in problems})
        #: The file that was read.
        self.source: Path = source
        #: Hex sha256 of that file.
        self.sha256: str = sha256

    def __len__(self) -> int:
        return len(self._problems)

    def __contains__(self, task_id: object) -> bool:
        return task_id in self._by_id

    def task_ids(self) -> tuple[int, ...]:
        """All task ids, ascending."""
        return tuple(p.task_id for p in self._problems)

    def __repr__(self) -> str:
        name = type(self).__name__
        return f"{name}({len(self)} problems, source={str(self.source)!r}, sha256={self.sha256[:12]}…)"


class MBPPDataset(_Dataset):
    """The 974 MBPP problems, immutable, in task-id order."""

    __slots__ = ()

    def __getitem__(self, task_id: int) -> MBPPProblem:
        """The problem with this task id (``KeyError`` naming the valid range otherwise)."""
        try:
            return self._by_id[task_id]
        except KeyError:
            raise KeyError(f"no MBPP task id {task_id!r} (ids are 1..{_MBPP_COUNT})") from None

    def __iter__(self) -> Iterator[MBPPProblem]:
        return iter(self._problems)

    def split(self, name: str) -> tuple[MBPPProblem, ...]:
        """The problems of a split (``prompt``, ``test``, ``validation``, ``train``), in task-id order."""
        ids = _check_split_name(name)
        return tuple(self._by_id[i] for i in ids)


class SanitizedMBPPDataset(_Dataset):
    """The 427 sanitized MBPP problems, immutable, in task-id order."""

    __slots__ = ()

    def __getitem__(self, task_id: int) -> SanitizedMBPPProblem:
        """The problem with this task id (``KeyError`` if sanitized MBPP does not have it)."""
        try:
            return self._by_id[task_id]
        except KeyError:
            raise KeyError(f"sanitized MBPP has no task id {task_id!r}") from None

    def __iter__(self) -> Iterator[SanitizedMBPPProblem]:
        return iter(self._problems)

    def split(self, name: str) -> tuple[SanitizedMBPPProblem, ...]:
        """The problems whose task id falls in a split, in task-id order."""
        ids = _check_split_name(name)
        return tuple(p for p in self._problems if p.task_id in ids)


# --- field checks ---------------------------------------------------------------------------------------


def _field(record: Mapping[str, Any], name: str, kind: type, where: str) -> Any:
    if name not in record:
        raise DatasetError(f"{where}: missing field {name!r}")
    value = record[name]
    if kind is int:
        ok = isinstance(value, int) and not isinstance(value, bool)
    elif kind is list:
        ok = isinstance(value, list) and all(isinstance(v, str) for v in value)
    else:
        ok = isinstance(value, kind)
    if not ok:
        expected = "a list of strings" if kind is list else kind.__name__
        raise DatasetError(f"{where}: field {name!r} should be {expected}, got {type(value).__name__}")
    return value


def _check_ids(ids_where: list[tuple[int, str]], source: Path, expected: range | None, count: int) -> None:
    seen: dict[int, str] = {}
    for task_id, where in ids_where:
        if task_id in seen:
            raise DatasetError(f"{where}: duplicate task_id {task_id} (first at {seen[task_id]})")
        seen[task_id] = where
        if expected is not None and task_id not in expected:
            raise DatasetError(f"{where}: task_id {task_id} outside {expected.start}..{expected.stop - 1}")
    if len(seen) != count:
        raise DatasetError(f"{source}: expected {count} records, found {len(seen)} (truncated or altered)")


# --- parsing (cached per file and content) ---------------------------------------------------------------


@functools.lru_cache(maxsize=8)
def _parse_mbpp(source: Path, sha256: str) -> MBPPDataset:
    problems: list[MBPPProblem] = []
    ids_where: list[tuple[int, str]] = []
    try:
        with source.open(encoding="utf-8") as f:
            for lineno, line in enumerate(f, start=1):
                if not line.strip():
                    continue
                where = f"{source}, line {lineno}"
                try:
                    record = json.loads(line)
                except json.JSONDecodeError as e:
                    raise DatasetError(f"{where}: not valid JSON ({e.msg} at column {e.colno})") from e
                if not isinstance(record, dict):
                    raise DatasetError(f"{where}: expected a JSON object, got {type(record).__name__}")
                problem = MBPPProblem(
                    task_id=_field(record, "task_id", int, where),
                    text=_field(record, "text", str, where),
                    code=_field(record, "code", str, where),
                    test_list=tuple(_field(record, "test_list", list, where)),
                    test_setup_code=_field(record, "test_setup_code", str, where),
                    challenge_test_list=tuple(_field(record, "challenge_test_list", list, where)),
                )
                problems.append(problem)
                ids_where.append((problem.task_id, where))
    except UnicodeDecodeError as e:
        raise DatasetError(f"{source}: not UTF-8 text ({e})") from e
    _check_ids(ids_where, source, range(1, _MBPP_COUNT + 1), _MBPP_COUNT)
    problems.sort(key=lambda p: p.task_id)
    return MBPPDataset(tuple(problems), source, sha256)


@functools.lru_cache(maxsize=8)
def _parse_sanitized(source: Path, sha256: str) -> SanitizedMBPPDataset:
    try:
        records = json.loads(source.read_text(encoding="utf-8"))
    except UnicodeDecodeError as e:
        raise DatasetError(f"{source}: not UTF-8 text ({e})") from e
    except json.JSONDecodeError as e:
        raise DatasetError(f"{source}, line {e.lineno}: not valid JSON ({e.msg} at column {e.colno})") from e
    if not isinstance(records, list):
        raise DatasetError(f"{source}: expected a JSON array of records, got {type(records).__name__}")
    problems: list[SanitizedMBPPProblem] = []
    ids_where: list[tuple[int, str]] = []
    for index, record in enumerate(records):
        where = f"{source}, record {index}"
        if not isinstance(record, dict):
            raise DatasetError(f"{where}: expected a JSON object, got {type(record).__name__}")
        problem = SanitizedMBPPProblem(
            task_id=_field(record, "task_id", int, where),
            prompt=_field(record, "prompt", str, where),
            code=_field(record, "code", str, where),
            test_imports=tuple(_field(record, "test_imports", list, where)),
            test_list=tuple(_field(record, "test_list", list, where)),
            source_file=_field(record, "source_file", str, where),
        )
        problems.append(problem)
        ids_where.append((problem.task_id, where))
    _check_ids(ids_where, source, range(1, _MBPP_COUNT + 1), _SANITIZED_COUNT)
    problems.sort(key=lambda p: p.task_id)
    return SanitizedMBPPDataset(tuple(problems), source, sha256)


def load_mbpp(path: PathLike | None = None, *, verify: bool = True) -> MBPPDataset:
    """Load ``mbpp.jsonl`` (974 problems) and check its shape.

    Args:
        path: the file, or a data folder holding ``mbpp/mbpp.jsonl``; by default it is resolved from
            ``$DEEPEVAL_GAMES_DATA``, the user cache, or downloaded from its canonical URL.
        verify: check the file's sha256 against the published one.

    Raises:
        DatasetError: the file is missing, has the wrong sha256, or is malformed (the message names the file
            and line).
    """
    found = resolve_data_file(MBPP_RELPATH, path, verify=verify)
    return _parse_mbpp(found.path, found.sha256)


def load_sanitized_mbpp(path: PathLike | None = None, *, verify: bool = True) -> SanitizedMBPPDataset:
    """Load ``sanitized-mbpp.json`` (427 problems) and check its shape; arguments as :func:`load_mbpp`."""
    found = resolve_data_file(SANITIZED_MBPP_RELPATH, path, verify=verify)
    return _parse_sanitized(found.path, found.sha256)
