"""Default locations shared by the kernel hook, the server and the CLI.

The kernel writes journals where the server (or the CLI) ingests them, so both sides
must agree on the defaults without importing each other.
"""

from __future__ import annotations

import os
from pathlib import Path

from jupyter_core.paths import jupyter_data_dir

JOURNAL_DIR_ENV = "THEMISTO_JOURNAL_DIR"
STORE_PATH_ENV = "THEMISTO_STORE_PATH"


def default_home() -> Path:
    return Path(jupyter_data_dir()) / "themisto"


def default_store_path() -> Path:
    env = os.environ.get(STORE_PATH_ENV)
    return Path(env) if env else default_home() / "trajectories.sqlite3"


def journal_dir_for(store_path: Path) -> Path:
    """Journals live beside the store they feed, so one store never ingests another's kernels."""
    return store_path.parent / "journal"


def default_journal_dir() -> Path:
    env = os.environ.get(JOURNAL_DIR_ENV)
    return Path(env) if env else default_home() / "journal"


def control_path(journal_dir: Path, kernel_id: str) -> Path:
    """Per-kernel switch the server writes and the kernel hook reads (recording on/off)."""
    safe = "".join(c for c in kernel_id if c.isalnum() or c in "-_.")
    return journal_dir / "control" / f"{safe}.json"
