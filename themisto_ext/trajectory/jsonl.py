"""The one reader of JSON Lines files: trajectories, benchmark examples, results.

It streams (a file of any size is read one line at a time), numbers lines as editors do,
skips blank lines, and hands each line's raw text on with its parsed value or the reason
it could not be parsed: callers decide whether a bad line is fatal (a benchmark file) or
skipped and counted (results cut off by an interrupted run).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any


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


def iter_jsonl(path: Path) -> Iterator[JsonLine]:
    """Every non-blank line of a UTF-8 JSONL file, parsed, in order.

    Raises ``UnicodeDecodeError`` on bytes that are not UTF-8 and ``OSError`` when the file
    cannot be read: both concern the whole file, not a line.
    """
    with path.open("r", encoding="utf-8", errors="strict") as fh:
        for number, raw in enumerate(fh, start=1):
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
