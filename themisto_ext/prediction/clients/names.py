"""Which names a cell binds, and which of them are modules (NumPy, pandas, pyplot).

The runtime snapshot leaves modules out, so the name a module is known by is read from
the import statements of the cells run so far: ``import numpy as np``, ``from matplotlib
import pyplot as plt``; a later cell that binds the name to something else drops it. A
cell is read as IPython runs it, so that a cell starting with ``%matplotlib inline``
imports like any other (read with ``ast`` alone, it was not Python, and the NumPy it
imported was never known as ``np``).
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterable
from typing import Any

from themisto_ext.records import Step


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


def bound(tree: ast.AST) -> set[str]:
    """Every name the code binds anywhere (so a builtin it rebinds is not trusted)."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            names.add(node.id)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.alias):
            names.add((node.asname or node.name).split(".")[0])
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
