"""Prompts as data: one TOML file per task, one table per role, versioned.

A task's rules are not here: the referee broadcasts them (they are the game's) and an LLM seat reads them
from the message pool. A prompt file holds only what the LLM players add: per role, the answer ``format``
appended to every turn's message and the ``reask`` text sent after an unusable reply. A built-in task's prompt
file lives beside its adapter (``llm_bots/<task>/prompts.toml``); the prompts every game shares (the generic
adapter's, the judge's, a person's) live in this package. An outside task's file may live anywhere, beside its game
(:func:`load_prompt_file`, the game's ``prompt_file()`` hook).

A template uses ``$name`` / ``${name}`` placeholders (:class:`string.Template`), so JSON braces need no
escaping. Each role table declares the placeholders its templates may use; :func:`validate_all`
checks every template against that list (the test suite runs it), and :meth:`PromptSet.render`
refuses a missing value. The ``version`` of a prompt set goes into every match record.

File layout::

    version = "public_goods-2"
    [player]                                  # a role
    placeholders = ["endowment", "reason"]    # what its templates may use
    format = "... $endowment ..."             # templates, by name
    reask = "... $reason ..."
"""

from __future__ import annotations

import string
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

__all__ = [
    "PromptError",
    "PromptSet",
    "available_prompt_sets",
    "load_prompt_file",
    "load_prompts",
    "prompt_file_path",
    "validate_all",
]


class PromptError(ValueError):
    """A prompt file is malformed, or a template was rendered without one of its values."""


def _placeholders(template: str) -> set[str]:
    names = set()
    for match in string.Template.pattern.finditer(template):
        if match.group("invalid") is not None:
            raise PromptError(f"malformed placeholder near {template[match.start() : match.start() + 20]!r}")
        name = match.group("named") or match.group("braced")
        if name:
            names.add(name)
    return names


_RENDERED_MAX = 4096


@dataclass(frozen=True)
class PromptSet:
    """The templates of one task, by role and name."""

    task: str
    version: str
    roles: Mapping[str, Mapping[str, str]]
    placeholders: Mapping[str, frozenset[str]]
    _rendered: dict[tuple[str, str, tuple[str, ...], tuple[str, ...]], str] = field(
        default_factory=dict, init=False, compare=False, repr=False
    )
    """Texts already rendered, by role, name and values as text (every LLM turn renders its answer format)."""

    def template(self, role: str, name: str) -> str:
        """The raw template text."""
        try:
            return self.roles[role][name]
        except KeyError:
            raise PromptError(f"prompt set {self.task!r} has no template {role}.{name}") from None

    def render(self, role: str, name: str, **values: Any) -> str:
        """Fill a template; every placeholder it uses must be given.

        The text depends only on the template and the values as text, so it is made once per role, name and values
        (at most :data:`_RENDERED_MAX` remembered a prompt set).
        """
        key = (role, name, tuple(values), tuple(map(str, values.values())))
        text = self._rendered.get(key)
        if text is not None:
            return text
        template, needed = _compiled(self.template(role, name))
        if not needed.issubset(values):
            missing = needed - set(values)
            raise PromptError(f"{self.task}.{role}.{name} needs {sorted(missing)}")
        text = template.substitute({k: str(v) for k, v in values.items()})
        if len(self._rendered) >= _RENDERED_MAX:
            self._rendered.clear()
        self._rendered[key] = text
        return text

    def validate(self) -> None:
        """Every template uses only the placeholders its role declares."""
        for role, templates in self.roles.items():
            declared = self.placeholders.get(role, frozenset())
            for name, text in templates.items():
                extra = _placeholders(text) - declared
                if extra:
                    raise PromptError(f"{self.task}.{role}.{name} uses undeclared placeholder(s) {sorted(extra)}")


@cache
def _compiled(text: str) -> tuple[string.Template, frozenset[str]]:
    """A template text as a :class:`string.Template` and the placeholders it uses (made once per text: every
    LLM turn renders its task's answer format)."""
    return string.Template(text), frozenset(_placeholders(text))


def _prompt_files() -> dict[str, Traversable]:
    """Every built-in prompt file by its set's name: this package's ``<name>.toml`` and ``<task>/prompts.toml``
    beside each built-in task's adapter."""
    here = resources.files(__name__)
    files = {p.name[:-5]: p for p in here.iterdir() if p.name.endswith(".toml")}
    for folder in resources.files(__name__.rpartition(".")[0]).iterdir():
        path = folder / "prompts.toml"
        if folder.is_dir() and path.is_file():
            files[folder.name] = path
    return files


def prompt_file_path(task: str) -> Path:
    """Where the built-in prompt set ``task`` is read from (a run's manifest records its sha256)."""
    path = _prompt_files().get(task)
    if path is None:
        raise PromptError(f"no prompt file for task {task!r}; available: {', '.join(available_prompt_sets())}")
    return Path(str(path))


def available_prompt_sets() -> list[str]:
    """Task names that have a prompt file."""
    return sorted(_prompt_files())


@cache
def load_prompts(task: str) -> PromptSet:
    """Load and validate a built-in prompt set: ``llm_bots/<task>/prompts.toml`` or ``llm_bots/prompts/<task>.toml``."""
    return _parse(task, prompt_file_path(task).read_text(encoding="utf-8"))


@cache
def load_prompt_file(path: str | Path) -> PromptSet:
    """Load and validate a prompt file anywhere (a task's own, beside its game); the task is its stem."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise PromptError(f"cannot read prompt file {path}: {exc}") from exc
    return _parse(path.name.split(".", 1)[0], text, where=str(path))


def _parse(task: str, text: str, where: str = "") -> PromptSet:
    where = where or f"{task}.toml"
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise PromptError(f"{where} is not valid TOML: {exc}") from exc
    version = data.pop("version", None)
    if not isinstance(version, str) or not version:
        raise PromptError(f"{where}: a 'version' string is required")
    roles: dict[str, dict[str, str]] = {}
    declared: dict[str, frozenset[str]] = {}
    for role, table in data.items():
        if not isinstance(table, dict):
            raise PromptError(f"{where}: {role!r} must be a table of templates")
        names = table.pop("placeholders", [])
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            raise PromptError(f"{where}: {role}.placeholders must be a list of names")
        if not all(isinstance(t, str) for t in table.values()):
            raise PromptError(f"{where}: every template in [{role}] must be a string")
        roles[role] = dict(table)
        declared[role] = frozenset(names)
    prompts = PromptSet(task=task, version=version, roles=roles, placeholders=declared)
    prompts.validate()
    return prompts


def validate_all() -> list[PromptSet]:
    """Load and validate every prompt file."""
    return [load_prompts(task) for task in available_prompt_sets()]
