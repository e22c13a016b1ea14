"""Kernel-side capture: the IPython extension that records a trajectory step per cell."""

from __future__ import annotations

from typing import Any

from themisto_ext.contract import CaptureSettings, default_journal_dir
from themisto_ext.kernel.recorder import Recorder

_ATTR = "_themisto_recorder"


def active_recorder(shell: Any) -> Recorder | None:
    recorder: Recorder | None = getattr(shell, _ATTR, None)
    return recorder


_PARKED = "_themisto_unloaded_recorder"


def load_ipython_extension(shell: Any) -> None:
    if active_recorder(shell) is not None:
        return  # loading twice (autoload, then %load_ext) must not record twice
    try:
        # After %unload_ext (or within %reload_ext) the same trajectory goes on: a new
        # recorder split one kernel's history over 3 trajectories and lost that cell.
        recorder = getattr(shell, _PARKED, None) or \
            Recorder(shell, CaptureSettings.from_env(), default_journal_dir())
        recorder.register()
    except Exception as exc:  # a broken store path must not break the kernel
        shell.log.warning("themisto: recording disabled: %s", exc)
        return
    setattr(shell, _ATTR, recorder)
    from themisto_ext.kernel.magics import ThemistoMagics

    shell.register_magics(ThemistoMagics(shell, recorder))


def unload_ipython_extension(shell: Any) -> None:
    recorder = active_recorder(shell)
    if recorder is not None:
        recorder.unregister()
        delattr(shell, _ATTR)
        setattr(shell, _PARKED, recorder)
