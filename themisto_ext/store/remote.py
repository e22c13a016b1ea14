"""The store as a single-user server under JupyterHub sees it: the hub's Themisto service
(``hub/service.py``) over HTTP, so that the server holds no database login at all.

Each call is one POST of ``wire.py``'s JSON, authenticated with the token JupyterHub gives
every single-user server (``JUPYTERHUB_API_TOKEN``). The service decides whose data the
call may touch; this side only translates its answers back into the store's exceptions:
unreachable, timed out or 503 is ``StoreUnavailable`` (the guard retries, journals keep
every step meanwhile), 403 ``StoreForbidden``, anything else ``StoreError`` with the
service's message (a quota reached says so).
"""

from __future__ import annotations

import functools
import inspect
import os
from collections.abc import Callable, Iterator
from typing import Any

import httpx

from themisto_ext.errors import (
    FormatError,
    QuotaReached,
    StoreError,
    StoreForbidden,
    StoreUnavailable,
)
from themisto_ext.records import Step
from themisto_ext.store.base import (
    Applied,
    Trajectory,
    TrajectoryFilter,
    Write,
    layer,
)
from themisto_ext.store.url import StoreURL
from themisto_ext.store.wire import decode, dumps, encode, loads, with_steps
from themisto_ext.version import __version__

HUB_TOKEN_ENV = "JUPYTERHUB_API_TOKEN"
PAGE = 500
"""Steps (or trajectories) per request of a long read (``iter_steps``, a listing of all):
bounded answers, bounded memory."""
TIMEOUT = httpx.Timeout(75.0, connect=5.0)
"""Longer than the service's own statement timeout (60 s): its answer, not ours, says
why a call took too long."""


def _remote(method: Callable[..., Any]) -> Callable[..., Any]:
    """``method`` of the interface as a call to the service: its arguments by name,
    defaults filled in (``wire.METHODS`` checks them there), the answer decoded."""
    name, signature = method.__name__, inspect.signature(method)

    @functools.wraps(method)
    def call(self: RemoteStore, /, *args: Any, **kwargs: Any) -> Any:
        bound = signature.bind(self, *args, **kwargs)
        bound.apply_defaults()
        arguments = dict(bound.arguments)
        del arguments["self"]
        return self._call(name, **arguments)

    return call


@layer(_remote)
class RemoteStore:
    """The interface over HTTP: each method the class does not write itself (a long
    read in pages, ``apply``'s answer without the steps sent) is ``_remote``'s."""

    def __init__(self, url: StoreURL, token: str | None = None,
                 transport: httpx.BaseTransport | None = None) -> None:
        self.url = url
        token = token or url.password or os.environ.get(HUB_TOKEN_ENV)
        if not token:
            raise StoreError(f"no token for the Themisto service at {url.display}: a server "
                             f"started by JupyterHub has one in {HUB_TOKEN_ENV}")
        self._client = httpx.Client(
            base_url=url.target.rstrip("/") + "/api/", timeout=TIMEOUT, transport=transport,
            headers={"Authorization": f"token {token}",
                     "User-Agent": f"themisto-ext/{__version__}"})
        try:
            self.caller: dict[str, Any] = self._request("GET", "whoami")
            """Who the service takes this server for: ``{"user", "read_all"}``."""
        except BaseException:
            self._client.close()
            raise

    # ------------------------------------------------------------ plumbing

    def _request(self, method: str, path: str, body: Any = None) -> Any:
        try:
            response = self._client.request(
                method, path, content=None if body is None else dumps(body),
                headers={"Content-Type": "application/json"} if body is not None else None)
        except httpx.TimeoutException as exc:
            raise StoreUnavailable(f"the Themisto service at {self.url.display} did not "
                                   f"answer in time ({type(exc).__name__})") from None
        except httpx.TransportError as exc:
            raise StoreUnavailable(f"the Themisto service at {self.url.display} cannot be "
                                   f"reached: {exc or type(exc).__name__}") from None
        try:
            data = loads(response.content)
        except FormatError:
            data = None
        if response.status_code == 200 and isinstance(data, dict) and "result" in data:
            return data["result"]
        message = data.get("message") if isinstance(data, dict) else None
        reason = (f"the Themisto service at {self.url.display}: "
                  f"{message or f'HTTP {response.status_code}'}")
        if response.status_code in (429, 502, 503, 504):
            raise StoreUnavailable(reason)
        if response.status_code in (401, 403):
            raise StoreForbidden(reason)
        if response.status_code == 507:
            raise QuotaReached(reason)
        raise StoreError(reason)

    def _call(self, method: str, **args: Any) -> Any:
        body = {"args": {name: encode(value) for name, value in args.items()}}
        return decode(self._request("POST", f"store/{method}", body))

    # ------------------------------------------------------------ TrajectoryStore

    def apply(self, writes: list[Write], cursor: tuple[str, int] | None) -> Applied:
        applied: Applied = self._call("apply", writes=writes, cursor=cursor)
        return with_steps(applied, writes)  # the service answers with the steps' keys

    def list_trajectories(self, where: TrajectoryFilter | None = None, limit: int = 100,
                          offset: int = 0) -> list[Trajectory]:
        found: list[Trajectory] = []
        while len(found) < limit:  # in pages: the service answers 2,000 at most a call
            size = min(PAGE, limit - len(found))
            page = self._call("list_trajectories", where=where, limit=size,
                              offset=offset + len(found))
            found += page
            if len(page) < size:
                break
        return found

    def _pages(self, method: str, trajectory_id: str, since_step: int,
               limit: int | None) -> Iterator[Any]:
        left = limit
        while left is None or left > 0:
            size = PAGE if left is None else min(PAGE, left)
            page = self._call(method, trajectory_id=trajectory_id, since_step=since_step,
                              limit=size)
            yield from page
            if len(page) < size:
                return
            since_step = page[-1]["step"] if method == "iter_steps" else page[-1][0]
            left = None if left is None else left - len(page)

    def iter_steps(self, trajectory_id: str, since_step: int = 0,
                   limit: int | None = None) -> Iterator[Step]:
        return self._pages("iter_steps", trajectory_id, since_step, limit)

    def iter_step_lines(self, trajectory_id: str, since_step: int = 0,
                        limit: int | None = None) -> Iterator[tuple[int, str]]:
        return (tuple(line) for line in  # [step, line] in JSON
                self._pages("iter_step_lines", trajectory_id, since_step, limit))

    def close(self) -> None:
        self._client.close()
