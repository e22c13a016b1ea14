"""The display options the notebook set, so that the rules show values as its kernel does.

``np.set_printoptions(precision=4, suppress=True)`` (every chapter of *Python for Data
Analysis* starts so) changes how every array the kernel shows reads, and ``pd.options.display
.max_rows = 20`` how a long frame does. The options the cells run so far set are read from
their code, in order, where they are literals or names the snapshot holds as plain values,
and the rules show values under them (``applied``); the snapshot's own reprs were written
under the same NumPy options, so a float the kernel rounded to 4 decimals is taken as
rounded (``arrays.rounded`` reads the precision in force). Options set any other way
(``**settings``, a computed value, ``pd.set_eng_float_format``) or by the cell being
predicted cannot be read: ``learnt`` answers None and the caller knows nothing of values.
pandas' options are the process's, so values are shown under a notebook's pandas options
only in a process of the rules' own (``apart.py``), never in the server's.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Iterator, Mapping
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from typing import Any

from themisto_ext.rules import apart, arrays, names

_MENTIONS = re.compile(r"printoptions|options\.display|_option\s*\(|set_eng_float_format|"
                       r"set_string_function")
_UNREADABLE_CALLS = {"set_eng_float_format", "set_string_function", "printoptions"}
_OPTION_CALLS = _UNREADABLE_CALLS | {"set_printoptions", "set_option", "reset_option",
                                     "option_context"}
# pandas' options that are not about display (a bare name is matched against display's)
_NOT_DISPLAY = ("mode.", "compute.", "io.", "plotting.", "styler.", "future.")


class _Unreadable(Exception):
    pass


@dataclass(frozen=True)
class Options:
    numpy: Mapping[str, Any] = field(default_factory=dict)
    """``np.set_printoptions`` keywords set so far."""
    pandas: Mapping[str, Any] = field(default_factory=dict)
    """``display.*`` options set so far."""


def learnt(codes: Iterable[str], cell: ast.Module,
           snapshot: Mapping[str, Any]) -> Options | None:
    """The options in force when ``cell`` runs after the cells of ``codes``; None when
    they cannot be read."""
    numpy: dict[str, Any] = {}
    pandas: dict[str, Any] = {}
    try:
        for code in codes:
            if _MENTIONS.search(code):
                tree = names.parsed(code)
                if tree is None:
                    return None
                for statement in tree.body:
                    _read(statement, numpy, pandas, snapshot)
    except _Unreadable:
        return None
    return None if _touches(cell) else Options(numpy, pandas)


def _touches(cell: ast.Module) -> bool:
    """Whether the cell itself changes options (the rules would not apply them midway)."""
    return any(
        (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
         and node.func.attr in _OPTION_CALLS)
        or (isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store)
            and _display_attribute(node) is not None)
        for node in ast.walk(cell))


def _read(statement: ast.stmt, numpy: dict[str, Any], pandas: dict[str, Any],
          snapshot: Mapping[str, Any]) -> None:
    for node in ast.walk(statement):
        if isinstance(node, ast.Assign | ast.AugAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                key = _display_attribute(target)
                if key is not None:
                    if isinstance(node, ast.AugAssign):
                        raise _Unreadable
                    pandas[key] = _literal(node.value, snapshot)
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        name = node.func.attr
        if name in _UNREADABLE_CALLS and not _in_with(statement, node):
            raise _Unreadable
        if name == "set_printoptions":
            if node.args or any(k.arg is None for k in node.keywords):
                raise _Unreadable
            numpy.update({k.arg: _literal(k.value, snapshot) for k in node.keywords
                          if k.arg is not None})
        elif name == "set_option":
            if len(node.args) % 2 or node.keywords:
                raise _Unreadable
            for pattern, setting in zip(node.args[::2], node.args[1::2], strict=True):
                option = _option(_literal(pattern, snapshot))
                if option is not None:
                    pandas[option] = _literal(setting, snapshot)
        elif name == "reset_option":
            which = _literal(node.args[0], snapshot) if node.args else None
            if which in ("all", "^display", "display"):
                pandas.clear()
            elif (option := _option(which)) is not None:
                pandas.pop(option, None)


def _display_attribute(target: ast.expr) -> str | None:
    """``pd.options.display.max_rows`` -> ``display.max_rows``."""
    parts: list[str] = []
    while isinstance(target, ast.Attribute):
        parts.append(target.attr)
        target = target.value
    parts.reverse()
    if len(parts) >= 3 and parts[-3:-1] == ["options", "display"]:
        return f"display.{parts[-1]}"
    return None


def _option(key: Any) -> str | None:
    if not isinstance(key, str) or not key:
        raise _Unreadable
    if key.startswith(_NOT_DISPLAY):
        return None
    return key if key.startswith("display.") else f"display.{key}"


def _literal(node: ast.expr, snapshot: Mapping[str, Any]) -> Any:
    if isinstance(node, ast.Name):
        entry = snapshot.get(node.id)
        if not isinstance(entry, Mapping) or entry.get("type") not in (
                "int", "float", "bool", "str", "NoneType"):
            raise _Unreadable
        node_text = str(entry.get("repr"))
    else:
        node_text = None
    try:
        return ast.literal_eval(node if node_text is None else node_text)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        raise _Unreadable from None


def _in_with(statement: ast.stmt, call: ast.Call) -> bool:
    """``with np.printoptions(...)``: a change undone when the block ends."""
    return any(isinstance(node, ast.With) and any(item.context_expr is call
                                                  for item in node.items)
               for node in ast.walk(statement))


def process_wide(options: Options) -> bool:
    """Whether showing values under ``options`` changes the process's state: pandas'
    options are the process's, NumPy's too before 2.0 (since, a context's); so they are
    applied only in the rules' own process (``apart.py``)."""
    return bool(options.pandas) or (bool(options.numpy) and _numpy_global())


@contextmanager
def applied(options: Options) -> Iterator[None]:
    """Render under ``options`` (raises ValueError for options NumPy or pandas refuse).
    Options that are the process's are applied only in the rules' own process
    (``apart``); elsewhere asking for them is a mistake of the caller's."""
    if process_wide(options) and not apart.in_own_process():
        raise RuntimeError("process-wide display options outside the rules' own process")
    with ExitStack() as stack:
        try:
            if options.numpy:
                stack.enter_context(arrays.numpy().printoptions(**options.numpy))
            if options.pandas:
                import pandas as pd  # only a notebook that set its options pays for it

                pairs = [part for item in options.pandas.items() for part in item]
                stack.enter_context(pd.option_context(*pairs))
        except Exception as exc:  # a value the kernel refused too (that cell raised)
            raise ValueError(f"display options not applied: {exc}") from None
        yield


def _numpy_global() -> bool:
    """Whether NumPy's print options are the process's (before 2.0) or a context's."""
    try:
        return int(arrays.numpy().__version__.split(".")[0]) < 2
    except ImportError:  # a server without NumPy: applying its options fails, said there
        return False
