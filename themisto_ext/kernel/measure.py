"""Size, shape and fingerprint of one runtime value, in bounded time, running no user code.

Everything here reads the interpreter's own structures through ``safe.py``: a list
subclass is walked as a list, an object through its ``__dict__`` and slots, a size is the
C-defined base's ``__sizeof__``. So a hostile ``__len__``, ``__iter__``, ``__sizeof__`` or
metaclass property cannot stall, change or break the snapshot. Known types get exact
O(1) or sampled paths (``sys.getsizeof(DataFrame)`` scans every Python string; walking a
million-element list object by object takes ~0.3 s), everything else a walk bounded by
``WALK_LIMIT`` nodes. Reprs, which are the user's own code, are in ``reprs.py``.
"""

from __future__ import annotations

import gc
import sys
import types
from itertools import islice
from typing import Any

from themisto_ext.kernel.safe import (
    class_attribute,
    container_base,
    instance_dict,
    instance_fields,
    is_atom,
    length,
    module_attribute,
    shallow_size,
    type_ids,
)

SAMPLE = 256          # elements sampled to estimate a large container's size
SAMPLE_TOTAL = 2_048  # Python objects sampled in all of a pandas object's columns
WALK_LIMIT = 2_000    # nodes walked exactly before the figure becomes an estimate
_HASHED = 1 << 20     # longest str/bytes whose hash is part of its fingerprint

_CODE_LIKE = type_ids(types.FunctionType, types.BuiltinFunctionType, types.MethodType, type,
                      types.ModuleType, types.CodeType)
_STRINGS = type_ids(str, bytes)
_NUMBERS = type_ids(int, float, bool, complex, type(None))
_SIZED = type_ids(dict, list, tuple, set, frozenset, bytearray)
_PANDAS = ("DataFrame", "Series", "Index", "RangeIndex", "MultiIndex", "DatetimeIndex",
           "CategoricalIndex")


def ndarray_type() -> type | None:
    found = module_attribute("numpy", "ndarray")
    return found if isinstance(found, type) else None


def is_numpy_array(obj: Any) -> bool:
    return type(obj) is ndarray_type()


_pandas_classes: tuple[Any, dict[int, str]] = (None, {})


def pandas_kind(obj: Any) -> str | None:
    """``DataFrame``, ``Series`` or an index kind for pandas' own classes (not subclasses)."""
    global _pandas_classes
    module = sys.modules.get("pandas")
    if module is None:
        return None
    if _pandas_classes[0] is not module or len(_pandas_classes[1]) < len(_PANDAS):
        # (looked up again while pandas is still being imported)
        found = {name: module_attribute("pandas", name) for name in _PANDAS}
        _pandas_classes = (module, {id(cls): name for name, cls in found.items()
                                    if isinstance(cls, type)})
    return _pandas_classes[1].get(id(type(obj)))


def is_pandas(obj: Any) -> bool:
    return pandas_kind(obj) is not None


# ---------------------------------------------------------------- fingerprint


def fingerprint(obj: Any) -> tuple[Any, ...]:
    """Cheap identity-and-shape signature: when it changes, the value changed.

    In-place mutation that keeps identity and shape is caught by the caller, which also
    re-measures every variable the cell's code may have changed. The type is held by its
    id: comparing two fingerprints compared the types, which ran a metaclass's ``__eq__``
    (a variable rebound from ``A()`` to ``B()``: +2.0 s).
    """
    kind = type(obj)
    if id(kind) in _STRINGS:
        n = len(obj)
        if n <= _HASHED:  # str/bytes cache their hash
            return (id(kind), id(obj), n, hash(obj))
        # Hashing a 100 MB string the first time costs ~50 ms: its ends and middle tell an
        # object reborn at the same address from the one cached as well.
        return (id(kind), id(obj), n, obj[:64], obj[n // 2:n // 2 + 64], obj[n - 64:])
    if id(kind) in _NUMBERS:
        return (id(kind), obj)
    if id(kind) in _SIZED:
        return (id(kind), id(obj), len(obj))
    if is_numpy_array(obj):
        n = obj.size
        sample = b""
        if n and obj.dtype.kind != "O":
            sample = obj.take([0, n // 3, (2 * n) // 3, n - 1]).tobytes()
        return (id(kind), id(obj), obj.shape, obj.dtype.str,
                obj.__array_interface__["data"][0], sample)
    if is_pandas(obj):
        return (id(kind), id(obj), obj.shape)
    return (id(kind), id(obj))


# ---------------------------------------------------------------- aliases

HELD_LIMIT = 4096  # referents read per value; a longer container's are not followed
_NEVER_CHANGE = _STRINGS | _NUMBERS | _CODE_LIKE | type_ids(range)


def may_change(obj: Any) -> bool:
    """Whether ``obj`` can change in place and so change what a holder of it shows (a
    class or function can too, but no repr of an instance shows them)."""
    return id(type(obj)) not in _NEVER_CHANGE


def holds(obj: Any) -> frozenset[int]:
    """Ids of the changeable objects ``obj`` refers to directly: a list's items, an
    instance's attributes, the dict behind ``d.keys()``, the array a NumPy view was cut
    from. When one of them changes in place so may ``obj``'s repr, though its own
    fingerprint did not move (``c = [a]; a.append(2)``). Read from the interpreter's
    structures (``gc.get_referents``, ``ndarray.base``): no user code runs."""
    kind = type(obj)
    if id(kind) in _NEVER_CHANGE or (id(kind) in _SIZED and len(obj) > HELD_LIMIT):
        return frozenset()
    if is_numpy_array(obj):
        base = obj.base
        return frozenset() if base is None else frozenset((id(base),))
    found = gc.get_referents(obj)
    if len(found) > HELD_LIMIT:
        return frozenset()
    return frozenset(id(item) for item in found if may_change(item))


# ---------------------------------------------------------------- size


def size_of(obj: Any) -> tuple[int | None, bool]:
    """Bytes held by ``obj`` and whether the figure is exact (vs. estimated)."""
    kind = type(obj)
    if is_atom(kind):
        return sys.getsizeof(obj), True
    if is_numpy_array(obj):
        if obj.dtype.kind == "O":
            return _sampled_total(obj.ravel(), sys.getsizeof(obj))
        return sys.getsizeof(obj), True
    if is_pandas(obj):
        return _pandas_size(obj)
    if id(kind) in _CODE_LIKE:
        return shallow_size(obj), False
    return _walk_size(obj)


def _own_size(obj: Any) -> int:
    """The object itself, its instance dict and a C buffer it reports (``nbytes``)."""
    size = shallow_size(obj)
    namespace = instance_dict(obj)
    if namespace is not None:
        size += sys.getsizeof(namespace)
    nbytes = class_attribute(type(obj), "nbytes")
    # by identity: "in" compares with ==, which a metaclass can define
    if type(nbytes) is types.GetSetDescriptorType or type(nbytes) is types.MemberDescriptorType:
        try:
            value = nbytes.__get__(obj, type(obj))
        except Exception:
            value = None
        if type(value) is int:
            size += value
    return size


def _walk_size(root: Any) -> tuple[int | None, bool]:
    """Everything reachable through containers and instance fields, shared objects once;
    large containers are sampled, and past ``WALK_LIMIT`` nodes the figure is a floor."""
    seen: set[int] = {id(root)}
    stack: list[Any] = [root]
    total, walked, exact = 0, 0, True
    while stack:
        node = stack.pop()
        walked += 1
        if walked > WALK_LIMIT:
            return total, False
        kind = type(node)
        if is_atom(kind):
            total += sys.getsizeof(node)
            continue
        if is_numpy_array(node) or is_pandas(node) or id(kind) in _CODE_LIKE:
            size, node_exact = size_of(node)
            total += size or 0
            exact = exact and node_exact
            continue
        base = container_base(kind)
        if base is not None and (length(node) or 0) > WALK_LIMIT:
            size, _ = _sampled_total(node, shallow_size(node))
            total += size
            exact = False
            continue
        total += _own_size(node)
        kids: Any = (base.__iter__(node) if base is not dict else
                     (x for kv in dict.items(node) for x in kv)) if base is not None else \
            (value for _, value in instance_fields(node))
        for child in kids:
            if id(child) not in seen:
                seen.add(id(child))
                stack.append(child)
    return total, exact


def _element_size(obj: Any) -> int:
    if is_atom(type(obj)):
        return sys.getsizeof(obj)
    size, _ = size_of(obj)
    return size or 0


def _sampled_total(items: Any, base_size: int) -> tuple[int, bool]:
    """Estimate from up to SAMPLE elements: evenly spaced where indexable, else the first."""
    n = length(items) if not is_numpy_array(items) else len(items)
    if not n:
        return base_size, True
    base = container_base(type(items))
    if base is dict:
        sample: list[Any] = [x for kv in islice(dict.items(items), SAMPLE) for x in kv]
        per = 2
    elif base in (list, tuple) or is_numpy_array(items):
        get = items.__getitem__ if base is None else base.__getitem__.__get__(items)
        sample = [get(i) for i in range(0, n, max(1, n // SAMPLE))]
        per = 1
    else:
        iterate = base.__iter__(items) if base is not None else iter(())
        sample = list(islice(iterate, SAMPLE))
        per = 1
    if not sample:
        return base_size, False
    each = sum(_element_size(x) for x in sample) / len(sample) * per
    return base_size + int(each * n), len(sample) >= n * per


def _pandas_size(obj: Any) -> tuple[int, bool]:
    """Column buffers plus sampled Python objects.

    Not ``memory_usage()``: for Python-backed string columns even ``deep=False`` visits
    every string (~9 ms per million rows).
    """
    kind = pandas_kind(obj)
    if kind == "DataFrame":
        arrays = [*_frame_arrays(obj), obj.index, obj.columns]
    elif kind == "Series":
        arrays = [obj.array, obj.index]
    else:
        arrays = [obj]
    total, exact = sys.getsizeof(object()) * 4, True  # the wrapper objects themselves
    objects: list[Any] = []
    for array in arrays:
        if type(array).__name__ == "RangeIndex":
            total += int(array.memory_usage())
        elif getattr(array, "dtype", None) is None or array.dtype.kind != "O":
            total += int(array.nbytes)
        else:
            objects.append(array)
    # Python objects: SAMPLE_TOTAL values sampled over all object arrays together (3,000
    # object columns sampled 256 values each took 0.5 s), arrays themselves sampled evenly
    # when there are more of them than that.
    picked = objects[::max(1, len(objects) // SAMPLE_TOTAL)]
    per_array = max(1, SAMPLE_TOTAL // max(1, len(picked)))
    measured = counted = 0.0
    for array in picked:
        n = int(getattr(array, "size", None) or len(array))  # a 2-D block: all its cells
        if not n:
            continue
        step = max(1, n // per_array)
        get = array.flat.__getitem__ if is_numpy_array(array) else array.__getitem__
        sample = [get(i) for i in range(0, n, step)]
        measured += sum(shallow_size(v) for v in sample) / len(sample) * n
        counted += n
        exact = exact and step == 1
    cells = sum(int(getattr(a, "size", None) or len(a)) for a in objects)
    total += 8 * cells  # the arrays of pointers
    if counted:
        total += int(measured / counted * cells)
    exact = exact and len(picked) == len(objects)
    return total, exact


def _frame_arrays(frame: Any) -> list[Any]:
    """A DataFrame's data as its blocks (one 2-D array per dtype, whatever the number of
    columns): column by column, 10^6 columns of zeros took 10.7 s. pandas' block manager
    is internal, so a frame without one is read column by column."""
    blocks = getattr(getattr(frame, "_mgr", None), "blocks", None)
    if isinstance(blocks, tuple):
        arrays = [getattr(block, "values", None) for block in blocks]
        if all(array is not None for array in arrays):
            return arrays
    return [column.array for _, column in frame.items()]


# ---------------------------------------------------------------- shape / length


def shape_and_length(obj: Any) -> tuple[list[int] | None, int | None]:
    if is_numpy_array(obj) or is_pandas(obj):
        return [int(d) for d in obj.shape], int(obj.shape[0]) if obj.shape else None
    return None, length(obj)
