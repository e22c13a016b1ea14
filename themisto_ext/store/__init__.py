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
from themisto_ext.store.guarded import GuardedStore
from themisto_ext.store.sqlite import SQLiteStore


def open_store(location: str | Path, readonly: bool = False) -> TrajectoryStore:
    """Open the store at ``location`` (a SQLite file path; other backends by URL later).

    ``readonly``: for commands that only read; a missing store or a file that is not one
    is an error, and nothing is created or changed."""
    return SQLiteStore(location, readonly=readonly)


__all__ = ["Applied", "GuardedStore", "NewStep", "NewTrajectory", "RecordingSwitched",
           "SQLiteStore", "StoreError", "StoreUnavailable", "Trajectory", "TrajectoryEnded",
           "TrajectoryFilter", "TrajectoryStore", "Write", "open_store"]
