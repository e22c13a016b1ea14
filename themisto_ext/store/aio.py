"""The store as the server's event loop uses it: one async facade over the guarded store.

Every call runs in a worker thread. A store call is a disk or network round trip (a
PostgreSQL query, a SQLite write waiting for the lock another server holds): made on the
event loop, it would stall every other request and every live event of the server for
its duration. The one exception is ``quick``: the live scheduler's point reads and
writes of one prediction, which on an embedded SQLite file cost less on the loop than the
hop to a thread (measured: see ``quick``). The drivers are thread-safe (SQLite: one
connection behind a lock; PostgreSQL: a connection pool), the guard (``guarded.py``)
reopens a failed store and says why it cannot be used, and this facade is the one place
that decides where the calls run. Handlers and the live scheduler call only this;
ingestion, which already runs in a thread, and the CLI use the synchronous store.

Lazy reads are read a page at a time (``steps``, ``step_lines``): a page is a list,
read whole in the thread, so nothing iterates a cursor on the event loop.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import ParamSpec, TypeVar

from themisto_ext.records import NotebookRowInfo, Prediction, Step, StepSummary
from themisto_ext.store.base import Trajectory, TrajectoryFilter, TrajectoryStore
from themisto_ext.store.roster import ClassFilter
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
        return await self._call(work, self.sync)

    @property
    def problem(self) -> str | None:
        """Why the store cannot be used now (the guard's word), if it cannot."""
        problem: str | None = getattr(self.sync, "problem", None)
        return problem

    # ------------------------------------------------------------ trajectories

    async def get_trajectory(self, trajectory_id: str) -> Trajectory | None:
        return await self._call(self.sync.get_trajectory, trajectory_id)

    async def latest_for_kernel(self, kernel_id: str,
                                user: str | None = None) -> Trajectory | None:
        return await self._call(self.sync.latest_for_kernel, kernel_id, user)

    async def list_trajectories(self, where: TrajectoryFilter | None = None,
                                limit: int = 100, offset: int = 0) -> list[Trajectory]:
        return await self._call(self.sync.list_trajectories, where, limit, offset)

    async def count_trajectories(self, where: TrajectoryFilter | None = None) -> int:
        return await self._call(self.sync.count_trajectories, where)

    async def events(self, trajectory_id: str) -> list[dict[str, str]]:
        return await self._call(self.sync.events, trajectory_id)

    async def delete_trajectory(self, trajectory_id: str) -> bool:
        return await self._call(self.sync.delete_trajectory, trajectory_id)

    async def notebook_rows(self, where: ClassFilter) -> list[NotebookRowInfo]:
        return await self._call(self.sync.notebook_rows, where)

    async def consents(self, users: tuple[str, ...] | None = None) -> dict[str, bool]:
        return await self._call(self.sync.consents, users)

    async def set_consent(self, user: str, consent: bool, at: str) -> None:
        await self._call(self.sync.set_consent, user, consent, at)

    # ------------------------------------------------------------ steps

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

    async def step_summaries(self, trajectory_id: str, since_step: int = 0,
                             limit: int = 500) -> list[StepSummary]:
        return await self._call(self.sync.step_summaries, trajectory_id, since_step, limit)

    # ------------------------------------------------------------ predictions

    async def save_prediction(self, prediction: Prediction) -> bool:
        return await self._call(self.sync.save_prediction, prediction)

    async def predictions(self, trajectory_id: str, since_step: int = 0,
                          target_step: int | None = None, unscored: bool = False,
                          until_step: int | None = None,
                          slim: bool = False) -> list[Prediction]:
        return await self._call(self.sync.predictions, trajectory_id, since_step,
                                target_step, unscored, until_step, slim)

    async def get_prediction(self, prediction_id: str) -> Prediction | None:
        return await self._call(self.sync.get_prediction, prediction_id)

    def close(self) -> None:
        self.sync.close()
