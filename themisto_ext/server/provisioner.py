"""Loads the capture hook into every IPython kernel the server launches.

A kernel provisioner is jupyter_client's extension point for how kernels start. This
one is the local provisioner plus two things for ipykernel kernels: the hook as an
extra IPython extension (``extra_extensions`` adds to, never replaces, the user's own
``extensions``) and the kernel id, so the hook names its journal after the kernel.
"""

from __future__ import annotations

import os
from typing import Any

from jupyter_client.provisioning.local_provisioner import LocalProvisioner

from themisto_ext.contract import AUTOLOAD_ARG, launch_env
from themisto_ext.server.settings import launching

NAME = "themisto-provisioner"


def is_ipykernel(cmd: list[str]) -> bool:
    return any("ipykernel" in part for part in cmd)


class ThemistoProvisioner(LocalProvisioner):
    async def pre_launch(self, **kwargs: Any) -> dict[str, Any]:
        kwargs = await super().pre_launch(**kwargs)
        cmd: list[str] = list(kwargs.get("cmd") or [])
        # The server extension hands its settings to the server's kernel manager only
        # when it is enabled and autoloading; without them this provisioner behaves
        # exactly like the local one.
        settings = launching(self._kernels())
        if settings is not None and is_ipykernel(cmd) and AUTOLOAD_ARG not in cmd:
            kwargs["cmd"] = [*cmd, AUTOLOAD_ARG]
            env = kwargs.get("env") or os.environ
            kwargs["env"] = launch_env(env, settings.journal_dir, str(self.kernel_id),
                                       self._notebook_path(env.get("JPY_SESSION_NAME")),
                                       settings.capture)
        return kwargs

    def _kernels(self) -> Any:
        """The server's multi-kernel manager (the parent of this kernel's manager)."""
        return getattr(self.parent, "parent", None)

    def _notebook_path(self, session_name: str | None) -> str | None:
        """The notebook relative to the server root, as the front end and API name it
        (jupyter_server hands kernels an absolute path)."""
        if not session_name:
            return None
        root = getattr(self._kernels(), "root_dir", None)
        if root and os.path.isabs(session_name):
            relative = os.path.relpath(session_name, root)
            if not relative.startswith(".."):
                return relative.replace(os.sep, "/")
        return session_name
