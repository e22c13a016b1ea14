"""Line-level execution traces of a cell (opt-in: ``%%themisto_trace``, ``themisto record
--trace``), in the manner of E.T. (Armengol-Estapé et al., 2025): each executed line of the
cell with the variables it changed.

Nothing here runs while no cell is traced: ``sys.settrace`` is set only for a traced cell
and put back as it was at its end. A user's own trace function keeps working: it is called
first for every event, its answers are honoured, and it gets its place back afterwards;
one the cell installs itself (``pdb.set_trace()``) simply takes over and the trace stops.

Reprs never run user code: values are rendered by ``reprs.render``, with a placeholder
``<T>`` for any part the recorder would have to ask user code for. A value is looked at
only when its line is recorded, and the bounds below cap both the trace's size and the
time it can add to the cell: past them the tracer takes itself out (``sys.settrace`` back
to what it was) and the trace says ``truncated``.
"""

from __future__ import annotations

import dis
import types
from collections.abc import Callable
from typing import Any

from themisto_ext.contract import dumps
from themisto_ext.kernel.private import clock, get_trace, set_trace
from themisto_ext.kernel.reprs import render
from themisto_ext.kernel.safe import is_atom, type_name
from themisto_ext.redaction import REDACTED

EVENTS = 1_000
"""Line events recorded in a trace, all lines together."""
PER_LINE = 10
"""Events recorded per line: a loop's first 10 iterations in full, the rest counted."""
CHANGES = 20
"""Variables listed per event (the others counted in ``more``)."""
REPR_LENGTH = 200
"""Characters of each value's repr."""
TRACE_BYTES = 256 * 1024
"""Largest trace, in characters of its JSON (a step may hold 4 MiB)."""
SECONDS = 1.0
"""Wall-clock seconds a cell is traced; then the tracer takes itself out."""

Trace = dict[str, Any]
TraceFunction = Callable[[types.FrameType, str, Any], Any]
_STORES = frozenset(("STORE_GLOBAL", "DELETE_GLOBAL"))
_NAMED = frozenset(("LOAD_NAME", "STORE_NAME", "DELETE_NAME", "LOAD_GLOBAL", *_STORES))
_UNBOUND = object()  # a name not bound (no user value can be this object)
_UNKEPT = object()  # what a frame's memory holds for a value it does not keep
_PYTHON_FUNCTIONS = (types.FunctionType, types.MethodType)
_get, _items = dict.get, dict.items
_get_instructions = dis.get_instructions  # taken at import: user code cannot replace it


def _placeholder(value: Any, room: int) -> str:
    return f"<{type_name(type(value))}>"  # its repr would run code the user wrote


def _immutable(kind: type) -> bool:
    return is_atom(kind) and kind is not bytearray


def _short(value: Any) -> bool:
    kind = type(value)
    return not (kind is str or kind is bytes) or len(value) <= 10_000


def safe_repr(value: Any) -> str:
    try:
        return render(value, REPR_LENGTH, _placeholder)
    except Exception:
        return f"<{type_name(type(value))}>"


class _CodeInfo:
    """What the bytecode of one of the cell's code objects says, read once a trace."""

    __slots__ = ("by_line", "code", "stores")

    def __init__(self, code: types.CodeType) -> None:
        self.code = code  # held: a cache by id() must not meet another object at that id
        by_line: dict[int, set[str]] = {}
        stores: set[str] = set()
        for ins in _get_instructions(code):
            if ins.opname in _STORES:
                stores.add(ins.argval)
            where = getattr(ins, "positions", None)  # Python 3.11's; mypy reads 3.10's
            line = where.lineno if where is not None else None
            if ins.opname in _NAMED and line is not None:
                by_line.setdefault(line, set()).add(ins.argval)
        self.stores = tuple(sorted(stores))
        self.by_line = {line: tuple(sorted(names)) for line, names in by_line.items()}
        """The global names each line reads or writes (a top-level line changes these)."""


class _Frame:
    """What the tracer remembers of one traced frame between its lines."""

    __slots__ = ("by_line", "last", "module", "names", "seen", "skipped")

    def __init__(self, frame: types.FrameType, info: _CodeInfo) -> None:
        code = frame.f_code
        self.module = code.co_name == "<module>"
        # A statement of the cell reads and writes globals by name (co_names); a function
        # its locals, and the globals it assigns.
        self.names = code.co_names if self.module else info.stores
        self.by_line = info.by_line
        self.last: int | None = None
        self.seen: dict[str, Any] = {}
        self.skipped = False
        """Lines counted but not recorded since the frame's last event."""


class Tracer:
    """One cell's trace at a time: ``start``, the cell runs, ``stop`` gives the record."""

    def __init__(self, is_secret: Callable[[str], bool],
                 learn: Callable[[str, Any], None]) -> None:
        self._is_secret = is_secret
        self._learn = learn
        self.active = False
        self.owner: int | None = None
        """The depth of the run that started the trace (``themisto record --trace``), or
        None for ``%%themisto_trace``, which stops it itself."""
        self._codes: dict[int, _CodeInfo] = {}
        self._hook = self._global  # one object: a bound method is made anew at each access

    def start(self, namespace: dict[str, Any], line_offset: int = 0,
              owner: int | None = None) -> None:
        if self.active:  # a cell whose end never came: chaining to ourselves would recurse
            self.stop()
        self._ns = namespace
        self._codes = {}
        self._offset = line_offset
        self._file: str | None = None
        self._user: TraceFunction | None = get_trace()
        self._events: list[dict[str, Any]] = []
        self._hits: dict[int, int] = {}
        self._omitted: dict[int, int] = {}
        self._ends: dict[int, int] = {}
        self._size = 0
        self._truncated: str | None = None
        self._off = False
        self.owner = owner
        self._deadline = clock() + SECONDS
        self.active = True
        if self._user is not None and not isinstance(self._user, _PYTHON_FUNCTIONS):
            # A C-level tracer (coverage's): set back from Python it would become a slower
            # Python-level one, so the cell runs untraced and the trace says why.
            self._truncated, self._off = "c-tracer", True
            return
        set_trace(self._hook)

    def stop(self) -> Trace:
        self.active = False
        if get_trace() is self._hook:
            set_trace(self._user)  # the user's function, as it was, or none
        elif not self._off:
            self._truncated = self._truncated or "replaced"  # the cell set its own
        self._off = True
        trace: Trace = {
            "events": self._events,
            "hits": {str(line + self._offset): n for line, n in sorted(self._hits.items())},
        }
        if self._omitted:
            trace["omitted"] = {str(line + self._offset): n
                                for line, n in sorted(self._omitted.items())}
        # The running size is an estimate (JSON escapes a control character in six); the
        # line written is measured, and halved until it fits.
        while self._events and len(dumps(trace)) > TRACE_BYTES:
            del self._events[len(self._events) // 2:]
            self._truncated = "bytes"
        if self._truncated:
            trace["truncated"] = self._truncated
        self._ns = {}
        return trace

    # ------------------------------------------------------------ trace functions

    def _global(self, frame: types.FrameType, event: str, arg: Any) -> Any:
        chained = self._user(frame, event, arg) if self._user is not None else None
        if self._off:
            return chained
        code = frame.f_code
        if self._file is None:
            # The first statement of the cell that runs in the user's namespace names the
            # cell's file: IPython's own frames before it have other globals.
            if code.co_name != "<module>" or frame.f_globals is not self._ns:
                return chained
            self._file = code.co_filename
        elif code.co_filename != self._file:
            return chained
        state = _Frame(frame, self._code_info(code))
        return self._local(state, chained)

    def _local(self, state: _Frame, chained: TraceFunction | None) -> TraceFunction:
        def local(frame: types.FrameType, event: str, arg: Any) -> Any:
            nonlocal chained
            if chained is not None:
                # None from a local trace function leaves it in place (CPython's rule).
                chained = chained(frame, event, arg) or chained
            if self._off:
                frame.f_trace = chained  # out of this frame: only the user's function left
                return chained
            if event == "line" or event == "return":
                self._line(state, frame, frame.f_lineno if event == "line" else None)
            return local
        return local

    def _code_info(self, code: types.CodeType) -> _CodeInfo:
        info = self._codes.get(id(code))
        if info is None or info.code is not code:
            info = self._codes[id(code)] = _CodeInfo(code)
        return info

    # ------------------------------------------------------------ recording

    def _line(self, state: _Frame, frame: types.FrameType, line: int | None) -> None:
        """The line that ran before this one (``state.last``) is done: count it, and
        record what it changed while its line and the trace have room."""
        done, state.last = state.last, line
        if clock() > self._deadline:
            return self._cut("time")
        if done is None:
            if state.module:
                self._changes(state, frame, None)  # the state before the statement
            return None
        hits = self._hits[done] = self._hits.get(done, 0) + 1
        if hits > PER_LINE:
            # A frame that ends after omitted lines (a loop's last iterations) is recorded:
            # its last event says what those iterations left; at most PER_LINE such ends
            # a line (a function called 10^5 times ends 10^5 frames).
            ends = self._ends.get(done, 0)
            if not (line is None and state.skipped and ends < PER_LINE):
                self._omitted[done] = self._omitted.get(done, 0) + 1
                state.skipped = True
                return None
            self._ends[done] = ends + 1
        # After omitted lines, every name the statement uses: they ran unwatched.
        full, state.skipped = state.skipped, False
        if len(self._events) >= EVENTS:
            return self._cut("events")
        changed = self._changes(state, frame, None if full else done)
        event: dict[str, Any] = {"line": done + self._offset}
        if not state.module:
            event["function"] = frame.f_code.co_name
        shown = dict(list(changed.items())[:CHANGES])
        event["changed"] = shown
        if len(changed) > CHANGES:
            event["more"] = len(changed) - CHANGES
        self._size += 40 + sum(len(k) + len(v) + 6 for k, v in shown.items())
        if self._size > TRACE_BYTES:
            return self._cut("bytes")
        self._events.append(event)
        return None

    def _changes(self, state: _Frame, frame: types.FrameType,
                 line: int | None) -> dict[str, str]:
        """Names whose value differs from what the frame's last recorded line left: at the
        top level those ``line`` uses (a 1,000-line statement checked its 1,000 names at
        every line: 600 us a line), or all the statement uses (``line`` None)."""
        # dict's own methods: a namespace or class body may be a dict subclass (a
        # metaclass's __prepare__) whose get or items the user wrote.
        if state.module:
            scope: dict[str, Any] = self._ns
            names = state.names if line is None else state.by_line.get(line, ())
            pairs = [(n, _get(scope, n, _UNBOUND)) for n in names]
        else:
            local = frame.f_locals
            if type(local) is not dict:
                local = {}
            pairs = [(n, v) for n, v in _items(local) if type(n) is str and n[:1] != "."]
            scope = frame.f_globals
            pairs += [(n, _get(scope, n, _UNBOUND)) for n in state.names
                      if type(scope) is dict and n not in local]
        changed: dict[str, str] = {}
        for name, value in pairs:
            if state.module and value is _UNBOUND and name not in state.seen:
                continue  # an attribute or builtin name, not a variable
            if issubclass(type(value), types.ModuleType):  # (isinstance reads __class__)
                continue
            before = state.seen.get(name)
            kind = type(value)
            if before is not None and before[0] is value and _immutable(kind):
                continue  # the same int or str: no repr needed to know it is unchanged
            text = "<unbound>" if value is _UNBOUND else self._repr(name, value)
            # An atom by its text (an equal int computed anew is no change), anything
            # else by identity and text (another object, or one changed in place).
            mark = text if is_atom(kind) else (id(value), text)
            if before is None or before[1] != mark:
                changed[name] = text
            # Kept only when nothing can tell (an exact int or short str has no finalizer
            # nor weak references): holding other objects would delay their __del__.
            kept = value if _immutable(kind) and _short(value) else _UNKEPT
            state.seen[name] = (kept, mark)
        return changed

    def _repr(self, name: str, value: Any) -> str:
        if self._is_secret(name):
            self._learn(name, value)  # masked wherever it appears from now on
            return REDACTED
        return safe_repr(value)

    def _cut(self, why: str) -> None:
        """Out of budget: stop tracing now (new frames are not seen; the frames under way
        drop the tracer at their next event)."""
        self._truncated, self._off = why, True
        if get_trace() is self._hook:
            set_trace(self._user)


TRACE_MAGIC = "%%themisto_trace"


def mask_trace(trace: Trace, mask: Callable[[str], str]) -> None:
    """Mask the reprs with every secret the kernel knows when the step is written (the
    snapshot after the cell may have learnt some that the tracer met first)."""
    for event in trace["events"]:
        changed = event["changed"]
        for name in changed:
            changed[name] = mask(changed[name])
