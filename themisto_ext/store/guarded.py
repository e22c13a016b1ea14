"""A store that may not be usable yet: opened on first use, reopened after it failed, and
saying why it cannot be used instead of failing the server.

The server wraps its store in a guard (``guard``) so that it starts and stops whatever
state the store's path is in (a directory it may not write, a read-only file, a file that
is not a store, a disk that is full): every call then raises ``StoreUnavailable`` with the
reason (503 in the API), ``problem`` says the same for status reports, and the reason is
logged once when it appears and once when it goes away, never per call. Journals keep
every step meanwhile; they are ingested once the store can be written again.
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Callable, Iterator
from typing import Any, Protocol, TypeVar, cast

from themisto_ext.errors import StoreError, StoreUnavailable
from themisto_ext.store.base import LAZY, WRITES, TrajectoryStore, layer

log = logging.getLogger("themisto_ext.store")

T = TypeVar("T")

RETRY_SECONDS = 5.0
"""How often a store that could not be opened is tried again."""

_RETIRED_KEPT = 2
"""Stores replaced after a failed write that stay open for the readers still using them."""


def _guarded(method: Callable[..., Any]) -> Callable[..., Any]:
    """``method`` of the interface as the guard has it: called on the store through
    ``_call`` (a write when ``base.WRITES`` says so), a lazy read guarded to its end."""
    name, write, lazy = method.__name__, method.__name__ in WRITES, method.__name__ in LAZY

    @functools.wraps(method)
    def call(self: _Guard, /, *args: Any, **kwargs: Any) -> Any:
        result = self._call(lambda s: getattr(s, name)(*args, **kwargs), write=write)
        return self._paged(result) if lazy else result

    return call


class GuardedStore(TrajectoryStore, Protocol):
    """The guarded store as its users have it: the interface, and why it cannot be used."""

    problem: str | None


def guard(opener: Callable[[], TrajectoryStore], retry: float = RETRY_SECONDS,
          clock: Callable[[], float] = time.monotonic) -> GuardedStore:
    """The store ``opener`` opens, guarded: opened now if it can be, else on first use."""
    # ``layer`` made the interface's methods, which the type checker cannot see
    return cast(GuardedStore, _Guard(opener, retry, clock))


@layer(_guarded)
class _Guard:
    def __init__(self, opener: Callable[[], TrajectoryStore], retry: float = RETRY_SECONDS,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._opener = opener
        self._retry = retry
        self._clock = clock
        self._store: TrajectoryStore | None = None
        self._next_try = 0.0
        self._reopen_at: float | None = None
        self._retired: list[TrajectoryStore] = []
        self.problem: str | None = None
        """Why the store cannot be used (or written) now; None while it works."""
        try:
            self._open()
        except StoreError:
            pass  # said in ``problem`` and logged; tried again on use

    # ------------------------------------------------------------ health

    def _open(self) -> TrajectoryStore:
        if self._store is not None:
            return self._store
        if self.problem is not None and self._clock() < self._next_try:
            raise StoreUnavailable(self.problem)
        try:
            self._store = self._opener()
        except StoreError as exc:
            self._next_try = self._clock() + self._retry
            self._failed(str(exc))
            raise StoreUnavailable(str(exc)) from exc
        return self._store

    def _failed(self, reason: str) -> None:
        if reason != self.problem:
            log.error("themisto: %s; steps wait in the kernels' journals until it can be "
                      "written", reason)
        self.problem = reason

    def _call(self, work: Callable[[TrajectoryStore], T], write: bool = False) -> T:
        if write and self._reopen_at is not None:
            if self._clock() < self._reopen_at and self.problem is not None:
                raise StoreUnavailable(self.problem)
            # A store that refused a write is opened again before the next try: SQLite
            # keeps a file it opened read-only read-only, whatever happens to the file.
            self._reopen_at = None
            self._retire()
        store = self._open()
        try:
            result = work(store)
        except StoreUnavailable as exc:
            self._failed(str(exc))
            if write:
                self._reopen_at = self._clock() + self._retry
            raise
        if write and self.problem is not None:
            log.warning("themisto: the trajectory store can be written again")
            self.problem = None
        return result

    def _paged(self, items: Iterator[T]) -> Iterator[T]:
        """A lazy read, guarded to its end: a failure after its first page is reported
        (``problem``, the log) like any other call's, not only raised to the reader. It
        goes on reading the store it began on, even one put aside since."""
        try:
            yield from items
        except StoreUnavailable as exc:
            self._failed(str(exc))
            raise

    def _retire(self) -> None:
        """Put the store aside for a new one without closing it: a request on another
        thread may still be reading from it (``iter_steps`` is lazy), and closing it under
        that reader made its next page fail ("Cannot operate on a closed database", a 500).
        The oldest of those put aside is closed once there are more than a few."""
        if self._store is not None:
            self._retired.append(self._store)
            self._store = None
        while len(self._retired) > _RETIRED_KEPT:
            self._retired.pop(0).close()

    def close(self) -> None:
        for store in self._retired:
            store.close()
        self._retired.clear()
        if self._store is not None:
            self._store.close()
            self._store = None
