"""What the server does, without Jupyter: ingest kernel journals into the store, publish
what lands on the live stream, hand it to live predictions, switch kernels' recording and
say truthfully whether each kernel is being recorded.

The extension app (``app.py``) configures and owns one ``Themisto``; the REST handlers
(``api/``) reach it through the tornado settings and call one method per request.
"""

from __future__ import annotations

import asyncio
import ctypes
import glob
import logging
import os
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from themisto_ext.contract import (
    file_safe,
    read_status,
    read_switch,
    status_path,
    switch_path,
    write_switch,
)
from themisto_ext.errors import (
    JournalUnavailable,
    NotFound,
    StoreError,
    StoreUnavailable,
    ThemistoError,
)
from themisto_ext.events import LiveEvents, recording_event, step_event, trajectory_event
from themisto_ext.ingest import IngestResult, JournalIngestor, moved_path
from themisto_ext.journal import SUFFIX
from themisto_ext.prediction.live import LivePredictions, score_landed
from themisto_ext.records import Prediction, Scope
from themisto_ext.redaction import Redactor
from themisto_ext.server.access import AccessPolicy
from themisto_ext.server.settings import ServerSettings
from themisto_ext.store import TrajectoryFilter
from themisto_ext.store.aio import AsyncStore

log = logging.getLogger("themisto_ext.server")

SETTINGS_KEY = "themisto"
"""Where handlers find the ``Themisto`` in the tornado settings."""
STATUS_EVERY = 1.0
"""Seconds between checks of every running kernel's recording status (a change is
published as a ``recording`` event)."""
HEARTBEAT = 10.0
"""Seconds between the live stream's heartbeats (``ThemistoExtension.heartbeat_interval``)."""
TRIM_AFTER = 32 * 1024 * 1024
"""Journal bytes ingested after which the C allocator is asked to give freed memory back.

Steps pass through the server as large strings (JSON lines, parsed steps, events) that
are freed once stored and published, but glibc's malloc keeps freed blocks of this size
in its heaps: 1,000 cells of 150 KB left RSS 100 MB above its start with nothing held
(tracemalloc: the Python heap back at its start). ``malloc_trim`` returns them (measured:
-96 MB after 300 such cells; benchmarks/server_memory.py)."""


def release_memory() -> None:
    """Give the heap's free pages back to the OS (glibc only; elsewhere nothing)."""
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass


@dataclass(frozen=True)
class KernelState:
    """Whether a kernel is being recorded, and if not although it should be, why."""

    recording: bool
    reason: str | None = None


class Themisto:
    def __init__(self, *, settings: ServerSettings, store: AsyncStore, live: LivePredictions,
                 events: LiveEvents, access: AccessPolicy | None = None,
                 running_kernels: Callable[[], Iterable[str]] | None = None,
                 notebook_exists: Callable[[str], bool] | None = None) -> None:
        self.settings = settings
        self.store = store
        """The store as handlers and the live scheduler use it: every call off the event
        loop (``store/aio.py``); ingestion, in a thread of its own, uses ``store.sync``."""
        self.redactor = Redactor.of(settings.capture)
        """Masks secrets in cell text the front end sends before the cell runs."""
        self.access = access or AccessPolicy(server_user="")
        self.user = self.access.server_user
        """The owner of every trajectory this server's kernels record."""
        self.journal_dir = settings.journal_dir
        self.live = live
        self.events = events
        self.running_kernels = running_kernels
        """The ids of the kernels this server runs (None: unknown, e.g. without Jupyter)."""
        # The synchronous store, for the ingestion thread only: event-loop code reaches the
        # store through the async facade (tests/test_architecture.py holds it to that).
        self._sync_store = store.sync
        self.ingestor = JournalIngestor(self.journal_dir, store.sync, user=self.user)
        self.ingestor.level = settings.capture.level
        self.ingestor.windows_per_pass = 1  # the loop comes back 50 ms later for the rest
        if notebook_exists is not None:
            self.ingestor.notebook_exists = notebook_exists
        self._ingest_lock = asyncio.Lock()
        self.consent = True
        """The user's choice to be recorded (read from the store at start; ``set_consent``).
        While off, kernels start with recording off and what any kernel writes is dropped."""
        self.ingestor.accepting = lambda: self.consent
        self.on_consent: Callable[[bool], None] = lambda on: None
        """Told of every change of ``consent`` (the app tells its kernel provisioner)."""
        # Ingestion has a thread of its own: in the loop's shared pool (6 threads on 2
        # cores) a journal scan queued behind the store calls of the predictions that the
        # last scan started, and with 8 kernels running cells a step reached the page a
        # median 120-155 ms after its cell ended instead of 75-85 ms.
        self._ingest_thread = ThreadPoolExecutor(1, thread_name_prefix="themisto-ingest")
        self._ingest_task: asyncio.Task[None] | None = None
        self._heartbeat_task: asyncio.Task[None] | None = None
        self._ingest_problem: str | None = None
        self._published: dict[str, KernelState] = {}
        self._refused: dict[str, str] = {}
        """Kernel id -> why the store refuses what it records (until it starts anew)."""
        self._untrimmed = self._tick_bytes = 0

    # ------------------------------------------------------------ lifecycle

    async def start(self, interval: float, heartbeat: float = HEARTBEAT) -> None:
        try:
            consents = await self.store.run(lambda s: s.consents((self.user,)))
            self.consent = consents.get(self.user, True)
        except ThemistoError:
            # Unknown until the store answers: nothing is stored meanwhile anyway (the
            # journals wait), and an opt-out is re-read at the next consent request.
            pass
        self.on_consent(self.consent)
        await self.ingest_or_say_why()  # whatever kernels wrote while no server was running
        self._ingest_task = asyncio.create_task(self._ingest_forever(interval))
        self._heartbeat_task = asyncio.create_task(self._beat_forever(heartbeat))

    async def stop(self) -> None:
        for task in (self._ingest_task, self._heartbeat_task):
            if task is not None:
                task.cancel()
        await self.ingest_or_say_why()
        await self.live.aclose()
        self._ingest_thread.shutdown(wait=False)
        self.store.close()

    async def _beat_forever(self, interval: float) -> None:
        """A heartbeat on the live stream: how a page learns, without asking, that its
        connection is down (none comes) or that it missed events (its seq)."""
        while True:
            self.events.heartbeat(interval)
            await asyncio.sleep(interval)

    async def _ingest_forever(self, interval: float) -> None:
        loop = asyncio.get_running_loop()
        next_status = loop.time()
        while True:
            await asyncio.sleep(interval)
            await self.ingest_or_say_why()
            if loop.time() >= next_status:
                next_status = loop.time() + STATUS_EVERY
                await self.publish_changes()
                # trimmed while steps keep coming, and once more when they stop
                busy, self._tick_bytes = self._tick_bytes, 0
                if self._untrimmed >= TRIM_AFTER or (self._untrimmed and not busy):
                    self._untrimmed = 0
                    await asyncio.to_thread(release_memory)

    async def ingest_or_say_why(self) -> None:
        """One ingestion pass that never raises: a failure is logged once per cause (not
        per pass) and reported as every kernel's recording status."""
        try:
            await self.ingest_now()
        except StoreUnavailable as exc:
            self._ingest_failed(str(exc), logged=True)  # the store has said it once
        except StoreError as exc:  # the store refused the records whole (a quota reached)
            if str(exc) != self._ingest_problem:
                log.warning("themisto: %s; the journals keep the steps, retrying", exc)
            self._ingest_problem = str(exc)
        except Exception as exc:
            self._ingest_failed(f"journal ingestion failed: {exc}", logged=False)
        else:
            if self._ingest_problem is not None:
                log.warning("themisto: journal ingestion works again")
                self._ingest_problem = None

    def _ingest_failed(self, reason: str, logged: bool) -> None:
        if reason != self._ingest_problem and not logged:
            log.exception("themisto: %s; retrying", reason)
        self._ingest_problem = reason

    # ------------------------------------------------------------ ingestion

    async def ingest_now(self) -> IngestResult:
        loop = asyncio.get_running_loop()
        async with self._ingest_lock:
            result = await loop.run_in_executor(self._ingest_thread, self.ingestor.poll)
        # (one thread hop for all, and none on the many passes that found nothing)
        new = await self.store.run(lambda s: [s.get_trajectory(tid)
                                              for tid in result.new_trajectories]) \
            if result.new_trajectories else []
        for trajectory in new:
            if trajectory is not None:
                self._refused.pop(trajectory.kernel_id, None)  # a new start, accepted
                self.events.publish(trajectory_event(trajectory.to_json()))
        for tid, kernel_id in result.refused.items():
            await self._refuse(kernel_id, tid)
        for step in result.steps:
            self.events.publish(step_event(step))
        switched = await self.store.run(lambda s: [s.get_trajectory(switch.trajectory_id)
                                                   for switch in result.switches]) \
            if result.switches else []
        for switch, trajectory in zip(result.switches, switched, strict=True):
            if trajectory is not None:
                scope = Scope.of(trajectory.to_json(), trajectory.id)
                self.events.publish(recording_event(trajectory.kernel_id, switch.on, scope))
        # Scored once the steps are out (on a database, a round trip or more per
        # trajectory that a cell's step need not wait for), in the ingestion thread: in the
        # loop's shared pool it queued behind the predictions' own store calls. On an
        # embedded file, on the loop (``AsyncStore.quick``).
        scores: list[tuple[Scope, Prediction]] | None = None
        if result.steps and not self.store.embedded:
            scores = await loop.run_in_executor(self._ingest_thread, score_landed,
                                                self._sync_store, result.steps)
        if self.settings.live_predictions:
            await self.live.on_ingest(result, scores)
        else:
            await self.live.score_only(result, scores)
        for tid in result.ended:
            self.live.forget(tid)
        self._untrimmed += result.read_bytes
        self._tick_bytes += result.read_bytes
        return result

    async def _refuse(self, kernel_id: str, trajectory_id: str) -> None:
        """Another user's trajectory holds this kernel's trajectory id: nothing it records
        can be stored. Said in the kernel's state, the status bar and the log, at once."""
        reason = (f"not stored: trajectory id {trajectory_id} belongs to another user's "
                  "recording; restart the kernel to record under a new id")
        if self._refused.get(kernel_id) != reason:
            log.warning("themisto: kernel %s: %s", kernel_id, reason)
        self._refused[kernel_id] = reason
        state = self.kernel_state(kernel_id)
        self._published[kernel_id] = state
        await self._publish_state(kernel_id, state)

    # ------------------------------------------------------------ recording status

    def kernel_recording(self, kernel_id: str) -> bool:
        """The kernel's switch (its own, else the configured default); never while the
        user has opted out (nothing a kernel writes is stored then)."""
        if not self.consent:
            return False
        switched = read_switch(switch_path(self.journal_dir, kernel_id))
        return self.settings.capture.recording if switched is None else switched

    def kernel_state(self, kernel_id: str) -> KernelState:
        """Recorded or not, and why not when it should be: the API never says a kernel is
        recorded when its steps cannot reach the store."""
        if not self.kernel_recording(kernel_id):
            return KernelState(False)
        if self.running_kernels is not None and kernel_id not in set(self.running_kernels()):
            return KernelState(False, f"no kernel {kernel_id} is running on this server")
        problem = self.journal_problem() or self._refused.get(kernel_id)
        if problem is None:
            status = read_status(status_path(self.journal_dir, kernel_id))
            if status is not None and not status.ok:
                problem = status.reason or "the kernel cannot record"
        problem = problem or self.store_problem()
        return KernelState(problem is None, problem)

    def journal_problem(self) -> str | None:
        """Why kernels cannot write their journals here, if they cannot."""
        try:
            self.journal_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        except OSError as exc:
            return f"the journal directory {self.journal_dir} cannot be created " \
                   f"({exc.strerror or exc})"
        if not os.access(self.journal_dir, os.W_OK | os.X_OK):
            return f"the journal directory {self.journal_dir} cannot be written"
        return None

    def store_problem(self) -> str | None:
        """Why what kernels record cannot reach the store now, if it cannot."""
        return self.store.problem or self._ingest_problem

    async def publish_changes(self) -> None:
        """Publish a ``recording`` event for every running kernel whose state changed."""
        if self.running_kernels is None:
            return
        running = set(self.running_kernels())
        for kernel_id in list(self._published):
            if kernel_id not in running:
                del self._published[kernel_id]
        for kernel_id in running:
            state = self.kernel_state(kernel_id)
            if self._published.get(kernel_id) != state:
                known = kernel_id in self._published
                self._published[kernel_id] = state
                if known or state.reason is not None:
                    await self._publish_state(kernel_id, state)

    async def _publish_state(self, kernel_id: str, state: KernelState) -> None:
        try:
            latest = await self.store.run(lambda s: s.latest_for_kernel(kernel_id, self.user))
        except StoreUnavailable:
            latest = None
        scope = Scope.of(latest.to_json(), latest.id) if latest else None
        self.events.publish(recording_event(kernel_id, state.recording, scope, state.reason))

    async def set_kernel_recording(self, kernel_id: str, on: bool) -> KernelState:
        if self.running_kernels is not None and kernel_id not in set(self.running_kernels()):
            # No switch file for a kernel that does not exist (it would lie there forever).
            raise NotFound(f"no kernel {kernel_id} is running on this server")
        try:
            write_switch(switch_path(self.journal_dir, kernel_id), on)
        except OSError as exc:
            raise JournalUnavailable(
                f"cannot switch recording: {self.journal_problem() or exc.strerror}") from exc
        state = self.kernel_state(kernel_id)
        self._published[kernel_id] = state
        await self._publish_state(kernel_id, state)
        return state

    async def warm(self, kernel_id: str) -> None:
        """A notebook opened (its page read the kernel's state): the model sessions its
        kernel's predictions use are warmed in the background (``LivePredictions.warm``)."""
        if not self.settings.live_predictions:
            return
        try:
            latest = await self.store.run(lambda s: s.latest_for_kernel(kernel_id, self.user))
        except ThemistoError:
            return  # the kernel's state says why the store cannot be read
        if latest is None or latest.ended_at is None:
            self.live.warm(None if latest is None else latest.id,
                           0 if latest is None else latest.steps)

    def mask_cell(self, code: str) -> str:
        """A cell's text sent before it runs, as its kernel will record it: the literals it
        gives secret-looking names, keyword values and credential formats masked (no
        kernel has seen it yet; what the kernel learnt of secrets stays in the kernel)."""
        return self.redactor.mask_code(code)

    # ------------------------------------------------------------ renames

    async def notebook_moved(self, old: str, new: str,
                             sessions: Iterable[tuple[str, str]] = ()) -> int:
        """A notebook or folder was renamed: its history follows it, and so does what the
        kernels of its ``sessions`` (kernel id, path before the rename) record later: they
        were launched with the old path and say it again after a restart. Applied between
        two ingestion passes, so that a trajectory is moved whichever side of the rename
        it was stored on. Returns the number of trajectories moved."""
        old, new = old.strip("/"), new.strip("/")
        # A session may already have been told its new path (JupyterLab does so right
        # after the rename); its kernel was still launched with the old one.
        kernels = {kernel: path for kernel, path in
                   ((kernel, moved_path(path, old, new) or moved_path(path, new, new))
                    for kernel, path in sessions) if path}
        async with self._ingest_lock:
            moved: int = await asyncio.get_running_loop().run_in_executor(
                self._ingest_thread, self.ingestor.move_notebook, old, new, kernels)
        return moved

    # ------------------------------------------------------------ the user's choices

    async def set_consent(self, on: bool, at: str) -> None:
        """Record the user's choice; off: every running kernel stops recording and new
        ones start with recording off; on: running kernels record again."""
        await self.store.run(lambda s: s.set_consent(self.user, on, at))
        async with self._ingest_lock:  # no pass reads journals under the old choice
            self.consent = on
        self.on_consent(on)
        for kernel_id in list(self.running_kernels() if self.running_kernels else []):
            try:
                await self.set_kernel_recording(kernel_id, on)
            except ThemistoError:
                pass  # it stopped meanwhile, or its switch cannot be written: dropped anyway

    async def delete_user_data(self) -> tuple[int, int]:
        """Everything this server's user recorded: their trajectories (steps, predictions,
        events) from the store, and every journal here. Returns (trajectories, journals)."""
        where = TrajectoryFilter(user=self.user)
        ids = [t.id for t in await self.store.run(
            lambda s: s.list_trajectories(where, limit=10**9))]
        for tid in ids:
            await self.delete_trajectory(tid)
        running = tuple(f"{file_safe(k)}--" for k in (self.running_kernels() if self.running_kernels
                                           else []))
        journals = 0
        async with self._ingest_lock:
            for journal in self.journal_dir.glob(f"*{SUFFIX}"):
                await asyncio.get_running_loop().run_in_executor(
                    self._ingest_thread, self._empty_journal, journal,
                    not journal.name.startswith(running) if running else True)
                journals += 1
        return len(ids), journals

    # ------------------------------------------------------------ deletion

    async def delete_trajectory(self, trajectory_id: str) -> None:
        """Delete from the store and empty the kernel's journal: deleted means gone.

        A running kernel goes on recording: it keeps appending to its journal (emptied,
        not removed, so that its open file stays the journal) and its later cells are
        stored under the same trajectory id, numbered on. A journal whose trajectory has
        ended is removed.
        """
        async with self._ingest_lock:
            trajectory = await self.store.run(lambda s: s.get_trajectory(trajectory_id))
            ended = trajectory is not None and trajectory.ended_at is not None
            await self.store.run(lambda s: s.delete_trajectory(trajectory_id))
            for journal in self.journal_dir.glob(f"*--{glob.escape(trajectory_id)}{SUFFIX}"):
                self._empty_journal(journal, ended)
            self.live.forget(trajectory_id)

    def _empty_journal(self, journal: Path, ended: bool) -> None:
        """Remove a journal (its kernel is gone) or empty it (its kernel may be writing:
        its open file stays the journal), and read it from its start next time."""
        try:
            if ended:
                journal.unlink(missing_ok=True)
            else:
                os.truncate(journal, 0)
        except FileNotFoundError:
            pass
        except OSError as exc:
            raise JournalUnavailable(f"journal {journal} could not be emptied "
                                     f"({exc.strerror})") from exc
        self.ingestor.forget(journal.name)
