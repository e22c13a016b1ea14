"""The one thread that runs every local-model job, first in first out, with supersession."""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field

from themisto_ext.prediction.clients.base import PredictionSuperseded, ProviderError
from themisto_ext.prediction.clients.local.engine import Run


@dataclass(eq=False)
class Job:
    kind: tuple[str, str] | None
    """(session, task): a newer job of the same kind supersedes a queued one."""
    run: Callable[[], Run]
    future: Future[Run] = field(default_factory=Future)


class Worker:
    """One thread runs every job, first in first out: a llama.cpp context is single-threaded.

    A session has at most one queued job per task: a newer one supersedes it, since the
    user has moved on to another cell. An output prediction is never superseded by the
    next-cell prediction that follows its cell's result. A running job is interrupted
    only by its caller giving up (see ``EvalMeter``).
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._wake = threading.Condition(self._lock)
        self._jobs: deque[Job] = deque()
        self._queued_by_kind: dict[tuple[str, str], Job] = {}
        self._thread: threading.Thread | None = None
        self._closed = False

    @property
    def queued(self) -> int:
        with self._lock:
            return len(self._jobs)

    def submit(self, job: Job) -> None:
        with self._lock:
            if self._closed:
                raise ProviderError("The local predictor is closed")
            if job.kind is not None:
                older = self._queued_by_kind.get(job.kind)
                if older is not None:
                    self._drop(older, PredictionSuperseded(
                        f"superseded by a newer {job.kind[1]} prediction in session "
                        f"{job.kind[0]}"))
                self._queued_by_kind[job.kind] = job
            self._jobs.append(job)
            if self._thread is None:
                self._thread = threading.Thread(target=self._loop, name="local-llm", daemon=True)
                self._thread.start()
            self._wake.notify()

    def _drop(self, job: Job, error: ProviderError) -> None:
        # Called with the lock held, so the worker cannot pick the job up meanwhile.
        self._jobs.remove(job)
        if job.kind is not None and self._queued_by_kind.get(job.kind) is job:
            del self._queued_by_kind[job.kind]
        if not job.future.done():  # its caller may have cancelled it already
            job.future.set_exception(error)

    def _loop(self) -> None:
        while True:
            with self._lock:
                while not self._jobs and not self._closed:
                    self._wake.wait()
                if not self._jobs:
                    return
                job = self._jobs.popleft()
                if job.kind is not None and self._queued_by_kind.get(job.kind) is job:
                    del self._queued_by_kind[job.kind]
                if not job.future.set_running_or_notify_cancel():
                    continue
            try:
                result = job.run()
            except Exception as exc:
                job.future.set_exception(exc)
            else:
                job.future.set_result(result)

    def close(self) -> threading.Thread | None:
        """Refuse new jobs and drop the queued ones; the running one finishes."""
        with self._lock:
            self._closed = True
            for job in list(self._jobs):
                self._drop(job, ProviderError("The local predictor was closed"))
            self._wake.notify()
            return self._thread
