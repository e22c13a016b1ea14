"""The runtime snapshot after a cell: every user variable's type, size and repr, plus a hash.

Only values whose fingerprint changed, or that the cell's code may have changed in
place (see ``mutations.py``), are measured again; the rest come from a cache. The whole
snapshot runs under a per-cell budget: values not reached get a placeholder and are
measured at a later cell, and a value that timed out keeps its placeholder until it
changes or a cell may have changed it.
"""

from __future__ import annotations

import hashlib
import re
import time
import types
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from themisto_ext.contract import CaptureSettings
from themisto_ext.kernel.deadline import DeadlineExceeded, alarms_usable, deadline
from themisto_ext.kernel.measure import (
    bounded_repr,
    fingerprint,
    needs_guard,
    shape_and_length,
    size_of,
    type_name,
)
from themisto_ext.kernel.redaction import REDACTED, Redactor

_IPYTHON_NAMES = frozenset({"In", "Out", "exit", "quit", "get_ipython"})
_IPYTHON_PATTERN = re.compile(r"^(_|__|___|_i{1,3}|_i?\d+|_oh|_ih|_dh|__\w+__)$")

PENDING = "<pending: snapshot budget used up; measured at a later cell>"


def user_variables(user_ns: dict[str, Any], hidden: dict[str, Any]) -> list[tuple[str, Any]]:
    """The user's own variables: not IPython's bookkeeping, not modules."""
    found = []
    for name, value in list(user_ns.items()):
        if name in _IPYTHON_NAMES or _IPYTHON_PATTERN.match(name):
            continue
        if name in hidden and hidden[name] is value:
            continue
        if isinstance(value, types.ModuleType):
            continue
        found.append((name, value))
    return found


@dataclass
class _Entry:
    fingerprint: tuple[Any, ...]
    info: dict[str, Any]
    digest: bytes


class Snapshotter:
    def __init__(self, settings: CaptureSettings, redactor: Redactor) -> None:
        self._settings = settings
        self._redactor = redactor
        self._cache: dict[str, _Entry] = {}

    def take(
        self, variables: Iterable[tuple[str, Any]], mutated: set[str]
    ) -> tuple[dict[str, dict[str, Any]], str]:
        """Return ``(runtime_variables, hash_index)`` for the given variables."""
        items = list(variables)[: self._settings.max_variables]
        if self._redactor.set_literals(self._secret_literals(items)):
            self._cache.clear()  # reprs measured before may contain a now-known secret
        live = {name for name, _ in items}
        for stale in [n for n in self._cache if n not in live]:
            del self._cache[stale]

        end = time.perf_counter() + self._settings.cell_budget
        use_alarm = alarms_usable()
        result: dict[str, dict[str, Any]] = {}
        digests: list[bytes] = []
        for name, value in items:
            entry = self._current(name, value, mutated, end, use_alarm)
            result[name] = entry.info
            digests.append(name.encode("utf-8", "replace") + b"\0" + entry.digest)
        digests.sort()
        return result, hashlib.blake2b(b"\1".join(digests), digest_size=16).hexdigest()

    def _current(
        self, name: str, value: Any, mutated: set[str], end: float, use_alarm: bool
    ) -> _Entry:
        try:
            fp = fingerprint(value)
        except Exception:
            fp = (type(value), id(value))
        cached = self._cache.get(name)
        if cached is not None and cached.fingerprint == fp and name not in mutated:
            return cached
        remaining = end - time.perf_counter()
        if remaining <= 0:
            info = {"type": type_name(value), "size": None, "size_exact": False, "repr": PENDING}
            return _Entry(fp, info, _digest(info))  # not cached: retried
        guard = use_alarm and needs_guard(value)
        entry = self._measure(name, value, fp, min(self._settings.value_budget, remaining), guard)
        self._cache[name] = entry
        return entry

    def _measure(
        self, name: str, value: Any, fp: tuple[Any, ...], seconds: float, use_alarm: bool
    ) -> _Entry:
        start = time.perf_counter()

        def left() -> float:
            return max(0.001, seconds - (time.perf_counter() - start))

        info: dict[str, Any] = {"type": type_name(value)}
        try:
            with deadline(left(), use_alarm):
                size, exact = size_of(value)
        except DeadlineExceeded:
            size, exact = None, False
        except Exception:
            size, exact = None, False
        info["size"], info["size_exact"] = size, exact
        try:
            shape, length = shape_and_length(value)
        except Exception:
            shape, length = None, None
        if shape is not None:
            info["shape"] = shape
        if length is not None:
            info["length"] = length
        if self._redactor.name_is_secret(name):
            info["repr"] = REDACTED
        else:
            try:
                with deadline(left(), use_alarm):
                    text = bounded_repr(value, self._settings.repr_length)
                info["repr"] = self._redactor.mask(text)
            except DeadlineExceeded:
                info["repr"] = f"<repr of {info['type']} timed out>"
            except Exception as exc:
                info["repr"] = f"<repr raised {type(exc).__name__}>"
        return _Entry(fp, info, _digest(info))

    def _secret_literals(self, items: list[tuple[str, Any]]) -> list[str]:
        found = []
        for name, value in items:
            if isinstance(value, str | bytes) and self._redactor.name_is_secret(name):
                text = value.decode("utf-8", "replace") if isinstance(value, bytes) else value
                if len(text) <= 4096:
                    found.append(text)
        return found


_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")


def _digest(info: dict[str, Any]) -> bytes:
    # Memory addresses in default reprs differ between equal states of two processes.
    text = _ADDRESS.sub("", info["repr"])
    key = f"{info['type']}\0{info.get('size')}\0{info.get('shape')}\0{text}"
    return hashlib.blake2b(key.encode("utf-8", "replace"), digest_size=16).digest()
