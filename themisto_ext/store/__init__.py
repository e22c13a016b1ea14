"""Durable trajectory storage behind a small interface (``TrajectoryStore``)."""

from __future__ import annotations

from pathlib import Path

from themisto_ext.store.base import (
    IngestResult,
    StoreError,
    Trajectory,
    TrajectoryFilter,
    TrajectoryStore,
)
from themisto_ext.store.sqlite import SQLiteStore


def open_store(location: str | Path) -> TrajectoryStore:
    """Open the store at ``location`` (a SQLite file path; other backends by URL later)."""
    return SQLiteStore(location)


__all__ = ["IngestResult", "SQLiteStore", "StoreError", "Trajectory", "TrajectoryFilter",
           "TrajectoryStore", "open_store"]
