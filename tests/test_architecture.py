"""The import rules that keep the data flow readable, checked on the source.

capture (kernel) -> journal -> ingest -> store -> prompts -> model clients -> prediction ->
scoring -> live stream -> server; the rules (what a cell shows, computed from recorded
steps) sit beside the prompts, under the model clients. The kernel hook imports only the
shared base (the contract, the records and trajectory format, the journal writer); nothing
else reaches
into the hook's internals; the store and the prompts import nothing above them; and no
two modules import each other, directly or around a circle.
"""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "themisto_ext"
BASE = ("themisto_ext.contract", "themisto_ext.records", "themisto_ext.errors",
        "themisto_ext.trajectory", "themisto_ext.journal", "themisto_ext.redaction",
        "themisto_ext.version", "themisto_ext.json_codec")


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@cache
def modules() -> dict[str, Path]:
    return {module_name(p): p for p in PACKAGE.rglob("*.py") if "labextension" not in p.parts}


def _type_checking_only(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


@cache
def imports(module: str, runtime_only: bool = False) -> frozenset[str]:
    """Modules of the package that ``module`` imports (at any depth of its code)."""
    tree = ast.parse(modules()[module].read_text("utf-8"))
    found: set[str] = set()

    def visit(node: ast.AST, top_level: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _type_checking_only(child):
                continue
            if runtime_only and isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                continue  # a lazy import cannot close a circle at import time
            if isinstance(child, ast.Import):
                found.update(a.name for a in child.names)
            elif isinstance(child, ast.ImportFrom) and child.module:
                base = child.module
                if child.level:
                    package = module.rsplit(".", child.level)[0]
                    base = f"{package}.{child.module}"
                for alias in child.names:
                    candidate = f"{base}.{alias.name}"
                    found.add(candidate if candidate in modules() else base)
            visit(child, top_level)

    visit(tree, True)
    return frozenset(m for m in found if m in modules())


def within(module: str, *prefixes: str) -> bool:
    return any(module == p or module.startswith(p + ".") for p in prefixes)


def offenders(source_prefixes: tuple[str, ...], allowed: tuple[str, ...]) -> list[str]:
    bad = []
    for module in modules():
        if not within(module, *source_prefixes):
            continue
        for target in imports(module):
            if target != "themisto_ext" and not within(target, *allowed, *source_prefixes):
                bad.append(f"{module} -> {target}")
    return bad


def test_capture_imports_only_the_shared_base():
    assert offenders(("themisto_ext.kernel",), BASE) == []


def test_nothing_outside_capture_imports_its_internals():
    # The package root is IPython's entry point (``%load_ext themisto_ext``): it hands over.
    bad = [f"{m} -> {t}" for m in modules() if not within(m, "themisto_ext.kernel")
           and m != "themisto_ext" for t in imports(m) if within(t, "themisto_ext.kernel")]
    assert bad == []


def test_the_store_imports_nothing_above_it():
    assert offenders(("themisto_ext.store",), BASE) == []


def test_prompts_import_nothing_above_them():
    assert offenders(("themisto_ext.prediction.prompts",), BASE) == []


@pytest.mark.parametrize("layer,allowed", [
    # the rules compute what a cell shows from recorded steps: they need nothing else
    ("themisto_ext.rules", BASE),
    ("themisto_ext.prediction.clients", (*BASE, "themisto_ext.prediction.prompts",
                                         "themisto_ext.rules")),
    ("themisto_ext.prediction.run", (*BASE, "themisto_ext.prediction.prompts",
                                     "themisto_ext.prediction.clients", "themisto_ext.rules")),
    ("themisto_ext.prediction.scoring", (*BASE, "themisto_ext.prediction.metrics")),
    ("themisto_ext.prediction.metrics", BASE),
    ("themisto_ext.ingest", (*BASE, "themisto_ext.store")),
    ("themisto_ext.events", BASE),
    ("themisto_ext.prediction", (*BASE, "themisto_ext.store", "themisto_ext.ingest",
                                 "themisto_ext.events", "themisto_ext.rules")),
    ("themisto_ext.replay", (*BASE, "themisto_ext.ingest", "themisto_ext.store")),
    # whose trajectories a request may see: a rule over the store's records, nothing more
    ("themisto_ext.server.access", (*BASE, "themisto_ext.store")),
    ("themisto_ext.cli.migrate", (*BASE, "themisto_ext.store")),
    # the hub's service: the store, and whose data a caller may read
    ("themisto_ext.hub", (*BASE, "themisto_ext.store", "themisto_ext.server.access")),
])
def test_each_layer_imports_only_what_flows_into_it(layer, allowed):
    assert offenders((layer,), allowed) == []


def test_no_import_circles():
    graph = {m: imports(m, runtime_only=True) for m in modules()}
    circles: list[list[str]] = []
    state: dict[str, int] = {}

    def walk(module: str, path: list[str]) -> None:
        state[module] = 1
        for target in graph[module]:
            # A package's __init__ importing its own submodules is how packages are built.
            if module == target or within(target, module):
                continue
            if state.get(target) == 1:
                circles.append([*path[path.index(target):], target])
            elif target not in state:
                walk(target, [*path, target])
        state[module] = 2

    for module in sorted(graph):
        if module not in state:
            walk(module, [module])
    assert circles == []


EVENT_LOOP = ("themisto_ext.server.api", "themisto_ext.server.core",
              "themisto_ext.server.renames", "themisto_ext.prediction.live")
"""Code that runs on the server's event loop: it reaches the store only through the async
facade (``store/aio.py``), never the synchronous store behind it (``.sync``)."""


def test_event_loop_code_reaches_the_store_only_through_the_async_facade():
    found = []
    for module, path in modules().items():
        if not within(module, *EVENT_LOOP):
            continue
        tree = ast.parse(path.read_text("utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and node.attr == "sync" and not (
                    # the one hand-off to a thread: ingestion polls in a thread of its own
                    module == "themisto_ext.server.core"
                    and isinstance(node.value, ast.Name) and node.value.id == "store"):
                found.append(f"{module}:{node.lineno}")
    assert found == []


def test_no_module_imports_the_packages_init():
    """``themisto_ext/__init__.py`` loads the kernel hook's entry points: a module that
    imports it (for ``__version__``, say) closes a cycle through the whole package."""
    bad = sorted(m for m in modules() if m != "themisto_ext" and "themisto_ext" in imports(m))
    assert bad == []


def test_the_store_layers_carry_the_whole_interface():
    # The guard and the hub's remote store make every method from the interface's
    # (``base.layer``), the loop's facade runs any of them (``AsyncStore.run``) and the
    # wire format reads their arguments from the interface's signatures: a method is
    # written in the interface, the engines and the hub's per-caller check only.
    import inspect

    from themisto_ext.hub.caller import CallerStore
    from themisto_ext.store import wire
    from themisto_ext.store.base import LAZY, METHODS, WRITES, TrajectoryStore
    from themisto_ext.store.guarded import _Guard
    from themisto_ext.store.postgres import PostgresStore
    from themisto_ext.store.remote import RemoteStore
    from themisto_ext.store.sqlite import SQLiteStore

    surface = {name for name, value in vars(TrajectoryStore).items()
               if callable(value) and not name.startswith("_") and name != "close"}
    assert set(METHODS) == surface and surface >= WRITES | LAZY
    for cls in (_Guard, RemoteStore, SQLiteStore, PostgresStore, CallerStore):
        missing = {name for name in surface if not callable(getattr(cls, name, None))}
        assert missing == set(), cls
        for name in surface:  # the same parameters as the interface's, in the same order
            assert list(inspect.signature(getattr(cls, name)).parameters)[1:] == list(
                inspect.signature(getattr(TrajectoryStore, name)).parameters)[1:], (cls, name)
    assert set(wire.METHODS) == surface
    assert wire.METHODS["set_consent"] == {"user": "str", "consent": "bool", "at": "str"}


def test_no_file_of_the_package_is_over_600_lines():
    # Small files a reader can hold, generated ones included (the records' types are a
    # module per schema file); the built labextension and binary model files are not text.
    long = {}
    for path in PACKAGE.rglob("*"):
        if not path.is_file() or "labextension" in path.parts or "__pycache__" in path.parts \
                or path.suffix in {".gguf", ".pyc"}:
            continue
        lines = path.read_text("utf-8").count("\n")
        if lines > 600:
            long[str(path.relative_to(PACKAGE))] = lines
    assert long == {}
