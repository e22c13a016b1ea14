"""Which names a cell binds, which of them are modules (NumPy, pandas, pyplot), and which
names it reads that no cell can have defined (it will raise NameError).

The runtime snapshot leaves modules out, so the name a module is known by is read from
the import statements of the cells run so far: ``import numpy as np``, ``from matplotlib
import pyplot as plt``; a later cell that binds the name to something else drops it. A
cell is read as IPython runs it, so that a cell starting with ``%matplotlib inline``
imports like any other (read with ``ast`` alone, it was not Python, and the NumPy it
imported was never known as ``np``).
"""

from __future__ import annotations

import ast
import builtins
import functools
import re
from collections.abc import Iterable, Sequence
from typing import Any

from themisto_ext.contract import CaptureSettings
from themisto_ext.records import Step

MAX_VARIABLES = CaptureSettings().max_variables
"""A snapshot this long may have left variables out."""


@functools.lru_cache(maxsize=64)
def parsed(code: str) -> ast.Module | None:
    """The cell's syntax tree as IPython would run it (magics and ``!`` lines become
    calls), None when it is not Python. The tree is shared: callers only read it. Only
    the last few are kept (the modules of one new cell are read one after another): what
    callers derive from a tree is small and cached by them, a tree of every cell is not."""
    try:
        return ast.parse(code)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        pass
    try:
        return ast.parse(str(_transformer().transform_cell(code)))
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


@functools.cache
def _transformer() -> Any:
    # imported here: IPython takes ~65 ms to import, paid only when a cell has a magic
    from IPython.core.inputtransformer2 import TransformerManager

    return TransformerManager()


def bound(tree: ast.AST, skip: set[int] = frozenset()) -> set[str]:  # type: ignore[assignment]
    """Every name the code binds anywhere (so a builtin it rebinds is not trusted); not
    the ``Name`` nodes whose ``id()`` is in ``skip``."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load) \
                and id(node) not in skip:
            names.add(node.id)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.alias):
            names.add((node.asname or node.name).split(".")[0])
        elif isinstance(node, ast.ExceptHandler | ast.MatchAs | ast.MatchStar) and node.name:
            names.add(node.name)  # except E as e, case [x, *rest]
        elif isinstance(node, ast.Global | ast.Nonlocal):
            names.update(node.names)
    return names


def module_effect(statement: ast.stmt, module: str) -> tuple[set[str], set[str]]:
    """``(bound, imported)``: the names a statement binds, and those of them it binds to
    ``module`` (a dotted name: ``import matplotlib.pyplot as plt``, ``from matplotlib
    import pyplot``), also inside ``try`` or ``if``."""
    imported: set[str] = set()
    for node in ast.walk(statement):
        if isinstance(node, ast.Import):
            # ``import matplotlib.pyplot`` binds matplotlib, not pyplot
            imported |= {alias.asname or alias.name for alias in node.names
                         if alias.name == module and (alias.asname or "." not in module)}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            imported |= {alias.asname or alias.name for alias in node.names
                         if f"{node.module}.{alias.name}" == module}
    return bound(statement), imported


@functools.lru_cache(maxsize=8192)
def _cell_effect(code: str, module: str) -> tuple[frozenset[str], frozenset[str]]:
    """``(dropped, added)``: a cell turns the names ``module`` is known by into ``(names -
    dropped) | added``. Cached by the cell's text: every prediction reads the whole
    history, and parsing 2,000 cells each time cost ~45 ms on the server's loop."""
    tree = parsed(code)
    return (frozenset(), frozenset()) if tree is None else cell_effect(tree, module)


def cell_effect(tree: ast.Module, module: str) -> tuple[frozenset[str], frozenset[str]]:
    dropped: set[str] = set()
    added: set[str] = set()
    for statement in tree.body:
        names, imported = module_effect(statement, module)
        dropped |= names
        added = (added - names) | imported
    return frozenset(dropped), frozenset(added)


def module_names(history: Iterable[Step], module: str) -> set[str]:
    """The names ``module`` is known by after the cells of ``history``."""
    names: set[str] = set()
    for past in history:
        dropped, added = _cell_effect(str(past.get("code") or ""), module)
        names = (names - dropped) | added
    return names


PRINTERS = frozenset({"print", "display", "pprint"})
"""Functions whose whole purpose is to show: an assignment or import that calls one shows."""


def showing_definitions(tree: ast.Module, history: Iterable[Step]) -> frozenset[str]:
    """Names of the functions, methods and classes the cells define (``def``, ``class``;
    in ``history`` and in ``tree``) whose code may show something when called: it
    prints, displays or raises, calls another such name, or is a class built on one. A
    call of one in an assignment is not taken to be silent: ``my_result =
    print_result(20, 20)`` prints ``40``, ``d = Dog()`` prints from ``__init__``. Every
    definition of a name counts, whichever one the call meets."""
    calls: dict[str, set[str]] = {}
    showing: set[str] = set()
    cells = [_definitions(str(step.get("code") or "")) for step in history]
    for definitions in [*cells, _defined_in(tree)]:
        for name, shows, called in definitions:
            calls.setdefault(name, set()).update(called)
            if shows:
                showing.add(name)
    grown = True
    while grown:
        found = {name for name, called in calls.items()
                 if name not in showing and not called.isdisjoint(showing)}
        showing |= found
        grown = bool(found)
    return frozenset(showing)


@functools.lru_cache(maxsize=4096)
def _definitions(code: str) -> tuple[tuple[str, bool, frozenset[str]], ...]:
    if "def " not in code and "class " not in code:
        return ()
    tree = parsed(code)
    return () if tree is None else _defined_in(tree)


def _defined_in(tree: ast.Module) -> tuple[tuple[str, bool, frozenset[str]], ...]:
    """``(name, shows, names it calls or builds on)`` for each definition in ``tree``."""
    found = []
    for definition in ast.walk(tree):
        if not isinstance(definition, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            continue
        shows = False
        called = {base.id for base in getattr(definition, "bases", ())
                  if isinstance(base, ast.Name)}
        for node in ast.walk(definition):
            if isinstance(node, ast.Raise | ast.Assert):
                shows = True
            elif isinstance(node, ast.Call):
                callee = node.func.id if isinstance(node.func, ast.Name) else \
                    node.func.attr if isinstance(node.func, ast.Attribute) else None
                shows |= callee in PRINTERS
                if callee is not None:
                    called.add(callee)
        found.append((definition.name, shows, frozenset(called)))
    return tuple(found)


# IPython's own names in a kernel's namespace (``_``, ``_i3``... start with "_").
_IPYTHON = {"In", "Out", "get_ipython", "exit", "quit", "display"}
_DEFINING_CALLS = {"exec", "execfile", "globals", "locals", "vars", "setattr"}
# Code that defines names its text does not spell: star imports, %run, exec, globals()...
_HIDDEN_DEFINITIONS = re.compile(
    r"import\s+\*|%run\b|%pylab\b|%store\b|%load\b|%%|\bexec(?:file)?\s*\(|"
    r"\b(?:globals|locals|vars)\s*\(|\.push\s*\(|__builtins__|\bsetattr\s*\(")


def undefined(tree: ast.Module, history: Sequence[Step],
              snapshot: Iterable[str]) -> tuple[set[str], set[str]]:
    """``(undefined, uncertain)``: names the cell reads (outside the functions it defines)
    that do not exist: not a builtin or IPython's, not bound by the cell, not a variable of
    ``snapshot`` (all the kernel's variables but modules: pass the whole snapshot, not a
    part) and not a module any cell imported; and those only a cell that raised imported
    (the import may not have run). Both empty when the snapshot may be partial (empty, or
    as long as the capture's limit) or a cell may have defined names it does not spell
    (``import *``, ``%run``, ``exec``...)."""
    known = set(snapshot)
    if not known or len(known) >= MAX_VARIABLES or _hides(tree):
        return set(), set()
    candidates: set[str] = set()
    earlier: set[str] = set()  # bound by the statements before
    for statement in tree.body:
        candidates |= read_now(statement) - earlier
        earlier |= bound(statement)
    candidates -= known | _IPYTHON | set(dir(builtins))
    candidates = {name for name in candidates if not name.startswith("_")}
    failed: set[str] = set()  # imported by cells that raised only
    for past in history:
        if not candidates and not failed:
            break
        imported, hides = _imports(str(past.get("code") or ""))
        if hides:
            return set(), set()
        if past.get("error"):
            failed |= candidates & imported
        else:
            failed -= imported
        candidates -= imported
    return candidates, failed


def unaccounted(tree: ast.Module, history: Sequence[Step]) -> set[str]:
    """Names the cell reads that nothing accounts for where the snapshot holds no
    variable at all (``undefined`` gives up there: the state may not be captured): not
    builtins or IPython's, not bound by the cell, not imported by any cell. A cell that
    reads one may raise NameError (a first cell that failed before assigning them)."""
    read = set().union(*map(read_now, tree.body)) - bound(tree) - _IPYTHON - set(dir(builtins))
    for past in history:
        imported, hides = _imports(str(past.get("code") or ""))
        if hides:
            return set()
        read -= imported
    return {name for name in read if not name.startswith("_")}


def read_now(statement: ast.stmt) -> set[str]:
    """The names a statement reads before binding them itself (``x += 1`` reads x; a loop
    reads its variable after binding it), outside the bodies of functions it defines."""
    now = _run_now(statement)
    augmented = {id(node.target) for node in now if isinstance(node, ast.AugAssign)}
    read = {node.id for node in now if isinstance(node, ast.Name)
            and (isinstance(node.ctx, ast.Load) or id(node) in augmented)}
    return read - bound(statement, skip=augmented)


def _run_now(node: ast.AST) -> list[ast.AST]:
    """The nodes that run when the code does: not the bodies of the functions and
    lambdas it defines (their defaults and decorators, yes)."""
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
        arguments = node.args
        now: list[ast.AST] = [*arguments.defaults, *(d for d in arguments.kw_defaults if d)]
        if not isinstance(node, ast.Lambda):
            now.extend(node.decorator_list)
        return [inner for part in now for inner in _run_now(part)]
    return [node, *(inner for child in ast.iter_child_nodes(node) for inner in _run_now(child))]


def _hides(tree: ast.Module) -> bool:
    """Whether the cell itself may define names it does not spell."""
    return any(
        (isinstance(node, ast.ImportFrom) and any(alias.name == "*" for alias in node.names))
        or (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
            and node.func.id in _DEFINING_CALLS) for node in ast.walk(tree))


def defines_unspelt(history: Iterable[Step]) -> bool:
    """Whether a cell run so far may have bound names its text does not spell (``from
    numpy import *`` rebinds ``sum``, ``min``, ``round``...)."""
    return any(_imports(str(past.get("code") or ""))[1] for past in history)


@functools.lru_cache(maxsize=8192)
def _imports(code: str) -> tuple[frozenset[str], bool]:
    """The names a cell's imports bind, and whether it may define names it does not spell."""
    tree = parsed(code)
    imported = frozenset() if tree is None else frozenset(
        (alias.asname or alias.name).split(".")[0] for node in ast.walk(tree)
        if isinstance(node, ast.Import | ast.ImportFrom) for alias in node.names)
    return imported, bool(_HIDDEN_DEFINITIONS.search(code))
