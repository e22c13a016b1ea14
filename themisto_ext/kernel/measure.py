"""Per-type size, repr, shape and fingerprint of one runtime value, in bounded time.

Generic tools are slow or unsafe on the objects data scientists hold: ``pympler.asizeof``
walks every reachable object (~1 µs each), ``sys.getsizeof(DataFrame)`` scans every
Python string, plain ``repr`` of a 50 MB bytes object takes ~0.4 s. So known types get
exact O(1) or sampled paths, and only small or unknown objects meet the generic tools
(under the caller's deadline).
"""

from __future__ import annotations

import reprlib
import sys
import types
from itertools import islice
from typing import Any

# Imported up front, not on first use: a first use happens under the per-value alarm,
# and an import cut short by it would leave a half-initialised module behind.
from pympler import asizeof

from themisto_ext.trajectory.text import clip

SAMPLE = 256          # elements sampled to estimate a large container's size
WALK_LIMIT = 2_000    # nodes walked exactly before switching to sampling

_ATOMS = (int, float, complex, bool, type(None), str, bytes, bytearray, range)
_CONTAINERS = (list, tuple, set, frozenset, dict)
_CODE_LIKE = (
    types.FunctionType, types.BuiltinFunctionType, types.MethodType, type,
    types.ModuleType, types.CodeType,
)


def _module_of(obj: Any) -> str:
    return getattr(type(obj), "__module__", "") or ""


def is_numpy_array(obj: Any) -> bool:
    return _module_of(obj) == "numpy" and type(obj).__name__ == "ndarray"


def is_pandas(obj: Any) -> bool:
    module = _module_of(obj)
    return (module == "pandas" or module.startswith("pandas.")) and type(obj).__name__ in (
        "DataFrame", "Series", "Index", "RangeIndex", "MultiIndex", "DatetimeIndex",
        "CategoricalIndex",
    )


def needs_guard(obj: Any) -> bool:
    """Whether measuring ``obj`` can run user code (a ``__repr__``, ``__sizeof__``...).

    Values that cannot are measured without the alarm: interrupting library code
    (a lazy import inside pandas, say) could leave it half-done for the user.
    """
    if type(obj) in (int, float, complex, bool, type(None), str, bytes, bytearray, range):
        return False
    if is_numpy_array(obj):
        return bool(obj.dtype.kind == "O")
    if is_pandas(obj):
        if type(obj).__name__ == "DataFrame":
            dtypes = [*obj.dtypes.tolist(), obj.index.dtype]
        elif type(obj).__name__ == "Series":
            dtypes = [obj.dtype, obj.index.dtype]
        else:
            dtypes = [obj.dtype]
        return any(str(d) == "object" for d in dtypes)  # they hold arbitrary user objects
    return True


# ---------------------------------------------------------------- fingerprint


def fingerprint(obj: Any) -> tuple[Any, ...]:
    """Cheap identity-and-shape signature: when it changes, the value changed.

    In-place mutation that keeps identity and shape is caught by the caller, which also
    re-measures every variable the cell's code names.
    """
    kind = type(obj)
    if kind in (str, bytes):
        return (kind, id(obj), len(obj), hash(obj))  # str/bytes cache their hash
    if kind in (int, float, bool, complex, type(None)):
        return (kind, obj)
    if kind in _CONTAINERS or kind is bytearray:
        return (kind, id(obj), len(obj))
    if is_numpy_array(obj):
        n = obj.size
        sample = b""
        if n and obj.dtype.kind != "O":
            sample = obj.take([0, n // 3, (2 * n) // 3, n - 1]).tobytes()
        return (kind, id(obj), obj.shape, obj.dtype.str, obj.__array_interface__["data"][0], sample)
    if is_pandas(obj):
        return (kind, id(obj), obj.shape)
    return (kind, id(obj))


# ---------------------------------------------------------------- size


def size_of(obj: Any) -> tuple[int | None, bool]:
    """Bytes held by ``obj`` and whether the figure is exact (vs. estimated)."""
    if is_numpy_array(obj):
        if obj.dtype.kind == "O":
            return _sampled_total(obj.ravel(), sys.getsizeof(obj))
        return sys.getsizeof(obj), True
    if is_pandas(obj):
        return _pandas_size(obj)
    if isinstance(obj, _ATOMS):
        return sys.getsizeof(obj), True
    if isinstance(obj, _CONTAINERS):
        return _container_size(obj)
    if isinstance(obj, _CODE_LIKE):
        return sys.getsizeof(obj), False
    buffer_size = _buffer_size(obj)
    if buffer_size is not None:
        return buffer_size, True
    return _generic_size(obj)


def _buffer_size(obj: Any) -> int | None:
    nbytes = getattr(type(obj), "nbytes", None)
    if isinstance(nbytes, property | types.GetSetDescriptorType | types.MemberDescriptorType):
        value = obj.nbytes
        if isinstance(value, int):
            return value
    return None


def _generic_size(obj: Any) -> tuple[int | None, bool]:
    try:
        return int(asizeof.asizeof(obj, limit=8)), False
    except Exception:
        try:
            return sys.getsizeof(obj), False
        except Exception:
            return None, False


def _element_size(obj: Any) -> int:
    if isinstance(obj, _ATOMS):
        return sys.getsizeof(obj)
    size, _ = size_of(obj)
    return size or 0


def _container_size(obj: Any) -> tuple[int | None, bool]:
    """Exact walk of small containers (cycles and sharing counted once), sampling for big ones."""
    base = sys.getsizeof(obj)
    if len(obj) > WALK_LIMIT:
        return _sampled_total(obj, base)
    seen: set[int] = {id(obj)}
    stack: list[Any] = [obj]
    total = 0
    walked = 0
    while stack:
        node = stack.pop()
        total += sys.getsizeof(node) if node is not obj else base
        walked += 1
        if walked > WALK_LIMIT:
            return total, False
        children: Any = ()
        if isinstance(node, dict):
            children = [*node.keys(), *node.values()]
        elif isinstance(node, list | tuple | set | frozenset):
            children = node
        for child in children:
            if id(child) in seen:
                continue
            seen.add(id(child))
            if isinstance(child, _ATOMS + _CONTAINERS):
                stack.append(child)
            else:
                total += _element_size(child)
    return total, True


def _sampled_total(items: Any, base: int) -> tuple[int, bool]:
    """Estimate from up to SAMPLE elements: evenly spaced where indexable, else the first ones."""
    n = len(items)
    if n == 0:
        return base, True
    if isinstance(items, dict):
        sample: list[Any] = [k for kv in islice(items.items(), SAMPLE) for k in kv]
        per = 2
    elif isinstance(items, list | tuple) or is_numpy_array(items):
        sample = [items[i] for i in range(0, n, max(1, n // SAMPLE))]
        per = 1
    else:
        sample = list(islice(items, SAMPLE))
        per = 1
    each = sum(_element_size(x) for x in sample) / len(sample) * per
    return base + int(each * n), len(sample) * 1 >= n * per


def _pandas_size(obj: Any) -> tuple[int, bool]:
    """Column buffers plus sampled Python objects.

    Not ``memory_usage()``: for Python-backed string columns even ``deep=False`` visits
    every string (~9 ms per million rows).
    """
    kind = type(obj).__name__
    if kind == "DataFrame":
        arrays = [column.array for _, column in obj.items()] + [obj.index]
    elif kind == "Series":
        arrays = [obj.array, obj.index]
    else:
        arrays = [obj]
    total, exact = sys.getsizeof(object()) * 4, True  # the wrapper objects themselves
    for array in arrays:
        if type(array).__name__ == "RangeIndex":
            total += int(array.memory_usage())
            continue
        if getattr(array, "dtype", None) is None or array.dtype.kind != "O":
            total += int(array.nbytes)
            continue
        n = len(array)
        total += 8 * n  # the array of pointers
        if n:
            step = max(1, n // SAMPLE)
            sample = [array[i] for i in range(0, n, step)]
            total += int(sum(sys.getsizeof(v) for v in sample) / len(sample) * n)
            exact = exact and step == 1
    return total, exact


# ---------------------------------------------------------------- shape / length


def shape_and_length(obj: Any) -> tuple[list[int] | None, int | None]:
    if is_numpy_array(obj) or is_pandas(obj):
        return [int(d) for d in obj.shape], int(obj.shape[0]) if obj.shape else None
    if isinstance(obj, (*_CONTAINERS, str, bytes, bytearray, range)):
        return None, len(obj)
    return None, None


# ---------------------------------------------------------------- repr


class _BoundedRepr(reprlib.Repr):
    """reprlib, but in insertion order: its dict/set repr sorts every key (O(n log n))."""

    def repr_dict(self, x: dict[Any, Any], level: int) -> str:
        if not x:
            return "{}"
        if level <= 0:
            return "{...}"
        parts = []
        for i, (k, v) in enumerate(x.items()):
            if i >= self.maxdict:
                parts.append("...")
                break
            parts.append(f"{self.repr1(k, level - 1)}: {self.repr1(v, level - 1)}")
        return "{" + ", ".join(parts) + "}"

    def repr_set(self, x: set[Any], level: int) -> str:
        return self._iterable(x, level, "{", "}", "set()")

    def repr_frozenset(self, x: frozenset[Any], level: int) -> str:
        return self._iterable(x, level, "frozenset({", "})", "frozenset()")

    def _iterable(self, x: Any, level: int, left: str, right: str, empty: str) -> str:
        if not x:
            return empty
        if level <= 0:
            return left + "..." + right
        parts = []
        for i, item in enumerate(x):
            if i >= self.maxset:
                parts.append("...")
                break
            parts.append(self.repr1(item, level - 1))
        return left + ", ".join(parts) + right

    def repr_instance(self, x: Any, level: int) -> str:
        return bounded_repr(x, self.maxother)


def _make_reprlib(limit: int) -> _BoundedRepr:
    r = _BoundedRepr()
    r.maxlevel = 4
    r.maxdict = r.maxlist = r.maxtuple = r.maxset = r.maxfrozenset = r.maxdeque = 20
    r.maxarray = 20
    r.maxstring = r.maxother = r.maxlong = max(limit, 20)
    return r


def _numpy_repr(obj: Any) -> str:
    import numpy as np

    with np.printoptions(threshold=100, edgeitems=3, linewidth=100):
        return repr(obj)


def _pandas_repr(obj: Any) -> str:
    import pandas as pd

    with pd.option_context(
        "display.max_rows", 10, "display.min_rows", 6, "display.max_columns", 12,
        "display.width", 120, "display.max_colwidth", 40,
    ):
        return repr(obj)


def bounded_repr(obj: Any, limit: int) -> str:
    """A repr no longer than ``limit`` characters, never building a huge string first."""
    kind = type(obj)
    if kind is str:
        return clip(repr(clip(obj, limit)), limit)
    if kind in (bytes, bytearray):
        # latin-1 maps bytes to characters one to one: cut as text, back to the same bytes
        return clip(repr(kind(clip(obj.decode("latin-1"), limit).encode("latin-1"))), limit)
    if kind is int and obj.bit_length() > 4 * limit:
        return f"<int with {obj.bit_length()} bits>"
    if is_numpy_array(obj):
        return clip(_numpy_repr(obj), limit)
    if is_pandas(obj):
        return clip(_pandas_repr(obj), limit)
    if kind in _CONTAINERS:
        return clip(_make_reprlib(limit).repr(obj), limit)
    return clip(repr(obj), limit)


def type_name(obj: Any) -> str:
    return type(obj).__name__

