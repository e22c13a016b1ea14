"""A renamed notebook keeps its history.

A kernel learns its notebook's path once, when it is launched, and says it again after a
restart; JupyterLab names every new notebook ``Untitled.ipynb`` and most are renamed
soon after. jupyter_server's contents events tell of every rename (from the REST API,
the file browser or a notebook's title, whoever made it), and its session manager which
kernels work on the renamed notebook: the store moves the history and the ingestor
records those kernels' later trajectories under the new path.
"""

from __future__ import annotations

import logging
from typing import Any

from themisto_ext.server.core import Themisto

log = logging.getLogger("themisto_ext.server")

CONTENTS_EVENTS = "https://events.jupyter.org/jupyter_server/contents_service/v1"


class RenameListener:
    def __init__(self, serverapp: Any, themisto: Themisto) -> None:
        self._serverapp = serverapp
        self._themisto = themisto
        self._logger: Any = None

    def start(self) -> None:
        logger = getattr(self._serverapp, "event_logger", None)
        if logger is None:
            log.warning("themisto: this jupyter_server emits no contents events; a renamed "
                        "notebook's history stays under its old path")
            return
        logger.add_listener(schema_id=CONTENTS_EVENTS, listener=self._on_event)
        self._logger = logger

    def stop(self) -> None:
        if self._logger is not None:
            self._logger.remove_listener(schema_id=CONTENTS_EVENTS, listener=self._on_event)
            self._logger = None

    async def _on_event(self, logger: Any, schema_id: str, data: dict[str, Any]) -> None:
        old, new = data.get("source_path"), data.get("path")
        if data.get("action") != "rename" or not isinstance(old, str) \
                or not isinstance(new, str):
            return
        try:
            sessions = await self._serverapp.session_manager.list_sessions()
            kernels = [(s["kernel"]["id"], s["path"]) for s in sessions
                       if isinstance(s.get("kernel"), dict) and isinstance(s.get("path"), str)]
            moved = await self._themisto.notebook_moved(old, new, kernels)
        except Exception as exc:  # the rename itself happened; never fail it
            log.warning("themisto: the history of %s could not follow it to %s: %s",
                        old, new, exc)
            return
        if moved:
            log.info("themisto: %d trajectories follow %s to %s", moved, old, new)
