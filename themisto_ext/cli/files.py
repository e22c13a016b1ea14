"""Where a command may write: never over its own input or its store, and never over an
existing file of another kind unless ``--force`` says so.

Sameness is decided on the files themselves (device and inode when both exist, the real
path otherwise), so a symlink, a hard link or a ``./`` spelling of an input is caught:
``themisto export ID --out STORE`` truncated the store it was reading to 0 bytes, and
``themisto record nb.ipynb --out nb.ipynb`` replaced the notebook with JSONL.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Iterable
from pathlib import Path

from themisto_ext.errors import OutputRefused as OutputRefused  # re-exported: raised here
from themisto_ext.store import SQLITE, StoreURL

SQLITE_HEADER = b"SQLite format 3\x00"
PNG_HEADER = b"\x89PNG\r\n\x1a\n"
_HEAD = 64 * 1024
"""Bytes read from an existing file to tell its kind (a step line is usually shorter)."""

KINDS = {"jsonl": "trajectory JSONL", "json": "JSON", "markdown": "text", "png": "PNG image"}


def store_files(url: StoreURL | None) -> list[Path]:
    """The files a SQLite store consists of (its WAL, shared memory and rollback journal)."""
    if url is None or url.engine != SQLITE:
        return []
    return [url.path] + [Path(f"{url.path}{suffix}") for suffix in ("-wal", "-shm", "-journal")]


def _same(a: Path, b: Path) -> bool:
    try:
        first, second = a.stat(), b.stat()
    except OSError:  # one of them does not exist (yet): compare where they lead
        return os.path.realpath(a) == os.path.realpath(b)
    return (first.st_dev, first.st_ino) == (second.st_dev, second.st_ino)


def _is_kind(path: Path, kind: str) -> bool:
    """Whether the existing regular file at ``path`` holds what a command writing ``kind``
    writes (so writing over it replaces an older result, not someone's data)."""
    with path.open("rb") as fh:
        head = fh.read(_HEAD)
    if not head:
        return True  # an empty file holds nothing to lose
    if head.startswith(SQLITE_HEADER):
        return False
    if kind == "png":
        return head.startswith(PNG_HEADER)
    if b"\0" in head:
        return False
    text = head.decode("utf-8", errors="replace")
    notebook = '"nbformat"' in text and '"cells"' in text
    if kind == "jsonl":
        line, newline, _ = text.partition("\n")
        if not newline and len(head) == _HEAD:  # a first line longer than we read
            return line.startswith('{"') and not notebook
        try:
            first = json.loads(line)
        except ValueError:
            return False
        return isinstance(first, dict) and "nbformat" not in first
    if kind == "json":
        return text.lstrip().startswith(("{", "[")) and not notebook
    return not text.lstrip().startswith(("{", "["))  # markdown: text, not a JSON document


def check_output(path: Path | str | None, kind: str, *, inputs: Iterable[Path | str] = (),
                 store: StoreURL | None = None, force: bool = False) -> None:
    """Refuse to write ``path`` when it is one of the command's ``inputs`` or a file of its
    ``store`` (whatever ``force`` says: that would destroy what is being read), or an
    existing file that is not of ``kind`` (unless ``force``). ``-`` and ``None`` (standard
    output, no output) pass; so do pipes and devices, which writing cannot destroy."""
    if path is None or str(path) == "-":
        return
    out = Path(path)
    for source in [Path(p) for p in inputs] + store_files(store):
        if _same(out, source):
            what = "the trajectory store" if source in store_files(store) else "an input"
            raise OutputRefused(f"{out} is {what} of this command ({source}); "
                                "write the output to another file")
    try:
        mode = out.stat().st_mode
    except FileNotFoundError:
        return
    except OSError as exc:
        raise OutputRefused(f"{out}: cannot be written ({exc.strerror})") from exc
    if stat.S_ISDIR(mode):
        raise OutputRefused(f"{out} is a directory; give a file name")
    if not stat.S_ISREG(mode) or force:
        return
    try:
        ours = _is_kind(out, kind)
    except OSError as exc:
        raise OutputRefused(f"{out}: cannot be read to check what it holds ({exc.strerror})") \
            from exc
    if not ours:
        raise OutputRefused(f"{out} exists and is not a {KINDS[kind]} file this command "
                            "wrote; nothing was written (pass --force to replace it)")
