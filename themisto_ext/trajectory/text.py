"""Text as the trajectory format keeps it: outputs flattened the way a person read them,
colour codes removed, long texts cut in one way with one marker.

Used by the kernel hook (recording outputs and reprs), by importers of other logs and by
prompts, so that a cut text looks the same wherever it appears.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

# CSI sequences, and OSC sequences ended by BEL or ST. An OSC's text stops at the next ESC:
# "[^\x07]*" ran on to the end of the text from every unterminated "ESC ]", quadratic
# (200 kB of them: 7.8 s). An unterminated OSC is left as it is, as before.
_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)")


def strip_ansi(text: str) -> str:
    return _ANSI.sub("", text)


def plain_text(data: Mapping[str, Any]) -> str:
    """The text a person reads for a MIME bundle: text/plain, else a placeholder."""
    text = data.get("text/plain")
    if isinstance(text, list):
        text = "".join(str(part) for part in text)
    if isinstance(text, str):
        return text
    return " ".join(f"<{mime}>" for mime in data) or "<empty display>"


def flatten(items: Iterable[Mapping[str, Any]]) -> str:
    """One string in display order: streams verbatim, other outputs on lines of their own."""
    parts: list[str] = []  # joined once: repeated += copies the text so far (quadratic)
    ends_line, after_block = True, False
    for item in items:
        is_stream = item["output_type"] == "stream"
        text = str(item["text"])
        if parts and (after_block or not is_stream) and not ends_line:
            parts.append("\n")
            ends_line = True
        if text:
            parts.append(text)
            ends_line = text.endswith("\n")
        after_block = not is_stream
    return "".join(parts)


def omitted_marker(count: int) -> str:
    return f"[... {count} characters omitted ...]"


def clip(text: str, limit: int) -> str:
    """``text`` in at most ``limit`` characters: head and tail around a marker that says
    how much was left out.

    Tails matter as much as heads: a frame's ``[n rows x m columns]``, a traceback's error
    line, a log's last lines; two thirds of the room go to the head, one third to the tail.
    """
    return clip_ends(text, limit, str)


def clip_ends(text: Any, limit: int, decode: Any) -> str:
    """``clip(decode(text), limit)`` for anything sliced like a string (``bytes``,
    ``bytearray``, ``str``, with ``decode`` one item to one character), decoding only the
    head and tail that are kept: a 500 MB bytearray's repr copied it whole first."""
    if len(text) <= limit:
        return str(decode(text))
    keep = max(0, limit - len(omitted_marker(len(text))))
    tail = keep // 3
    head = keep - tail
    return (str(decode(text[:head])) + omitted_marker(len(text) - keep)
            + (str(decode(text[len(text) - tail:])) if tail else ""))
