"""What the server does, without Jupyter: ingest kernel journals into the store, publish
what lands on the live stream, hand it to live predictions, switch kernels' recording.

The extension app (``app.py``) configures and owns one ``Themisto``; the REST handlers
(``api/``) reach it through the tornado settings and call one method per request.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

from themisto_ext.contract import read_switch, switch_path, write_switch
from themisto_ext.events import (
    EventBus,
    Scope,
    recording_event,
    step_event,
    trajectory_event,
)
from themisto_ext.ingest import IngestResult, JournalIngestor
from themisto_ext.journal import SUFFIX
from themisto_ext.prediction.live import LivePredictions
from themisto_ext.server.access import AccessPolicy
from themisto_ext.store import TrajectoryStore

log = logging.getLogger("themisto_ext.server")

SETTINGS_KEY = "themisto"
"""Where handlers find the ``Themisto`` in the tornado settings."""


class Themisto:
    def __init__(self, *, store: TrajectoryStore, journal_dir: Path, recording: bool,
                 live: LivePredictions, events: EventBus, live_predictions: bool,
                 max_body_bytes: int, access: AccessPolicy | None = None) -> None:
        self.store = store
        self.access = access or AccessPolicy(server_user="")
        self.user = self.access.server_user
        """The owner of every trajectory this server's kernels record."""
        self.journal_dir = journal_dir
        self.recording_default = recording
        self.live = live
        self.events = events
        self.live_predictions = live_predictions
        self.max_body_bytes = max_body_bytes
        self.ingestor = JournalIngestor(journal_dir, store, user=self.user)
        self._ingest_lock = asyncio.Lock()
        self._ingest_task: asyncio.Task[None] | None = None

    # ------------------------------------------------------------ lifecycle

    async def start(self, interval: float) -> None:
        await self.ingest_now()  # whatever kernels wrote while no server was running
        self._ingest_task = asyncio.create_task(self._ingest_forever(interval))

    async def stop(self) -> None:
        if self._ingest_task is not None:
            self._ingest_task.cancel()
        await self.ingest_now()
        await self.live.aclose()
        self.store.close()

    async def _ingest_forever(self, interval: float) -> None:
        while True:
            await asyncio.sleep(interval)
            try:
                await self.ingest_now()
            except Exception:
                log.exception("themisto: journal ingestion failed; retrying")

    # ------------------------------------------------------------ ingestion

    async def ingest_now(self) -> IngestResult:
        async with self._ingest_lock:
            result = await asyncio.to_thread(self.ingestor.poll)
        for tid in result.new_trajectories:
            trajectory = self.store.get_trajectory(tid)
            if trajectory is not None:
                self.events.publish(trajectory_event(trajectory.to_json()))
        for step in result.steps:
            self.events.publish(step_event(step))
        for switch in result.switches:
            trajectory = self.store.get_trajectory(switch.trajectory_id)
            if trajectory is not None:
                scope = Scope.of(trajectory.to_json(), trajectory.id)
                self.events.publish(recording_event(trajectory.kernel_id, switch.on, scope))
        if self.live_predictions:
            self.live.on_ingest(result)
        else:
            self.live.score_only(result)
        return result

    # ------------------------------------------------------------ per-kernel switch

    def kernel_recording(self, kernel_id: str) -> bool:
        switched = read_switch(switch_path(self.journal_dir, kernel_id))
        return self.recording_default if switched is None else switched

    def set_kernel_recording(self, kernel_id: str, on: bool) -> None:
        write_switch(switch_path(self.journal_dir, kernel_id), on)
        latest = self.store.latest_for_kernel(kernel_id, self.user)
        scope = Scope.of(latest.to_json(), latest.id) if latest else None
        self.events.publish(recording_event(kernel_id, on, scope))

    # ------------------------------------------------------------ deletion

    def delete_trajectory(self, trajectory_id: str) -> None:
        """Delete from the store and remove the kernel's journal: deleted means gone."""
        self.store.delete_trajectory(trajectory_id)
        for journal in self.journal_dir.glob(f"*--{trajectory_id}{SUFFIX}"):
            journal.unlink(missing_ok=True)
