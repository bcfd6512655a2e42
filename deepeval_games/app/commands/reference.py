"""The reference pages of the documentation, generated: every spec key from the spec's JSON Schema
(:func:`~deepeval_games.app.spec.spec.spec_json_schema`), every command and option from the command line's parser, and
every field of a match record from the record's JSON Schema (:class:`~deepeval_games.core.records.MatchRecord`).

``mkdocs build`` renders them through ``docs/hooks.py``, which replaces a page's ``<!-- reference: NAME -->`` line
with the reference of :data:`MARKERS` (``spec``, ``cli``, ``records``, ``record_versions``); nothing is fetched. So
the reference says what the code accepts and writes: a key, an option or a record field added to the models or the
parser appears in the docs with its type, default and description, and the descriptions live once, beside the code.
"""

from __future__ import annotations

import argparse
import functools
import json
import re
from collections.abc import Callable, Iterator
from typing import Any

__all__ = ["MARKERS", "cli_reference", "record_reference", "record_versions", "render_markers", "spec_reference"]

_ROLE = re.compile(r":[\w:]+:`~?([^`<]*?)(?:\s*<[^>]*>)?`")
"""A Sphinx role (``:mod:`x```, ``:class:`~a.b.C```): Markdown shows its text (the last dotted part after ``~``)."""
_CODE = re.compile(r"(``?)(.+?)\1")


def _markdown(text: str) -> str:
    """A docstring's reStructuredText inline markup as Markdown, on one line, safe inside a table cell."""

    def role(match: re.Match[str]) -> str:
        whole = match.group(0)
        name = match.group(1).strip()
        if ":`~" in whole:
            name = name.rsplit(".", 1)[-1]
        return f"`{name}`"

    text = _ROLE.sub(role, " ".join(text.split()))
    parts: list[str] = []
    last = 0
    for match in _CODE.finditer(text):  # ``x`` and `x` become `x`; outside code, | and < are escaped for tables/HTML
        parts.append(_escape(text[last : match.start()]))
        parts.append(f"`{match.group(2)}`")
        last = match.end()
    parts.append(_escape(text[last:]))
    return "".join(parts)


def _escape(text: str) -> str:
    return text.replace("|", "\\|").replace("<", "&lt;")


def _paragraphs(text: str) -> str:
    """A class docstring's paragraphs, each as :func:`_markdown`."""
    return "\n\n".join(_markdown(p) for p in text.split("\n\n") if p.strip())


# -- the spec --------------------------------------------------------------------------------------------------


def _ref(node: dict[str, Any]) -> str | None:
    """The ``$defs`` name a property points to (through ``anyOf`` with null), else None."""
    if "$ref" in node:
        return str(node["$ref"]).rsplit("/", 1)[-1]
    options = [o for o in node.get("anyOf", ()) if o != {"type": "null"}]
    return _ref(options[0]) if len(options) == 1 else None


def _variants(node: dict[str, Any]) -> list[str]:
    """The ``$defs`` names of a list of tables or a table of several kinds (``oneOf``), else empty."""
    node = node.get("items", node)
    for option in [node, *node.get("anyOf", ())]:
        if "oneOf" in option:
            return [name for o in option["oneOf"] if (name := _ref(o))]
    return []


def _refs(node: Any) -> Iterator[str]:
    """Every ``$defs`` name ``node`` points to, at any depth, in order."""
    if isinstance(node, dict):
        if "$ref" in node:
            yield str(node["$ref"]).rsplit("/", 1)[-1]
        for value in node.values():
            yield from _refs(value)
    elif isinstance(node, list):
        for value in node:
            yield from _refs(value)


def _value(value: Any) -> str:
    """A value as TOML writes it."""
    if value is None:
        return "unset"
    return f"`{json.dumps(value, ensure_ascii=False)}`"


def _type(node: dict[str, Any], defs: dict[str, Any]) -> str:
    """A property's type in words: ``integer ≥ 1``, ``"auto"`` or ``integer``, ``array of string``, a table."""
    if "$ref" in node:
        return f"table ({_toml_name(_ref(node) or '', defs)})"
    for many in ("anyOf", "oneOf"):
        if many in node:
            kept = [o for o in node[many] if o != {"type": "null"}]
            if len(kept) > 1 and all("$ref" in o for o in kept):  # kinds of one table: bot, model or human
                return "table (" + " or ".join(_toml_name(_ref(o) or "", defs) for o in kept) + ")"
            return " or ".join(dict.fromkeys(_type(o, defs) for o in kept))
    if "const" in node:
        return _value(node["const"])
    if "enum" in node:
        return " or ".join(_value(v) for v in node["enum"])
    kind = node.get("type", "any")
    if "prefixItems" in node:  # a fixed row, such as a record's move row
        return "[" + ", ".join(_type(item, defs) for item in node["prefixItems"]) + "]"
    if kind == "array":
        text = f"array of {_type(node.get('items', {}), defs)}"
        return text + (f" (at least {node['minItems']})" if node.get("minItems", 0) > 1 else "")
    if kind == "object":
        extra = node.get("additionalProperties")
        if isinstance(extra, dict) and extra:
            return f"table, each value {_type(extra, defs)}"
        return "table"
    bounds = [
        f"{sign} {node[key]:,}"
        for key, sign in (("minimum", "≥"), ("exclusiveMinimum", ">"), ("maximum", "≤"), ("exclusiveMaximum", "<"))
        if key in node
    ]
    return " ".join([str(kind), ", ".join(bounds)]).strip()


def _default(node: dict[str, Any], required: bool) -> str:
    if required:
        return "**required**"
    if "default" in node:
        return _value(node["default"])
    return {"object": "`{}`", "array": "`[]`"}.get(str(node.get("type")), "unset")


_TABLE_NAMES = {
    "ExperimentTable": "[experiment]",
    "StoppingRule": "[experiment.until_stable]",
    "SweepRange": "[experiment.sweep] range",
    "BotPlayer": "[[players]] with bot",
    "ModelPlayer": "[[players]] with model",
    "HumanPlayer": "[[players]] with human",
    "BotJudge": "[judge] with bot",
    "ModelJudge": "[judge] with model",
    "HumanJudge": "[judge] with human",
}
"""How the reference names each table of the schema (a new one is named by its model's title until listed here)."""


def _toml_name(name: str, defs: dict[str, Any]) -> str:
    title = _TABLE_NAMES.get(name, str(defs.get(name, {}).get("title", name)))
    return f"[`{title.split(' with ')[-1]}`](#{_anchor(name)})"


def _anchor(name: str) -> str:
    return "spec-" + re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")


TypeOf = Callable[[dict[str, Any], dict[str, Any]], str]
"""A property's type in words (:func:`_type` for the spec, :func:`_record_type` for records)."""


def _rows(node: dict[str, Any], defs: dict[str, Any], keys: list[str], type_of: TypeOf | None = None) -> Iterator[str]:
    """A table row per key of ``keys``: name, type (``type_of``, default :func:`_type`), default, description."""
    required = set(node.get("required", ()))
    for key in keys:
        prop = node["properties"][key]
        description = _markdown(str(prop.get("description", "")))
        yield f"| `{key}` | {(type_of or _type)(prop, defs)} | {_default(prop, key in required)} | {description} |"


def _section(name: str, defs: dict[str, Any], same_as: str | None = None) -> str:
    """One table of the spec: its heading, its model's description and a row per key; with ``same_as`` (a
    variant of players for the judge), the keys described exactly as there are named, not repeated."""
    node = defs[name]
    title = _TABLE_NAMES.get(name, str(node.get("title", name)))
    lines = [f"### `{title}` {{#{_anchor(name)}}}", "", _paragraphs(str(node.get("description", ""))), ""]
    keys = list(node.get("properties", {}))
    shared: list[str] = []
    if same_as is not None:
        other = defs[same_as].get("properties", {})
        shared = [k for k in keys if other.get(k) == node["properties"][k]]
        keys = [k for k in keys if k not in shared]
    lines += ["| key | type | default | description |", "| --- | --- | --- | --- |", *_rows(node, defs, keys)]
    if shared and same_as is not None:
        names = ", ".join(f"`{k}`" for k in shared)
        lines += ["", f"Also {names}: as in [`{_TABLE_NAMES.get(same_as, same_as)}`](#{_anchor(same_as)})."]
    return "\n".join(lines)


def spec_reference(schema: dict[str, Any] | None = None) -> str:
    """Markdown: a table per table of the spec (``[experiment]``, its ``until_stable`` and ``sweep``, every kind of
    ``[[players]]`` and ``[judge]``), each key with its type, default and description, from ``schema`` (default:
    the spec's own JSON Schema)."""
    if schema is None:
        from deepeval_games.app.spec.spec import spec_json_schema

        schema = spec_json_schema()
    defs: dict[str, Any] = schema.get("$defs", {})
    top = ["| table | type | default | description |", "| --- | --- | --- | --- |"]
    top += list(_rows(schema, defs, list(schema["properties"])))
    sections = [_paragraphs(str(schema.get("description", ""))), "\n".join(top)]
    done: set[str] = set()
    order: list[tuple[str, str | None]] = []

    def visit(name: str, same_as: str | None = None) -> None:
        if name in done or name not in defs:
            return
        done.add(name)
        order.append((name, same_as))
        for prop in defs[name].get("properties", {}).values():  # nested tables right after their parent
            for child in _refs(prop):
                visit(child)

    players = _variants(schema["properties"].get("players", {}))
    for key, prop in schema["properties"].items():
        ref = _ref(prop)
        if ref:
            visit(ref)
        for index, variant in enumerate(_variants(prop)):
            twin = players[index] if key != "players" and index < len(players) else None
            visit(variant, twin)
    for name in defs:  # a table reached some other way still gets its section
        visit(name)
    sections += [_section(name, defs, same_as) for name, same_as in order]
    return "\n\n".join(s for s in sections if s) + "\n"


# -- the command line -------------------------------------------------------------------------------------------


_WIDTH = 110
"""Characters per line of the usage blocks (argparse would take the terminal's width)."""


def _subcommands(parser: argparse.ArgumentParser) -> list[tuple[str, str, argparse.ArgumentParser]]:
    """(name, help, parser) of every subcommand, in the order ``--help`` lists them."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {a.dest: a.help or "" for a in action._choices_actions}
            return [(name, helps.get(name, ""), sub) for name, sub in action.choices.items()]
    return []


def _options(parser: argparse.ArgumentParser) -> list[str]:
    """Rows of the arguments table of ``parser`` (``-h`` left out: every command has it)."""
    formatter = parser._get_formatter()
    rows = []
    for action in parser._actions:
        if isinstance(action, (argparse._HelpAction, argparse._SubParsersAction)):
            continue
        invocation = formatter._format_action_invocation(action)
        if action.option_strings and action.nargs != 0:  # "-M KEY=VALUE, --model-setting KEY=VALUE": name it once
            invocation = ", ".join(action.option_strings) + " " + invocation.rsplit(" ", 1)[-1]
        default = action.default
        unset = default is None or default is False or default == argparse.SUPPRESS or action.nargs == 0
        shown = "" if unset else _value(default)
        help_text = (action.help or "").replace("%%", "%")
        if action.choices is not None and not action.option_strings and "{" not in invocation:
            invocation += " {" + ",".join(map(str, action.choices)) + "}"
        rows.append(f"| `{invocation}` | {shown} | {_markdown(help_text)} |")
    return rows


def cli_reference(parser: argparse.ArgumentParser | None = None) -> str:
    """Markdown: every command of ``parser`` (default: ``deepeval-games``'s) with its usage, description and a
    table of its arguments and options, with their defaults and help texts."""
    if parser is None:
        from deepeval_games.app.commands.parser import command_parser

        parser = command_parser()
    for each in [parser, *(sub for _, _, sub in _subcommands(parser))]:  # usage lines as wide as the page, always
        each.formatter_class = functools.partial(argparse.HelpFormatter, width=_WIDTH)
    lines = ["```text", parser.format_usage().strip(), "```", "", "| option | default | what it does |"]
    lines += ["| --- | --- | --- |", *_options(parser)]
    for name, help_text, sub in _subcommands(parser):
        lines += ["", f"### `{name}` {{#cli-{name}}}", "", _markdown(help_text[:1].upper() + help_text[1:]) + "."]
        if sub.description:
            lines += ["", _paragraphs(sub.description)]
        lines += ["", "```text", sub.format_usage().strip().removeprefix("usage: "), "```"]
        rows = _options(sub)
        if rows:
            lines += ["", "| argument | default | what it does |", "| --- | --- | --- |", *rows]
    return "\n".join(lines) + "\n"


# -- the match record -------------------------------------------------------------------------------------------


def _record_anchor(name: str) -> str:
    return "record-" + name.lower()


def _record_type(node: dict[str, Any], defs: dict[str, Any]) -> str:
    """A record field's type in words; a nested model links to its table, an enumeration lists its values."""
    name = _ref(node) if "$ref" in node else None
    if name is not None:
        target = defs[name]
        if "enum" in target:
            return " or ".join(_value(v) for v in target["enum"])
        return f"[`{name}`](#{_record_anchor(name)})"
    options = [o for o in node.get("anyOf", ()) if o != {"type": "null"}]
    if len(options) < len(node.get("anyOf", ())):  # optional: "... or null"
        return " or ".join([*(_record_type(o, defs) for o in options), "`null`"])
    if node.get("type") == "array" and "items" in node:
        return f"array of {_record_type(node['items'], defs)}"
    return _type(node, defs)


def _record_section(name: str, node: dict[str, Any], defs: dict[str, Any]) -> str:
    lines = [f"### `{name}` {{#{_record_anchor(name)}}}", "", _paragraphs(str(node.get("description", ""))), ""]
    lines += ["| field | type | default | description |", "| --- | --- | --- | --- |"]
    lines += _rows(node, defs, list(node.get("properties", {})), _record_type)
    return "\n".join(lines)


def record_reference(schema: dict[str, Any] | None = None) -> str:
    """Markdown: a table per model of a match record (the record, its turns, their transport attempts), each field
    with its type, default and description, from ``schema`` (default: the record's own JSON Schema, which
    ``deepeval-games schema --record`` prints)."""
    if schema is None:
        from deepeval_games.core.records import MatchRecord

        schema = MatchRecord.model_json_schema()
    defs: dict[str, Any] = schema.get("$defs", {})
    models = {str(schema.get("title", "MatchRecord")): schema}
    for node in list(models.values()) + [defs[n] for n in defs]:  # each model after the one that first holds it
        for name in _refs(node.get("properties", {})):
            if "properties" in defs.get(name, {}):  # enumerations are inline
                models.setdefault(name, defs[name])
    return "\n\n".join(_record_section(name, node, defs) for name, node in models.items()) + "\n"


def record_versions() -> str:
    """Markdown: the record's versions, each with what it added, from the history in the docstring of
    :mod:`deepeval_games.core.records` (where a version bump must describe itself)."""
    from deepeval_games.core import records

    history = (records.__doc__ or "").split("History:", 1)[-1]
    items = [item for item in re.split(r"^\* ", history, flags=re.MULTILINE)[1:] if item.strip()]
    lines = [f"- {_markdown(item)}" for item in items]
    lines.append(f"\nThis code writes version {records.SCHEMA_VERSION}.")
    return "\n".join(lines) + "\n"


MARKERS: dict[str, Callable[[], str]] = {
    "spec": spec_reference,
    "cli": cli_reference,
    "records": record_reference,
    "record_versions": record_versions,
}
"""What a ``<!-- reference: NAME -->`` line of a documentation page is replaced with."""

_MARKER = re.compile(r"^<!-- reference: (\w+) -->$", re.MULTILINE)


def render_markers(markdown: str) -> str:
    """``markdown`` with every ``<!-- reference: NAME -->`` line replaced by the generated reference NAME.

    Raises:
        KeyError: a marker names no reference (the build fails rather than leave a hole).
    """
    return _MARKER.sub(lambda m: MARKERS[m.group(1)]().strip(), markdown)
