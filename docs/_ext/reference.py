"""Reference pages written from the sources at every build, never copied by hand.

Sphinx calls ``generate`` when the builder starts (``builder-inited``); it writes
``docs/reference/*.md`` from:

- the CLI: ``themisto_ext.cli.main.build_parser()`` (every subcommand and option);
- the REST API: ``docs/openapi.yaml`` (every path, operation, parameter, schema);
- the front end's settings: ``schema/*.json`` (every property of every plugin);
- the server options: ``ThemistoExtension``'s configurable traits and their help;
- the record formats: ``themisto_ext/schemas/*.schema.json``.

So a renamed option or a removed route changes the pages, and a page that links to what
is gone fails the build (``-W``). ``docs/reference`` is build output (git-ignored).
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import yaml

DOCS = Path(__file__).resolve().parent.parent
ROOT = DOCS.parent
OUT = DOCS / "reference"


def cell(text: object) -> str:
    """One Markdown table cell: one line, pipes escaped, no raw HTML."""
    value = " ".join(str(text).split())
    return value.replace("\\", "\\\\").replace("|", "\\|").replace("<", "&lt;") or " "


def code(text: object) -> str:
    value = " ".join(str(text).split()).replace("|", "\\|")
    fence = "``" if "`" in value else "`"
    pad = " " if value.startswith("`") or value.endswith("`") else ""
    return f"{fence}{pad}{value}{pad}{fence}" if value else " "


def table(header: list[str], rows: list[list[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + " --- |" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return [*lines, ""]


# --- CLI ----------------------------------------------------------------------------------

def _subcommands(parser: argparse.ArgumentParser) -> Iterator[tuple[str, argparse.ArgumentParser]]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            yield from action.choices.items()


def _options(parser: argparse.ArgumentParser) -> list[list[str]]:
    rows = []
    for action in parser._actions:
        if isinstance(action, (argparse._HelpAction, argparse._SubParsersAction)):
            continue
        names = ", ".join(action.option_strings) or (action.metavar or action.dest)
        if action.option_strings and action.nargs != 0:
            names += " " + str(action.metavar or action.dest.upper())
        default = action.default
        shown = "" if default in (None, False, argparse.SUPPRESS, []) or action.nargs == 0 \
            else code(default)
        help_text = (action.help or "") % {"default": default, "prog": parser.prog} \
            if action.help and "%(" in action.help else action.help or ""
        if action.choices and not isinstance(action.choices, Mapping):
            help_text += " Choices: " + ", ".join(str(c) for c in action.choices) + "."
        rows.append([code(names), cell(help_text), shown])
    return rows


def _command(lines: list[str], parser: argparse.ArgumentParser, depth: int) -> None:
    lines += [f"{'#' * depth} `{parser.prog}`", ""]
    if parser.description:
        lines += [cell(parser.description), ""]
    lines += ["```text", parser.format_usage().strip(), "```", ""]
    rows = _options(parser)
    if rows:
        lines += table(["argument", "what it does", "default"], rows)
    for _, sub in _subcommands(parser):
        _command(lines, sub, min(depth + 1, 4))


def cli_page() -> str:
    from themisto_ext.cli.main import build_parser

    parser = build_parser()
    parser.prog = "themisto"
    lines = ["# Command line", "",
             "Every `themisto` command and option, written from the argument parser "
             "(`themisto_ext/cli/main.py`) at each build. The guide to using them is "
             "[the command line](../guide/cli.md).", ""]
    _command(lines, parser, 2)
    return "\n".join(lines)


# --- settings -----------------------------------------------------------------------------

def _type(schema: Mapping[str, Any]) -> str:
    if "enum" in schema:
        return " \\| ".join(code(json.dumps(v)) for v in schema["enum"])
    if "oneOf" in schema and all("const" in o for o in schema["oneOf"]):
        return " \\| ".join(code(json.dumps(o["const"])) for o in schema["oneOf"])
    kind = schema.get("type", "")
    if kind == "array" and isinstance(schema.get("items"), Mapping):
        return f"array of {_type(schema['items'])}"
    if "$ref" in schema:
        return code(schema["$ref"].rsplit("/", 1)[-1])
    if isinstance(kind, list):
        return " or ".join(kind)
    return str(kind or "any")


def settings_page() -> str:
    lines = ["# Settings", "",
             "The settings each plugin reads, as JupyterLab's settings editor shows them "
             "(*Settings → Settings Editor*), written from `schema/*.json` at each build. "
             "They change what the front end shows and asks for; what the server runs is "
             "set by [its options](server-options.md).", ""]
    for path in sorted((ROOT / "schema").glob("*.json")):
        schema = json.loads(path.read_text())
        plugin = f"themisto-ext:{path.stem}"
        about = cell(schema.get("description", ""))
        lines += [f"## {schema.get('title', path.stem)}", "",
                  f"Plugin `{plugin}` (`schema/{path.name}`). {about}", ""]
        properties = schema.get("properties") or {}
        if properties:
            rows = [[code(name), cell(p.get("title", "")), _type(p),
                     code(json.dumps(p.get("default"))) if "default" in p else " ",
                     cell(p.get("description", ""))] for name, p in properties.items()]
            lines += table(["setting", "title", "type", "default", "description"], rows)
        shortcuts = schema.get("jupyter.lab.shortcuts") or []
        if shortcuts:
            lines += table(["command", "keys", "where"], [
                [code(e["command"]), code(" ".join(e["keys"])), code(e["selector"])]
                for e in shortcuts])
        menus = (schema.get("jupyter.lab.menus") or {}).get("main", [])
        for menu in menus:
            items = [code(i["command"]) for i in menu.get("items", []) if "command" in i]
            if items:
                lines += [f"Menu `{menu.get('label', menu.get('id'))}`: " + ", ".join(items), ""]
    return "\n".join(lines)


# --- server options -----------------------------------------------------------------------

def _default(owner: Any, name: str, trait: Any) -> str:
    if name in owner._trait_default_generators:  # a @default method: chosen at start
        return "computed at start (see help)"
    text = trait.default_value_repr()
    return code(text if len(text) < 80 else text[:77] + "...")


def server_page() -> str:
    from themisto_ext.server.app import ThemistoExtension

    own = ThemistoExtension.class_own_traits(config=True)
    inherited = {n: t for n, t in ThemistoExtension.class_traits(config=True).items()
                 if n not in own}
    lines = ["# Server options", "",
             "The server extension's options, written from `ThemistoExtension`'s "
             "configurable traits (`themisto_ext/server/app.py`) at each build. Set them in "
             "`jupyter_server_config.py` (`c.ThemistoExtension.NAME = value`) or on the "
             "command line (`jupyter lab --ThemistoExtension.NAME=value`); "
             "[Configuration](../guide/configuration.md) explains the common ones.", "",
             "## Themisto's own", ""]
    rows = [[code(f"ThemistoExtension.{name}"), cell(type(t).__name__),
             _default(ThemistoExtension, name, t), cell(t.help)]
            for name, t in sorted(own.items())]
    lines += table(["option", "type", "default", "help"], rows)
    lines += ["## Inherited from jupyter_server's `ExtensionApp`", "",
              "Set the same way; see jupyter_server's documentation.", ""]
    rows = [[code(f"ThemistoExtension.{name}"), cell(type(t).__name__),
             _default(ThemistoExtension, name, t), cell(t.help)]
            for name, t in sorted(inherited.items())]
    lines += table(["option", "type", "default", "help"], rows)
    return "\n".join(lines)


# --- JSON Schemas (records) ---------------------------------------------------------------

def _properties(lines: list[str], schema: Mapping[str, Any]) -> None:
    required = set(schema.get("required", []))
    properties = schema.get("properties") or {}
    if properties:
        rows = [[code(name), _type(p), "yes" if name in required else " ",
                 cell(p.get("description", ""))] for name, p in properties.items()]
        lines += table(["field", "type", "required", "description"], rows)


def records_page() -> str:
    lines = ["# Record formats", "",
             "Every record Themisto writes or sends, written from the JSON Schemas in "
             "`themisto_ext/schemas/` at each build (the TypeScript types and the Python "
             "TypedDicts are generated from the same files). [The trajectory "
             "format](../format.md) explains them in prose.", ""]
    for path in sorted((ROOT / "themisto_ext" / "schemas").glob("*.schema.json")):
        schema = json.loads(path.read_text())
        lines += [f"## {schema.get('title', path.stem)}", "",
                  f"`themisto_ext/schemas/{path.name}`, `$id` `{schema.get('$id', '')}`.", "",
                  cell(schema.get("description", "")), ""]
        _properties(lines, schema)
        for name, sub in (schema.get("$defs") or {}).items():
            lines += [f"### {schema.get('title', path.stem)} / {name}", "",
                      cell(sub.get("description", "")), ""]
            _properties(lines, sub)
            variants = sub.get("oneOf") or sub.get("anyOf") or []
            refs = [code(v["$ref"].rsplit("/", 1)[-1]) for v in variants if "$ref" in v]
            if refs:
                lines += ["One of: " + ", ".join(refs) + ".", ""]
    return "\n".join(lines)


# --- REST API -----------------------------------------------------------------------------

def _resolve(spec: Mapping[str, Any], node: Mapping[str, Any]) -> Mapping[str, Any]:
    while "$ref" in node and node["$ref"].startswith("#/"):
        target: Any = spec
        for part in node["$ref"][2:].split("/"):
            target = target[part]
        node = target
    return node


def _schema_name(schema: Mapping[str, Any]) -> str:
    if "$ref" in schema:
        return code(schema["$ref"].rsplit("/", 1)[-1])
    if schema.get("type") == "array" and isinstance(schema.get("items"), Mapping):
        return "array of " + _schema_name(schema["items"])
    if "properties" in schema:
        return "object: " + ", ".join(code(k) for k in schema["properties"])
    return cell(schema.get("type", "any"))


def rest_page() -> str:
    spec = yaml.safe_load((DOCS / "openapi.yaml").read_text())
    lines = ["# REST API", "",
             f"{cell(spec['info'].get('title', ''))}, version {spec['info'].get('version')}: "
             "every route of `docs/openapi.yaml`, written from it at each build (the test "
             "command exercises and fuzzes every route against the same file). "
             "[The REST API and live stream](../guide/rest.md) shows them in use.", ""]
    for path, item in spec["paths"].items():
        for method, op in item.items():
            if method not in {"get", "put", "post", "delete", "patch"}:
                continue
            lines += [f"## `{method.upper()} {path}`", ""]
            if op.get("summary"):
                lines += [cell(op["summary"]), ""]
            if op.get("description"):
                lines += [cell(op["description"]), ""]
            params = [_resolve(spec, p)
                      for p in item.get("parameters", []) + op.get("parameters", [])]
            if params:
                lines += table(["parameter", "in", "type", "description"], [
                    [code(p["name"]), p["in"], _type(p.get("schema", {})),
                     cell(p.get("description", ""))] for p in params])
            body = op.get("requestBody")
            if body:
                body = _resolve(spec, body)
                said = ". " + cell(body["description"]) if body.get("description") else ""
                for media, content in body.get("content", {}).items():
                    kind = _schema_name(content.get("schema", {}))
                    lines += [f"Body ({code(media)}): {kind}{said}", ""]
            rows = []
            for status, response in op.get("responses", {}).items():
                response = _resolve(spec, response)
                kinds = [f"{code(m)} {_schema_name(c.get('schema', {}))}"
                         for m, c in response.get("content", {}).items()]
                rows.append([code(status), cell(response.get("description", "")),
                             "; ".join(kinds) or " "])
            lines += table(["status", "meaning", "content"], rows)
    lines += ["## Schemas", ""]
    for name, schema in spec.get("components", {}).get("schemas", {}).items():
        lines += [f"### `{name}`", "", cell(schema.get("description", "")), ""]
        _properties(lines, _resolve(spec, schema))
    return "\n".join(lines)


def index_page() -> str:
    return "\n".join(["# Reference", "",
                      "Written from the sources at every build of this site: a renamed "
                      "option or a removed route changes these pages, and a page that "
                      "still links to it fails the build.", "",
                      "```{toctree}", ":maxdepth: 1", "",
                      "cli", "rest", "settings", "server-options", "records", "```"])


PAGES = {
    "index.md": index_page,
    "cli.md": cli_page,
    "rest.md": rest_page,
    "settings.md": settings_page,
    "server-options.md": server_page,
    "records.md": records_page,
}


def generate(app: Any = None) -> None:
    OUT.mkdir(exist_ok=True)
    for name, page in PAGES.items():
        text = page() + "\n"
        target = OUT / name
        if not target.exists() or target.read_text() != text:  # unchanged: no rebuild
            target.write_text(text)


def setup(app: Any) -> dict[str, Any]:
    app.connect("builder-inited", generate)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
