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
from dataclasses import dataclass
from pathlib import Path
from typing import Any

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


@dataclass
class JournalChunk:
    records: list[dict[str, Any]]
    end_offset: int
    bad_lines: int


def read_from(path: Path, offset: int, max_bytes: int = 16 * 1024 * 1024) -> JournalChunk:
    """Whole records after ``offset``; an unfinished last line is left for the next read."""
    with path.open("rb") as fh:
        fh.seek(offset)
        data = fh.read(max_bytes)
    cut = data.rfind(b"\n")
    if cut < 0:
        return JournalChunk([], offset, 0)
    records, bad = [], 0
    for raw in data[: cut + 1].splitlines():
        if not raw.strip():
            continue
        try:
            record = json.loads(raw)
        except ValueError:
            bad += 1
            continue
        if isinstance(record, dict) and "kind" in record:
            records.append(record)
        else:
            bad += 1
    return JournalChunk(records, offset + cut + 1, bad)


def journal_files(directory: Path) -> Iterator[Path]:
    if directory.is_dir():
        yield from sorted(directory.glob("*" + SUFFIX))
