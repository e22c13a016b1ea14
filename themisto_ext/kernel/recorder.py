"""The IPython hook: one trajectory step per executed cell, appended to the kernel's journal.

Nothing here may hurt the user's kernel: every callback is wrapped so that no
exception reaches user code, nothing is printed, and the slow parts run under budgets.
"""

from __future__ import annotations

import atexit
import json
import logging
import os
import sys
import time
import uuid
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from themisto_ext.journal import JournalWriter
from themisto_ext.kernel.outputs import OutputCollector, flatten
from themisto_ext.kernel.redaction import Redactor
from themisto_ext.kernel.settings import CaptureSettings
from themisto_ext.kernel.snapshot import Snapshotter, names_in, user_variables
from themisto_ext.paths import control_path
from themisto_ext.trajectory import FORMAT_VERSION

log = logging.getLogger("themisto_ext.kernel")

KERNEL_ID_ENV = "THEMISTO_KERNEL_ID"
NOTEBOOK_ENV = "THEMISTO_NOTEBOOK_PATH"


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


def _truncate_middle(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    half = limit // 2
    elided = len(text) - 2 * half
    return f"{text[:half]}\n[... {elided} characters not recorded ...]\n{text[-half:]}"


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
        self._control = control_path(journal_dir, self.kernel_id)
        self._control_mtime: float | None = None
        self._switch = settings.recording
        self.step = 0
        self.last_overhead = 0.0
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
            self.collector.install(session)
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
            wanted = self.settings.recording
            if mtime is not None:
                try:
                    wanted = bool(json.loads(self._control.read_text()).get("recording", wanted))
                except (OSError, ValueError, AttributeError):
                    pass
            self.set_recording(wanted)
        return self._switch

    def set_recording(self, on: bool) -> None:
        if on != self._switch:
            self._switch = on
            self.journal.append({"kind": "recording", "trajectory_id": self.trajectory_id,
                                 "on": on, "at": _now()})

    # ------------------------------------------------------------ events

    def _pre_run_cell(self, info: Any) -> None:
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
        except BaseException:
            self._cell = None
            log.debug("themisto pre_run_cell failed", exc_info=True)

    def _post_run_cell(self, result: Any) -> None:
        cell, self._cell = self._cell, None
        if cell is None:
            return
        t_end = time.perf_counter()
        try:
            self._flush_streams()
            self._record(cell, result, t_end)
        except BaseException:
            log.debug("themisto post_run_cell failed", exc_info=True)
        finally:
            self.collector.stop()
            self.last_overhead = time.perf_counter() - t_end

    def _flush_streams(self) -> None:
        # ipykernel flushes right after post_run_cell anyway; doing it first puts the
        # cell's buffered prints into this step instead of the next one.
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:
                pass

    def _record(self, cell: dict[str, Any], result: Any, t_end: float) -> None:
        items = self.collector.stop()
        mask = self.redactor.mask
        variables, hash_index = self.snapshotter.take(
            user_variables(self.shell.user_ns, self.shell.user_ns_hidden), names_in(cell["code"])
        )
        limit = self.settings.output_length
        for item in items:
            item["text"] = _truncate_middle(mask(item["text"]), limit)
            if "evalue" in item:
                item["evalue"] = mask(item["evalue"])
        self.step += 1
        self.journal.append({
            "kind": "step",
            "format_version": FORMAT_VERSION,
            "trajectory_id": self.trajectory_id,
            "kernel_id": self.kernel_id,
            "step": self.step,
            "cell_id": cell["cell_id"],
            "notebook_path": self.notebook_path,
            "started_at": cell["started_at"],
            "ended_at": _now(),
            "code": mask(cell["code"]),
            "output": _truncate_middle(flatten(items), limit),
            "outputs": items,
            "execution_time": round(t_end - cell["t0"], 6),
            "memory_bytes": self._rss(),
            "runtime_variables": variables,
            "hash_index": hash_index,
            "error": self._error(result, items),
        })

    def _error(self, result: Any, items: list[dict[str, Any]]) -> dict[str, str] | None:
        exc = getattr(result, "error_in_exec", None) or getattr(result, "error_before_exec", None)
        if exc is None:
            return None
        shown = next((i for i in reversed(items) if i["output_type"] == "error"), None)
        try:
            evalue = str(exc)
        except Exception:
            evalue = "<str() of the exception raised>"
        error = {"ename": type(exc).__name__, "evalue": self.redactor.mask(evalue)}
        if shown is not None:
            error["traceback"] = shown["text"]
        return error

    def _rss(self) -> int | None:
        try:
            if self._process is None:
                import psutil

                self._process = psutil.Process()
            return int(self._process.memory_info().rss)
        except Exception:
            return None

