"""The one reader of JSON Lines files: trajectories, benchmark examples, results.

It streams (a file of any size is read one line at a time, and a line longer than
``MAX_LINE`` is reported without ever being held whole), numbers lines as editors do,
skips blank lines, and hands each line's raw text on with its parsed value or the reason
it could not be parsed: callers decide whether a bad line is fatal (a benchmark file) or
skipped and counted (results cut off by an interrupted run).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO


@dataclass(frozen=True, slots=True)
class JsonLine:
    number: int
    """1-based line number in the file."""
    text: str
    """The line without its line break."""
    value: Any
    """The parsed JSON value (None when ``problem`` is set)."""
    problem: str | None = None
    """Why the line is not JSON, for a message (``not valid JSON (...)``)."""


MAX_LINE = 64 * 1024 * 1024
"""Longest line parsed, in bytes (a parsed line takes several times its size in memory);
a longer one is a problem of its own line: "longer than ..."."""


def _lines(fh: BinaryIO, limit: int) -> Iterator[bytes | int]:
    """The file's lines, each a ``bytes``, or its length when it is longer than ``limit``."""
    while True:
        raw = fh.readline(limit + 1)
        if not raw:
            return
        if len(raw) <= limit or raw.endswith(b"\n"):
            yield raw
            continue
        size = len(raw)
        while not raw.endswith(b"\n"):  # skip the rest of the line, a block at a time
            raw = fh.readline(1024 * 1024)
            if not raw:
                break
            size += len(raw)
        yield size


def iter_jsonl(path: Path, max_line: int = MAX_LINE) -> Iterator[JsonLine]:
    """Every non-blank line of a UTF-8 JSONL file, parsed, in order.

    Raises ``UnicodeDecodeError`` on bytes that are not UTF-8 and ``OSError`` when the file
    cannot be read: both concern the whole file, not a line.
    """
    with path.open("rb") as fh:
        for number, line in enumerate(_lines(fh, max_line), start=1):
            if isinstance(line, int):
                yield JsonLine(number, "", None, f"a line of {line:,} bytes, longer than the "
                                                 f"{max_line:,} bytes read")
                continue
            raw = line.decode("utf-8", errors="strict")
            if not raw.strip():
                continue
            text = raw.rstrip("\r\n")
            try:
                value = json.loads(text)
            except json.JSONDecodeError as exc:
                yield JsonLine(number, text, None, f"not valid JSON ({exc.msg})")
                continue
            except RecursionError:
                yield JsonLine(number, text, None, "not valid JSON (nested too deeply)")
                continue
            yield JsonLine(number, text, value)


def file_sha256(path: Path) -> str:
    """The SHA-256 of a file's bytes, read a MiB at a time (benchmark inputs, training data:
    what a result records it was made from)."""
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()
