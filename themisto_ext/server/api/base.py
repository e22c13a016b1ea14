"""What every handler shares: authentication, JSON errors, parameter parsing, and the one
mapping from themisto's exceptions to HTTP statuses."""

from __future__ import annotations

import json
import re
from http import HTTPStatus
from typing import Any

from jupyter_server.base.handlers import APIHandler
from tornado import web

from themisto_ext.errors import (
    FormatError,
    JournalUnavailable,
    NotFound,
    QuotaReached,
    StoreForbidden,
    StoreUnavailable,
    ThemistoError,
)
from themisto_ext.server.access import Access
from themisto_ext.server.core import SETTINGS_KEY, Themisto
from themisto_ext.store import Trajectory

MAX_PAGE = 1000
"""The most rows one page of any listing holds."""

API_PREFIX = "/themisto/api"
MAX_DEPTH = 32
"""Deepest JSON body accepted: the API's bodies are flat; deeper ones are refused with 400."""
API_VERSION = "1"
NDJSON = "application/x-ndjson; charset=utf-8"
"""Replies of a JSON object per line: exports, streamed completions."""
AUTH_RESOURCE = "themisto"


def bad_request(field: str, problem: str) -> web.HTTPError:
    return web.HTTPError(HTTPStatus.BAD_REQUEST, f"{field}: {problem}")


_BOOLEANS = {"true": True, "1": True, "yes": True, "false": False, "0": False, "no": False}


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
            try:  # raised, so that the error page reads this one (sys.exc_info)
                raise web.HTTPError(_status_of(e), str(e)) from e
            except web.HTTPError as mapped:
                super()._handle_request_exception(mapped)
            return
        super()._handle_request_exception(e)

    async def prepare(self) -> None:  # type: ignore[override]  # jupyter_server's is untyped
        await super().prepare()
        # No id holds a control character (PostgreSQL refuses NUL in text and answered
        # with a 500; nothing this API stores has one): said before any lookup.
        if any(_CONTROL.search(value) for value in self.path_kwargs.values()):
            raise web.HTTPError(HTTPStatus.NOT_FOUND, "no such resource: the id holds a "
                                "control character")
        limit = self.themisto.settings.max_body_bytes
        declared = self.request.headers.get("Content-Length")
        if (declared and declared.isdigit() and int(declared) > limit) or \
                len(self.request.body or b"") > limit:
            raise web.HTTPError(HTTPStatus.REQUEST_ENTITY_TOO_LARGE,
                                f"request body over the {limit}-byte limit")

    def write_error(self, status_code: int, **kwargs: Any) -> None:
        if status_code == HTTPStatus.METHOD_NOT_ALLOWED:  # RFC 9110: say what is allowed
            self.set_header("Allow", ", ".join(self.allowed_methods()))
        super().write_error(status_code, **kwargs)

    @classmethod
    def allowed_methods(cls) -> list[str]:
        return [method for method in ("GET", "PUT", "POST", "DELETE", "PATCH")
                if getattr(cls, method.lower()) is not getattr(web.RequestHandler,
                                                               method.lower())]

    def set_default_headers(self) -> None:
        super().set_default_headers()
        self.set_header("X-Themisto-API-Version", API_VERSION)

    def json_body(self) -> dict[str, Any]:
        try:
            body = json.loads(self.request.body or b"{}")
        except RecursionError:
            raise bad_request("body", f"nested deeper than {MAX_DEPTH} levels") from None
        except ValueError as exc:
            raise bad_request("body", f"not JSON ({exc})") from exc
        if _depth(body) > MAX_DEPTH:
            raise bad_request("body", f"nested deeper than {MAX_DEPTH} levels")
        if not isinstance(body, dict):
            raise bad_request("body", "must be a JSON object")
        return body

    async def readable_trajectory(self, trajectory_id: str) -> Trajectory:
        """The trajectory if this request may read it, else 404 (unknown or another
        user's): every handler of a trajectory's records asks here first."""
        found = await self.themisto.store.run(lambda s: s.get_trajectory(trajectory_id))
        return self.access.readable(found, trajectory_id)

    def since_page(self, default: int) -> tuple[int, int]:
        """``since_step`` (steps after it) and ``limit`` (1..MAX_PAGE) of a paged read."""
        return self.int_argument("since_step", 0), self.int_argument("limit", default, 1,
                                                                     MAX_PAGE)

    def offset_page(self, default: int = 100) -> tuple[int, int]:
        """``offset`` and ``limit`` (1..MAX_PAGE) of a paged listing."""
        return self.int_argument("offset", 0), self.int_argument("limit", default, 1,
                                                                 MAX_PAGE)

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

    def bool_argument(self, name: str, default: bool = False) -> bool:
        raw = self.get_argument(name, None)
        if raw is None:
            return default
        value = _BOOLEANS.get(raw.lower())
        if value is None:
            raise bad_request(name, f"must be true or false, got {raw[:64]!r}")
        return value

    def send_json(self, data: Any, status: int = 200) -> None:
        self.set_status(status)
        self.set_header("Content-Type", "application/json")
        self.finish(json.dumps(data, ensure_ascii=False))


def _depth(value: Any, limit: int = MAX_DEPTH) -> int:
    """How deeply ``value`` nests, counted up to ``limit + 1`` (without recursion)."""
    deepest, level = 0, [(value, 1)]
    while level:
        node, depth = level.pop()
        deepest = max(deepest, depth)
        if deepest > limit:
            return deepest
        children = node.values() if isinstance(node, dict) else node \
            if isinstance(node, list) else ()
        level.extend((child, depth + 1) for child in children
                     if isinstance(child, (dict, list)))
    return deepest


class NotFoundHandler(ThemistoHandler):
    """Any other path under the API: a JSON 404 (ids that no route takes end here too)."""

    async def prepare(self) -> None:  # type: ignore[override]
        await super().prepare()
        if not self.current_user:
            raise web.HTTPError(HTTPStatus.FORBIDDEN)
        raise web.HTTPError(HTTPStatus.NOT_FOUND, f"no such API path: {self.request.path}")


_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
"""Control characters (tab and newlines aside, which a notebook path may hold)."""


def _status_of(error: ThemistoError) -> int:
    if isinstance(error, FormatError):
        return HTTPStatus.BAD_REQUEST
    if isinstance(error, NotFound):
        return HTTPStatus.NOT_FOUND
    if isinstance(error, (StoreUnavailable, JournalUnavailable)):
        return HTTPStatus.SERVICE_UNAVAILABLE
    if isinstance(error, QuotaReached):
        return HTTPStatus.INSUFFICIENT_STORAGE
    if isinstance(error, StoreForbidden):
        return HTTPStatus.FORBIDDEN
    return HTTPStatus.INTERNAL_SERVER_ERROR
