"""The journal: append-only JSONL files per kernel process, the hand-off from kernel to store.

The kernel appends one record per line with a single ``write`` on an ``O_APPEND`` file,
so a reader sees whole lines or an unfinished last line it can leave for later. The
server (or the CLI) ingests journals into the store and remembers how far it read, so
neither a closed browser tab nor a server restart loses a step the kernel finished.

Record kinds: ``trajectory`` (first line), ``started`` (a cell began executing; lets the
server predict its output), ``step``, ``recording`` (switched on/off), ``end`` (kernel shut
down cleanly).

The contract readers rely on: **every journal file starts with its trajectory's
``trajectory`` record**, so any one file can be ingested on its own. A kernel whose journal
is deleted, truncated or replaced while it runs notices it at its next record and goes on
in a fresh file, ``<kernel>--<n>--<trajectory>.jsonl`` (n = 1, 2, ...), which starts with
the same ``trajectory`` record (same id) and carries the records that follow; step numbers
continue. What was in the old file stays as it is (or as whoever changed it left it). A
record the kernel cannot write (a directory it cannot create, a full disk) waits in the
kernel's memory, in order and bounded, and is written when writing works again.
"""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from themisto_ext import json_codec
from themisto_ext.contract import dumps, file_safe

SUFFIX = ".jsonl"

BACKLOG_BYTES = 64 * 1024 * 1024
"""Records kept in memory while the journal cannot be written; older ones go first."""


def journal_name(kernel_id: str, trajectory_id: str, generation: int = 0) -> str:
    """The file name of a trajectory's journal; ``generation`` counts fresh files."""
    middle = f"{generation}--" if generation else ""
    return f"{file_safe(kernel_id)}--{middle}{trajectory_id}{SUFFIX}"


def encode(record: dict[str, Any]) -> bytes:
    """One journal line."""
    text = dumps(record)  # not json.dumps: the user may have patched it
    return (text + "\n").encode("utf-8", "replace")


class JournalWriter:
    """Appends records to one trajectory's journal and keeps doing so whatever happens to
    the file. Never raises: a failure is kept in ``reason`` (``None`` while all is well)
    and the record waits for the next append (see the module docstring).

    The first ``trajectory`` record appended is the header every fresh file starts with.
    """

    def __init__(self, directory: Path, kernel_id: str, trajectory_id: str) -> None:
        self.directory = directory
        self._kernel_id, self._trajectory_id = kernel_id, trajectory_id
        self._generation = 0
        self.path = directory / journal_name(kernel_id, trajectory_id)
        self._fd = -1
        self._identity: tuple[int, int] | None = None
        self._size = 0            # bytes this writer put in the current file
        self._header: bytes | None = None
        self._needs_header = False  # the current file has nothing in it yet
        self._dangling = False      # the current file ends in a line a failed write cut
        self._backlog: deque[bytes] = deque()
        self._backlog_bytes = 0
        self.dropped = 0
        """Records given up while the journal could not be written (backlog overflow)."""
        self.reason: str | None = None
        self._open()

    @property
    def ok(self) -> bool:
        return self.reason is None

    @property
    def pending(self) -> int:
        """Records waiting in memory for the journal to be writable again."""
        return len(self._backlog)

    def append(self, record: dict[str, Any]) -> bool:
        """Append one record; True when it (and every record before it) is in the file."""
        return self.append_line(encode(record), header=record.get("kind") == "trajectory")

    def append_line(self, line: bytes, header: bool = False) -> bool:
        if header and self._header is None and (self._fd < 0 or self._needs_header):
            self._header = line  # written first in this file and in every fresh one
            return self._flush()
        self._backlog.append(line)
        self._backlog_bytes += len(line)
        while self._backlog_bytes > BACKLOG_BYTES and len(self._backlog) > 1:
            self._backlog_bytes -= len(self._backlog.popleft())
            self.dropped += 1
        return self._flush()

    def close(self) -> None:
        self._flush()
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    # ------------------------------------------------------------ internals

    def _flush(self) -> bool:
        if not self._usable():
            return False
        if self._needs_header and self._header is not None and not self._write(self._header):
            return False
        while self._backlog:
            if not self._write(self._backlog[0]):
                return False
            self._backlog_bytes -= len(self._backlog.popleft())
        return True

    def _usable(self) -> bool:
        """An open file that is still the journal, else a fresh one."""
        if self._fd >= 0:
            if self._changed() is None:
                return True
            os.close(self._fd)
            self._fd = -1
            self._generation += 1
        return self._open()

    def _changed(self) -> str | None:
        """Why the open file is no longer the journal readers see, if it is not."""
        try:
            mine = os.fstat(self._fd)
        except OSError as exc:
            return str(exc)
        if mine.st_nlink == 0:
            return "deleted"
        try:
            there = os.stat(self.path)
        except OSError:
            return "moved away"
        if (there.st_dev, there.st_ino) != self._identity:
            return "replaced"
        if mine.st_size < self._size:
            return "truncated"
        return None

    def _open(self) -> bool:
        """Create the current generation's file (a later one if that name is taken)."""
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND
        path = self.directory / journal_name(self._kernel_id, self._trajectory_id,
                                             self._generation)
        try:
            self.directory.mkdir(mode=0o700, parents=True, exist_ok=True)  # files 0600
            fd = -1
            while fd < 0:
                try:
                    fd = os.open(path, flags, 0o600)
                except FileExistsError:
                    self._generation += 1
                    path = self.directory / journal_name(
                        self._kernel_id, self._trajectory_id, self._generation)
        except OSError as exc:
            self.reason = f"cannot create the journal {path}: {_why(exc)}"
            return False
        st = os.fstat(fd)
        self._fd, self.path, self._identity = fd, path, (st.st_dev, st.st_ino)
        self._size, self._needs_header, self._dangling = 0, True, False
        return True

    def _write(self, line: bytes) -> bool:
        """Write one whole line. A line cut by a failing write (a full disk) is ended before
        the next one, so that it is one bad line for the reader, not two."""
        data = b"\n" + line if self._dangling else line
        done = 0
        try:
            while done < len(data):
                done += os.write(self._fd, data[done:])
        except OSError as exc:
            self.reason = f"cannot write the journal {self.path}: {_why(exc)}"
            self._size += done
            if done and self._needs_header:
                # a file must start with its header: give this one up, start afresh
                os.close(self._fd)
                self._fd, self._generation, self._dangling = -1, self._generation + 1, False
            elif done:
                self._dangling = done > (1 if self._dangling else 0)
            return False
        self._size += done
        self._needs_header = self._dangling = False
        self.reason = None
        return True


def _why(exc: OSError) -> str:
    return exc.strerror or str(exc)


WINDOW = 16 * 1024 * 1024
"""Bytes read per call. A record longer than this cannot be parsed and is skipped (the
kernel bounds a step's size far below it); the window only bounds the reader's memory."""
_SCAN = 1024 * 1024


@dataclass(frozen=True)
class Skipped:
    """One record that could not be read, located for a warning."""

    offset: int
    reason: str


@dataclass
class JournalChunk:
    records: list[dict[str, Any]]
    end_offset: int
    """Where the next read starts: after the last whole line read or skipped."""
    skipped: list[Skipped] = field(default_factory=list)
    offsets: list[int] = field(default_factory=list)
    """Where each of ``records`` begins (for warnings about a record)."""
    scanned_to: int | None = None
    """Set while a line longer than the window is still being written: how far it has been
    scanned without finding its end (pass it back as ``scan_from`` to go on from there)."""

    @property
    def bad_lines(self) -> int:
        return len(self.skipped)


def _parse(raw: bytes) -> dict[str, Any] | str:
    """A journal record, or why this line is not one."""
    try:
        record = json_codec.loads(raw)
    except RecursionError:
        return "not JSON (nested too deeply)"
    except ValueError as exc:
        return f"not JSON ({str(exc)[:80]})"
    if not isinstance(record, dict) or not isinstance(record.get("kind"), str):
        return "not a journal record (no kind)"
    return record


def _line_end(fh: BinaryIO, start: int) -> int | None:
    """Offset just after the first newline at or after ``start``, None if none yet."""
    fh.seek(start)
    position = start
    while True:
        block = fh.read(_SCAN)
        if not block:
            return None
        found = block.find(b"\n")
        if found >= 0:
            return position + found + 1
        position += len(block)


def read_from(path: Path, offset: int, window: int = WINDOW,
              scan_from: int | None = None) -> JournalChunk:
    """Whole records after ``offset``; an unfinished last line is left for the next read.

    A line that is not a record (bad JSON, no ``kind``, longer than ``window``) is
    skipped and reported in ``skipped``: reading goes on after it, so one bad line never
    stops a kernel's later records from being read.
    """
    with path.open("rb") as fh:
        fh.seek(offset)
        data = fh.read(window)
        cut = data.rfind(b"\n")
        if cut < 0:
            if len(data) < window:
                return JournalChunk([], offset)  # only an unfinished line so far
            # A line longer than the window: find its end without holding it.
            end = _line_end(fh, max(scan_from or 0, offset + len(data)))
            if end is None:
                return JournalChunk([], offset, scanned_to=fh.tell())
            size = end - offset
            return JournalChunk([], end, [Skipped(offset, f"a record of {size:,} bytes, "
                                                          f"over the {window:,}-byte window")])
    records: list[dict[str, Any]] = []
    offsets: list[int] = []
    skipped: list[Skipped] = []
    position = offset
    with json_codec.bulk():
        for raw in data[: cut + 1].splitlines(keepends=True):
            line_start, position = position, position + len(raw)
            if not raw.strip():
                continue
            parsed = _parse(raw)
            if isinstance(parsed, str):
                skipped.append(Skipped(line_start, parsed))
            else:
                records.append(parsed)
                offsets.append(line_start)
    return JournalChunk(records, offset + cut + 1, skipped, offsets)


def journal_files(directory: Path) -> Iterator[Path]:
    """The journals in ``directory`` (none when it does not exist or cannot be listed)."""
    try:
        yield from sorted(directory.glob("*" + SUFFIX))
    except OSError:
        return
