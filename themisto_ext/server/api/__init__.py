"""The REST API under ``/themisto/api/``: thin authenticated handlers over the store."""

from __future__ import annotations

from jupyter_server.utils import url_path_join
from tornado.web import RequestHandler

from themisto_ext.server.api.base import API_PREFIX, API_VERSION, NotFoundHandler
from themisto_ext.server.api.history import HistoryHandler
from themisto_ext.server.api.kernels import KernelHandler
from themisto_ext.server.api.people import ClassHandler, MeHandler
from themisto_ext.server.api.predictions import (
    CompletionsHandler,
    PredictionHandler,
    PredictionsHandler,
    PredictorsHandler,
    SpeculationsHandler,
    TrajectoryPredictionsHandler,
)
from themisto_ext.server.api.trajectories import (
    ExportHandler,
    StepsHandler,
    TrajectoriesHandler,
    TrajectoryHandler,
    VersionHandler,
)

_ID = r"(?P<trajectory_id>[^/]+)"
"""Ids are matched loosely and checked by the handlers, so that every id gets a JSON 404."""


def routes() -> list[tuple[str, type[RequestHandler]]]:
    def path(suffix: str) -> str:
        return url_path_join(API_PREFIX, suffix) + "/?"  # with or without a final slash

    return [
        (path(""), VersionHandler),
        (path("trajectories"), TrajectoriesHandler),
        (path(f"trajectories/{_ID}"), TrajectoryHandler),
        (path(f"trajectories/{_ID}/steps"), StepsHandler),
        (path(f"trajectories/{_ID}/predictions"), TrajectoryPredictionsHandler),
        (path(f"trajectories/{_ID}/history"), HistoryHandler),
        (path("predictors"), PredictorsHandler),
        (path("predictions"), PredictionsHandler),
        (path(r"predictions/(?P<prediction_id>[^/]+)"), PredictionHandler),
        (path("speculations"), SpeculationsHandler),
        (path("completions"), CompletionsHandler),
        (path("export"), ExportHandler),
        (path(r"kernels/(?P<kernel_id>[^/]+)"), KernelHandler),
        (path("me"), MeHandler),
        (path("class"), ClassHandler),
        (url_path_join(API_PREFIX, r"(?P<rest>.*)"), NotFoundHandler),
    ]


__all__ = ["API_PREFIX", "API_VERSION", "routes"]
