"""The import rules of the front end (``src/``), checked on the source as
``test_architecture.py`` checks the Python package.

The folders are layers, lowest first: ``api/`` (the server's REST and live records) ->
``live/`` (what a notebook's stream and history hold) -> the views, side by side and
never importing each other: ``notebook/`` (badges, footers, ghost text, speculation),
``panel/`` (the side bar), ``statusbar/``, ``class/`` (the class view) -> ``plugins/`` and
the entry points (``index.ts``, ``commands.ts``), which wire them into JupyterLab. The
shared root modules (``tokens.ts``, ``settings.ts``, ``icon.ts``, ``dom.ts``: the views'
virtual-DOM helpers) sit beside ``live/``; so do ``settingschema.ts`` and
``settingfields.ts`` (the settings editor's view of the prediction settings, which only the
plugins use); a layer below them
names their interfaces with ``import type`` only, so no import circles run through them at
run time. Tests (``__tests__/``) may import anything, and nothing imports them.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path, PurePosixPath

import pytest

SRC = Path(__file__).resolve().parent.parent / "src"
ROOT_SHARED = ("tokens", "settings", "icon", "dom")
"""Root modules every layer above ``api/`` may use (``api/`` and ``live/`` by type only)."""
LAYERS: dict[str, tuple[set[str], set[str]]] = {
    # layer: (what it may import, what it may import by ``import type`` only)
    "api": ({"api"}, {"tokens"}),
    "live": ({"api", "live"}, {"tokens"}),
    "notebook": ({"api", "live", "notebook", *ROOT_SHARED}, set()),
    "panel": ({"api", "live", "panel", *ROOT_SHARED}, set()),
    "statusbar": ({"api", "live", "statusbar", *ROOT_SHARED}, set()),
    "class": ({"api", "live", "class", *ROOT_SHARED}, set()),
    "tokens": ({"api"}, {"live"}),
    "settings": ({"api", "tokens"}, {"live"}),
    "icon": (set(), set()),
    "dom": (set(), set()),
    # how the settings editor shows the prediction settings: used by plugins only
    "settingschema": (set(), {"api"}),
    "settingfields": (set(), set()),
}
"""``plugins``, ``index`` and ``commands`` wire everything and may import any layer."""
WIRING = ("plugins", "index", "commands")

_IMPORT = re.compile(
    r"^\s*(?P<verb>import|export)\s+(?P<type>type\s+)?(?:[^;'\"]*?\s+from\s+)?"
    r"['\"](?P<target>[^'\"]+)['\"]", re.MULTILINE | re.DOTALL)
_DYNAMIC = re.compile(r"\bimport\(\s*['\"](?P<target>[^'\"]+)['\"]\s*\)")


def layer_of(path: PurePosixPath) -> str:
    """``api`` for ``src/api/client.ts``, ``tokens`` for ``src/tokens.ts``."""
    return path.parts[0] if len(path.parts) > 1 else path.stem


def imports_of(text: str) -> list[tuple[str, bool]]:
    """Each relative module a file imports (or re-exports) and whether only its types."""
    found = [(m["target"], bool(m["type"])) for m in _IMPORT.finditer(text)]
    found += [(m["target"], False) for m in _DYNAMIC.finditer(text)]
    return [(target, types) for target, types in found if target.startswith(".")]


@cache
def sources() -> dict[PurePosixPath, str]:
    return {PurePosixPath(p.relative_to(SRC).as_posix()): p.read_text("utf-8")
            for p in sorted(SRC.rglob("*.ts")) if not p.name.endswith(".d.ts")}


def resolved(source: PurePosixPath, target: str) -> PurePosixPath | None:
    """The ``src/``-relative module a relative import names (None outside ``src/``)."""
    parts: list[str] = list(source.parent.parts)
    for part in PurePosixPath(target).parts:
        if part == "..":
            if not parts:
                return None
            parts.pop()
        elif part != ".":
            parts.append(part)
    return PurePosixPath(*parts) if parts else None


def violations(files: dict[PurePosixPath, str]) -> list[str]:
    bad = []
    for source, text in files.items():
        layer = layer_of(source)
        for target, types_only in imports_of(text):
            module = resolved(source, target)
            if module is None:
                continue  # ../style/...: assets, not code
            if module.parts[0] == "__tests__" and layer != "__tests__":
                bad.append(f"{source} -> {module} (a test module)")
                continue
            if layer in WIRING or layer == "__tests__":
                continue
            allowed, typed = LAYERS[layer]
            into = layer_of(module)
            if into in allowed or (types_only and into in typed):
                continue
            how = "" if into not in typed else " (by import type only)"
            bad.append(f"{source} -> {module}{how}")
    return bad


def test_every_file_of_src_is_in_a_known_layer():
    unknown = {layer_of(p) for p in sources()} - set(LAYERS) - set(WIRING) - {"__tests__"}
    assert unknown == set(), "add a new folder to LAYERS with the rule it follows"


def test_the_front_end_keeps_its_layers():
    assert violations(sources()) == []


@pytest.mark.parametrize("path,text,expected", [
    ("api/client.ts", "import { NotebookLive } from '../live/store';\n",
     ["api/client.ts -> live/store"]),
    ("api/client.ts", "import { IThemistoClient } from '../tokens';\n",
     ["api/client.ts -> tokens (by import type only)"]),
    ("api/client.ts", "import type { IThemistoClient } from '../tokens';\n", []),
    ("panel/views.ts", "import {\n  cellView,\n  type X\n} from '../notebook/cellview';\n",
     ["panel/views.ts -> notebook/cellview"]),
    ("live/store.ts", "export { x } from '../panel/dom';\n", ["live/store.ts -> panel/dom"]),
    ("notebook/markers.ts", "const m = await import('../plugins/panel');\n",
     ["notebook/markers.ts -> plugins/panel"]),
    ("live/store.ts", "import { fake } from '../__tests__/fakelive';\n",
     ["live/store.ts -> __tests__/fakelive (a test module)"]),
    ("plugins/panel.ts", "import { ThemistoPanel } from '../panel/panel';\n", []),
])
def test_a_violation_is_found(path: str, text: str, expected: list[str]):
    assert violations({PurePosixPath(path): text}) == expected
