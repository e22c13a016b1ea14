"""The journal: an append-only JSONL file per kernel process, the hand-off from kernel to store.

The kernel appends one record per line with a single ``write`` on an ``O_APPEND`` file,
so a reader sees whole lines or an unfinished last line it can leave for later. The
server (or the CLI) ingests journals into the store and remembers how far it read, so
neither a closed browser tab nor a server restart loses a step the kernel finished.

Record kinds: ``trajectory`` (first line), ``started`` (a cell began executing; lets the
server predict its output), ``step``, ``recording`` (switched on/off), ``end`` (kernel shut
down cleanly).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from themisto_ext.contract import file_safe

SUFFIX = ".jsonl"


def journal_name(kernel_id: str, trajectory_id: str) -> str:
    return f"{file_safe(kernel_id)}--{trajectory_id}{SUFFIX}"


class JournalWriter:
    def __init__(self, directory: Path, kernel_id: str, trajectory_id: str) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        self.path = directory / journal_name(kernel_id, trajectory_id)
        self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)

    def append(self, record: dict[str, Any]) -> None:
        line = json.dumps(record, ensure_ascii=False, separators=(",", ":"), default=str) + "\n"
        os.write(self._fd, line.encode("utf-8", "replace"))

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


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
        record = json.loads(raw)
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
