"""Check the built documentation site against the sources it documents: every ``themisto``
subcommand, every path of ``docs/openapi.yaml``, every setting of ``schema/*.json`` and
every configurable trait of the server extension must appear in the built reference pages
(that every page is in the table of contents, Sphinx checks itself). The other way round, what the
hand-written pages (and the README) name must exist: every ``ThemistoExtension.NAME``, every
option of the configuration guide's table, every ``/themisto/api/...`` path and every
``themisto COMMAND`` at the start of a command line. So a renamed option, a removed route or
subcommand fails the build wherever a page still names it.

Usage: ``python scripts/check_docs.py docs/_build/html`` (``scripts/docs.sh`` runs it).
"""

from __future__ import annotations

import argparse
import html
import json
import re
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "docs" / "_ext")]

from reference import _subcommands  # noqa: E402  (the walk the CLI page is written by)


def text_of(page: Path) -> str:
    raw = re.sub(r"<[^>]+>", "", page.read_text(encoding="utf-8"))
    return html.unescape(raw)


def subcommands() -> list[str]:
    """``themisto record``, ``themisto models install``, ...: every command and subcommand."""
    from themisto_ext.cli.main import build_parser

    found = []

    def walk(parser: argparse.ArgumentParser, prefix: str) -> None:
        for name, sub in _subcommands(parser):
            found.append(f"{prefix} {name}")
            walk(sub, f"{prefix} {name}")

    walk(build_parser(), "themisto")
    return found


def hand_written() -> list[Path]:
    docs = ROOT / "docs"
    skipped = {"reference", "_build"}
    pages = [p for p in docs.rglob("*.md") if p.relative_to(docs).parts[0] not in skipped]
    return [*pages, ROOT / "README.md"]


def named_but_absent(commands: set[str], routes: list[str], traits: set[str]) -> list[str]:
    patterns = [re.compile("^" + re.sub(r"\{[^}]+\}", "[^/]+", r) + "/?$") for r in routes]
    table = (ROOT / "docs" / "guide" / "configuration.md").read_text(encoding="utf-8")
    wrong = [f"guide/configuration.md: option {m.group(1)}"
             for m in re.finditer(r"^\| `(\w+)` \|", table, re.M) if m.group(1) not in traits]
    for page in hand_written():
        text = page.read_text(encoding="utf-8")
        name = page.relative_to(ROOT).as_posix()
        wrong += [f"{name}: option ThemistoExtension.{m.group(1)}"
                  for m in re.finditer(r"ThemistoExtension\.(\w+)", text)
                  if m.group(1) not in traits and m.group(1) != "NAME"]
        for m in re.finditer(r"/themisto/api(/[A-Za-z0-9_{}/.-]*)?", text):
            route = m.group(0).rstrip("/.")
            if not any(p.match(route) for p in patterns):
                wrong.append(f"{name}: route {route}")
        wrong += [f"{name}: command themisto {m.group(1)}" for m in re.finditer(
            r"(?m)^\s*(?:\S+=\S+ )*themisto (?:--store \S+ )?([a-z][\w-]*)", text)
            if m.group(1) not in commands]
    return wrong


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("site", type=Path)
    site = parser.parse_args().site
    reference = site / "reference"
    pages = {name: text_of(reference / f"{name}.html")
             for name in ("cli", "rest", "settings", "server-options", "records")}
    commands = subcommands()
    wanted: list[tuple[str, str]] = [("cli", c) for c in commands]
    spec = yaml.safe_load((ROOT / "docs" / "openapi.yaml").read_text())
    wanted += [("rest", path) for path in spec["paths"]]
    for schema in sorted((ROOT / "schema").glob("*.json")):
        wanted += [("settings", name) for name in json.loads(schema.read_text())
                   .get("properties", {})]
    from themisto_ext.server.app import ThemistoExtension

    traits = set(ThemistoExtension.class_traits(config=True))
    wanted += [("server-options", f"ThemistoExtension.{name}") for name in sorted(traits)]
    for path in sorted((ROOT / "themisto_ext" / "schemas").glob("*.schema.json")):
        wanted.append(("records", f"themisto_ext/schemas/{path.name}"))
    missing = [f"{page}: {item}" for page, item in wanted if item not in pages[page]]
    absent = named_but_absent({c.split()[1] for c in commands}, list(spec["paths"]), traits)
    for line in missing:
        print(f"check_docs: missing from the reference: {line}", file=sys.stderr)
    for line in absent:
        print(f"check_docs: a page names what the sources lack: {line}", file=sys.stderr)
    if missing or absent:
        return 1
    pages_built = sum(1 for _ in site.rglob("*.html"))
    print(f"check_docs: {len(wanted)} items found in the reference, {pages_built} pages")
    return 0


if __name__ == "__main__":
    sys.exit(main())
