"""The runtime snapshot after a cell: every user variable's type, size and repr, plus a hash.

Only values whose fingerprint changed, or that the cell's code may have changed in
place (see ``mutations.py``), are measured again; the rest come from a cache. The whole
snapshot runs under a per-cell budget: values not reached get a placeholder and are
measured at a later cell, and a value that timed out keeps its placeholder until it
changes or a cell may have changed it.

Measuring runs no user code in the kernel: sizes, shapes and fingerprints read the
interpreter's structures (``measure.py``), reprs that are user code run in a forked
child that is killed on time (``reprs.py``, ``sandbox.py``). Before anything is shown,
every measured value is searched for secrets under secret-looking names
(``secret_values.py``); a newly known secret masks the cached reprs again.
"""

from __future__ import annotations

import hashlib
import re
import sys
import types
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from themisto_ext.contract import CaptureSettings
from themisto_ext.kernel import reprs, sandbox, values
from themisto_ext.kernel.bounds import NAME_LENGTH
from themisto_ext.kernel.deadline import DeadlineExceeded, alarms_usable, deadline
from themisto_ext.kernel.measure import fingerprint, holds, may_change, shape_and_length, size_of
from themisto_ext.kernel.private import clock
from themisto_ext.kernel.safe import type_name
from themisto_ext.kernel.secret_values import secret_strings
from themisto_ext.redaction import NAME_CACHE, REDACTED, Redactor

_IPYTHON_NAMES = frozenset({"In", "Out", "exit", "quit", "get_ipython"})
_IPYTHON_PATTERN = re.compile(r"^(_|__|___|_i{1,3}|_i?\d+|_oh|_ih|_dh|__\w+__)$")

PENDING = "<pending: snapshot budget used up; measured at a later cell>"
_SIZED_AT_ONCE = frozenset(map(id, (str, bytes, bytearray)))
_FORK_ALLOWANCE = 0.05  # seconds a child gets beyond one value's budget to start up


_bookkeeping: dict[str, bool] = {}  # name -> IPython's own (_i12, _12...), remembered


def _ipython_name(name: str) -> bool:
    found = _bookkeeping.get(name)
    if found is None:
        found = name in _IPYTHON_NAMES or bool(_IPYTHON_PATTERN.match(name))
        if len(_bookkeeping) > NAME_CACHE:  # (a smaller cache thrashed, as in redaction)
            _bookkeeping.clear()
        _bookkeeping[name] = found
    return found


_ABSENT = object()


def _is_user_variable(name: Any, value: Any, hidden: dict[str, Any]) -> bool:
    """Not IPython's bookkeeping, not a module, not one of the names IPython hides."""
    if type(name) is not str or _ipython_name(name):
        return False
    if name in hidden and hidden[name] is value:
        return False
    return not issubclass(type(value), types.ModuleType)


def user_variables(user_ns: dict[str, Any], hidden: dict[str, Any], limit: int | None = None,
                   also: Iterable[str] = ()
                   ) -> tuple[list[tuple[str, Any]], list[tuple[str, Any]]]:
    """The user's own variables, the first ``limit`` in the order they were first bound;
    and those named in ``also`` that come after them. The namespace is read only as far
    as ``limit``: 200,000 globals cost a cell no more than ``limit`` do (reading them all
    took 0.14 s a cell)."""
    first: list[tuple[str, Any]] = []
    try:
        items: Iterable[tuple[Any, Any]] = dict.items(user_ns)
        first = _first(items, hidden, limit)
    except RuntimeError:  # a thread of the user's bound a name meanwhile: read a copy
        first = _first(list(dict.items(user_ns)), hidden, limit)
    if limit is None or len(first) < limit:
        return first, []
    taken = {name for name, _ in first}
    beyond = []
    for name in also:
        # dict's own lookup, as dict.items above: a namespace subclass's is user code
        value = dict.get(user_ns, name, _ABSENT)
        if name not in taken and value is not _ABSENT \
                and _is_user_variable(name, value, hidden):
            beyond.append((name, value))
    return first, beyond


def _first(items: Iterable[tuple[Any, Any]], hidden: dict[str, Any],
           limit: int | None) -> list[tuple[str, Any]]:
    found = []
    for name, value in items:
        if _is_user_variable(name, value, hidden):
            found.append((name, value))
            if limit is not None and len(found) >= limit:
                break
    return found


@dataclass
class _Entry:
    fingerprint: tuple[Any, ...]
    info: dict[str, Any]
    raw: str            # the repr before masking (kernel memory only)
    generation: int     # the redactor's generation the repr was masked with
    digest: bytes
    ident: int = 0      # id() of the value measured
    holds: frozenset[int] = frozenset()  # what it refers to (measure.holds)
    data: dict[str, Any] | None = None   # values.data_of, before masking (kernel memory only)


class Snapshotter:
    def __init__(self, settings: CaptureSettings, redactor: Redactor) -> None:
        self._settings = settings
        self._redactor = redactor
        self._cache: dict[str, _Entry] = {}
        self.forks = 0
        """Children forked so far (for tests and benchmarks)."""
        self._stopped = False

    def stop(self) -> None:
        """The next snapshot measures nothing new (the user interrupted the last one):
        values not measured yet are pending, measured at a later cell."""
        self._stopped = True

    def take(
        self, variables: Iterable[tuple[str, Any]], mutated: set[str],
        beyond: Iterable[tuple[str, Any]] = ()
    ) -> tuple[dict[str, dict[str, Any]], str]:
        """Return ``(runtime_variables, hash_index)`` for the given variables (the first
        ``max_variables`` of them); ``beyond``, variables after those the cell may have
        bound, are only searched for secrets."""
        every = list(variables)
        items = every[: self._settings.max_variables]
        self._learn_beyond([*every[self._settings.max_variables:], *beyond], mutated)
        live = {name for name, _ in items}
        for stale in [n for n in self._cache if n not in live]:
            del self._cache[stale]
        end = clock() + self._settings.cell_budget
        todo: list[tuple[str, Any, tuple[Any, ...]]] = []
        for name, value in items:
            try:
                fp = fingerprint(value)
            except Exception:
                fp = (type(value), id(value))
            cached = self._cache.get(name)
            if cached is None or cached.fingerprint != fp or name in mutated:
                todo.append((name, value, fp))
        self._add_holders(todo, dict(items))
        try:
            self._measure_all(todo, end)
        finally:
            self._stopped = False
        for name, value, _ in todo:
            entry = self._cache.get(name)
            if entry is not None:
                entry.ident = id(value)
                try:
                    entry.holds = holds(value)
                except Exception:
                    entry.holds = frozenset()
        result: dict[str, dict[str, Any]] = {}
        digests: list[bytes] = []
        for name, value in items:  # masked last: a secret found anywhere masks every repr
            entry = self._masked(self._cache[name]) if name in self._cache else None
            info = entry.info if entry is not None else _pending_info(value)
            result[name] = info
            digests.append(name.encode("utf-8", "replace") + b"\0"
                           + (entry.digest if entry else _digest(info)))
        digests.sort()
        return result, hashlib.blake2b(b"\1".join(digests), digest_size=16).hexdigest()

    def _add_holders(self, todo: list[tuple[str, Any, tuple[Any, ...]]],
                     values: dict[str, Any]) -> None:
        """Measure again the cached names whose value is, or directly holds, a value being
        measured again: ``b = a``, ``c = [a, 5]`` or ``kv = d.keys()`` showed the old ``a``
        or ``d`` forever after ``a[0] = 9`` or ``d['k'] = 1`` (their own fingerprints do
        not move). Followed through named holders (``e = {'c': c}``); not through unnamed
        ones (``e = {'x': [a]}``) or containers longer than ``measure.HELD_LIMIT``."""
        queued = {name for name, _, _ in todo}
        changed = {id(value) for _, value, _ in todo if may_change(value)}
        while changed:
            found = [name for name, entry in self._cache.items()
                     if name not in queued
                     and (entry.ident in changed or not entry.holds.isdisjoint(changed))]
            changed = set()
            for name in found:
                queued.add(name)
                value = values[name]
                todo.append((name, value, self._cache[name].fingerprint))
                if may_change(value):
                    changed.add(id(value))

    def _learn_beyond(self, rest: list[tuple[str, Any]], mutated: set[str]) -> None:
        """Variables past ``max_variables`` are not in the snapshot, but a secret-named one
        still makes its value a known secret (a password after 6,000 other names was
        printed in clear). Only those the cell may have bound are looked at: checking
        200,000 names every cell cost 0.1 s."""
        if not rest or not mutated:
            return
        is_secret = self._redactor.name_is_secret
        for name, value in rest:
            if name in mutated and is_secret(name):
                try:
                    self._redactor.learn(secret_strings(name, value, is_secret))
                except Exception:
                    pass

    # ------------------------------------------------------------ measuring

    def _measure_all(self, todo: list[tuple[str, Any, tuple[Any, ...]]], end: float) -> None:
        limit, budget = self._settings.repr_length, self._settings.value_budget
        use_alarm = alarms_usable()
        forked: list[tuple[str, Any, tuple[Any, ...], dict[str, Any]]] = []
        is_secret = self._redactor.name_is_secret
        for name, value, fp in todo:
            self._cache.pop(name, None)
            if self._stopped or clock() >= end:
                continue  # pending: measured at a later cell
            try:
                self._redactor.learn(secret_strings(name, value, is_secret))
            except Exception:
                pass  # a value the walk cannot read holds no secret it can find
            info = self._structure(value)
            if self._redactor.name_is_secret(name):
                self._store(name, fp, info, REDACTED)
                continue
            try:
                text, library = reprs.runs_user_code(value, limit)
            except Exception as exc:
                text, library = f"<repr raised {type_name(type(exc))}>", False
            if text is None and library and use_alarm:
                seconds = min(budget, end - clock())
                text = self._library_repr(value, info["type"], seconds)
            if text is None:
                forked.append((name, value, fp, info))
            else:
                data = None
                if values.may_hold_data(value) and not text.startswith("<"):
                    data = self._data(value, min(budget, end - clock()), use_alarm)
                self._store(name, fp, info, text, data)
        if forked and self._stopped:
            pass  # interrupted: pending
        elif forked and sandbox.available():
            self._in_child(forked, end)
        elif forked:  # no fork here: the old way, an alarm (which a stubborn repr defeats)
            for name, value, fp, info in forked:
                seconds = min(budget, end - clock())
                text = self._library_repr(value, info["type"], seconds) if use_alarm else \
                    f"<repr of {info['type']} not measured>"
                self._store(name, fp, info, text)

    def _structure(self, value: Any) -> dict[str, Any]:
        info: dict[str, Any] = {"type": type_name(type(value))[:NAME_LENGTH]}
        try:
            info["size"], info["size_exact"] = size_of(value)
        except Exception:
            info["size"], info["size_exact"] = None, False
        try:
            shape, length = shape_and_length(value)
        except Exception:
            shape, length = None, None
        if shape is not None:
            info["shape"] = shape
        if length is not None:
            info["length"] = length
        return info

    @staticmethod
    def _data(value: Any, seconds: float, use_alarm: bool) -> dict[str, Any] | None:
        """The value as data (``values.py``), in what is left of its budget: pandas' and
        NumPy's own code on at most ``DATA_ELEMENTS`` plain values, so also where no alarm
        can be armed (a thread, a timer of the user's)."""
        try:
            with deadline(max(seconds, 0.001), enabled=use_alarm):
                return values.data_of(value)
        except (DeadlineExceeded, Exception):
            return None

    def _library_repr(self, value: Any, kind: str, seconds: float) -> str:
        try:
            with deadline(max(seconds, 0.001)):
                return reprs.render(value, self._settings.repr_length, reprs.plain)
        except DeadlineExceeded:
            return f"<repr of {kind} timed out>"
        except Exception as exc:
            return f"<repr raised {type_name(type(exc))}>"

    def _in_child(self, forked: list[tuple[str, Any, tuple[Any, ...], dict[str, Any]]],
                  end: float) -> None:
        budget, limit = self._settings.value_budget, self._settings.repr_length
        seconds = max(end - clock(), budget + _FORK_ALLOWANCE)
        self.forks += 1
        answers = sandbox.run([value for _, value, _, _ in forked],
                              lambda value: reprs.render(value, limit, reprs.plain),
                              budget, min(seconds, len(forked) * budget + _FORK_ALLOWANCE))
        for (name, _, fp, info), answer in zip(forked, answers, strict=True):
            if answer is None:
                continue  # not reached: pending
            if answer in (sandbox.TIMED_OUT, sandbox.CRASHED):
                answer = f"<repr of {info['type']} {answer}>"
            elif answer.startswith("raised "):
                answer = f"<repr {answer}>"
            self._store(name, fp, info, answer)

    def _store(self, name: str, fp: tuple[Any, ...], info: dict[str, Any], raw: str,
               data: dict[str, Any] | None = None) -> None:
        self._cache[name] = _Entry(fp, info, raw, -1, b"", data=data)

    def _masked(self, entry: _Entry) -> _Entry:
        if entry.generation != self._redactor.generation:
            raw = entry.raw
            entry.info["repr"] = raw if raw == REDACTED else self._redactor.mask(raw)
            entry.info.pop("data", None)
            if entry.data is not None and raw != REDACTED and \
                    not self._redactor.touches(_texts(entry.data)):
                entry.info["data"] = entry.data  # (a value holding a secret is kept as text)
            entry.generation = self._redactor.generation
            entry.digest = _digest(entry.info)
        return entry


def _pending_info(value: Any) -> dict[str, Any]:
    """A value not measured yet; its size all the same when that costs nothing (a 100 MB
    string's size was null in the cell the budget ran out)."""
    info: dict[str, Any] = {"type": type_name(type(value))[:NAME_LENGTH], "size": None,
                            "size_exact": False, "repr": PENDING}
    if id(type(value)) in _SIZED_AT_ONCE:  # by id: "in (str, ...)" would run a metaclass __eq__
        info.update(size=sys.getsizeof(value), size_exact=True, length=len(value))
    return info


_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")


def _texts(data: Any) -> list[str]:
    """Every string in a ``ValueData`` record: labels, names, text values."""
    found: list[str] = []
    pending = [data]
    while pending:
        item = pending.pop()
        if isinstance(item, str):
            found.append(item)
        elif isinstance(item, dict):
            pending.extend(item.values())
        elif isinstance(item, list):
            pending.extend(item)
    return found


def _digest(info: dict[str, Any]) -> bytes:
    # Memory addresses in default reprs differ between equal states of two processes.
    text = _ADDRESS.sub("", info["repr"])
    key = f"{info['type']}\0{info.get('size')}\0{info.get('shape')}\0{text}"
    return hashlib.blake2b(key.encode("utf-8", "replace"), digest_size=16).digest()
