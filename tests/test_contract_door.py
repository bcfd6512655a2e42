"""The task contract is the only door, and the core names no task.

* The referee, the players, the conformance kit and the reports read a game's or a state's optional hooks only
  through :mod:`deepeval_games.core.task` (where each hook's default is written once), or bound once a state by
  :mod:`deepeval_games.core.binding` from the same table of defaults: no ``getattr``/``hasattr`` on a game or a state
  anywhere else in ``deepeval_games``, ``llm_bots`` or ``analysis``.
* Nothing under ``deepeval_games/`` names a built-in task: the tasks register their games, bots, adapters and
  tables through entry points, as an outside package does.
"""

from __future__ import annotations

import ast
import importlib
import pkgutil
import re
from pathlib import Path

import deepeval_games

REPO = Path(__file__).resolve().parents[1]
CONTRACT = REPO / "deepeval_games" / "core" / "task.py"
BINDING = REPO / "deepeval_games" / "core" / "binding.py"  # the engine's side of the door: the same defaults
HOOK_READERS = ("getattr", "hasattr")
GAME_OR_STATE = re.compile(r"\b(state|game|view|clone)\b|_state\b|_game\b", re.IGNORECASE)
TASK_NAMES = re.compile(r"public[_ ]goods|idiom|code[_ -]review|translation", re.IGNORECASE)


def _hook_reads(path: Path) -> list[str]:
    """``getattr(x, ...)`` and ``hasattr(x, ...)`` calls in ``path`` whose ``x`` is a game or a state."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in HOOK_READERS:
            target = ast.unparse(node.args[0]) if node.args else ""
            if GAME_OR_STATE.search(target):
                found.append(f"{path.relative_to(REPO)}:{node.lineno}: {ast.unparse(node)}")
    return found


def test_hooks_are_read_only_through_the_task_contract() -> None:
    files = [p for package in ("deepeval_games", "llm_bots", "analysis") for p in (REPO / package).rglob("*.py")]
    assert len(files) > 60
    found = [read for path in files if path not in (CONTRACT, BINDING) for read in _hook_reads(path)]
    assert found == [], "read the hook through deepeval_games.core.task:\n" + "\n".join(found)
    assert _hook_reads(CONTRACT), "the contract itself reads the hooks (the scan must see them)"


def test_the_scan_sees_a_hook_read_with_getattr(tmp_path: Path) -> None:
    planted = REPO / "deepeval_games" / "_planted_for_test.py"
    planted.write_text("def f(state):\n    return getattr(state, 'penalty_action', None)\n", encoding="utf-8")
    try:
        assert _hook_reads(planted) == ["deepeval_games/_planted_for_test.py:2: getattr(state, 'penalty_action', None)"]
    finally:
        planted.unlink()


def test_no_module_under_deepeval_games_names_a_task() -> None:
    modules = [
        importlib.import_module(info.name)
        for info in pkgutil.walk_packages(deepeval_games.__path__, prefix="deepeval_games.")
        if not info.name.endswith(("ray_executor", "__main__"))  # Ray is an optional extra
    ]
    assert {"deepeval_games.core.referee", "deepeval_games.app.reports.report", "deepeval_games.app.commands.cli"} <= {
        m.__name__ for m in modules
    }
    named = []
    for module in modules:
        source = Path(module.__file__ or "").read_text(encoding="utf-8")
        named += [f"{module.__name__}: {m.group(0)!r}" for m in TASK_NAMES.finditer(source)]
    ray_source = (REPO / "deepeval_games" / "app" / "execution" / "ray_executor.py").read_text(encoding="utf-8")
    named += [f"ray_executor: {m.group(0)!r}" for m in TASK_NAMES.finditer(ray_source)]
    assert named == [], "the core names a task (register it through an entry point instead):\n" + "\n".join(named)
