"""Live predictions under real working patterns: what a person sees, when, and how good.

A real ``jupyter server`` per predictor (``predictors = [P]``, ``contexts = ["full"]``)
and, per scenario, a fresh kernel that runs the same cells (by default the first 8 code
cells of two shared notebooks, one NumPy and one pandas). A simulated front end follows
the rule of ``src/notebook/speculate.ts`` with the ``speculationPause`` default of
``schema/predictions.json``: it announces the active cell's text (``POST
/speculations``) when a cell is selected, when a step lands, and once the text has not
changed for the pause. Scenarios:

- ``run-all``: every cell queued at once, the last cell active (JupyterLab's Run All);
- ``shift-enter-T``: Shift+Enter through the written cells every T s (0.2, 0.5, 1, 2, 5):
  each Shift+Enter selects the next cell, which is announced at once;
- ``type-then-run-G``: each cell typed into a new empty cell (2 s of keystrokes, none
  paused for the pause) and run G s after the last keystroke (0, 1, 1.5, 3, 6);
- ``edit-after-announce``: a cell typed but its last line, a pause (announced), the last
  line typed, and the cell run 0.5 s later (before the pause): the announced text is
  not the text run;
- ``rerun-unchanged``: each cell run, and once its result is in, run again unchanged
  (Ctrl+Enter: it stays active, so it is announced again when its step lands); only the
  re-runs count.

Per scenario and predictor, over its counted cells: ``at_run`` the share whose output
prediction was complete when the cell started (the server's ``ready_before_start``: it
is published with the cell's start); ``within_100ms`` the share whose prediction was on
the live stream at most 0.1 s after Shift+Enter; ``before_output`` the share whose prediction
arrived on the live stream before the cell's real output (its first output message on
the kernel's IOPub, or its end when it shows none); ``superseded`` the share of output
predictions missed because a newer cell started first, and ``next_superseded`` the same
of next-cell predictions (the notebook's footers show neither: ``cellview.ts``);
``abstained`` the share whose predictor chose not to answer (nothing shown);
``p50``/``p95`` seconds from Shift+Enter to the prediction on the live stream, a cell
that never got one counting as never (``inf``); ``em``/``chrf`` the ``scored`` events'
exact match and chrF of the cells with a prediction, and the same over the cells every
predictor run predicted (``same_cells``). ``next_abstained`` is the share of next-cell
predictions that abstained, ``next_is_last`` the share of next-cell answers (abstentions
left out) that are the cell just run. Before the scenarios, on the server just started,
the notebook is opened and its cells run one after another at once: ``cold_start`` is its
first cell's Shift+Enter to prediction, ``cold_start_model`` the same for the first
prediction a model wrote (not a rule), the model's load included (it loads on first use
or when the notebook opens).

Exclusions: none; every cell of a scenario counts (the re-run scenario counts its
re-runs), the first included. The last line is JSON with every scenario by name::

    python benchmarks/live_patterns.py [--predictor P ...] [--cells-per-notebook 8]
                                       [--scenario NAME ...]
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import nbformat
from server_api import Server, timed_events

from themisto_ext.server.app import ThemistoExtension

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT.parent / "shared" / "data" / "notebooks"
DEFAULT_NOTEBOOKS = ["02.02-The-Basics-Of-NumPy-Arrays", "03.01-Introducing-Pandas-Objects"]
PAUSE = json.loads((ROOT / "schema" / "predictions.json").read_text())[
    "properties"]["speculationPause"]["default"] / 1000
"""The front end's pause before announcing edited text (seconds)."""
TYPING = 2.0
"""Seconds a cell takes to type, in keystrokes closer together than the pause."""
KEYSTROKES = 8
THINK = 1.0
"""Seconds between a result and starting to type the next cell."""
QUIET = 20.0
"""A scenario ends when its predictions are in, or none has come for this long."""
SHIFT_ENTER = (0.2, 0.5, 1.0, 2.0, 5.0)
TYPE_GAPS = (0.0, 1.0, 1.5, 3.0, 6.0)


def notebook_cells(names: list[str], per_notebook: int) -> list[str]:
    cells: list[str] = []
    for name in names:
        nb = nbformat.read(NOTEBOOKS / f"{name}.ipynb", as_version=4)
        code = [c.source for c in nb.cells if c.cell_type == "code" and c.source.strip()]
        cells += code[:per_notebook]
    return cells


@dataclass
class Cell:
    """One execution as the benchmark saw it."""
    code: str
    counted: bool = True
    run_at: float = math.nan
    output_at: float = math.nan
    prediction_at: float = math.inf
    prediction: dict[str, Any] | None = None
    scores: dict[str, float] | None = None
    superseded: bool = False
    abstained: bool = False


@dataclass
class Session:
    """The live state a scenario reads: its kernel's steps, predictions and scores."""
    kernel_id: str
    cells: list[Cell] = field(default_factory=list)
    next_cells: dict[int, dict[str, Any]] = field(default_factory=dict)
    """Next-cell predictions by target step (made before that cell runs, if it does)."""
    last_step: int = 0
    on_step: Callable[[], None] | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)

    def cell(self, step: int) -> Cell | None:
        return self.cells[step - 1] if 0 < step <= len(self.cells) else None

    def settled(self) -> bool:
        return all(c.prediction is not None or c.superseded for c in self.cells) and all(
            c.scores is not None for c in self.cells
            if c.prediction and not c.prediction.get("error") and not c.abstained)


def superseded(error: dict[str, Any]) -> bool:
    """Missed because a newer cell started first (its code; older records: its type)."""
    return error.get("code") == "superseded" or error.get("type") == "PredictionSuperseded"


class Listener:
    """The server's live events, routed to the session of their kernel."""

    def __init__(self, server: Server) -> None:
        self.sessions: dict[str, Session] = {}
        self.stop = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(server,), daemon=True)
        self._connected = threading.Event()
        self._thread.start()
        self._connected.wait(30)

    def _run(self, server: Server) -> None:
        for arrival, event, data in timed_events(server, self.stop):
            if event == "connected":
                self._connected.set()
                continue
            session = self.sessions.get(str(data.get("kernel_id")))
            if session is None:
                continue
            with session.lock:
                self._route(session, arrival, event, data)
            if event == "step" and session.on_step is not None:
                session.on_step()

    @staticmethod
    def _route(session: Session, arrival: float, event: str, data: dict[str, Any]) -> None:
        if event == "step":
            session.last_step = max(session.last_step, int(data["step"]["step"]))
        elif event == "prediction":
            record = data["prediction"]
            if record["task"] == "next-cell":
                session.next_cells.setdefault(int(record["target_step"]), record)
                return
            cell = session.cell(int(record["target_step"]))
            if cell is None:
                return
            if record.get("abstained"):  # no answer shown
                cell.abstained = True
                cell.prediction = cell.prediction or record
            elif record.get("error"):
                cell.superseded = cell.superseded or superseded(record["error"])
                cell.prediction = cell.prediction or record
            elif cell.prediction is None or cell.prediction.get("error"):
                cell.prediction, cell.prediction_at = record, arrival
        elif event == "scored" and data["task"] == "output":
            cell = session.cell(int(data["target_step"]))
            if cell is not None and cell.prediction and not cell.prediction.get("error") \
                    and data["prediction_id"] == cell.prediction.get("id"):
                cell.scores = data["scores"]


class Kernel:
    """A kernel through the server, run as the notebook runs it: requests sent without
    waiting (queued in the kernel as JupyterLab queues them), each one's first output
    and end read off IOPub."""

    def __init__(self, server: Server) -> None:
        self.kernel_id, self.client = server.start_kernel()
        self._server = server
        self._pending: dict[str, Cell] = {}
        self.executed: list[Cell] = []
        """Every cell run, in the order run: the trajectory numbers its steps so."""
        self._done = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def run(self, cell: Cell) -> None:
        cell.run_at = time.time()
        self.executed.append(cell)
        # registered before it is sent: a quick cell's IOPub may beat ``execute``'s return
        msg = self.client.session.msg("execute_request", {
            "code": cell.code, "silent": False, "store_history": True,
            "user_expressions": {}, "allow_stdin": False, "stop_on_error": False})
        self._pending[msg["header"]["msg_id"]] = cell
        self.client.shell_channel.send(msg)

    def wait_idle(self, timeout: float = 120) -> None:
        deadline = time.time() + timeout
        while any(math.isnan(c.output_at) for c in self._pending.values()):
            if time.time() > deadline:
                raise TimeoutError("cells did not finish")
            time.sleep(0.02)

    def _read(self) -> None:
        while not self._stop.is_set():
            try:
                msg = self.client.get_iopub_msg(timeout=0.2)
            except Exception:  # queue.Empty; the channel closing at the end
                continue
            now = time.time()
            cell = self._pending.get(msg["parent_header"].get("msg_id", ""))
            if cell is None:
                continue
            kind = msg["msg_type"]
            shown = kind in ("stream", "execute_result", "display_data", "error") or (
                kind == "status" and msg["content"]["execution_state"] == "idle")
            if shown and math.isnan(cell.output_at):
                cell.output_at = now

    def shutdown(self) -> None:
        self._stop.set()
        self._thread.join(2)
        self.client.stop_channels()
        httpx.delete(f"{self._server.url}/api/kernels/{self.kernel_id}",
                     headers=self._server.headers, timeout=30)


class FrontEnd:
    """``Speculator`` of ``src/notebook/speculate.ts``: the active cell's text announced on
    selection, on a step landing, and after ``PAUSE`` s without an edit, at most once per
    (step, text)."""

    def __init__(self, server: Server, session: Session) -> None:
        self._server, self._session = server, session
        self.active: str = ""
        self._sent: tuple[int, str] | None = None
        self._timer: threading.Timer | None = None
        self._lock = threading.Lock()
        session.on_step = self.selected

    def select(self, text: str) -> None:
        self.active = text
        self.selected()

    def selected(self) -> None:
        self._cancel()
        self.announce()

    def edit(self, text: str) -> None:
        self.active = text
        self._cancel()
        self._timer = threading.Timer(PAUSE, self.announce)
        self._timer.daemon = True
        self._timer.start()

    def announce(self) -> None:
        with self._lock:
            text = self.active
            key = (self._session.last_step, text)
            if not text.strip() or key == self._sent:
                return
            self._sent = key
        reply = httpx.post(f"{self._server.url}/themisto/api/speculations",
                           headers=self._server.headers, timeout=30,
                           json={"kernel_id": self._session.kernel_id, "code": text,
                                 "cell_id": None})
        if reply.status_code != 200 or not reply.json().get("accepted"):
            with self._lock:  # retried on the next selection or step, as the front end does
                if self._sent == key:
                    self._sent = None

    def _cancel(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None


def type_cell(front: FrontEnd, code: str, upto: int | None = None) -> None:
    """Keystrokes over ``TYPING`` s, each an edit (none paused for the front end's pause)."""
    text = code if upto is None else code[:upto]
    for k in range(1, KEYSTROKES + 1):
        front.edit(text[: max(1, len(text) * k // KEYSTROKES)])
        time.sleep(TYPING / KEYSTROKES)


def run_all(kernel: Kernel, front: FrontEnd, cells: list[Cell]) -> None:
    front.select(cells[-1].code)  # Run All leaves the last cell active
    for cell in cells:
        kernel.run(cell)


def shift_enter(every: float) -> Callable[[Kernel, FrontEnd, list[Cell]], None]:
    def scenario(kernel: Kernel, front: FrontEnd, cells: list[Cell]) -> None:
        front.select(cells[0].code)
        time.sleep(PAUSE)  # the person reads the first cell
        for n, cell in enumerate(cells):
            kernel.run(cell)
            front.select(cells[n + 1].code if n + 1 < len(cells) else "")
            time.sleep(every)
    return scenario


def type_then_run(gap: float) -> Callable[[Kernel, FrontEnd, list[Cell]], None]:
    def scenario(kernel: Kernel, front: FrontEnd, cells: list[Cell]) -> None:
        for cell in cells:
            front.select("")  # a new empty cell below
            time.sleep(THINK)
            type_cell(front, cell.code)
            time.sleep(gap)
            kernel.run(cell)
            kernel.wait_idle()
    return scenario


def edit_after_announce(kernel: Kernel, front: FrontEnd, cells: list[Cell]) -> None:
    for cell in cells:
        front.select("")
        time.sleep(THINK)
        lines = cell.code.rstrip().splitlines()
        draft = len("\n".join(lines[:-1])) if len(lines) > 1 else max(1, len(cell.code) - 2)
        type_cell(front, cell.code, draft)
        time.sleep(PAUSE + 0.5)  # announced: the pause passed
        front.edit(cell.code)  # the rest typed
        time.sleep(0.5)
        kernel.run(cell)
        kernel.wait_idle()


def rerun_unchanged(kernel: Kernel, front: FrontEnd, cells: list[Cell]) -> None:
    for cell in cells:
        first = Cell(cell.code, counted=False)
        front.select(cell.code)
        time.sleep(PAUSE)
        kernel.run(first)
        kernel.wait_idle()
        time.sleep(THINK)  # its step lands: the cell, still active, is announced again
        kernel.run(cell)
        kernel.wait_idle()


def cold(kernel: Kernel, front: FrontEnd, cells: list[Cell]) -> None:
    """Cells run one after another as soon as the notebook opened on a new server."""
    for cell in cells:
        kernel.run(cell)
        kernel.wait_idle()


RULES = {"baseline", "copy-previous", "hybrid:baseline", "hybrid:raises", "hybrid:rerun",
         "hybrid:variation", "hybrid:abstain"}
"""Answers no model wrote (``HybridPredictor`` names its rules so)."""

SCENARIOS: dict[str, Callable[[Kernel, FrontEnd, list[Cell]], None]] = {
    "run-all": run_all,
    **{f"shift-enter-{t:g}": shift_enter(t) for t in SHIFT_ENTER},
    **{f"type-then-run-{g:g}": type_then_run(g) for g in TYPE_GAPS},
    "edit-after-announce": edit_after_announce,
    "rerun-unchanged": rerun_unchanged,
}
COLD = {"cold": cold}


def play(server: Server, listener: Listener, name: str, codes: list[str]) -> Session:
    """One scenario in a fresh kernel: every execution's cell, in step order."""
    kernel = Kernel(server)
    session = Session(kernel.kernel_id)
    listener.sessions[kernel.kernel_id] = session
    front = FrontEnd(server, session)
    httpx.get(f"{server.url}/themisto/api/kernels/{kernel.kernel_id}",
              headers=server.headers, timeout=30)  # the notebook opens: its state is read
    cells = [Cell(code) for code in codes]
    executed = session.cells = kernel.executed  # steps are numbered in the order cells run
    try:
        (SCENARIOS | COLD)[name](kernel, front, cells)
        kernel.wait_idle(600)
        seen, quiet_since = -1, time.time()
        while not session.settled() and time.time() - quiet_since < QUIET:
            done = sum(c.prediction is not None for c in executed)
            if done != seen:
                seen, quiet_since = done, time.time()
            time.sleep(0.2)
    finally:
        front._cancel()
        kernel.shutdown()
    return session


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * (len(ordered) - 1) + 0.5))]


def summary(session: Session) -> dict[str, Any]:
    cells = session.cells
    counted = [c for c in cells if c.counted]
    n = len(counted)
    waits = [c.prediction_at - c.run_at for c in counted]
    scored = [c.scores for c in counted if c.scores is not None]
    made = [r for k, r in session.next_cells.items() if k <= len(cells) + 1]
    nexts = [r for r in made if not r.get("error") and not r.get("abstained")]
    # the cell just run before a next-cell prediction's target
    just_run = {k: cells[k - 2].code for k in session.next_cells if 2 <= k <= len(cells) + 1}
    return {
        "cells": n,
        "at_run": sum(1 for c in counted if c.prediction and not c.prediction.get("error")
                      and (c.prediction.get("ready_before_start") or -1) >= 0) / n,
        "within_100ms": sum(1 for w in waits if w <= 0.1) / n,
        "before_output": sum(1 for c in counted if c.prediction_at < c.output_at) / n,
        "superseded": sum(c.superseded for c in counted) / n,
        "next_superseded": sum(1 for r in made if r.get("error")
                               and superseded(r["error"])) / max(1, len(made)),
        "p50": percentile(waits, 0.5), "p95": percentile(waits, 0.95),
        "predicted": sum(1 for c in counted if math.isfinite(c.prediction_at)),
        "scored": len(scored),
        "em": statistics.fmean(s["exact_match"] for s in scored) if scored else None,
        "chrf": statistics.fmean(s["chrf"] for s in scored) if scored else None,
        "abstained": sum(c.abstained for c in counted) / n,
        "next_cells": len(nexts),
        "next_abstained": sum(1 for r in made if r.get("abstained")) / max(1, len(made)),
        "next_is_last": sum(1 for r in nexts if str(r.get("answer") or "").strip()
                            == just_run.get(int(r["target_step"]), "").strip())
                        / max(1, len(nexts)),
        "models": sorted({str(c.prediction.get("model")) for c in counted
                          if c.prediction and not c.prediction.get("error")}),
    }


def bench_predictor(predictor: str, codes: list[str], names: list[str]) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="themisto-patterns-") as tmp:
        began = time.time()
        server = Server(Path(tmp), root=NOTEBOOKS, ready_timeout=180, extra=[
            f"--ThemistoExtension.predictors={predictor}", "--ThemistoExtension.contexts=full"])
        started = time.time() - began
        server.fail_fast()
        listener = Listener(server)
        results: dict[str, Any] = {"server_start": round(started, 3)}
        per_cell: dict[str, list[Cell]] = {}
        try:
            first = play(server, listener, "cold", codes).cells
            results["cold_start"] = round(first[0].prediction_at - first[0].run_at, 3)
            # the first answer a model wrote on this server: its load included
            by_model = [c for c in first if c.prediction and not c.prediction.get("error")
                        and c.prediction.get("model") not in RULES]
            results["cold_start_model"] = (round(by_model[0].prediction_at
                                                 - by_model[0].run_at, 3) if by_model else None)
            for name in names:
                session = play(server, listener, name, codes)
                per_cell[name] = session.cells
                results[name] = summary(session)
                print(f"{predictor:>13} {name:<20} " + describe(results[name]), flush=True)
            print(f"{predictor:>13} server started in {results['server_start']} s; cold "
                  f"start {results['cold_start']} s, first model answer "
                  f"{results['cold_start_model']} s", flush=True)
        finally:
            listener.stop.set()
            server.stop()
    results["_cells"] = per_cell
    return results


def describe(r: dict[str, Any]) -> str:
    def share(x: float) -> str:
        return f"{x:4.0%}"
    quality = (f"EM {r['em']:.3f} chrF {r['chrf']:.3f} (n {r['scored']})"
               if r["scored"] else "no scores")
    return (f"at run {share(r['at_run'])} · within 0.1 s {share(r['within_100ms'])} · "
            f"before output {share(r['before_output'])} · "
            f"superseded {share(r['superseded'])} (next cell {share(r['next_superseded'])}) · "
            f"abstained {share(r['abstained'])} · "
            f"p50 {r['p50']:.3f} s p95 {r['p95']:.3f} s · {quality} · next cell: abstained "
            f"{share(r['next_abstained'])}, the cell just run {share(r['next_is_last'])} of "
            f"{r['next_cells']} answers")


def same_cells(runs: dict[str, dict[str, Any]], names: list[str]) -> None:
    """Quality over the cells that every predictor run predicted, per scenario."""
    for name in names:
        by = {p: r["_cells"][name] for p, r in runs.items()}
        common = [k for k in range(len(next(iter(by.values()))))
                  if all(cells[k].counted and cells[k].scores is not None
                         for cells in by.values())]
        for predictor, cells in by.items():
            scores = [cells[k].scores for k in common]
            runs[predictor][name]["same_cells"] = {
                "n": len(common),
                "em": statistics.fmean(s["exact_match"] for s in scores) if scores else None,
                "chrf": statistics.fmean(s["chrf"] for s in scores) if scores else None}


def main() -> int:
    default = ThemistoExtension()._default_predictors()[0]
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--predictor", action="append",
                        help=f"default: {default} (the default), local, copy-previous")
    parser.add_argument("--scenario", action="append", choices=list(SCENARIOS))
    parser.add_argument("--notebook", action="append",
                        help=f"a shared notebook's name (default {DEFAULT_NOTEBOOKS})")
    parser.add_argument("--cells-per-notebook", type=int, default=8)
    args = parser.parse_args()
    predictors = args.predictor or [default, "local", "copy-previous"]
    names = args.scenario or list(SCENARIOS)
    notebooks = args.notebook or DEFAULT_NOTEBOOKS
    codes = notebook_cells(notebooks, args.cells_per_notebook)
    print(f"{len(codes)} cells ({args.cells_per_notebook} from each of {notebooks}); "
          f"front-end pause {PAUSE} s; predictors {predictors}", flush=True)
    runs = {p: bench_predictor(p, codes, names) for p in predictors}
    same_cells(runs, names)
    print("quality on the cells every predictor predicted:")
    for name in names:
        print(f"  {name:<20} " + " · ".join(
            f"{p} EM {r[name]['same_cells']['em'] or 0:.3f} chrF "
            f"{r[name]['same_cells']['chrf'] or 0:.3f}" for p, r in runs.items())
            + f" (n {runs[predictors[0]][name]['same_cells']['n']})")
    print(json.dumps({
        "cells": len(codes), "notebooks": notebooks, "pause": PAUSE, "exclusions": [],
        "default_predictor": default,
        "predictors": {p: {k: v for k, v in r.items() if k != "_cells"}
                       for p, r in runs.items()}}, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
