"""The one thread that runs every local-model job: urgent ones first, then in order, with
supersession."""

from __future__ import annotations

import contextlib
import threading
import time
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
    """Generates; stops with ``PredictionSuperseded`` at its next token once ``abort`` is
    set."""
    abort: threading.Event = field(default_factory=threading.Event)
    urgent: bool = False
    """Predicts the output of a cell that runs or is about to: it runs before work that
    can wait (the next cell), and pauses it."""
    on_cpu: Callable[[float], None] | None = None
    """Called once a job that ran is over (answered, failed, given up, superseded) with
    the CPU seconds the process spent while it ran, pauses left out."""
    future: Future[Run] = field(default_factory=Future)
    cpu_seconds: float = 0.0
    started: bool = False
    paused: bool = False
    given_up: bool = False


class Worker:
    """One thread runs every job (a llama.cpp context is single-threaded): urgent jobs
    first, each kind in order.

    A session has at most one queued job per task: a newer one supersedes it, since the
    user has moved on to another cell. An output prediction is never superseded by the
    next-cell prediction that follows its cell's result. An urgent job pauses a running
    job that is not: it stops at its next token (see ``EvalMeter``) and runs again after,
    its prompt mostly still in the KV cache. A running job is otherwise interrupted only by
    its caller giving up.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._wake = threading.Condition(self._lock)
        self._jobs: deque[Job] = deque()
        self._queued_by_kind: dict[tuple[str, str], Job] = {}
        self._running: Job | None = None
        self._thread: threading.Thread | None = None
        self._closed = False

    @property
    def queued(self) -> int:
        # No lock: a job's done-callback, run with the lock held, reports it too.
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
            running = self._running
            if job.urgent and running is not None and not running.urgent:
                running.paused = True
                running.abort.set()
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

    def give_up(self, job: Job) -> None:
        """The caller no longer wants the answer: stop generating it, never run it again."""
        with self._lock:
            job.given_up = True
            job.abort.set()

    def _next(self) -> Job:
        # Called with the lock held and a job queued.
        job = next((j for j in self._jobs if j.urgent), self._jobs[0])
        self._jobs.remove(job)
        if job.kind is not None and self._queued_by_kind.get(job.kind) is job:
            del self._queued_by_kind[job.kind]
        return job

    def _loop(self) -> None:
        while True:
            with self._lock:
                while not self._jobs and not self._closed:
                    self._wake.wait()
                if not self._jobs:
                    return
                job = self._next()
                if not job.started:
                    if not job.future.set_running_or_notify_cancel():
                        continue
                    job.started = True
                self._running = job
            # The process's CPU, not this thread's: llama.cpp computes on threads of its own.
            began = time.process_time()
            over = True
            try:
                result = job.run()
            except PredictionSuperseded as exc:
                over = not self._resume_later(job)
                if over:
                    job.future.set_exception(exc)
            except Exception as exc:
                job.future.set_exception(exc)
            else:
                job.future.set_result(result)
            finally:
                job.cpu_seconds += time.process_time() - began
                with self._lock:
                    self._running = None
                if over and job.on_cpu is not None:
                    with contextlib.suppress(RuntimeError):  # its event loop has closed
                        job.on_cpu(job.cpu_seconds)

    def _resume_later(self, job: Job) -> bool:
        """Queue a paused job again, first of the jobs that can wait; False if it was
        given up, superseded meanwhile or the worker closed."""
        with self._lock:
            if not job.paused or job.given_up or self._closed:
                return False
            job.paused = False
            if job.kind is not None:
                if job.kind in self._queued_by_kind:
                    return False  # a newer job of its kind waits: that one will run
                self._queued_by_kind[job.kind] = job
            job.abort.clear()
            self._jobs.appendleft(job)
            return True

    def close(self) -> threading.Thread | None:
        """Refuse new jobs and drop the queued ones; the running one finishes."""
        with self._lock:
            self._closed = True
            for job in list(self._jobs):
                self._drop(job, ProviderError("The local predictor was closed"))
            self._wake.notify()
            return self._thread
