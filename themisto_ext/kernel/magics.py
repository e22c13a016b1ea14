"""``%themisto on|off|status``: the user's own switch inside the notebook; ``%%themisto_trace``:
a line-level trace of one cell (``tracer.py``)."""

from __future__ import annotations

from typing import Any

from IPython.core.magic import Magics, cell_magic, line_magic, magics_class

from themisto_ext.kernel.recorder import Recorder


@magics_class
class ThemistoMagics(Magics):
    def __init__(self, shell: Any, recorder: Recorder) -> None:
        super().__init__(shell)
        self._recorder = recorder

    @line_magic
    def themisto(self, line: str) -> None:
        """%themisto [on|off|status]: switch recording for this kernel, or show its state."""
        word = line.strip().lower() or "status"
        if word in ("on", "off"):
            self._recorder.set_recording(word == "on")
        elif word != "status":
            print("usage: %themisto [on|off|status]")
            return
        print(self._recorder.describe())

    @cell_magic
    def themisto_trace(self, line: str, cell: str) -> None:
        """%%themisto_trace: run the cell and record, with its step, each line it executed
        and the variables that line changed."""
        self._recorder.trace_cell(cell)
