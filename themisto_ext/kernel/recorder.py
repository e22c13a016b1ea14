"""The IPython hook: one trajectory step per executed cell, appended to the kernel's journal.

Nothing here may hurt the user's kernel: every callback is wrapped so that no
exception reaches user code, nothing is printed, and the slow parts run under budgets.
"""

from __future__ import annotations

import atexit
import logging
import os
import time
import uuid
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from themisto_ext.contract import (
    KERNEL_ID_ENV,
    NOTEBOOK_ENV,
    CaptureSettings,
    read_switch,
    switch_path,
)
from themisto_ext.journal import JournalWriter
from themisto_ext.kernel.mutations import possibly_mutated
from themisto_ext.kernel.outputs import OutputCollector
from themisto_ext.kernel.redaction import Redactor
from themisto_ext.kernel.snapshot import Snapshotter, user_variables
from themisto_ext.trajectory import FORMAT_VERSION
from themisto_ext.trajectory.text import clip, flatten

log = logging.getLogger("themisto_ext.kernel")

def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="microseconds")


def _kernel_id() -> str:
    explicit = os.environ.get(KERNEL_ID_ENV)
    if explicit:
        return explicit
    try:
        from ipykernel import get_connection_file

        name = Path(get_connection_file()).stem  # jupyter names it kernel-<id>.json
        return name.removeprefix("kernel-")
    except Exception:
        return f"ipython-{os.getpid()}"


class Recorder:
    def __init__(self, shell: Any, settings: CaptureSettings, journal_dir: Path) -> None:
        self.shell = shell
        self.settings = settings
        self.kernel_id = _kernel_id()
        self.trajectory_id = uuid.uuid4().hex
        self.notebook_path = os.environ.get(NOTEBOOK_ENV) or os.environ.get("JPY_SESSION_NAME")
        self.redactor = Redactor(settings.name_patterns, settings.value_patterns, settings.redact)
        self.snapshotter = Snapshotter(settings, self.redactor)
        self.collector = OutputCollector()
        self.journal = JournalWriter(journal_dir, self.kernel_id, self.trajectory_id)
        self._control = switch_path(journal_dir, self.kernel_id)
        self._control_mtime: float | None = None
        self._switch = settings.recording
        self.step = 0
        self.last_overhead = 0.0
        """Seconds the hook itself took around the last recorded cell (for benchmarks)."""
        self._pre_cost = self._post_cost = 0.0
        self._pending: dict[str, Any] | None = None
        self._cell: dict[str, Any] | None = None
        self._process: Any = None
        self.journal.append({
            "kind": "trajectory", "format_version": FORMAT_VERSION,
            "trajectory_id": self.trajectory_id, "kernel_id": self.kernel_id,
            "notebook_path": self.notebook_path, "started_at": _now(), "pid": os.getpid(),
        })

    # ------------------------------------------------------------ lifecycle

    def register(self) -> None:
        session = getattr(getattr(self.shell, "kernel", None), "session", None)
        if session is not None:
            self.collector.install(session, on_reply=self._finish_step)
        self.shell.events.register("pre_run_cell", self._pre_run_cell)
        self.shell.events.register("post_run_cell", self._post_run_cell)
        atexit.register(self.close)

    def unregister(self) -> None:
        for event, callback in (("pre_run_cell", self._pre_run_cell),
                                ("post_run_cell", self._post_run_cell)):
            try:
                self.shell.events.unregister(event, callback)
            except ValueError:
                pass
        self.collector.uninstall()
        atexit.unregister(self.close)
        self.close()

    def close(self) -> None:
        self._finish_step()
        try:
            self.journal.append({"kind": "end", "trajectory_id": self.trajectory_id,
                                 "at": _now(), "reason": "shutdown"})
        except OSError:
            pass
        self.journal.close()

    # ------------------------------------------------------------ switch

    @property
    def recording(self) -> bool:
        """The server's per-kernel switch (a control file), else the configured default."""
        try:
            mtime = self._control.stat().st_mtime
        except OSError:
            mtime = None
        if mtime != self._control_mtime:
            self._control_mtime = mtime
            switched = read_switch(self._control) if mtime is not None else None
            self.set_recording(self.settings.recording if switched is None else switched)
        return self._switch

    def set_recording(self, on: bool) -> None:
        if on != self._switch:
            self._switch = on
            self.journal.append({"kind": "recording", "trajectory_id": self.trajectory_id,
                                 "on": on, "at": _now()})

    # ------------------------------------------------------------ events

    def _pre_run_cell(self, info: Any) -> None:
        if self._pending is not None:
            self._finish_step()  # the previous cell's reply never came through send()
        t0 = time.perf_counter()
        try:
            if not getattr(info, "store_history", True) or getattr(info, "silent", False):
                self._cell = None
                return
            if not self.recording:
                self._cell = None
                return
            self._cell = {
                "code": info.raw_cell if info.raw_cell is not None else "",
                "cell_id": getattr(info, "cell_id", None),
                "started_at": _now(),
                "t0": time.perf_counter(),
            }
            self.collector.start()
            # Masked once here, with the literals the code itself gives to secret names;
            # the step re-masks this text with whatever secrets the cell then bound.
            self._cell["masked"] = self.redactor.mask_code(self._cell["code"])
            # Lets the server predict this cell's output while it runs.
            self.journal.append({
                "kind": "started", "trajectory_id": self.trajectory_id,
                "kernel_id": self.kernel_id, "notebook_path": self.notebook_path,
                "step": self.step + 1, "cell_id": self._cell["cell_id"],
                "code": self._cell["masked"], "at": self._cell["started_at"],
            })
        except BaseException:  # the user's cell must run regardless
            self._cell = None
            log.debug("themisto pre_run_cell failed", exc_info=True)
        self._pre_cost = time.perf_counter() - t0

    def _post_run_cell(self, result: Any) -> None:
        cell, self._cell = self._cell, None
        if cell is None:
            return
        t_end = time.perf_counter()
        try:
            self._pending = self._measure_step(cell, result, t_end)
        except BaseException:  # includes a DeadlineExceeded that fired late
            self.collector.stop()
            log.debug("themisto post_run_cell failed", exc_info=True)
        self._post_cost = time.perf_counter() - t_end
        if not self.collector.installed:
            self._finish_step()  # no kernel messages to wait for (a terminal IPython)

    def _measure_step(self, cell: dict[str, Any], result: Any, t_end: float) -> dict[str, Any]:
        """Everything about the step except its outputs, which are still being flushed."""
        try:
            python = self.shell.transform_cell(cell["code"])
        except Exception:
            python = None
        variables, hash_index = self.snapshotter.take(
            user_variables(self.shell.user_ns, self.shell.user_ns_hidden),
            possibly_mutated(cell["code"], python),
        )
        self.step += 1
        return {
            "kind": "step",
            "format_version": FORMAT_VERSION,
            "trajectory_id": self.trajectory_id,
            "kernel_id": self.kernel_id,
            "step": self.step,
            "cell_id": cell["cell_id"],
            "notebook_path": self.notebook_path,
            "started_at": cell["started_at"],
            "ended_at": _now(),
            "code": self.redactor.mask(cell["masked"]),
            "output": "",
            "outputs": [],
            "execution_time": round(t_end - cell["t0"], 6),
            "memory_bytes": self._rss(),
            "runtime_variables": variables,
            "hash_index": hash_index,
            "error": self._error(result),
        }

    def _finish_step(self) -> None:
        """Attach the outputs and write the step.

        Called when the kernel sends ``execute_reply``: ipykernel flushes stdout and
        stderr just before it, so every output of the cell has been seen by then,
        without the hook paying for a flush of its own.
        """
        step, self._pending = self._pending, None
        if step is None:
            return
        t0 = time.perf_counter()
        try:
            items = self.collector.stop()
            limit, mask = self.settings.output_length, self.redactor.mask
            for item in items:
                item["text"] = clip(mask(item["text"]), limit)
                if "evalue" in item:
                    item["evalue"] = mask(item["evalue"])
            step["outputs"] = items
            step["output"] = clip(flatten(items), limit)
            shown = next((i for i in reversed(items) if i["output_type"] == "error"), None)
            if step["error"] is not None and shown is not None:
                step["error"]["traceback"] = shown["text"]
            self.journal.append(step)
        except BaseException:
            log.debug("themisto could not write a step", exc_info=True)
        self.last_overhead = self._pre_cost + self._post_cost + time.perf_counter() - t0

    def _error(self, result: Any) -> dict[str, str] | None:
        exc = getattr(result, "error_in_exec", None) or getattr(result, "error_before_exec", None)
        if exc is None:
            return None
        try:
            evalue = str(exc)
        except Exception:
            evalue = "<str() of the exception raised>"
        return {"ename": type(exc).__name__, "evalue": self.redactor.mask(evalue)}

    def _rss(self) -> int | None:
        try:
            if self._process is None:
                import psutil

                self._process = psutil.Process()
            return int(self._process.memory_info().rss)
        except Exception:
            return None

