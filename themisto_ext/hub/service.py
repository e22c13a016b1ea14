"""The hub's Themisto service: the one process that holds the database's login.

JupyterHub starts it (``themisto_ext.hub.themisto_service`` writes the entry of
``c.JupyterHub.services``); users' servers reach it with ``store_url`` set to its URL
(``store/remote.py``) and hold no database URL or password at all. Each request carries a
JupyterHub token; the hub says whose it is and which scopes it has, and ``caller.py``
limits the call to that user's data (everyone's reads for the read-all scope).

What a student can do from their own kernel or terminal is therefore what their token
allows here, not what a database role allows: no locks, no advisory locks, no racing
another user's ids, no writes past their quota (charged to them by the database's
triggers, ``base.CHARGED_USER``). The service's own connections carry statement, lock and
idle-in-transaction timeouts (``postgres.SESSION_LIMITS``), and it brings the schema up
to date when it starts, so a user's spawn never waits on a migration.

Routes, under the service's prefix (``/services/themisto/``):

* ``GET  api/whoami``: ``{"result": {"user", "read_all"}}``
* ``POST api/store/METHOD``: ``{"args": {...}}`` -> ``{"result": ...}`` (``wire.py``)

Errors are ``{"message"}`` with 400 (a malformed call), 401 (no or an unknown token), 403
(another user's data), 429 (that user has ``CALLS_PER_USER`` calls running already; a
server retries it), 503 (the database cannot be used now; retried), 507 (the
caller's quota reached) or 500 (another store error, its message). No message names the
database's address or login.
"""

from __future__ import annotations

import argparse
import asyncio
import contextvars
import gc
import json
import logging
import os
import sys
from collections import Counter
from collections.abc import Awaitable, Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from http import HTTPStatus
from typing import Any
from urllib.parse import urlsplit

from tornado import web
from tornado.httpserver import HTTPServer
from tornado.netutil import bind_sockets
from tornado.process import fork_processes

from themisto_ext.errors import (
    FormatError,
    QuotaReached,
    ServiceBusy,
    StoreError,
    StoreForbidden,
    StoreUnavailable,
)
from themisto_ext.hub.caller import Caller, CallerStore, Owners
from themisto_ext.server.access import READ_ALL_SCOPE
from themisto_ext.store import (
    POSTGRESQL,
    TrajectoryStore,
    guard,
    open_store,
    parse_store_url,
)
from themisto_ext.store.base import CHARGED_USER, Applied
from themisto_ext.store.wire import decode_call, dumps, encode, loads, step_keys

log = logging.getLogger("themisto_ext.hub.service")

Identify = Callable[[str], Awaitable[Caller | None]]
"""A token -> its user (None: no user's token)."""

CALLS_PER_USER = 8
"""Calls of one user running at once, per process. A server's own calls come from its
store facade's few threads and its ingest thread (about 7): a server never meets it; a
flood from a user's kernel does, and gets 429 past it."""
THREADS = 32
"""Worker threads per process: room for several users at their limit at once."""
PROCESSES = 2
"""Worker processes by default (``--processes``)."""
POOL_SIZE = 8
"""Database connections the service keeps: every server's calls share them."""
MAX_BODY = 64 * 1024 * 1024
"""Largest call: a journal window of steps (``journal.WINDOW``) with room to spare."""


class HubIdentity:
    """Tokens checked with the hub (``HubAuth``: answers cached for ``cache_seconds``, so
    a revoked token stops working within that)."""

    def __init__(self, read_all_scope: str = READ_ALL_SCOPE, cache_seconds: int = 60) -> None:
        from jupyterhub.services.auth import HubAuth

        self.read_all_scope = read_all_scope
        self._auth = HubAuth(cache_max_age=cache_seconds)

    async def __call__(self, token: str) -> Caller | None:
        model = await self._auth.user_for_token(token, sync=False)
        if not isinstance(model, dict) or model.get("kind", "user") != "user":
            return None  # a service's token speaks for no user
        scopes = model.get("scopes") or []
        return Caller(str(model["name"]),
                      read_all=bool(self.read_all_scope) and self.read_all_scope in scopes)


class TokenFileIdentity:
    """Tokens from a file the service's operator writes, for servers JupyterHub did not
    start (one machine's several servers, the benchmarks): a JSON object mapping each
    token to a user name, or to ``{"user": name, "read_all": true}``. Read once."""

    def __init__(self, path: str) -> None:
        with open(path, encoding="utf-8") as fh:
            table = json.load(fh)
        if not isinstance(table, dict):
            raise FormatError(f"{path}: a JSON object of token -> user is expected")
        self._callers: dict[str, Caller] = {}
        for token, who in table.items():
            entry = who if isinstance(who, dict) else {"user": who}
            if not isinstance(entry.get("user"), str) or not entry["user"]:
                raise FormatError(f"{path}: a token without a user name")
            self._callers[token] = Caller(entry["user"], bool(entry.get("read_all")))

    async def __call__(self, token: str) -> Caller | None:
        return self._callers.get(token)


class Service:
    def __init__(self, store: TrajectoryStore, identify: Identify,
                 calls_per_user: int = CALLS_PER_USER) -> None:
        self.store = store
        self.owners = Owners(store)
        self.identify = identify
        self.calls_per_user = calls_per_user
        self.threads = ThreadPoolExecutor(THREADS, thread_name_prefix="themisto-service")
        self._busy: Counter[str] = Counter()

    async def run(self, caller: Caller, method: str, body: bytes) -> bytes:
        """``call`` in a worker thread, if ``caller`` has fewer than ``calls_per_user`` of
        them running (``ServiceBusy`` otherwise): one user flooding the service holds at most
        that many of its threads, and everyone else's calls go on."""
        if self._busy[caller.user] >= self.calls_per_user:
            raise ServiceBusy(f"{self.calls_per_user} calls of {caller.user!r} are running "
                          "already; try again")
        self._busy[caller.user] += 1
        try:
            work = partial(contextvars.copy_context().run, self.call, caller, method, body)
            return await asyncio.get_running_loop().run_in_executor(self.threads, work)
        finally:
            self._busy[caller.user] -= 1
            if not self._busy[caller.user]:
                del self._busy[caller.user]

    def call(self, caller: Caller, method: str, body: bytes) -> bytes:
        """``method`` for ``caller`` with the request's body, answered as JSON; in a worker
        thread: a database round trip, and decoding a batch of steps, which would hold up
        the event loop's other requests."""
        args = decode_call(method, loads(body or b"null"))
        CHARGED_USER.set(caller.user)  # this thread's copy of the context: this call only
        result = getattr(CallerStore(self.store, self.owners, caller), method)(**args)
        if isinstance(result, Applied):
            result = step_keys(result)  # the caller has the steps it sent
        elif isinstance(result, Iterator):
            result = list(result)
        return dumps({"result": encode(result)})


class _Handler(web.RequestHandler):
    service: Service

    def initialize(self, service: Service) -> None:
        self.service = service

    async def prepare(self) -> None:
        header = self.request.headers.get("Authorization", "")
        scheme, _, token = header.partition(" ")
        if scheme.lower() not in ("token", "bearer") or not token.strip():
            raise web.HTTPError(HTTPStatus.UNAUTHORIZED, "no token: send 'Authorization: "
                                "token <a JupyterHub token>'")
        try:
            caller = await self.service.identify(token.strip())
        except web.HTTPError as exc:  # HubAuth: the hub did not answer (a restart)
            raise web.HTTPError(HTTPStatus.SERVICE_UNAVAILABLE, "the hub cannot check "
                                f"tokens now ({exc.status_code}); try again") from None
        if caller is None:
            raise web.HTTPError(HTTPStatus.UNAUTHORIZED, "the hub knows no user by this token")
        self.caller = caller

    def write_error(self, status_code: int, **kwargs: Any) -> None:
        exc = kwargs.get("exc_info", (None, None))[1]
        message = exc.log_message if isinstance(exc, web.HTTPError) and exc.log_message \
            else self._reason
        self.finish({"message": message})

    def answer(self, body: bytes) -> None:
        self.set_header("Content-Type", "application/json")
        self.finish(body)


class WhoAmIHandler(_Handler):
    def get(self) -> None:
        self.answer(dumps({"result": {"user": self.caller.user,
                                      "read_all": self.caller.read_all}}))


class StoreHandler(_Handler):
    async def post(self, method: str) -> None:
        try:
            result = await self.service.run(self.caller, method, self.request.body)
        except (FormatError, StoreError) as exc:
            status = next(s for kind, s in _STATUSES if isinstance(exc, kind))
            raise web.HTTPError(status, str(exc)) from None
        self.answer(result)


_STATUSES: tuple[tuple[type[Exception], HTTPStatus], ...] = (
    (ServiceBusy, HTTPStatus.TOO_MANY_REQUESTS), (FormatError, HTTPStatus.BAD_REQUEST),
    (StoreForbidden, HTTPStatus.FORBIDDEN), (StoreUnavailable, HTTPStatus.SERVICE_UNAVAILABLE),
    (QuotaReached, HTTPStatus.INSUFFICIENT_STORAGE),
    (StoreError, HTTPStatus.INTERNAL_SERVER_ERROR))
"""A call's failure as the status ``remote.py`` turns back into it (first match)."""


def _log_request(handler: web.RequestHandler) -> None:
    """Failures only: a class's servers make hundreds of calls a second."""
    status = handler.get_status()
    if status >= 400:
        caller = getattr(handler, "caller", None)
        log.warning("%d %s %s (%s) %.1f ms", status, handler.request.method,
                    handler.request.path, caller.user if caller else "no user",
                    1000 * handler.request.request_time())


def make_app(service: Service, prefix: str = "/") -> web.Application:
    prefix = "/" + prefix.strip("/") + "/" if prefix.strip("/") else "/"
    return web.Application([
        (prefix + "api/whoami", WhoAmIHandler, {"service": service}),
        (prefix + r"api/store/([a-z_]+)", StoreHandler, {"service": service}),
    ], log_function=_log_request)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m themisto_ext.hub.service",
        description="The hub's Themisto service (started by JupyterHub: see "
                    "themisto_ext.hub.themisto_service).")
    parser.add_argument("--store-url", default=os.environ.get("THEMISTO_STORE_URL"),
                        help="the database (postgresql://OWNER@HOST:PORT/DB; the password "
                             "in THEMISTO_DB_PASSWORD, PGPASSWORD or ~/.pgpass)")
    parser.add_argument("--read-all-scope", default=READ_ALL_SCOPE)
    parser.add_argument("--tokens-file", default=None,
                        help="callers' tokens from this JSON file (token -> user) instead "
                             "of the hub's: for servers JupyterHub did not start")
    parser.add_argument("--processes", type=int, default=PROCESSES,
                        help="worker processes sharing the listening socket")
    parser.add_argument("--bind", default=None, help="URL to listen on (default: "
                        "JUPYTERHUB_SERVICE_URL, else http://127.0.0.1:10101)")
    parser.add_argument("--quota-bytes", type=int, default=None,
                        help="each user's quota of stored bytes (-1: no limit)")
    parser.add_argument("--quota-steps", type=int, default=None,
                        help="each user's quota of stored steps (-1: no limit)")
    args = parser.parse_args(argv)
    if not args.store_url:
        parser.error("--store-url (or THEMISTO_STORE_URL) is required")
    logging.basicConfig(level=logging.INFO, stream=sys.stderr,
                        format="[%(levelname)1.1s %(asctime)s themisto-service] %(message)s")
    url = parse_store_url(args.store_url).with_password(
        os.environ.pop("THEMISTO_DB_PASSWORD", None))
    quota = [None if q is None or q < 0 else q for q in (args.quota_bytes, args.quota_steps)]

    def opener() -> TrajectoryStore:
        # brings the schema up to date: no spawn waits on it
        if url.engine == POSTGRESQL:
            from themisto_ext.store.postgres import PostgresStore

            store: TrajectoryStore = PostgresStore(url, pool_size=POOL_SIZE)
        else:
            store = open_store(url)
        if url.engine == POSTGRESQL and (args.quota_bytes, args.quota_steps) != (None, None):
            from themisto_ext.store.roles import StoreRoles

            StoreRoles(url).set_quota(*quota)
        return store

    bind = urlsplit(args.bind or os.environ.get("JUPYTERHUB_SERVICE_URL",
                                                "http://127.0.0.1:10101"))
    prefix = os.environ.get("JUPYTERHUB_SERVICE_PREFIX", "/services/themisto/")
    sockets = bind_sockets(bind.port or 80, bind.hostname or "127.0.0.1")
    try:  # created or upgraded once, before the workers race to
        opener().close()
    except StoreError as exc:
        log.error("%s; tried again on use", exc)
    if args.processes > 1:
        # Each process its own interpreter lock, pool and owner cache, on one socket; the
        # first supervises them (a dead one is started again) and they end with it.
        fork_processes(args.processes)
        _end_with_parent()
    # What start-up made lives as long as the process: out of the collector's way. (The
    # collector is not paused while a call's batch is read, as a server's journal reads
    # are: its deferred work then landed at once on the reads this process serves, the
    # paced probe's p95 542-598 ms against 349-384 ms without, for no more steps/s.)
    gc.freeze()
    store = guard(opener)
    identify: Identify = (TokenFileIdentity(args.tokens_file) if args.tokens_file
                          else HubIdentity(args.read_all_scope))
    service = Service(store, identify)

    async def serve() -> None:
        server = HTTPServer(make_app(service, prefix), max_body_size=MAX_BODY, xheaders=True)
        server.add_sockets(sockets)
        log.info("store %s, listening on %s%s", url.display, bind.geturl().rstrip("/"),
                 prefix)
        await asyncio.Event().wait()

    try:
        asyncio.run(serve())
    finally:
        store.close()

def _end_with_parent() -> None:
    """A worker process gets SIGTERM when the supervising one ends (Linux), so that the
    hub stopping the service stops all of it."""
    import ctypes
    import signal

    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


if __name__ == "__main__":
    main()
