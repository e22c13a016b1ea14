"""Durable trajectory storage behind a small interface (``TrajectoryStore``)."""

from __future__ import annotations

from pathlib import Path

from themisto_ext.store.base import (
    Applied,
    NewStep,
    NewTrajectory,
    RecordingSwitched,
    StoreError,
    StoreUnavailable,
    Trajectory,
    TrajectoryEnded,
    TrajectoryFilter,
    TrajectoryStore,
    Write,
)
from themisto_ext.store.sqlite import SQLiteStore


def open_store(location: str | Path) -> TrajectoryStore:
    """Open the store at ``location`` (a SQLite file path; other backends by URL later)."""
    return SQLiteStore(location)


__all__ = ["Applied", "NewStep", "NewTrajectory", "RecordingSwitched", "SQLiteStore",
           "StoreError", "StoreUnavailable", "Trajectory", "TrajectoryEnded",
           "TrajectoryFilter", "TrajectoryStore", "Write", "open_store"]
