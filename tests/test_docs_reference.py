"""The generated reference pages (``docs/hooks.py`` → :mod:`deepeval_games.app.commands.reference`) list every spec key
of the
JSON Schema and every command and option of the parser, and the pages ask for them."""

from __future__ import annotations

import argparse
import importlib.util
import re
from pathlib import Path

from deepeval_games.app.commands.parser import command_parser
from deepeval_games.app.commands.reference import (
    cli_reference,
    record_reference,
    record_versions,
    render_markers,
    spec_reference,
)
from deepeval_games.app.spec.experiment import ExperimentTable
from deepeval_games.app.spec.players import ModelPlayer
from deepeval_games.app.spec.spec import spec_json_schema
from deepeval_games.core import records
from deepeval_games.core.bot import CallAttempt


def _sections(markdown: str) -> dict[str, str]:
    """Heading anchor -> the text under that heading."""
    parts = re.split(r"^### .*\{#([\w-]+)\}$", markdown, flags=re.MULTILINE)
    return dict(zip(parts[1::2], parts[2::2], strict=True))


def test_every_key_of_every_table_of_the_schema_is_listed() -> None:
    schema = spec_json_schema()
    sections = _sections(spec_reference(schema))
    assert set(sections) == {f"spec-{name.lower()}" for name in schema["$defs"]}  # every table has its section
    for name, node in schema["$defs"].items():
        text = sections[f"spec-{name.lower()}"]
        for key in node["properties"]:
            assert f"`{key}`" in text, f"{name}: key {key!r} missing from the spec reference"
    table = spec_reference(schema).split("### ", 1)[0]
    assert all(f"| `{key}` |" in table for key in schema["properties"])
    # the models' own fields (by their TOML names), so the schema reaching the page is the models' schema
    for model, anchor in ((ExperimentTable, "spec-experimenttable"), (ModelPlayer, None)):
        text = sections[anchor or "spec-modelplayer"]
        for field_name, field in model.model_fields.items():
            assert f"| `{field.alias or field_name}` |" in text


def test_a_key_row_has_its_type_default_and_description() -> None:
    sections = _sections(spec_reference())
    row = next(line for line in sections["spec-experimenttable"].splitlines() if line.startswith("| `repeats` |"))
    assert row.startswith("| `repeats` | integer ≥ 1 | `1` | How many times each seating is played")
    epsilon = next(line for line in sections["spec-stoppingrule"].splitlines() if line.startswith("| `epsilon` |"))
    assert "**required**" in epsilon and "> 0" in epsilon
    assert "``" not in spec_reference() and ":mod:" not in spec_reference()  # reStructuredText became Markdown


def test_a_missing_key_is_noticed() -> None:
    schema = spec_json_schema()
    del schema["$defs"]["StoppingRule"]["properties"]["window"]
    text = _sections(spec_reference(schema))["spec-stoppingrule"]
    assert "`window`" not in text


def test_every_command_and_option_of_the_parser_is_listed() -> None:
    parser = command_parser()
    sections = _sections(cli_reference(parser))
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices
    assert set(sections) == {f"cli-{name}" for name in commands}
    for name, sub in commands.items():
        for action in sub._actions:
            if isinstance(action, argparse._HelpAction):
                continue
            shown = action.option_strings[-1] if action.option_strings else (action.metavar or action.dest)
            if not action.option_strings and action.choices is not None:  # data's [{fetch}]
                shown = "{" + ",".join(action.choices) + "}"
            assert f"`{shown}" in sections[f"cli-{name}"] or f", {shown}" in sections[f"cli-{name}"], (name, shown)
            if action.help:
                assert action.help.split()[0] in sections[f"cli-{name}"]


def test_the_pages_ask_for_the_references_and_the_hook_fills_them(repo_root: Path) -> None:
    hook_path = repo_root / "docs" / "hooks.py"
    assert "docs/hooks.py" in (repo_root / "mkdocs.yml").read_text(encoding="utf-8")
    spec = importlib.util.spec_from_file_location("docs_hooks", hook_path)
    assert spec is not None and spec.loader is not None
    hooks = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hooks)
    for page, marker, expected in (
        ("spec.md", "<!-- reference: spec -->", "### `[experiment.until_stable]`"),
        ("cli.md", "<!-- reference: cli -->", "### `sandbox-info`"),
        ("records.md", "<!-- reference: records -->", "### `TurnRecord`"),
        ("records.md", "<!-- reference: record_versions -->", f"This code writes version {records.SCHEMA_VERSION}."),
    ):
        markdown = (repo_root / "docs" / page).read_text(encoding="utf-8")
        assert marker in markdown
        built = hooks.on_page_markdown(markdown, None, None, None)
        assert marker not in built and expected in built
    assert render_markers("no marker here") == "no marker here"


def test_every_field_of_every_record_model_is_listed() -> None:
    sections = _sections(record_reference())
    models = {"record-matchrecord": records.MatchRecord, "record-turnrecord": records.TurnRecord}
    assert set(sections) == {*models, "record-callattempt"}
    for anchor, model in models.items():
        for name in model.model_fields:
            assert f"| `{name}` |" in sections[anchor], f"{anchor}: field {name!r} missing from the record reference"
    for name in CallAttempt.__dataclass_fields__:
        assert f"| `{name}` |" in sections["record-callattempt"], name
    outcome = next(line for line in sections["record-turnrecord"].splitlines() if line.startswith("| `outcome` |"))
    assert '`"truncated"`' in outcome  # an enumeration is listed by its values, not as a table
    assert "[`TurnRecord`](#record-turnrecord)" in sections["record-matchrecord"]


def test_a_missing_record_field_is_noticed() -> None:
    schema = records.MatchRecord.model_json_schema()
    del schema["$defs"]["TurnRecord"]["properties"]["cached_tokens"]
    assert "| `cached_tokens` |" not in _sections(record_reference(schema))["record-turnrecord"]


def test_every_record_version_is_listed_with_what_it_added() -> None:
    text = record_versions()
    for version in range(1, records.SCHEMA_VERSION + 1):
        assert f"\n- {version} — " in f"\n{text}", f"version {version} missing from the record's history"
    assert {start for start, _ in records.MIGRATIONS} == set(range(records.SCHEMA_VERSION))
