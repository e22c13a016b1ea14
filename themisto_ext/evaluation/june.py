"""JuNE execution logs (one CSV of notebook events) as trajectories in our format.

Every row is an event of one kernel. A kernel's rows, in time order, are its execution
sequence; ``kernel_restarting`` ends one trajectory and starts the next. An ``execute``
row is paired with the next ``finished_execute`` row of the same kernel and cell (the
output comes from it); an ``error`` row marks that execution as raised. The log has no
runtime state, so imported steps have empty ``runtime_variables``; ``june_replay`` re-runs
each trajectory in a fresh recording kernel to get real outputs and state.

Rows that cannot be used (missing values, an unparseable time, an unknown event, a finish
without its execute) are reported with their line number and skipped.

The log is never held: ``scan_june`` keeps an index of the rows (byte offsets) and the
steps' code and output are read back from the file as each step is written.
"""

from __future__ import annotations

import csv
import hashlib
import json
import re
import sys
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import IO, Any, Literal

from themisto_ext.records import Step, StepError, StepOutput
from themisto_ext.trajectory import FORMAT_VERSION
from themisto_ext.trajectory.text import flatten, plain_text, strip_ansi

COLUMNS = ("action_id", "time", "session_id", "kernel_id", "notebook_name", "event",
           "cell_index", "cell_num", "cell_type", "cell_source", "cell_output", "user_id")
REQUIRED_VALUES = ("time", "kernel_id", "event")
EVENTS = frozenset({"execute", "finished_execute", "kernel_restarting", "save_notebook",
                    "error"})
EMPTY_STATE_HASH = hashlib.blake2b(b"", digest_size=16).hexdigest()
"""``hash_index`` of a state with no variables (the recorder's digest of nothing)."""
_EXTRA = "\0extra"  # DictReader's key for fields beyond the header
_BARE_CR = re.compile(rb"(?<=\r)(?!\n)")  # between a \r that ends a line and the next
_LAST_LINE_ERROR = re.compile(r"^([A-Za-z_][\w.]*)(?::\s?(.*))?$")


@dataclass(frozen=True)
class BadRow:
    line: int
    message: str

    def __str__(self) -> str:
        return f"line {self.line}: {self.message}"


@dataclass
class ImportResult:
    trajectories: list[list[Step]]
    """Filled by ``read_june``; a streamed import (``scan_june``) keeps none."""
    rows: int
    bad: list[BadRow] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    """Kept, but worth knowing: executions that never finished, replays cut short."""
    ignored: dict[str, int] = field(default_factory=dict)
    """Rows that are valid but make no step (saves, non-code cells), by reason."""
    written: tuple[int, int] | None = None
    """(trajectories, steps) that a streamed import wrote."""

    @property
    def steps(self) -> int:
        return sum(len(t) for t in self.trajectories)


@dataclass(slots=True)
class _Row:
    """A valid row without its two large fields: those are read back from ``offset``.

    20,000 rows and their 10,000 step drafts take 18 MB; the rows with their ``cell_output``
    held 1,120 MB at peak for a 1 GB log (benchmarks/cli_memory.py).
    """

    line: int
    offset: int
    """Byte offset in the file where the record (or blank lines before it) starts."""
    time: datetime
    kernel: str
    event: str
    cell: str
    is_code: bool
    notebook: str
    has_output: bool


class _Lines:
    """The file's lines for ``csv``, counting bytes: ``offset`` is where the next one starts.

    Lines end at ``\\n``, ``\\r\\n`` or a bare ``\\r``, as in a text file opened with
    ``newline=""``; a byte offset, unlike a text file's ``tell()``, is exact and free.
    Neither byte occurs inside a UTF-8 character.
    """

    def __init__(self, fh: IO[bytes], offset: int = 0) -> None:
        self.fh, self.offset = fh, offset
        self.rest: list[bytes] = []  # the lines after a bare \r, read with the one before

    def __iter__(self) -> _Lines:
        return self

    def __next__(self) -> str:
        if not self.rest:
            raw = self.fh.readline()
            if not raw:
                raise StopIteration
            end = len(raw) - (2 if raw.endswith(b"\r\n") else 1)
            self.rest = [raw] if raw.find(b"\r", 0, end) < 0 else \
                [x for x in reversed(_BARE_CR.split(raw)) if x]  # popped from the end
        raw = self.rest.pop()
        text = raw.decode("utf-8-sig" if self.offset == 0 else "utf-8")
        self.offset += len(raw)
        return text


def parse_time(text: str) -> datetime:
    """An ISO 8601 date-time (UTC when it has no offset) or Unix seconds/milliseconds."""
    text = text.strip()
    try:
        number = float(text)
    except ValueError:
        when = datetime.fromisoformat(text)
        return when if when.tzinfo else when.replace(tzinfo=timezone.utc)
    if number > 1e11:  # milliseconds: seconds this large are past the year 5000
        number /= 1000
    return datetime.fromtimestamp(number, tz=timezone.utc)


def _read_rows(path: Path, result: ImportResult) -> tuple[list[str], list[_Row]]:
    """The header and an index of the valid rows; only one row's text is held at a time."""
    rows: list[_Row] = []
    # Outputs of real notebooks exceed csv's default 128 KiB field limit.
    csv.field_size_limit(min(sys.maxsize, 2**31 - 1))
    with path.open("rb") as fh:
        lines = _Lines(fh)
        reader = csv.DictReader(lines, restkey=_EXTRA)
        header = reader.fieldnames or []
        missing = [c for c in COLUMNS if c not in header]
        if missing:
            raise ValueError(f"{path}: missing columns {', '.join(missing)} (a JuNE log has "
                             f"{', '.join(COLUMNS)})")
        start = reader.line_num + 1
        while True:
            offset = lines.offset
            try:
                values = next(reader)
            except StopIteration:
                break
            except csv.Error as exc:
                raise ValueError(f"{path}: line {start}: not valid CSV ({exc})") from None
            line, start = start, reader.line_num + 1
            result.rows += 1
            problem, when = _check_row(values)
            if problem or when is None:
                result.bad.append(BadRow(line, problem or "no time"))
                continue
            rows.append(_index(values, line, offset, when))
    return list(header), rows


def _index(values: dict[str, Any], line: int, offset: int, when: datetime) -> _Row:
    return _Row(line, offset, when, kernel=values["kernel_id"].strip(),
                event=values["event"].strip(), cell=(values["cell_index"] or "").strip(),
                is_code=(values["cell_type"] or "").strip() in ("", "code"),
                notebook=values["notebook_name"] or "", has_output=bool(values["cell_output"]))


class _Records:
    """Records of the log read back by byte offset, when their step is written."""

    def __init__(self, path: Path, header: list[str]) -> None:
        self.path, self.header = path, header
        self.fh = path.open("rb")

    def close(self) -> None:
        self.fh.close()

    def field(self, row: _Row, name: str) -> str:
        self.fh.seek(row.offset)
        for fields in csv.reader(_Lines(self.fh, row.offset)):
            if not fields:  # blank lines before the record, which DictReader skipped too
                continue
            if len(fields) == len(self.header):  # as it had when it was read
                return dict(zip(self.header, fields, strict=True))[name] or ""
            break
        raise ValueError(f"{self.path}: changed while it was imported (line {row.line})")


def _check_row(values: dict[str, Any]) -> tuple[str | None, datetime | None]:
    if _EXTRA in values:
        return f"{len(values[_EXTRA])} more fields than the header has", None
    absent = [c for c in COLUMNS if values.get(c) is None]
    if absent:
        return f"missing columns {', '.join(absent)}", None
    empty = [c for c in REQUIRED_VALUES if not values[c].strip()]
    if empty:
        return f"empty {', '.join(empty)}", None
    event = values["event"].strip()
    if event not in EVENTS:
        return f"unknown event {event!r}", None
    try:
        return None, parse_time(values["time"])
    except (ValueError, OverflowError, OSError):
        return f"unparseable time {values['time']!r}", None


def _outputs(text: str) -> list[StepOutput]:
    """The outputs of a ``cell_output`` value: nbformat outputs as JSON, or plain text."""
    if text.lstrip().startswith("["):
        try:
            items = json.loads(text)
        except json.JSONDecodeError:
            items = None
        if isinstance(items, list) and all(isinstance(o, dict) and "output_type" in o
                                           for o in items):
            return [_output(o) for o in items]
    # Untyped text: shown as a stream, which is what most printed output is.
    return [{"output_type": "stream", "name": "stdout", "mime_types": ["text/plain"],
             "text": text}] if text else []


def _output(item: dict[str, Any]) -> StepOutput:
    kind = item["output_type"]
    if kind == "stream":
        text = item.get("text", "")
        text = "".join(text) if isinstance(text, list) else str(text)
        return {"output_type": "stream", "name": str(item.get("name", "stdout")),
                "mime_types": ["text/plain"], "text": strip_ansi(text)}
    if kind == "error":
        lines = item.get("traceback") or []
        ename, evalue = str(item.get("ename", "")), str(item.get("evalue", ""))
        traceback = "\n".join(strip_ansi(str(x)) for x in lines) or f"{ename}: {evalue}"
        return {"output_type": "error", "mime_types": [], "ename": ename, "evalue": evalue,
                "text": traceback}
    found = item.get("data")
    data: dict[str, Any] = found if isinstance(found, dict) else {}
    shown: Literal["execute_result", "display_data"] = \
        "execute_result" if kind == "execute_result" else "display_data"
    return {"output_type": shown, "mime_types": sorted(data), "text": plain_text(data)}


def _error_from(outputs: Sequence[Mapping[str, Any]], text: str) -> StepError:
    for item in reversed(outputs):
        if item["output_type"] == "error":
            return {"ename": str(item["ename"]), "evalue": str(item["evalue"]),
                    "traceback": str(item["text"])}
    lines = [x for x in strip_ansi(text).splitlines() if x.strip()]
    match = _LAST_LINE_ERROR.match(lines[-1].strip()) if lines else None
    ename, evalue = (match.group(1), match.group(2) or "") if match else ("Error", "")
    return {"ename": ename, "evalue": evalue, "traceback": strip_ansi(text)}


def trajectory_id(kernel_id: str, segment: int) -> str:
    """Stable: importing the same log twice gives the same ids."""
    key = f"june\0{kernel_id}\0{segment}".encode()
    return hashlib.blake2b(key, digest_size=16).hexdigest()


def _iso(when: datetime) -> str:
    # fixed width, as the recorder writes them, so that the strings sort as the times do
    return when.astimezone(timezone.utc).isoformat(timespec="microseconds")


class _Kernel:
    """One kernel's execution sequence, cut into trajectories at restarts.

    JuNE logs an ``error`` row for an execution that raised, before or after its
    ``finished_execute``; either order marks the same step. An execution with an ``error``
    row but no finish is finished by the ``error`` row. Steps are drafts: which rows hold
    their code and output is decided here, the text is read when the step is written.
    """

    def __init__(self, kernel_id: str, result: ImportResult) -> None:
        self.kernel_id = kernel_id
        self.result = result
        self.segment = 0
        self.trajectories: list[list[_Draft]] = []
        self.steps: list[_Draft] = []
        self.pending: list[_Draft] = []

    def execute(self, row: _Row) -> None:
        if not row.is_code:
            self.result.ignored["non-code cell executions"] = \
                self.result.ignored.get("non-code cell executions", 0) + 1
            return
        step: Step = {
            "format_version": FORMAT_VERSION,
            "trajectory_id": trajectory_id(self.kernel_id, self.segment),
            "kernel_id": self.kernel_id, "step": len(self.steps) + 1,
            "cell_id": row.cell or None, "notebook_path": row.notebook or None,
            "source": "import",
            "started_at": _iso(row.time), "ended_at": _iso(row.time),
            "code": "", "output": "", "outputs": [],
            "execution_time": 0.0, "memory_bytes": None, "runtime_variables": {},
            "hash_index": EMPTY_STATE_HASH, "error": None,
        }
        draft = _Draft(row, step)
        self.steps.append(draft)
        self.pending.append(draft)

    def _pending_for(self, row: _Row) -> _Draft | None:
        return next((p for p in self.pending if p.start.cell == row.cell), None)

    def finished(self, row: _Row) -> None:
        pending = self._pending_for(row)
        if pending is None:
            self.result.bad.append(BadRow(row.line, f"finished_execute of cell {row.cell!r} "
                                          f"on kernel {self.kernel_id} has no execute before it"))
            return
        self.pending.remove(pending)
        # an empty finish takes the output of the error row that came before it
        text = row if row.has_output or pending.raised is None else pending.raised
        pending.finish(row, text)

    def error(self, row: _Row) -> None:
        pending = self._pending_for(row)
        if pending is not None:
            pending.raised = row
            return
        for draft in reversed(self.steps):
            if draft.start.cell == row.cell:
                # only the first error row after the finish counts, as for the recorder
                if draft.raised is None and draft.late_error is None:
                    draft.late_error = row
                return
        self.result.bad.append(BadRow(row.line, f"error of cell {row.cell!r} on kernel "
                                      f"{self.kernel_id} has no execute before it"))

    def restart(self) -> None:
        for pending in self.pending:
            if pending.raised is not None:
                pending.finish(pending.raised, pending.raised)
            else:
                self.result.notes.append(
                    f"line {pending.start.line}: the execution of cell {pending.start.cell!r}"
                    f" on kernel {self.kernel_id} never finished; kept with no output")
        if self.steps:
            self.trajectories.append(self.steps)
        self.steps, self.pending = [], []
        self.segment += 1


@dataclass
class _Draft:
    """A step whose code and output are still in the log: the rows that hold them."""

    start: _Row
    step: Step
    raised: _Row | None = None
    """The ``error`` row of this execution, when it came before the finish."""
    text: _Row | None = None
    """The row whose ``cell_output`` is the output; None until it finishes."""
    late_error: _Row | None = None
    """The first ``error`` row after the finish."""

    def finish(self, end: _Row, text: _Row) -> None:
        self.step["ended_at"] = _iso(end.time)
        self.step["execution_time"] = max(0.0, (end.time - self.start.time).total_seconds())
        self.text = text

    def write(self, records: _Records) -> Step:
        """The finished step, its texts read from the log."""
        step: Step = {**self.step, "code": records.field(self.start, "cell_source")}
        if self.text is None:
            return step
        text = records.field(self.text, "cell_output")
        outputs = _outputs(text)
        step["outputs"], step["output"] = outputs, flatten(outputs)
        if self.raised is not None or any(o["output_type"] == "error" for o in outputs):
            step["error"] = _error_from(outputs, text)
        elif self.late_error is not None:
            step["error"] = _error_from(outputs, records.field(self.late_error, "cell_output")
                                        or step["output"])
        return step


@dataclass
class JuneLog:
    """A JuNE log as an index of its rows: trajectories of drafts, written one step at a time.

    Iterating gives each trajectory as an iterator of steps read from the file then, so
    importing a 1 GB log peaks at 80 MB instead of 1,120 MB (benchmarks/cli_memory.py).
    """

    path: Path
    header: list[str]
    result: ImportResult
    drafts: list[list[_Draft]]

    def __len__(self) -> int:
        return len(self.drafts)

    def __iter__(self) -> Iterator[Iterator[Step]]:
        records = _Records(self.path, self.header)
        try:
            for drafts in self.drafts:
                yield (d.write(records) for d in drafts)
        finally:
            records.close()


def scan_june(path: Path) -> JuneLog:
    """The trajectories of a JuNE log, ordered by when they started, as drafts."""
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such file")
    result = ImportResult([], 0)
    header, rows = _read_rows(path, result)
    rows.sort(key=lambda r: (r.time, r.line))  # time order; the file's order among equals
    kernels: dict[str, _Kernel] = {}
    for row in rows:
        kernel = kernels.setdefault(row.kernel, _Kernel(row.kernel, result))
        if row.event == "execute":
            kernel.execute(row)
        elif row.event == "finished_execute":
            kernel.finished(row)
        elif row.event == "error":
            kernel.error(row)
        elif row.event == "kernel_restarting":
            kernel.restart()
        else:
            result.ignored[row.event] = result.ignored.get(row.event, 0) + 1
    for kernel in kernels.values():
        kernel.restart()  # the end of the log ends every kernel's last trajectory
    drafts = [t for k in kernels.values() for t in k.trajectories]
    drafts.sort(key=lambda t: (t[0].step["started_at"], t[0].step["kernel_id"]))
    result.bad.sort(key=lambda b: b.line)
    return JuneLog(path, header, result, drafts)


def read_june(path: Path) -> ImportResult:
    """The trajectories of a JuNE log, ordered by when they started, all in memory."""
    log = scan_june(path)
    log.result.trajectories = [list(steps) for steps in log]
    return log.result


def iter_summary(result: ImportResult) -> Iterator[str]:
    """Lines for a person: every bad row, every note, then the counts."""
    for bad in result.bad:
        yield f"skipped {bad}"
    yield from result.notes
    ignored = ", ".join(f"{v} {k}" for k, v in sorted(result.ignored.items()))
    count, steps = result.written or (len(result.trajectories), result.steps)
    yield (f"{result.rows} rows: {steps} steps in {count} "
           f"{'trajectory' if count == 1 else 'trajectories'}; {len(result.bad)} bad rows skipped"
           + (f"; ignored {ignored}" if ignored else ""))
