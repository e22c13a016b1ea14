"""What a server is configured to do, as one object: built once from the extension's
traitlets (``app.py``), handed to the core (``core.Themisto``) and to the kernel
provisioner, which tells each kernel it launches the part kernels need (``launch``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from weakref import WeakKeyDictionary

from themisto_ext.contract import CaptureSettings


@dataclass(frozen=True)
class ServerSettings:
    journal_dir: Path
    """Where this server's kernels append their journals."""
    capture: CaptureSettings = field(default_factory=CaptureSettings)
    """What kernels record (``capture.recording``: whether they record from their start)."""
    live_predictions: bool = True
    """Predict every running cell's output and the next cell (else only on request)."""
    speculation: bool = True
    """Predict a cell's output from its text before it runs, when the front end asks."""
    max_body_bytes: int = 1024 * 1024
    """Largest request body the API accepts."""


_LAUNCHING: WeakKeyDictionary[Any, ServerSettings] = WeakKeyDictionary()


def launch_with(kernel_manager: Any, settings: ServerSettings) -> None:
    """Have the provisioner of every kernel ``kernel_manager`` (the server's multi-kernel
    manager) starts record as ``settings`` say."""
    _LAUNCHING[kernel_manager] = settings


def launching(kernel_manager: Any) -> ServerSettings | None:
    """The settings the kernels of ``kernel_manager`` record with; None when no server
    extension set any (kernels then start as without themisto)."""
    return _LAUNCHING.get(kernel_manager) if kernel_manager is not None else None
