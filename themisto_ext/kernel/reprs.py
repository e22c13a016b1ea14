"""The repr of a runtime value: bounded, and computed where user code cannot hurt.

A repr is the user's own text, so some code must run; which code decides where:

* **Here, directly** — built-in atoms and containers (walked as their base type, at most
  ``ITEMS`` per container, ``LEVELS`` deep, and no further than the text can show),
  NumPy arrays of plain dtypes, pandas objects whose shown cells are such values, classes
  and objects with the default ``object.__repr__``, C-defined scalars (dates, decimals,
  NumPy scalars, functions...). None of these reprs runs user code.
* **Here, under an alarm** (``library``) — objects whose classes, ``__repr__`` and
  everything reachable from them (``LIBRARY_NODES`` at most) come from installed packages
  or the standard library: a fitted estimator, a ``Path``, a ``MagicMock``.
* **In a forked copy of the kernel** (``sandbox.py``) — everything else: any repr the user
  wrote, or one that could reach an object of a class the user wrote. It cannot change
  the kernel's data, print into its output or hold it past the budget.
"""

from __future__ import annotations

import collections
import functools
import itertools
import operator
import types
import weakref
from collections.abc import Callable, Iterator
from typing import Any

from themisto_ext.contract import PANDAS_DISPLAY
from themisto_ext.kernel.measure import is_numpy_array, pandas_kind
from themisto_ext.kernel.private import real_repr
from themisto_ext.kernel.safe import (
    class_attribute,
    container_base,
    installed,
    instance_fields,
    is_atom,
    is_builtin_type,
    trusted_file,
    type_ids,
)
from themisto_ext.trajectory.text import clip, clip_ends

ITEMS = 20           # elements shown per container (then "...")
LEVELS = 4           # nesting shown (then "[...]"), as reprlib does
LIBRARY_NODES = 200  # objects a library object may reach to be rendered in the kernel

Other = Callable[[Any, int], str]
"""Renders a value this module does not render itself, in at most that many characters."""

# C-defined types whose repr shows other objects (which may be the user's).
_HOLDERS = type_ids(
    collections.deque, collections.defaultdict, collections.OrderedDict, functools.partial,
    types.SimpleNamespace, slice, types.MethodType, types.MappingProxyType, staticmethod,
    classmethod, types.GenericAlias, types.UnionType, weakref.ref, weakref.ProxyType,
    itertools.count, itertools.repeat, operator.attrgetter, operator.itemgetter,
    operator.methodcaller,
)
_OBJECT_REPR = vars(object)["__repr__"]
_TYPE_REPR = vars(type)["__repr__"]


def _plain_scalar(tp: type) -> bool:
    """A C-defined type whose repr shows only its own state."""
    return is_builtin_type(tp) and container_base(tp) is None and id(tp) not in _HOLDERS \
        and not issubclass(tp, BaseException) and not is_atom(tp)


def render(obj: Any, limit: int, other: Other) -> str:
    """``repr(obj)`` in at most ``limit`` characters; what is not ours goes to ``other``."""
    kind = type(obj)
    if kind is str:
        return clip(real_repr(clip(obj, limit)), limit)
    if kind is bytes or kind is bytearray:
        # latin-1 maps bytes to characters one to one: cut as text, back to the same bytes
        # (only the kept ends are decoded: a 500 MB bytearray was copied whole, +477 MB)
        text = clip_ends(obj, limit, _latin1)
        return clip(real_repr(kind(text.encode("latin-1"))), limit)
    return clip(_render(obj, LEVELS, limit, other), limit)


def _latin1(data: bytes | bytearray) -> str:
    return data.decode("latin-1")


def _render(obj: Any, level: int, room: int, other: Other) -> str:
    kind = type(obj)
    if kind is str or kind is bytes or kind is bytearray:
        return real_repr(obj[: room + 1])
    if kind is int and obj.bit_length() > 4 * max(room, 20):
        return f"<int with {obj.bit_length()} bits>"
    if is_atom(kind):
        return real_repr(obj)
    base = container_base(kind)
    if base is not None and class_attribute(kind, "__repr__") is vars(base)["__repr__"]:
        return _container(obj, base, level, room, other)
    if is_numpy_array(obj):  # hasobject: also a structured dtype with an object field
        return _numpy_repr(obj) if not obj.dtype.hasobject else other(obj, room)
    if pandas_kind(obj) is not None:
        return _pandas_repr(obj) if _pandas_cells_plain(obj) else other(obj, room)
    if issubclass(kind, type) and class_attribute(kind, "__repr__") is _TYPE_REPR:
        return str(_TYPE_REPR(obj))
    if class_attribute(kind, "__repr__") is _OBJECT_REPR:
        return str(_OBJECT_REPR(obj))
    if _plain_scalar(kind):
        return real_repr(obj)
    return other(obj, room)


_BRACKETS: dict[Any, tuple[str, str, str]] = {
    list: ("[", "]", "[]"), tuple: ("(", ")", "()"), dict: ("{", "}", "{}"),
    set: ("{", "}", "set()"), frozenset: ("frozenset({", "})", "frozenset()"),
}


def _container(obj: Any, base: Any, level: int, room: int, other: Other) -> str:
    left, right, empty = _BRACKETS[base]
    if not base.__len__(obj):
        return empty
    if level <= 0:
        return left + "..." + right
    parts: list[str] = []
    used = len(left) + len(right)
    items = dict.items(obj) if base is dict else base.__iter__(obj)
    for i, item in enumerate(items):
        if i >= ITEMS or used > room:
            parts.append("...")
            break
        if base is dict:
            key, value = item
            text = (_render(key, level - 1, room - used, other) + ": "
                    + _render(value, level - 1, room - used, other))
        else:
            text = _render(item, level - 1, room - used, other)
        parts.append(text)
        used += len(text) + 2
    body = ", ".join(parts)
    if base is tuple and len(parts) == 1 and parts[0] != "...":
        body += ","
    return left + body + right


def _numpy_repr(obj: Any) -> str:
    import numpy as np

    with np.printoptions(threshold=100, edgeitems=3, linewidth=100):
        return real_repr(obj)


def _pandas_repr(obj: Any) -> str:
    import pandas as pd

    with pd.option_context(*PANDAS_DISPLAY):
        return real_repr(obj)


def _pandas_cells_plain(obj: Any) -> bool:
    """Whether the cells pandas shows (first and last rows of each object column, and the
    index) are values whose repr runs no user code."""
    return all(_is_plain(value) for values in pandas_object_columns(obj, 6) for value in values) \
        and all(_is_plain(label) for label in pandas_labels(obj, 6))


def pandas_labels(obj: Any, rows: int) -> list[Any]:
    """What else pandas' repr shows: the shown column labels, index and column names, a
    Series' name, the categories of shown categorical data. A label with a slow, counting
    ``__repr__`` was rendered in the kernel (+2.0 s, the user's counter 0 -> 1), so were
    categories (+3.9 s, 8 calls)."""
    kind = pandas_kind(obj)
    found: list[Any] = []
    shown: list[Any] = []
    if kind == "DataFrame":
        picked = _ends(int(obj.shape[1]), rows)
        labels = obj.columns
        found += [labels[j] for j in picked]
        found += [*_index_names(labels), *_index_names(obj.index)]
        shown = [obj.iloc[:, j] for j, dtype in shown_dtypes(obj, picked)
                 if getattr(dtype, "categories", None) is not None]
    elif kind == "Series":
        found += [obj.name, *_index_names(obj.index)]
        shown = [obj]
    elif kind is not None:
        found += _index_names(obj)
        shown = [obj]
    for values in shown:
        categories = getattr(getattr(values, "dtype", None), "categories", None)
        if categories is not None and pandas_kind(categories) is not None:
            found += [categories[i] for i in _ends(len(categories), rows)]
            if pandas_kind(values) == "Series":  # the categories of the cells shown
                found += [values.iloc[i] for i in _ends(len(values), rows)]
    return found


WIDE = 1_000
"""Columns from which a frame's dtypes are read one shown column at a time."""


def shown_dtypes(frame: Any, picked: list[int]) -> list[tuple[int, Any]]:
    """The dtypes of the ``picked`` columns. ``frame.dtypes`` (a Series of every column's
    dtype, ~0.3 s for 10^6 columns) for ordinary frames, where it is the cheapest (one
    ``iloc`` per column cost 0.2 ms a cell); a column at a time for wide ones."""
    if int(frame.shape[1]) <= WIDE:
        dtypes = frame.dtypes.tolist()
        return [(j, dtypes[j]) for j in picked]
    return [(j, frame.iloc[:, j].dtype) for j in picked]


def _ends(n: int, rows: int) -> list[int]:
    """The first and last ``rows`` positions of ``n`` (all of them when that is fewer)."""
    return list(range(n)) if n <= 2 * rows else [*range(rows), *range(n - rows, n)]


def _index_names(index: Any) -> list[Any]:
    names = getattr(index, "names", None)
    return list(names) if names is not None else [getattr(index, "name", None)]


def _is_plain(value: Any) -> bool:
    foreign: list[Any] = []

    def collect(other: Any, room: int) -> str:
        foreign.append(other)
        return ""

    _render(value, 2, 100, collect)
    return not foreign


def pandas_object_columns(obj: Any, rows: int) -> list[list[Any]]:
    """The first and last ``rows`` values of the object columns pandas shows (the first
    and last six) and of an object index: never more (a column may hold a million
    strings, a frame may have thousands of columns)."""
    import numpy as np

    kind = pandas_kind(obj)
    arrays: list[Any] = [obj.index] if kind in ("DataFrame", "Series") else [obj]
    if kind == "DataFrame":
        shown = shown_dtypes(obj, _ends(int(obj.shape[1]), 6))
        arrays += [obj.iloc[:, j] for j, dtype in shown
                   if isinstance(dtype, np.dtype) and dtype.kind == "O"]
    elif kind == "Series":
        arrays.append(obj)
    found = []
    for array in arrays:
        dtype = array.dtype  # pandas' own objects: their attributes are library code
        if isinstance(dtype, np.dtype) and dtype.kind == "O":
            n = len(array)
            get = array.iloc.__getitem__ if pandas_kind(array) == "Series" else array.__getitem__
            picked = range(n) if n <= 2 * rows else [*range(rows), *range(n - rows, n)]
            found.append([get(i) for i in picked])
    return found


def runs_user_code(obj: Any, limit: int) -> tuple[str | None, bool]:
    """``(repr, None)`` when this module renders ``obj`` without foreign code, else
    ``(None, library)``: whether the foreign code is all installed library code."""
    foreign: list[Any] = []

    def collect(value: Any, room: int) -> str:
        foreign.append(value)
        return ""

    text = render(obj, limit, collect)
    if not foreign:
        return text, False
    return None, all(library_only(value) for value in foreign)


def library_only(root: Any) -> bool:
    """Whether ``root`` and all it reaches (``LIBRARY_NODES`` at most) are instances of
    installed classes with installed ``__repr__`` code."""
    seen: set[int] = {id(root)}
    stack: list[Any] = [root]
    while stack:
        if len(seen) > LIBRARY_NODES:
            return False
        node = stack.pop()
        kind = type(node)
        if is_numpy_array(node):  # before the C-defined scalars: ndarray is one of them
            if node.dtype.hasobject and node.size:
                return False
            continue
        if is_atom(kind) or _plain_scalar(kind):
            continue
        if pandas_kind(node) is not None:
            if not _pandas_cells_plain(node):
                return False
            continue
        if not installed(kind) or not _installed_repr(kind):
            return False
        children = _reachable(node, kind)
        if children is None:
            return False
        for child in itertools.islice(children, LIBRARY_NODES):
            if id(child) not in seen:
                seen.add(id(child))
                stack.append(child)
    return True


def _reachable(node: Any, kind: type) -> Iterator[Any] | None:
    """What ``node``'s repr may show, or None when that is not known here."""
    base = container_base(kind)
    if base is dict:
        return (x for kv in dict.items(node) for x in kv)
    if base is not None:
        items: Iterator[Any] = base.__iter__(node)
        return items
    if issubclass(kind, collections.deque):
        return iter(collections.deque.__iter__(node))
    if issubclass(kind, BaseException):
        args: tuple[Any, ...] = _EXCEPTION_ARGS(node)
        return iter(args)
    if id(kind) in _HOLDERS:
        return None
    return (value for _, value in instance_fields(node))


_EXCEPTION_ARGS = vars(BaseException)["args"].__get__


def _installed_repr(kind: type) -> bool:
    found = class_attribute(kind, "__repr__")
    if type(found) is types.FunctionType:
        return trusted_file(found.__code__.co_filename)
    return found is None or is_builtin_type(type(found))


def plain(obj: Any, room: int) -> str:
    """Foreign values rendered by their own ``repr`` (library code, or in the sandbox)."""
    return clip(real_repr(obj), max(room, 20))


