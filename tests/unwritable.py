"""Make a real file or directory unwritable, also for root (tests and CI run as root).

Root ignores permission bits, so for root the file gets the immutable attribute
(``chattr +i``: nobody may change, create or remove anything in it); anyone else gets
its write bits removed. Undone on exit, so that the test's temporary folder can go.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


def _chattr(flag: str, path: Path) -> None:
    subprocess.run(["chattr", flag, str(path)], check=True, capture_output=True)


@contextmanager
def unwritable(path: Path) -> Iterator[Path]:
    if os.geteuid() == 0:
        _chattr("+i", path)
        try:
            yield path
        finally:
            _chattr("-i", path)
    else:
        mode = path.stat().st_mode
        path.chmod(mode & ~0o222)
        try:
            yield path
        finally:
            path.chmod(mode)


def writable_again(path: Path) -> None:
    """Undo ``unwritable`` early (its exit then changes nothing)."""
    if os.geteuid() == 0:
        _chattr("-i", path)
    else:
        path.chmod(path.stat().st_mode | 0o200)
