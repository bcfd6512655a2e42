"""The house stays findable: small rooms (modules), short functions, folders of about a dozen modules, each setting
read in one place, and no private name imported from another module (``docs/architecture.md``)."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
PACKAGES = ("deepeval_games", "game_defs", "llm_bots", "analysis")
MAX_MODULE_LINES = 800
MAX_FUNCTION_LINES = 80
MAX_MODULES_A_FOLDER = 12


def _modules() -> Iterator[Path]:
    for package in PACKAGES:
        yield from sorted((REPO / package).rglob("*.py"))


def _tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"), filename=str(path))


def test_no_module_is_over_800_lines() -> None:
    long = {
        str(p.relative_to(REPO)): n for p in _modules() if (n := len(p.read_text().splitlines())) > MAX_MODULE_LINES
    }
    assert not long, f"modules over {MAX_MODULE_LINES} lines: {long}"


def test_the_referee_stays_one_pipeline_of_at_most_600_lines_and_no_function_over_60() -> None:
    """Issue 41's size rule for the referee (``deepeval_games/core/referee.py``), tighter than the house's."""
    path = REPO / "deepeval_games" / "core" / "referee.py"
    assert len(path.read_text(encoding="utf-8").splitlines()) <= 600
    long = {
        node.name: size
        for node in ast.walk(_tree(path))
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and (size := (node.end_lineno or node.lineno) - node.lineno + 1) > 60
    }
    assert not long, f"referee functions over 60 lines: {long}"


def test_no_function_is_over_80_lines() -> None:
    long: dict[str, int] = {}
    for path in _modules():
        for node in ast.walk(_tree(path)):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                size = (node.end_lineno or node.lineno) - node.lineno + 1
                if size > MAX_FUNCTION_LINES:
                    long[f"{path.relative_to(REPO)}:{node.lineno} {node.name}"] = size
    assert not long, f"functions over {MAX_FUNCTION_LINES} lines: {long}"


def test_no_folder_holds_more_than_a_dozen_modules() -> None:
    folders = {p.parent for p in _modules()}
    crowded = {}
    for folder in folders:
        modules = [p for p in folder.glob("*.py") if p.name != "__init__.py"]
        if len(modules) > MAX_MODULES_A_FOLDER:
            crowded[str(folder.relative_to(REPO))] = len(modules)
    assert not crowded, f"folders with more than {MAX_MODULES_A_FOLDER} modules: {crowded}"


def test_every_folder_says_what_lives_in_it() -> None:
    silent = []
    for folder in sorted({p.parent for p in _modules()}):
        init = folder / "__init__.py"
        if not init.exists() or ast.get_docstring(_tree(init)) is None:
            silent.append(str(folder.relative_to(REPO)))
    assert not silent, f"folders without a package docstring: {silent}"


def test_no_private_name_is_imported_from_another_module() -> None:
    found = []
    for path in _modules():
        for node in ast.walk(_tree(path)):
            if isinstance(node, ast.ImportFrom) and node.module != "__future__":
                private = [a.name for a in node.names if a.name.startswith("_") and not a.name.startswith("__")]
                if private:
                    found.append(f"{path.relative_to(REPO)}:{node.lineno} from {node.module} import {private}")
    assert not found, "private names imported across modules:\n" + "\n".join(found)


def test_the_local_model_prefix_is_written_once() -> None:
    written = []
    for path in _modules():
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if '"local/"' in line or "'local/'" in line:
                written.append(f"{path.relative_to(REPO)}:{number}")
    assert written == ["llm_bots/model_info.py:" + str(_line_of("llm_bots/model_info.py", "LOCAL_PREFIX = "))]


def _line_of(relpath: str, text: str) -> int:
    for number, line in enumerate((REPO / relpath).read_text(encoding="utf-8").splitlines(), 1):
        if line.startswith(text):
            return number
    pytest.fail(f"{relpath} has no line starting {text!r}")


def _reads_of(name: str, tree: ast.Module) -> int:
    """How many times ``tree`` reads ``name`` as an attribute, a subscript key or a ``.get`` key."""
    count = 0
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr == name and isinstance(node.ctx, ast.Load):
            count += 1
        elif isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load):
            key = node.slice
            count += isinstance(key, ast.Constant) and key.value == name
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get":
            count += bool(node.args) and isinstance(node.args[0], ast.Constant) and node.args[0].value == name
    return count


def test_the_stopping_rule_is_read_from_the_spec_in_one_module() -> None:
    """``until_stable`` (the spec's stopping-rule table) is read in one module, which resolves the effective rule
    (recheck, adaptive, active) that every other module is handed; the table that declares the key validates it."""
    readers = {str(p.relative_to(REPO)) for p in _modules() if _reads_of("until_stable", _tree(p))}
    assert readers == {"deepeval_games/app/spec/stopping.py", "deepeval_games/app/spec/experiment.py"}, readers
