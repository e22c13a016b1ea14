"""Who may read which trajectories: each user their own; a configured few everyone's.

jupyter_server's authorizer still decides who may use the API at all (``@authorized``,
resource ``themisto``; under JupyterHub that is the hub's ``access:servers`` check). This
module decides, per request, *whose* trajectories it may see:

* The viewer: under JupyterHub (or any identity provider that names real users) the
  request's user; with jupyter_server's own token or password login, which names nobody
  (each token request is a fresh "Anonymous" user), whoever holds the server's token is
  the server's user (``ThemistoExtension.user``).
* Everyone's trajectories: viewers named in ``ThemistoExtension.read_all_users``, and,
  under JupyterHub, viewers whose token carries the scope ``read_all_scope`` (default
  ``custom:themisto:read-all``, declared in the hub's ``custom_scopes`` and granted by a
  role). Reading everyone's is reading: deleting stays the owner's.
"""

from __future__ import annotations

from dataclasses import dataclass
from http import HTTPStatus
from typing import Any

from tornado import web

from themisto_ext.store import Trajectory

READ_ALL_SCOPE = "custom:themisto:read-all"


@dataclass(frozen=True)
class Access:
    viewer: str
    read_all: bool
    unowned_too: bool = False
    """Also trajectories recorded before owners were ('' owner): the server's user's, on a
    SQLite store (one user's file) that could not be given to them (a read-only file)."""

    def owns(self, owner: str) -> bool:
        return owner == self.viewer or (self.unowned_too and owner == "")

    def may_read(self, owner: str) -> bool:
        return self.read_all or self.owns(owner)

    def owner_filter(self, requested: str | None) -> str | tuple[str, ...] | None:
        """The owners to list (``None``: everyone) for a request that asked for
        ``requested``."""
        if self.read_all:
            return requested
        if requested not in (None, self.viewer):
            raise web.HTTPError(HTTPStatus.FORBIDDEN, f"user: {self.viewer!r} may read only "
                                "their own trajectories")
        return (self.viewer, "") if self.unowned_too else self.viewer

    def readable(self, trajectory: Trajectory | None, trajectory_id: str) -> Trajectory:
        """The trajectory, or 404 for an unknown id and for another user's (which must not
        be told apart: an id is no proof of existence)."""
        if trajectory is None or not self.may_read(trajectory.user):
            raise web.HTTPError(HTTPStatus.NOT_FOUND, f"no trajectory {trajectory_id!r}")
        return trajectory


@dataclass(frozen=True)
class AccessPolicy:
    server_user: str
    """The user this server records as (the owner of its kernels' trajectories)."""
    read_all_users: frozenset[str] = frozenset()
    read_all_scope: str = READ_ALL_SCOPE
    single_user_store: bool = False
    """A SQLite store: what it holds without an owner is the server's user's."""

    def for_request(self, handler: web.RequestHandler) -> Access:
        user: Any = getattr(handler, "current_user", None)
        hub_user = getattr(user, "hub_user", None)
        if isinstance(hub_user, dict):  # JupyterHub's identity provider
            name = str(hub_user.get("name") or user.username)
            scopes = hub_user.get("scopes") or []
            by_scope = bool(self.read_all_scope) and self.read_all_scope in scopes
            return self._access(name, by_scope or name in self.read_all_users)
        provider = getattr(handler, "identity_provider", None)
        if provider is None or type(provider).__module__.startswith("jupyter_server."):
            name = self.server_user  # the token's holder: this server's user
        else:
            name = str(getattr(user, "username", "") or self.server_user)
        return self._access(name, name in self.read_all_users)

    def _access(self, name: str, read_all: bool) -> Access:
        return Access(name, read_all, self.single_user_store and name == self.server_user)
