"""Trajectories, their steps, and JSONL export (streamed)."""

from __future__ import annotations

import re
from datetime import datetime
from http import HTTPStatus

from jupyter_server.auth.decorator import authorized
from tornado import web

from themisto_ext.server.api.base import API_VERSION, NDJSON, ThemistoHandler, bad_request
from themisto_ext.store import Trajectory, TrajectoryFilter
from themisto_ext.trajectory import with_user
from themisto_ext.version import __version__

EXPORT_PAGE = 2000
"""Steps an export reads at once (held in memory, then written and flushed)."""
_FILENAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._\-]{0,120}\.jsonl")
"""Matched whole (``fullmatch``: a ``$`` would let a final line break into the header)."""


class VersionHandler(ThemistoHandler):
    @web.authenticated
    @authorized
    async def get(self) -> None:
        self.send_json({"api_version": API_VERSION, "package_version": __version__})


class TrajectoriesHandler(ThemistoHandler):
    def _timestamp(self, name: str) -> str | None:
        raw = self.get_argument(name, None)
        if raw is None:
            return None
        try:
            datetime.fromisoformat(raw)
        except ValueError:
            raise bad_request(name, f"must be an ISO 8601 date-time, got {raw!r}") from None
        return raw

    @web.authenticated
    @authorized
    async def get(self) -> None:
        where = TrajectoryFilter(
            notebook_path=self.get_argument("notebook", None),
            kernel_id=self.get_argument("kernel", None),
            user=self.access.owner_filter(self.get_argument("user", None)),
            started_after=self._timestamp("started_after"),
            started_before=self._timestamp("started_before"),
        )
        offset, limit = self.offset_page()
        store = self.themisto.store
        rows = await store.run(lambda s: s.list_trajectories(where, limit=limit, offset=offset))
        self.send_json({
            "trajectories": [t.to_json() for t in rows],
            "total": await store.run(lambda s: s.count_trajectories(where)),
            "limit": limit,
            "offset": offset,
        })


class TrajectoryHandler(ThemistoHandler):
    @web.authenticated
    @authorized
    async def get(self, trajectory_id: str) -> None:
        trajectory = await self.readable_trajectory(trajectory_id)
        self.send_json({**trajectory.to_json(),
                        "events": await self.themisto.store.run(lambda s: s.events(trajectory_id))})

    @web.authenticated
    @authorized
    async def delete(self, trajectory_id: str) -> None:
        if not self.access.owns((await self.readable_trajectory(trajectory_id)).user):
            raise web.HTTPError(HTTPStatus.FORBIDDEN, "only its owner may delete a trajectory")
        await self.themisto.delete_trajectory(trajectory_id)
        self.set_status(HTTPStatus.NO_CONTENT)
        self.finish()


class StepsHandler(ThemistoHandler):
    @web.authenticated
    @authorized
    async def get(self, trajectory_id: str) -> None:
        await self.readable_trajectory(trajectory_id)
        since, limit = self.since_page(100)
        rows = await self.themisto.store.step_lines(trajectory_id, since, limit)
        more = str(rows[-1][0]) if len(rows) == limit else "null"
        # The stored lines are already the benchmark format: splice, don't re-encode.
        steps = ",".join(line for _, line in rows)
        self.set_header("Content-Type", "application/json")
        self.finish(f'{{"trajectory_id":"{trajectory_id}","steps":[{steps}],'
                    f'"next_since_step":{more}}}')


_EXPORT_ARGUMENTS = {"trajectory", "notebook", "all", "user", "filename", "token", "_xsrf"}


class ExportHandler(ThemistoHandler):
    """``GET /export?trajectory=ID[&trajectory=ID...] | notebook=PATH | all=true``."""

    async def _chosen(self) -> list[Trajectory]:
        store = self.themisto.store
        unknown = sorted(name for name in self.request.arguments
                         if name not in _EXPORT_ARGUMENTS and not name.isdigit())
        if unknown:
            # With one selector among several names, a misspelt one would otherwise export
            # more than was asked for. (A bare number is JupyterLab's cache-buster.)
            raise bad_request(unknown[0][:64], "not a parameter of export")
        ids = self.get_arguments("trajectory")
        notebook = self.get_argument("notebook", None)
        everything = self.get_argument("all", "false").lower() in ("1", "true", "yes")
        if sum(bool(x) for x in (ids, notebook, everything)) != 1:
            raise bad_request("trajectory", "give trajectory ids, notebook=PATH or all=true")
        if ids:
            return [await self.readable_trajectory(tid) for tid in ids]
        where = TrajectoryFilter(notebook_path=notebook,
                                 user=self.access.owner_filter(self.get_argument("user", None)))
        return await store.run(lambda s: s.list_trajectories(where, limit=10**9))

    @web.authenticated
    @authorized
    async def get(self) -> None:
        filename = self.get_argument("filename", "themisto-trajectories.jsonl")
        if not _FILENAME.fullmatch(filename):
            raise bad_request("filename", "must be a plain file name ending in .jsonl")
        chosen = await self._chosen()
        self.set_header("Content-Type", NDJSON)
        self.set_header("Content-Disposition", f'attachment; filename="{filename}"')
        store = self.themisto.store
        for trajectory in chosen:
            since = 0
            while True:
                page = await store.step_lines(trajectory.id, since, EXPORT_PAGE)
                if not page:
                    break
                # each line names its user: an export read apart from its store says whose
                self.write("".join(with_user(line, trajectory.user) + "\n" for _, line in page))
                await self.flush()  # stream: a 100k-step export never sits in memory
                since = page[-1][0]
        self.finish(set_content_type=NDJSON)  # APIHandler would call an empty export JSON
