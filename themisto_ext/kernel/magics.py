"""``%themisto on|off|status``: the user's own switch inside the notebook."""

from __future__ import annotations

from typing import Any

from IPython.core.magic import Magics, line_magic, magics_class

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
