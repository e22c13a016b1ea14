"""Durable trajectory storage behind a small interface (``TrajectoryStore``)."""

from __future__ import annotations

from pathlib import Path
from typing import cast

from themisto_ext.store.aio import AsyncStore
from themisto_ext.store.base import (
    Applied,
    NewStep,
    NewTrajectory,
    NotebookMoved,
    RecordingSwitched,
    StoreError,
    StoreUnavailable,
    Trajectory,
    TrajectoryEnded,
    TrajectoryFilter,
    TrajectoryStore,
    Write,
    refused_write,
    trajectory_of,
)
from themisto_ext.store.guarded import GuardedStore, guard
from themisto_ext.store.sqlite import SQLiteStore
from themisto_ext.store.url import POSTGRESQL, SERVICE, SQLITE, StoreURL, parse_store_url


def open_store(location: str | Path | StoreURL, readonly: bool = False) -> TrajectoryStore:
    """Open the store at ``location``: ``sqlite:///path`` or a plain path (a SQLite file),
    or ``postgresql://user@host:port/db`` (password from PGPASSWORD or ~/.pgpass), or the
    hub's Themisto service, ``http(s)://host:port/`` (``remote.py``; the token from
    ``JUPYTERHUB_API_TOKEN``).

    ``readonly``: for commands that only read; a missing SQLite store or a file that is
    not one is an error, and nothing is created or changed (a database is never created
    by opening it: it must exist)."""
    url = location if isinstance(location, StoreURL) else parse_store_url(location)
    if url.engine == POSTGRESQL:
        from themisto_ext.store.postgres import PostgresStore  # psycopg only when used

        return PostgresStore(url)
    if url.engine == SERVICE:
        from themisto_ext.store.remote import RemoteStore

        # ``layer`` made the interface's methods, which the type checker cannot see
        return cast(TrajectoryStore, RemoteStore(url))
    return SQLiteStore(url.path, readonly=readonly)


__all__ = ["POSTGRESQL", "SERVICE", "SQLITE", "Applied", "AsyncStore", "GuardedStore", "NewStep",
           "NewTrajectory", "NotebookMoved", "RecordingSwitched", "SQLiteStore", "StoreError",
           "StoreURL", "StoreUnavailable", "Trajectory", "TrajectoryEnded", "TrajectoryFilter",
           "TrajectoryStore", "Write", "guard", "open_store", "parse_store_url", "refused_write",
           "trajectory_of"]
