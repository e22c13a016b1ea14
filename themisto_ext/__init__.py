"""themisto-ext: record notebook trajectories in JupyterLab and predict what happens next.

This module is imported inside every recording kernel, so it imports nothing heavy:
the server and kernel parts load only when their entry points are called.
"""

from __future__ import annotations

from typing import Any

from themisto_ext.version import __version__

__all__ = ["__version__", "load_ipython_extension", "unload_ipython_extension"]


def _jupyter_labextension_paths() -> list[dict[str, str]]:
    return [{"src": "labextension", "dest": "themisto-ext"}]


def _jupyter_server_extension_points() -> list[dict[str, Any]]:
    from themisto_ext.server.app import ThemistoExtension

    return [{"module": "themisto_ext", "app": ThemistoExtension}]


def load_ipython_extension(shell: Any) -> None:
    from themisto_ext.kernel import load_ipython_extension as load

    load(shell)


def unload_ipython_extension(shell: Any) -> None:
    from themisto_ext.kernel import unload_ipython_extension as unload

    unload(shell)
