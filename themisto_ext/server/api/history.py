"""``/trajectories/{id}/history``: a notebook's history in brief, a page of steps at a time.

What a notebook shows on its cells when it opens (badges, footers, missed reasons) comes
from here: per step its cell, time, memory and error name, and its predictions' scores or
why there are none. Whole steps and predictions are read only for the step a user reviews
(``/steps``, ``/predictions?slim=true``), so a 2,000-step notebook opens as fast as a short
one (``benchmarks/history_open.py``).
"""

from __future__ import annotations

from jupyter_server.auth.decorator import authorized
from tornado import web

from themisto_ext.server.api.base import ThemistoHandler

DEFAULT_PAGE = 500


class HistoryHandler(ThemistoHandler):
    """``GET /trajectories/{id}/history?since_step=N&limit=M``."""

    @web.authenticated
    @authorized
    async def get(self, trajectory_id: str) -> None:
        await self.readable_trajectory(trajectory_id)
        since, limit = self.since_page(DEFAULT_PAGE)
        steps = await self.themisto.store.run(
            lambda s: s.step_summaries(trajectory_id, since, limit))
        more = steps[-1]["step"] if len(steps) == limit else None
        self.send_json({"trajectory_id": trajectory_id, "steps": steps,
                        "next_since_step": more})
