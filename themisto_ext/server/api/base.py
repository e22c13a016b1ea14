"""What every handler shares: authentication, JSON errors, parameter parsing, and the one
mapping from themisto's exceptions to HTTP statuses."""

from __future__ import annotations

import json
from http import HTTPStatus
from typing import Any

from jupyter_server.base.handlers import APIHandler
from tornado import web

from themisto_ext.errors import FormatError, StoreUnavailable, ThemistoError
from themisto_ext.server.access import Access
from themisto_ext.server.core import SETTINGS_KEY, Themisto

API_PREFIX = "/themisto/api"
API_VERSION = "1"
AUTH_RESOURCE = "themisto"


def bad_request(field: str, problem: str) -> web.HTTPError:
    return web.HTTPError(HTTPStatus.BAD_REQUEST, f"{field}: {problem}")


class ThemistoHandler(APIHandler):
    """Authenticated JSON handler; the ``authorized`` checks use resource ``themisto``."""

    auth_resource = AUTH_RESOURCE

    @property
    def themisto(self) -> Themisto:
        core: Themisto = self.settings[SETTINGS_KEY]
        return core

    @property
    def access(self) -> Access:
        """Whose trajectories this request may see (``server/access.py``)."""
        return self.themisto.access.for_request(self)

    def _handle_request_exception(self, e: BaseException) -> None:
        # The one place where themisto's errors become HTTP statuses; anything else is a
        # bug and stays a 500 with its traceback in the log.
        if isinstance(e, ThemistoError):
            e = web.HTTPError(_status_of(e), str(e))
        super()._handle_request_exception(e)

    async def prepare(self) -> None:  # type: ignore[override]  # jupyter_server's is untyped
        await super().prepare()
        limit = self.themisto.max_body_bytes
        declared = self.request.headers.get("Content-Length")
        if (declared and declared.isdigit() and int(declared) > limit) or \
                len(self.request.body or b"") > limit:
            raise web.HTTPError(HTTPStatus.REQUEST_ENTITY_TOO_LARGE,
                                f"request body over the {limit}-byte limit")

    def set_default_headers(self) -> None:
        super().set_default_headers()
        self.set_header("X-Themisto-API-Version", API_VERSION)

    def json_body(self) -> dict[str, Any]:
        try:
            body = json.loads(self.request.body or b"{}")
        except ValueError as exc:
            raise bad_request("body", f"not JSON ({exc})") from exc
        if not isinstance(body, dict):
            raise bad_request("body", "must be a JSON object")
        return body

    def int_argument(self, name: str, default: int, lo: int = 0, hi: int = 10**12) -> int:
        raw = self.get_argument(name, None)
        if raw is None:
            return default
        try:
            value = int(raw)
        except ValueError:
            raise bad_request(name, f"must be an integer, got {raw!r}") from None
        if not lo <= value <= hi:
            raise bad_request(name, f"must be between {lo} and {hi}, got {value}")
        return value

    def send_json(self, data: Any, status: int = 200) -> None:
        self.set_status(status)
        self.set_header("Content-Type", "application/json")
        self.finish(json.dumps(data, ensure_ascii=False))


def _status_of(error: ThemistoError) -> int:
    if isinstance(error, FormatError):
        return HTTPStatus.BAD_REQUEST
    if isinstance(error, StoreUnavailable):
        return HTTPStatus.SERVICE_UNAVAILABLE
    return HTTPStatus.INTERNAL_SERVER_ERROR
