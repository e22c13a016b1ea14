"""REST handlers: thin, authenticated, JSON in and out."""

from __future__ import annotations

import json
from http import HTTPStatus
from typing import Any

from jupyter_server.base.handlers import APIHandler
from jupyter_server.utils import url_path_join
from tornado import web

API = "/themisto/api"
AUTH_RESOURCE = "themisto"


class ThemistoHandler(APIHandler):
    auth_resource = AUTH_RESOURCE

    @property
    def themisto(self) -> Any:
        return self.settings["themisto_ext"]

    def json_body(self) -> dict[str, Any]:
        try:
            body = json.loads(self.request.body or b"{}")
        except ValueError as exc:
            raise web.HTTPError(HTTPStatus.BAD_REQUEST, f"body is not JSON: {exc}") from exc
        if not isinstance(body, dict):
            raise web.HTTPError(HTTPStatus.BAD_REQUEST, "body must be a JSON object")
        return body


class KernelHandler(ThemistoHandler):
    """Recording state and step count of a kernel's current trajectory."""

    def _model(self, kernel_id: str) -> dict[str, Any]:
        latest = self.themisto.store.latest_for_kernel(kernel_id)
        return {
            "kernel_id": kernel_id,
            "recording": self.themisto.kernel_recording(kernel_id),
            "trajectory_id": latest.id if latest else None,
            "steps": latest.steps if latest else 0,
        }

    @web.authenticated
    async def get(self, kernel_id: str) -> None:
        await self.themisto.ingest_now()
        self.finish(self._model(kernel_id))

    @web.authenticated
    async def put(self, kernel_id: str) -> None:
        recording = self.json_body().get("recording")
        if not isinstance(recording, bool):
            raise web.HTTPError(HTTPStatus.BAD_REQUEST, "field 'recording' must be true or false")
        self.themisto.set_kernel_recording(kernel_id, recording)
        self.finish(self._model(kernel_id))


def routes() -> list[tuple[str, type[ThemistoHandler]]]:
    return [
        (url_path_join(API, r"kernels/(?P<kernel_id>[\w\-\.]+)"), KernelHandler),
    ]
