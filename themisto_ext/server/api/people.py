"""``/me``: the user's own choices (consent, deleting everything they recorded); ``/class``:
every user's notebooks at a glance, for those who may read everyone's."""

from __future__ import annotations

from datetime import datetime, timezone
from http import HTTPStatus
from typing import Any

from jupyter_server.auth.decorator import authorized
from tornado import web

from themisto_ext.records import NotebookRow
from themisto_ext.server.api.base import ThemistoHandler, bad_request
from themisto_ext.server.api.trajectories import TrajectoriesHandler
from themisto_ext.store.roster import ClassFilter

SORTS = ("user", "notebook_path", "trajectories", "cells", "errors", "active_seconds",
         "first_at", "last_at", "chrf")
"""Columns of the roster it can be sorted by (``chrf``: the mean output chrF of the
predictor named by ``predictor``, rows without one last)."""


def _now() -> str:
    return datetime.now(timezone.utc).isoformat()


class MeHandler(ThemistoHandler):
    """The user this server records as: only they decide for themselves."""

    def _own(self) -> None:
        if self.access.viewer != self.themisto.user:
            raise web.HTTPError(HTTPStatus.FORBIDDEN, "only this server's user decides "
                                "what it records of them")

    def _model(self) -> dict[str, Any]:
        return {"user": self.themisto.user, "consent": self.themisto.consent,
                "capture_level": self.themisto.settings.capture.level,
                "read_all": self.access.read_all}

    @web.authenticated
    @authorized
    async def get(self) -> None:
        self.send_json(self._model())

    @web.authenticated
    @authorized
    async def put(self) -> None:
        self._own()
        consent = self.json_body().get("consent")
        if not isinstance(consent, bool):
            raise bad_request("consent", "must be true or false")
        await self.themisto.set_consent(consent, _now())
        self.send_json(self._model())

    @web.authenticated
    @authorized
    async def delete(self) -> None:
        self._own()
        trajectories, journals = await self.themisto.delete_user_data()
        self.send_json({"user": self.themisto.user, "deleted_trajectories": trajectories,
                        "deleted_journals": journals})


class ClassHandler(TrajectoriesHandler):
    """``GET /class``: one row per user and notebook (paged, sorted, filtered), and who
    opted out. A user without the read-all right sees their own rows only."""

    @web.authenticated
    @authorized
    async def get(self) -> None:
        owners = self.access.owner_filter(self.get_argument("user", None))
        where = ClassFilter(users=None if owners is None else
                            (owners,) if isinstance(owners, str) else tuple(owners),
                            active_after=self._timestamp("active_after"),
                            active_before=self._timestamp("active_before"))
        sort = self.get_argument("sort", "user")
        if sort not in SORTS:
            raise bad_request("sort", f"must be one of {', '.join(SORTS)}")
        order = self.get_argument("order", "asc")
        if order not in ("asc", "desc"):
            raise bad_request("order", "must be asc or desc")
        offset, limit = self.offset_page()
        path = self.get_argument("notebook", "") or ""
        store = self.themisto.store
        rows = await store.run(lambda s: s.notebook_rows(where))
        consents = await store.run(lambda s: s.consents(where.users))
        opted_out = sorted(user for user, on in consents.items() if not on)
        hidden = set(opted_out)
        rows = [r for r in rows
                if r["user"] not in hidden and path in (r["notebook_path"] or "")]
        predictor = self.get_argument("predictor", None)
        rows.sort(key=_sort_key(sort, predictor), reverse=order == "desc")
        if sort == "chrf":  # rows without a score last, whichever the order
            rows.sort(key=lambda r: _chrf(r, predictor) is None)
        self.send_json({
            "rows": rows[offset:offset + limit],
            "total": len(rows), "users": len({r["user"] for r in rows}),
            "opted_out": opted_out, "limit": limit, "offset": offset,
        })


def _chrf(row: NotebookRow, predictor: str | None) -> float | None:
    for score in row["scores"]:
        if score["task"] == "output" and (predictor is None or score["predictor"] == predictor):
            return float(score["chrf"])
    return None


def _sort_key(sort: str, predictor: str | None) -> Any:
    if sort == "chrf":
        return lambda r: (_chrf(r, predictor) or 0.0, r["user"], r["notebook_path"] or "")
    return lambda r: (r[sort] or ("" if sort == "notebook_path" else 0),
                      r["user"], r["notebook_path"] or "")
