"""The README stays short and true: its two set-up commands name real specs, CI runs command 2, its ``eval`` example
builds a spec, and the manual it points to builds into a site (``mkdocs.yml``)."""

from __future__ import annotations

import re
from pathlib import Path

from deepeval_games import load_spec
from deepeval_games.app.spec.schedule import plan_matches


def _setup_commands(repo_root: Path) -> list[str]:
    text = (repo_root / "README.md").read_text(encoding="utf-8")
    block = text.split("## Set-up: two commands", 1)[1].split("```bash", 1)[1].split("```", 1)[0]
    return [line for line in block.splitlines() if line.strip() and not line.startswith("#")]


def test_two_setup_commands_name_real_specs(repo_root: Path) -> None:
    demo, tests = _setup_commands(repo_root)
    spec_path = re.search(r"deepeval-games run (\S+\.toml)", demo).group(1)
    spec = load_spec(repo_root / spec_path)
    assert any(p.model == "local/smollm2" for p in spec.players)
    assert plan_matches(spec)
    assert tests.endswith("python -m pytest -q")


def test_ci_runs_the_readme_install_and_test_command(repo_root: Path) -> None:
    ci = (repo_root / ".ci" / "run").read_text(encoding="utf-8")
    _, tests = _setup_commands(repo_root)
    install = tests.rsplit(" && ", 1)[0]
    assert (
        install.replace("python -m pip install -e", "python -m pip install -q -e").replace(
            "pip install --no-deps", "pip install -q --no-deps"
        )
        in ci
    )
    assert "ruff check ." in ci and "python -m pytest -q" in ci
    assert "lint-imports" in ci and "\nmypy" in ci


def test_the_readme_is_short_and_points_to_the_docs(repo_root: Path) -> None:
    text = (repo_root / "README.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 200
    pages = re.findall(r"`docs/([\w/]+\.md)`", text)  # tasks/index.md: the task pages have a folder
    assert len(pages) >= 8 and all((repo_root / "docs" / page).is_file() for page in pages)
    nav = (repo_root / "mkdocs.yml").read_text(encoding="utf-8")
    assert all(f": {page}" in nav for page in pages)  # every page the README names is in the site
    assert "mkdocs build --strict" in (repo_root / ".ci" / "run").read_text(encoding="utf-8")


def test_the_readme_eval_example_builds_a_spec(repo_root: Path) -> None:
    from deepeval_games.app.commands.study import plan_study

    text = (repo_root / "README.md").read_text(encoding="utf-8")
    command = re.search(r"deepeval-games eval (\S+) --model (\S+)", text)
    assert command is not None
    plan = plan_study(command.group(1), [command.group(2)])
    assert plan.spec().players[0].model == command.group(2)
