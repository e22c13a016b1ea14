"""``/kernels/{kernel_id}``: whether a kernel is recorded (and why not), its switch, its
current step count."""

from __future__ import annotations

from typing import Any

from jupyter_server.auth.decorator import authorized
from tornado import web

from themisto_ext.errors import StoreUnavailable
from themisto_ext.server.api.base import ThemistoHandler, bad_request
from themisto_ext.server.core import KernelState


class KernelHandler(ThemistoHandler):
    async def _model(self, kernel_id: str, state: KernelState) -> dict[str, Any]:
        try:
            latest = await self.themisto.store.run(
                lambda s: s.latest_for_kernel(kernel_id, self.themisto.user))
        except StoreUnavailable:
            latest = None  # the state says why
        return {
            "kernel_id": kernel_id,
            "recording": state.recording,
            "reason": state.reason,
            "trajectory_id": latest.id if latest else None,
            "steps": latest.steps if latest else 0,
        }

    @web.authenticated
    @authorized
    async def get(self, kernel_id: str) -> None:
        await self.themisto.ingest_or_say_why()  # a failure: answered below, as the reason
        # A page reads this when one of its notebooks opens on the kernel: its predictions
        # come sooner if the model's session reads the trajectory now, in the background.
        await self.themisto.warm(kernel_id)
        self.send_json(await self._model(kernel_id, self.themisto.kernel_state(kernel_id)))

    @web.authenticated
    @authorized
    async def put(self, kernel_id: str) -> None:
        recording = self.json_body().get("recording")
        if not isinstance(recording, bool):
            raise bad_request("recording", "must be true or false")
        state = await self.themisto.set_kernel_recording(kernel_id, recording)
        self.send_json(await self._model(kernel_id, state))
