"""``/kernels/{kernel_id}``: a kernel's recording switch and current step count."""

from __future__ import annotations

from typing import Any

from jupyter_server.auth.decorator import authorized
from tornado import web

from themisto_ext.server.api.base import ThemistoHandler, bad_request


class KernelHandler(ThemistoHandler):
    def _model(self, kernel_id: str) -> dict[str, Any]:
        latest = self.themisto.store.latest_for_kernel(kernel_id, self.themisto.user)
        return {
            "kernel_id": kernel_id,
            "recording": self.themisto.kernel_recording(kernel_id),
            "trajectory_id": latest.id if latest else None,
            "steps": latest.steps if latest else 0,
        }

    @web.authenticated
    @authorized
    async def get(self, kernel_id: str) -> None:
        await self.themisto.ingest_now()
        self.send_json(self._model(kernel_id))

    @web.authenticated
    @authorized
    async def put(self, kernel_id: str) -> None:
        recording = self.json_body().get("recording")
        if not isinstance(recording, bool):
            raise bad_request("recording", "must be true or false")
        self.themisto.set_kernel_recording(kernel_id, recording)
        self.send_json(self._model(kernel_id))
