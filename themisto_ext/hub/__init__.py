"""JupyterHub's side: the Themisto service that owns the database (``themisto_service``), or a
spawn hook that gives each user's server a database role of its own (``StoreRolesHook``).

The service (``service.py``, recommended): users' servers hold no database login at all
and reach the store through the service with their JupyterHub token. In
``jupyterhub_config.py``::

    from themisto_ext.hub import SERVER_TOKEN_SCOPES, service_store_url, themisto_service
    service = themisto_service("postgresql://themisto@db.internal/themisto")
    c.JupyterHub.services = [service]
    c.Spawner.server_token_scopes = SERVER_TOKEN_SCOPES
    c.Spawner.args = [f"--ThemistoExtension.store_url={service_store_url(service)}"]

The spawn hook (each server a database role, row-level security)::

    from themisto_ext.hub import StoreRolesHook
    c.Spawner.pre_spawn_hook = StoreRolesHook("postgresql://themisto@db.internal/themisto")

The hub alone holds the owner's password (``THEMISTO_DB_PASSWORD``, else libpq's
``PGPASSWORD`` / ``~/.pgpass``, in the hub's environment). At each spawn the hook makes
sure the user's role exists with a fresh password and reads every user's rows only if
the user holds the read-all scope now, and starts the server with
``--ThemistoExtension.store_url=postgresql://themisto_u_<hash of the name>@...`` and the password in
``THEMISTO_STORE_PASSWORD``, which the server takes out of its environment before any
kernel starts. Row-level security does the rest (``store/roles.py``).
"""

from __future__ import annotations

import asyncio
import os
import sys
from typing import Any

from themisto_ext.contract import STORE_PASSWORD_ENV
from themisto_ext.server.access import READ_ALL_SCOPE
from themisto_ext.store.roles import StoreRoles
from themisto_ext.store.url import parse_store_url

OWNER_PASSWORD_ENV = "THEMISTO_DB_PASSWORD"
QUOTA_BYTES = 2 * 1024**3
"""Each user's storage quota by default: 2 GiB of rows (a year of a heavy user's steps at
2.5 kB is well under it; a role writing junk stops there)."""
QUOTA_STEPS = 1_000_000


class StoreRolesHook:
    """``c.Spawner.pre_spawn_hook``: see the module's docstring. ``then`` runs after it
    (a hook the deployment had already)."""

    def __init__(self, owner_url: str, *, read_all_scope: str = READ_ALL_SCOPE,
                 password: str | None = None, then: Any = None,
                 quota_bytes: int | None = QUOTA_BYTES,
                 quota_steps: int | None = QUOTA_STEPS) -> None:
        self.owner = parse_store_url(owner_url).with_password(
            password or os.environ.get(OWNER_PASSWORD_ENV))
        self.quota = (quota_bytes, quota_steps)
        self.read_all_scope = read_all_scope
        self.then = then
        self._roles: StoreRoles | None = None

    async def __call__(self, spawner: Any) -> None:
        user = spawner.user.name
        read_all = self.read_all_scope in _scopes(spawner.user)
        url, password = await asyncio.to_thread(self._ensure, user, read_all)
        spawner.args = [*(a for a in spawner.args
                          if not a.startswith("--ThemistoExtension.store_url=")),
                        f"--ThemistoExtension.store_url={url.target}"]
        environment = {k: v for k, v in spawner.environment.items()
                       if k not in ("PGPASSWORD", "PGPASSFILE")}
        spawner.environment = {**environment, STORE_PASSWORD_ENV: password}
        spawner.log.info("themisto: %s's server records as database role %s%s", user,
                         url.display, " (reads every user's)" if read_all else "")
        if self.then is not None:
            result = self.then(spawner)
            if asyncio.iscoroutine(result):
                await result

    def _ensure(self, user: str, read_all: bool) -> Any:
        if self._roles is None:  # the first spawn creates or upgrades the schema
            self._roles = StoreRoles(self.owner)
            self._roles.set_quota(*self.quota)
        return self._roles.ensure(user, read_all=read_all)


SERVER_TOKEN_SCOPES = ["users:activity!user", "access:servers!server", READ_ALL_SCOPE]
"""``c.Spawner.server_token_scopes`` for the service: JupyterHub's own for a server's token,
and the read-all scope, which the hub gives only to the servers of users who hold it (the
token gets the subset of these its user has)."""


def themisto_service(store_url: str, *, url: str = "http://127.0.0.1:10101",
                     name: str = "themisto", password: str | None = None,
                     quota_bytes: int | None = QUOTA_BYTES,
                     quota_steps: int | None = QUOTA_STEPS,
                     read_all_scope: str = READ_ALL_SCOPE) -> dict[str, Any]:
    """The entry of ``c.JupyterHub.services`` that starts the service (``service.py``): it
    listens at ``url`` (an address users' servers reach), connects to ``store_url`` as the
    database's owner with ``password`` (default: ``THEMISTO_DB_PASSWORD`` in the hub's
    environment, else libpq's ``PGPASSWORD`` / ``~/.pgpass``) and holds every user to the
    quota."""
    command = [sys.executable, "-m", "themisto_ext.hub.service", "--store-url", store_url,
               "--read-all-scope", read_all_scope,
               "--quota-bytes", str(-1 if quota_bytes is None else quota_bytes),
               "--quota-steps", str(-1 if quota_steps is None else quota_steps)]
    environment: dict[str, str] = {}
    password = password or os.environ.get(OWNER_PASSWORD_ENV)
    if password:
        environment[OWNER_PASSWORD_ENV] = password
    for name_ in ("PGPASSWORD", "PGPASSFILE"):
        if name_ in os.environ and OWNER_PASSWORD_ENV not in environment:
            environment[name_] = os.environ[name_]
    return {"name": name, "url": url, "command": command, "environment": environment,
            "display": False}


def service_store_url(service: dict[str, Any]) -> str:
    """The ``ThemistoExtension.store_url`` that reaches ``service`` (the entry
    ``themisto_service`` made)."""
    return f"{service['url'].rstrip('/')}/services/{service['name']}/"


def _scopes(user: Any) -> set[str]:
    """The user's scopes as the hub resolves them (roles, groups, expanded); a scope
    filtered to some users (``...!user=x``) is not the whole scope and does not count."""
    from jupyterhub.scopes import get_scopes_for

    return set(get_scopes_for(user.orm_user))
