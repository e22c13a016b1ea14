"""Looking at user objects without running user code.

``type(x).__name__``, ``len(x)``, ``iter(x)``, ``sys.getsizeof(x)``, ``isinstance(x, T)``
and ``x.__dict__`` can all run code the user wrote: a metaclass property, a list subclass
whose ``__iter__`` pops, a ``__sizeof__`` that never returns, a ``__class__`` property.
The accessors here read the interpreter's own structures instead (the C-level slots of
``type``, the base type's methods called unbound, the instance dict's and slots'
descriptors), so they cannot be overridden, cannot block and cannot change anything.
"""

from __future__ import annotations

import sys
import sysconfig
import types
import weakref
from collections.abc import Iterator
from typing import Any

_TYPE = vars(type)
_MRO = _TYPE["__mro__"].__get__
_NAME = _TYPE["__name__"].__get__
_MODULE = _TYPE["__module__"].__get__
_FLAGS = _TYPE["__flags__"].__get__
_CLASS_DICT = _TYPE["__dict__"].__get__
_HEAPTYPE = 1 << 9  # Py_TPFLAGS_HEAPTYPE: a class made by a class statement or type()



def type_ids(*kinds: type) -> frozenset[int]:
    """A set of types to test membership by identity: ``tp in {list}`` hashes ``tp`` and
    may compare it with ``==``, which a metaclass can override; ``id(tp) in ids`` cannot."""
    return frozenset(id(kind) for kind in kinds)


ATOMS = type_ids(int, float, complex, bool, type(None), str, bytes, bytearray, range)
CONTAINERS = (dict, list, tuple, set, frozenset)
_CONTAINER_IDS = type_ids(*CONTAINERS)


def is_atom(tp: type) -> bool:
    return id(tp) in ATOMS


def mro(tp: type) -> tuple[type, ...]:
    result: tuple[type, ...] = _MRO(tp)
    return result


def type_name(tp: type) -> str:
    name = _NAME(tp)
    return name if type(name) is str else "?"


def type_module(tp: type) -> str:
    module = _MODULE(tp)
    return module if type(module) is str else ""


def is_builtin_type(tp: type) -> bool:
    """Defined in C (not a class statement): its slots are fixed and user code-free."""
    return not _FLAGS(tp) & _HEAPTYPE


def class_attribute(tp: type, name: str) -> Any:
    """The raw attribute as stored in the first class of the MRO that has it (no
    descriptor is called), or None."""
    for cls in mro(tp):
        found = _CLASS_DICT(cls).get(name)
        if found is not None:
            return found
    return None


def builtin_base(tp: type) -> Any:
    """The first C-defined class in the MRO: ``list`` for ``class Queue(list)``."""
    for cls in mro(tp):
        if is_builtin_type(cls):
            return cls
    return object


def container_base(tp: type) -> Any:
    """``dict``/``list``/``tuple``/``set``/``frozenset`` when ``tp`` is one or derives
    from one (its storage is then that type's, whatever the subclass overrides)."""
    for cls in mro(tp):
        if id(cls) in _CONTAINER_IDS:
            return cls
    return None


def length(obj: Any) -> int | None:
    """``len`` as the base container type counts, never a subclass's ``__len__``."""
    base = container_base(type(obj))
    if base is not None:
        result: int = base.__len__(obj)
        return result
    if is_atom(type(obj)):
        return len(obj)
    return None


def children(obj: Any, limit: int | None = None) -> Iterator[Any]:
    """Elements of a built-in container (keys and values of a dict) through the base
    type's own iteration: a subclass's ``__iter__``/``items`` never runs."""
    base = container_base(type(obj))
    count = 0
    if base is dict:
        for key, value in dict.items(obj):
            if limit is not None and count >= limit:
                return
            count += 2
            yield key
            yield value
    elif base is not None:
        for item in base.__iter__(obj):
            if limit is not None and count >= limit:
                return
            count += 1
            yield item


def instance_dict(obj: Any) -> dict[str, Any] | None:
    """An instance's ``__dict__`` through the C descriptor (never a property named
    ``__dict__``, ``__getattr__`` or ``__getattribute__``), or None."""
    tp = type(obj)
    if is_builtin_type(tp):
        return None
    found = class_attribute(tp, "__dict__")
    if type(found) is not types.GetSetDescriptorType:
        return None
    try:
        namespace = found.__get__(obj, tp)
    except Exception:
        return None
    return namespace if type(namespace) is dict else None


def instance_fields(obj: Any) -> Iterator[tuple[str, Any]]:
    """An instance's attributes as stored: its ``__dict__`` and its slots."""
    namespace = instance_dict(obj)
    if namespace is not None:
        for key, value in dict.items(namespace):
            if type(key) is str:
                yield key, value
    tp = type(obj)
    if is_builtin_type(tp):
        return
    for cls in mro(tp):
        if is_builtin_type(cls):
            continue
        for key, value in _CLASS_DICT(cls).items():
            if type(value) is types.MemberDescriptorType and type(key) is str:
                try:
                    yield key, value.__get__(obj, tp)
                except AttributeError:
                    pass  # an empty slot


def module_attribute(module: str, name: str) -> Any:
    """``module.name`` if that module is imported (never imports it), else None."""
    found = sys.modules.get(module)
    if type(found) is not types.ModuleType:
        return None
    return vars(found).get(name)


def shallow_size(obj: Any) -> int:
    """``sys.getsizeof`` as the C-defined base computes it (a subclass's ``__sizeof__``
    never runs)."""
    tp = type(obj)
    if is_builtin_type(tp):
        return sys.getsizeof(obj)
    size: int = builtin_base(tp).__sizeof__(obj)
    return size + (16 if _FLAGS(tp) & (1 << 14) else 0)  # Py_TPFLAGS_HAVE_GC: its header


# ---------------------------------------------------------------- where code comes from

_TRUSTED_ROOTS = tuple({p for p in (sysconfig.get_paths().get("stdlib"),
                                    sysconfig.get_paths().get("platstdlib"),
                                    sysconfig.get_paths().get("purelib"),
                                    sysconfig.get_paths().get("platlib"),
                                    sys.prefix, sys.base_prefix, sys.exec_prefix) if p})
_installed: dict[int, tuple[weakref.ref[type], bool]] = {}


def installed(tp: type) -> bool:
    """Whether every class of ``tp``'s MRO (and its metaclass) is C-defined or comes from an
    installed package or the standard library, not from the user's notebook or files."""
    key = id(tp)
    cached = _installed.get(key)
    if cached is not None and cached[0]() is tp:
        return cached[1]
    result = all(_module_installed(cls) for cls in (*mro(tp), *mro(type(tp))))
    if len(_installed) > 10_000:
        _installed.clear()
    try:
        _installed[key] = (weakref.ref(tp), result)
    except TypeError:
        pass
    return result


def _module_installed(cls: type) -> bool:
    if is_builtin_type(cls):
        return True
    module = sys.modules.get(type_module(cls))
    if type(module) is not types.ModuleType:
        return False
    path = vars(module).get("__file__")
    return type(path) is str and trusted_file(path)


def trusted_file(path: str) -> bool:
    """Whether code from ``path`` is the standard library's or an installed package's."""
    return path.startswith(_TRUSTED_ROOTS)
