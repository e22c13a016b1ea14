"""The store's calls as JSON: what a server sends the hub's Themisto service
(``store/remote.py``) and what the service answers (``hub/service.py``).

One codec for both ends. A call is ``{"args": {name: value}}`` for one of ``METHODS``;
dataclass values travel as objects tagged with their class (``"$": "NewStep"``). Decoding
is strict: an unknown method, tag, argument or field, or an argument of the wrong type, is
a ``FormatError`` (400 at the service), never a store call with a value it cannot take.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
from collections.abc import Callable
from typing import Any

from themisto_ext import json_codec
from themisto_ext.errors import FormatError
from themisto_ext.store.base import METHODS as STORE_METHODS
from themisto_ext.store.base import (
    Applied,
    NewStep,
    NewTrajectory,
    NotebookMoved,
    RecordingSwitched,
    Trajectory,
    TrajectoryEnded,
    TrajectoryFilter,
    TrajectoryStore,
)
from themisto_ext.store.roster import ClassFilter

_TAGGED: dict[str, type] = {cls.__name__: cls for cls in (
    NewTrajectory, NewStep, TrajectoryEnded, RecordingSwitched, NotebookMoved,
    TrajectoryFilter, ClassFilter, Trajectory, Applied)}

_TUPLES = {("TrajectoryFilter", "user"), ("ClassFilter", "users")}
"""Fields that are tuples in Python (lists in JSON)."""

_STR, _INT, _BOOL, _OPT_STR, _OPT_INT = ("str", "int", "bool", "str?", "int?")

_KINDS: dict[str, Any] = {
    "str": _STR, "int": _INT, "bool": _BOOL, "str | None": _OPT_STR, "int | None": _OPT_INT,
    "list[Write]": "writes", "tuple[str, int] | None": "cursor", "Prediction": "prediction",
    "tuple[str, ...] | None": "users", "list[dict[str, str]]": "list",
    "list[tuple[int, str]]": "list", "TrajectoryFilter | None": TrajectoryFilter,
    "ClassFilter": ClassFilter, "Trajectory": Trajectory,
}
"""Each annotation of the interface's parameters (``from __future__``: a string) -> the
kind ``_argument`` checks."""


def _kinds(method: str) -> dict[str, Any]:
    parameters = list(inspect.signature(getattr(TrajectoryStore, method)).parameters.values())
    unknown = [p.annotation for p in parameters[1:] if p.annotation not in _KINDS]
    if unknown:  # a new method with a new kind of argument: say how the wire checks it
        raise TypeError(f"wire.py: no check for {method}'s {', '.join(map(str, unknown))}")
    return {p.name: _KINDS[p.annotation] for p in parameters[1:]}


METHODS: dict[str, dict[str, Any]] = {method: _kinds(method) for method in STORE_METHODS}
"""Every store method a server may call, with its arguments' kinds, read from the
interface's signatures (``close`` is the caller's own)."""

_WRITES = (NewTrajectory, NewStep, TrajectoryEnded, RecordingSwitched, NotebookMoved)


def dumps(data: Any) -> bytes:
    """JSON bytes of encoded data (``json_codec``: a batch of steps is most of a class's
    traffic)."""
    return json_codec.dumps(data)


def loads(data: bytes | str) -> Any:
    """The inverse of ``dumps``; ``FormatError`` for what is not JSON."""
    try:
        return json_codec.loads(data)
    except (ValueError, RecursionError) as exc:
        raise FormatError(f"not JSON: {str(exc)[:200]}") from None


def encode(value: Any) -> Any:
    """``value`` as JSON-ready data: dataclasses tagged, tuples as lists. A plain dict (a
    step, a prediction) is JSON already and is passed as it is, not walked: a batch of
    steps is most of what travels."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {"$": type(value).__name__,
                **{f.name: encode(getattr(value, f.name)) for f in dataclasses.fields(value)}}
    if isinstance(value, (list, tuple)):
        return [encode(v) for v in value]
    return value


def decode(data: Any) -> Any:
    """The inverse of ``encode``: tagged objects (in lists, and in each other's fields)
    become their dataclasses; an untagged dict is returned as it is."""
    if isinstance(data, list):
        return [decode(v) for v in data]
    if not isinstance(data, dict) or "$" not in data:
        return data
    name = data["$"]
    cls = _TAGGED.get(name) if isinstance(name, str) else None
    if cls is None:
        raise FormatError(f"unknown record kind {name!r}")
    fields = {k: decode(v) for k, v in data.items() if k != "$"}
    for field in fields:
        if (name, field) in _TUPLES and isinstance(fields[field], list):
            fields[field] = tuple(fields[field])
    for field, check in _checks(cls):
        if field in fields and not check(fields[field]):
            raise FormatError(f"bad {name}: {field} of the wrong kind")
    try:
        return cls(**fields)
    except TypeError as exc:
        raise FormatError(f"bad {name}: {exc}") from None


@functools.cache
def _checks(cls: type) -> tuple[tuple[str, Callable[[Any], bool]], ...]:
    """Each field of ``cls`` with the check of its annotation (a batch holds thousands of
    steps: looked up once, not per step)."""
    return tuple((f.name, _FIELD_KINDS.get(str(f.type), _any))
                 for f in dataclasses.fields(cls))


def _any(value: Any) -> bool:
    return True


def _int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _strs(value: Any) -> bool:
    return isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value)


def _step(value: Any) -> bool:
    """What the store itself reads of a step (its id, number, time, end): checked here,
    cheaply; the whole schema (about 1 ms a step) is the kernel's and ingest's to keep."""
    return (isinstance(value, dict) and isinstance(value.get("trajectory_id"), str)
            and _int(value.get("step")) and value["step"] >= 0
            and isinstance(value.get("execution_time", 0) or 0, (int, float))
            and isinstance(value.get("ended_at") or "", str))


_FIELD_KINDS: dict[str, Any] = {
    "str": lambda v: isinstance(v, str), "str | None": lambda v: v is None or isinstance(v, str),
    "int": _int, "bool": lambda v: isinstance(v, bool), "Step": _step,
    "list[Step]": lambda v: isinstance(v, list) and all(map(_step, v)),
    "list[str]": _strs,
    "list[RecordingSwitched]": lambda v: isinstance(v, list) and all(
        isinstance(s, RecordingSwitched) for s in v),
    "dict[str, str]": lambda v: isinstance(v, dict) and _strs(list(v)) and _strs(
        list(v.values())),
    "tuple[str, ...] | None": lambda v: v is None or _strs(v),
    "str | tuple[str, ...] | None": lambda v: v is None or isinstance(v, str) or _strs(v),
}
"""Each dataclass field's annotation (``from __future__``: a string) -> its check."""


def step_keys(applied: Applied) -> Applied:
    """``applied`` with each stored step as its key (``trajectory_id``, ``step``) only: the
    caller sent the steps and has them (``with_steps``); the answer need not carry them
    back."""
    return dataclasses.replace(applied, steps=[
        {"trajectory_id": s["trajectory_id"], "step": s["step"]}  # type: ignore[typeddict-item]
        for s in applied.steps])


def with_steps(applied: Applied, writes: list[Any]) -> Applied:
    """The inverse of ``step_keys``, from the writes the call sent."""
    sent = {(w.step["trajectory_id"], w.step["step"]): w.step for w in writes
            if isinstance(w, NewStep)}
    applied.steps = [sent[key] for key in ((s["trajectory_id"], s["step"])
                                           for s in applied.steps) if key in sent]
    return applied


def decode_call(method: str, body: Any) -> dict[str, Any]:
    """The keyword arguments of a call to ``method`` from its JSON body, checked."""
    spec = METHODS.get(method)
    if spec is None:
        raise FormatError(f"unknown store method {method!r}")
    args = body.get("args") if isinstance(body, dict) else None
    if not isinstance(args, dict):
        raise FormatError('the body must be a JSON object {"args": {...}}')
    unknown = sorted(set(args) - set(spec))
    if unknown:
        raise FormatError(f"{method}: unknown argument(s) {', '.join(unknown)}")
    return {name: _argument(method, name, kind, decode(args[name]))
            for name, kind in spec.items() if name in args}


def _argument(method: str, name: str, kind: Any, value: Any) -> Any:
    ok: bool
    if kind == _STR:
        ok = isinstance(value, str)
    elif kind in (_INT, _OPT_INT):
        ok = (value is None and kind == _OPT_INT) or (
            _int(value) and value >= 0)
    elif kind == _OPT_STR:
        ok = value is None or isinstance(value, str)
    elif kind == _BOOL:
        ok = isinstance(value, bool)
    elif kind == "writes":
        ok = isinstance(value, list) and all(isinstance(w, _WRITES) for w in value)
    elif kind == "cursor":
        ok = value is None or (isinstance(value, list) and len(value) == 2
                               and isinstance(value[0], str) and isinstance(value[1], int))
        value = tuple(value) if ok and value is not None else value
    elif kind == "users":
        ok = value is None or (isinstance(value, list)
                               and all(isinstance(u, str) for u in value))
        value = tuple(value) if ok and value is not None else value
    elif kind == "prediction":  # what the store reads of it
        ok = (isinstance(value, dict) and _int(value.get("target_step"))
              and all(isinstance(value.get(k), str) for k in ("id", "trajectory_id", "task")))
    elif kind == "list":
        ok = isinstance(value, list)
    else:
        ok = isinstance(value, kind) or (value is None and kind is not Trajectory)
    if not ok:
        raise FormatError(f"{method}: bad argument {name}")
    return value
