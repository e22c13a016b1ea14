"""The store as the server's event loop uses it: one async facade over the guarded store.

Every call runs in a worker thread. A store call is a disk or network round trip (a
PostgreSQL query, a SQLite write waiting for the lock another server holds): made on the
event loop, it would stall every other request and every live event of the server for
its duration. The one exception is ``quick``: the live scheduler's point reads and
writes of one prediction, which on an embedded SQLite file cost less on the loop than the
hop to a thread (measured: see ``quick``). The drivers are thread-safe (SQLite: one
connection behind a lock; PostgreSQL: a connection pool), the guard (``guarded.py``)
reopens a failed store and says why it cannot be used, and this facade is the one place
that decides where the calls run: ``run`` (a worker thread), ``quick`` (the loop, where
that is cheaper). Handlers and the live scheduler call only this;
ingestion, which already runs in a thread, and the CLI use the synchronous store.

Lazy reads are read a page at a time (``steps``, ``step_lines``): a page is a list,
read whole in the thread, so nothing iterates a cursor on the event loop.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import ParamSpec, TypeVar

from themisto_ext.records import Step
from themisto_ext.store.base import TrajectoryStore
from themisto_ext.store.sqlite import SQLiteStore

P = ParamSpec("P")
T = TypeVar("T")


class AsyncStore:
    def __init__(self, store: TrajectoryStore, embedded: bool | None = None) -> None:
        self.sync = store
        """The store itself, for code that already runs in a thread."""
        self.embedded = isinstance(store, SQLiteStore) if embedded is None else embedded
        """An SQLite file this process opens, not a database server (``quick``)."""

    @staticmethod
    async def _call(work: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        return await asyncio.to_thread(work, *args, **kwargs)

    async def run(self, work: Callable[[TrajectoryStore], T]) -> T:
        """``work(store)`` in a worker thread: ``await store.run(lambda s:
        s.get_trajectory(tid))``. Any method of the interface, as the interface types it:
        the facade writes none of them again."""
        return await self._call(work, self.sync)

    async def quick(self, work: Callable[[TrajectoryStore], T]) -> T:
        """``work(store)`` for a few point reads and writes (a trajectory by id, a
        prediction saved, the scores of the steps one scan found): on the event loop where
        the store is an embedded SQLite file (a fraction of a millisecond; in the pool its
        one connection's lock and the GIL were fought over by threads), in one worker
        thread where each call is a network round trip (PostgreSQL). Measured with 8
        kernels running cells (``benchmarks/server_api.py``, 4-7 runs each): every call in
        the pool, a step reached the page a median 90-150 ms after its cell ended; with
        these on the loop, 51-96 ms (p95 94-208), as before the facade (72-76, p95
        117-138)."""
        if self.embedded:
            return work(self.sync)
        return await self.run(work)

    @property
    def problem(self) -> str | None:
        """Why the store cannot be used now (the guard's word), if it cannot."""
        problem: str | None = getattr(self.sync, "problem", None)
        return problem

    # ------------------------------------------------------------ lazy reads, a page at once

    async def steps(self, trajectory_id: str, since_step: int = 0,
                    limit: int | None = None) -> list[Step]:
        """Steps after ``since_step``, at most ``limit`` (all without one)."""
        def page() -> list[Step]:
            return list(self.sync.iter_steps(trajectory_id, since_step, limit))
        return await self._call(page)

    async def step_lines(self, trajectory_id: str, since_step: int = 0,
                         limit: int | None = None) -> list[tuple[int, str]]:
        """``(step, JSON line)`` after ``since_step``, as ``iter_step_lines`` gives them."""
        def page() -> list[tuple[int, str]]:
            return list(self.sync.iter_step_lines(trajectory_id, since_step, limit))
        return await self._call(page)

    def close(self) -> None:
        self.sync.close()
