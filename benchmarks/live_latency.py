"""Live prediction latency: a ~200-step notebook replayed through the server, local model.

A real `jupyter server` with `predictors = ["local"]`, `contexts = ["full"]` records a
kernel that runs the shared notebooks' code cells one after another (with a few cells
that sleep, so some run >= 1 s) and a pause between cells, as a person would. For every
cell it measures when the output prediction arrived on the live stream, relative to the
cell's start and to its real result; a cell that never got one counts as never ready.
The notebook is opened first as the front end opens one (it reads its kernel's state,
on which the server warms the model's session). Run twice, with prefix reuse on and off.

With ``--announce`` it simulates a person in front of the notebook: each cell's text is
announced as the front end would (``POST /speculations``) before the cell runs, half of
the cells (alternately) after a pause (``--pause`` seconds before Shift+Enter) and half
straight after typing (0.3 s before); every third cell is first announced as a draft
(its last line not typed yet) 1.5 s before its final text, so that speculation is
thrown away. Times are from Shift+Enter: to the first streamed piece of the output
prediction (``writing`` event) and to the whole prediction; a cell counts as ready at
start when its speculation was complete before it started. The server's own account
(``GET /predictors``) gives the CPU seconds spent on speculations taken and thrown away.

Then the cold start, in a new process with the model loaded: the first prediction of a
new session whose prompt is the live budget's largest (the last step of the replayed
trajectory), nothing of it cached but the prompts' fixed part, which an earlier server
saved (``prefixes.py``); the same when even that is read (the first prediction on a new
machine); the same for a ~2,000-token prompt; and once its session was warmed as on
opening its notebook. The figures end with one JSON line::

    {"p50": ..., "p95": ..., "ready_at_start": ..., "first_token_p50": ..., "cold_start": ...}

    python benchmarks/live_latency.py [--cells 200] [--think 3] [--budget 2500]
                                      [--no-compare] [--verbose] [--announce] [--pause 2.5]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import nbformat
import psutil
from server_api import Server, stream_events

from themisto_ext.prediction.clients.base import PredictionRequest
from themisto_ext.prediction.clients.local import LocalPredictor
from themisto_ext.prediction.prompts.build import build_prompt
from themisto_ext.server.app import ThemistoExtension
from themisto_ext.store import SQLiteStore

NOTEBOOKS = Path(__file__).resolve().parents[2] / "shared" / "data" / "notebooks"
SLOW_EVERY = 20
SLOW_CELL = "import time\ntime.sleep(1.5)\n'slept'"


def notebook_cells(limit: int) -> list[str]:
    cells: list[str] = []
    for path in sorted(NOTEBOOKS.glob("*.ipynb")):
        nb = nbformat.read(path, as_version=4)
        for cell in nb.cells:
            if cell.cell_type == "code" and cell.source.strip():
                if len(cells) % SLOW_EVERY == SLOW_EVERY - 1:
                    cells.append(SLOW_CELL)
                cells.append(cell.source)
    return cells[:limit]


STRAIGHT_LEAD = 0.3
"""Seconds between a cell's text being announced and its run, for a cell run straight
after typing (the front end announces on selection and after a pause in typing)."""


def listen(server: Server, out: dict[str, dict[int, float]], records: dict[int, dict],
           stop: threading.Event) -> None:
    for event, data in stream_events(server, stop):
        if event == "writing" and data["task"] == "output":
            out["first-token"].setdefault(data["target_step"], time.time())
        elif event == "step":
            out["step"][data["step"]["step"]] = time.time()
        elif event == "prediction":
            prediction = data["prediction"]
            target = prediction["target_step"]
            if prediction["task"] == "next-cell":
                out["next-cell"].setdefault(target, time.time())
                records.setdefault(-target, prediction)
            elif prediction["error"]:
                # a prediction overtaken by its cell's next one is superseded, not failed
                gone = prediction["error"].get("code") == "superseded"
                out["superseded" if gone else "failed"][target] = time.time()
                records.setdefault(target, prediction)
            else:
                out["prediction"].setdefault(target, time.time())
                records.setdefault(target, prediction)


def trace(starts: dict[int, float], ends: dict[int, float], arrivals: dict[str, dict[int, float]],
          records: dict[int, dict]) -> None:
    """One line per cell: when its output prediction and the next-cell one arrived."""
    for n in starts:
        out, nxt = records.get(n, {}), records.get(-(n + 1), {})
        got = arrivals["prediction"].get(n)
        nc = arrivals["next-cell"].get(n + 1)
        print(f"cell {n:3d} ran {ends[n] - starts[n]:6.3f} s | output "
              + (f"{got - starts[n]:6.2f} s after start, prompt {out.get('prompt_tokens')} "
                 f"cached {out.get('cached_tokens')} answer {out.get('completion_tokens')} "
                 f"model {out.get('latency')} s" if got else
                 f"failed: {out['error']}" if out.get("error") else "none")
              + " | next cell "
              + (f"{nc - ends[n]:6.2f} s after result, prompt {nxt.get('prompt_tokens')} "
                 f"cached {nxt.get('cached_tokens')} model {nxt.get('latency')} s"
                 + (f" {nxt['error']['type']}" if nxt.get("error") else "")
                 if nc else "none"))


COLD_TOKENS = 2000
COLD_BUDGET = 12_000
"""Room for a 2,000-token prompt: the local model's live budget holds about 1,800 tokens."""


async def cold_start(store_path: Path, budget: int) -> dict[str, float]:
    """First predictions of new sessions on a loaded model, each in a new process's
    predictor (seconds, and the prompts' tokens): see the module docstring."""
    store = SQLiteStore(store_path)
    (trajectory,) = store.list_trajectories(limit=1)
    steps = list(store.iter_steps(trajectory.id))
    found: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="themisto-states-") as states:

        async def first_prediction(label: str, prompt_budget: int, n: int,
                                   warmed: bool = False) -> None:
            predictor = LocalPredictor(max_tokens=64, prefix_dir=Path(states))
            try:
                began = time.perf_counter()
                await predictor.load()
                found["load"] = time.perf_counter() - began
                prompt = build_prompt(steps[:n], "output", "full", target_code=steps[n]["code"],
                                      budget_chars=prompt_budget)
                if warmed:
                    await predictor.warm(prompt, label)
                began = time.perf_counter()
                completion = await predictor.predict(PredictionRequest(
                    task="output", history=steps[:n], target_code=steps[n]["code"],
                    prompt=prompt, session=label))
                found[label] = time.perf_counter() - began
                tokens = completion.prompt_tokens or 0
                found[f"{label}_tokens"] = tokens
                found[f"{label}_read"] = tokens - (completion.cached_tokens or 0)
            finally:
                await predictor.aclose()

        last = len(steps) - 1
        await first_prediction("first_ever", budget, last)  # saves the fixed part
        await first_prediction("cold", budget, last)
        counter = LocalPredictor(prefix_dir=Path(states))

        def tokens_before(n: int) -> int:
            prompt = build_prompt(steps[:n], "output", "full", target_code=steps[n]["code"],
                                  budget_chars=COLD_BUDGET)
            return counter.count_tokens(prompt.system + prompt.user)

        try:
            longer = next((n for n in range(1, len(steps)) if tokens_before(n) >= COLD_TOKENS),
                          last)
        finally:
            await counter.aclose()
        await first_prediction("cold_2000", COLD_BUDGET, longer)
        await first_prediction("warm", COLD_BUDGET, longer, warmed=True)
    return found


def speculation_account(server: Server) -> dict[str, float]:
    got: dict[str, float] = httpx.get(f"{server.url}/themisto/api/predictors",
                                      headers=server.headers, timeout=30).json()["speculation"]
    return got


def draft_of(code: str) -> str:
    """The cell as it stood when the person paused before typing its last line."""
    lines = code.rstrip().splitlines()
    return "\n".join(lines[:-1]) if len(lines) > 1 else code.rstrip()[:-1] or "#"


DRAFT_LEAD = 1.5
"""Seconds between a draft's announcement and the final text's."""


def announce(server: Server, kernel_id: str, code: str) -> None:
    """What the front end posts when a cell's text is stable (or the cell is selected)."""
    httpx.post(f"{server.url}/themisto/api/speculations", headers=server.headers,
               json={"kernel_id": kernel_id, "code": code, "cell_id": None}, timeout=30)


def open_notebook(server: Server, kernel_id: str) -> None:
    """What the front end does when a notebook opens: it reads its kernel's state (the
    server then warms the kernel's model session)."""
    httpx.get(f"{server.url}/themisto/api/kernels/{kernel_id}", headers=server.headers,
              timeout=30).raise_for_status()


def replay(cells: list[str], think: float, reuse: bool, budget: int, verbose: bool,
           pause: float | None = None, threads: int = 0) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="themisto-live-") as tmp:
        server = Server(Path(tmp), root=NOTEBOOKS, ready_timeout=120, extra=[
            "--ThemistoExtension.predictors=local", "--ThemistoExtension.contexts=full",
            f"--ThemistoExtension.local_reuse_prefix={reuse}",
            f"--ThemistoExtension.local_prompt_threads={threads}",
            f"--ThemistoExtension.local_prediction_budget={budget}"])
        server.fail_fast()  # a server that dies ends the run with its log, at once
        arrivals: dict[str, dict[int, float]] = {"prediction": {}, "step": {}, "failed": {},
                                                 "superseded": {},
                                                 "next-cell": {}, "first-token": {}}
        paused: set[int] = set()
        records: dict[int, dict] = {}
        stop = threading.Event()
        threading.Thread(target=listen, args=(server, arrivals, records, stop),
                         daemon=True).start()
        try:
            kid, client = server.start_kernel()
            open_notebook(server, kid)
            starts, ends = {}, {}
            for n, code in enumerate(cells, start=1):
                if pause is not None and n > 1:
                    lead = pause if n % 2 == 0 else STRAIGHT_LEAD
                    if lead == pause:
                        paused.add(n)
                    if n % 3 == 0:
                        time.sleep(max(0.0, think - lead - DRAFT_LEAD))
                        announce(server, kid, draft_of(code))
                        time.sleep(DRAFT_LEAD)
                    else:
                        time.sleep(max(0.0, think - lead))
                    announce(server, kid, code)
                    time.sleep(lead)
                elif n > 1:
                    time.sleep(think)
                starts[n] = time.time()
                client.execute_interactive(code, timeout=600, allow_stdin=False,
                                           output_hook=lambda msg: None)
                ends[n] = time.time()
            # Wait for the last predictions, until none has come for a while.
            seen, quiet_since = -1, time.time()
            while len(arrivals["prediction"]) < len(cells) and time.time() - quiet_since < 20:
                if len(arrivals["prediction"]) != seen:
                    seen, quiet_since = len(arrivals["prediction"]), time.time()
                time.sleep(0.2)
            client.stop_channels()
            model = server.model_process()
            model_rss = model.memory_info().rss if model else None
            account = speculation_account(server)
            # the server and its model's process: the model computes in its own
            server_cpu = sum(sum(p.cpu_times()[:2]) for p in (psutil.Process(server.proc.pid),
                                                               model) if p is not None)
        finally:
            stop.set()
            server.stop()
        cold = asyncio.run(cold_start(server.store, budget))
    if verbose:
        trace(starts, ends, arrivals, records)
    latency = {n: arrivals["prediction"][n] - starts[n] for n in starts
               if n in arrivals["prediction"]}
    # A cell without an output prediction counts as never predicted, not as left out.
    later = sorted(latency.get(n, float("inf")) for n in starts if n > 5)
    slow = [n for n in starts if ends[n] - starts[n] >= 1.0]
    before = [n for n in slow if arrivals["prediction"].get(n, float("inf")) < ends[n]]
    outputs = {n: r for n, r in records.items() if n > 0}
    reused = [r for n, r in outputs.items() if n > 1 and r.get("prefix_reused")]
    first = outputs.get(1, {})
    ahead = [n for n in starts if n > 5 and (outputs.get(n, {}).get("ready_before_start")
                                              or -1) >= 0]
    tokens = sorted(arrivals["first-token"].get(n, arrivals["prediction"].get(
        n, float("inf"))) - starts[n] for n in starts if n > 5)
    after_pause = sorted(latency.get(n, float("inf")) for n in paused if n > 5)
    return {
        "ready_at_start": len(ahead) / max(1, len([n for n in starts if n > 5])),
        "first_token_p50": statistics.median(tokens) if tokens else float("nan"),
        "paused_p50": statistics.median(after_pause) if after_pause else float("nan"),
        "speculative": sum(1 for r in outputs.values() if r.get("speculative")),
        "cells": len(cells), "predicted": len(latency), "failed": len(arrivals["failed"]),
        "superseded": len(arrivals["superseded"]),
        "p50": statistics.median(later) if later else float("nan"),
        "p95": later[int(0.95 * (len(later) - 1))] if later else float("nan"),
        "first": latency.get(1, float("nan")), "first_tokens": first.get("prompt_tokens"),
        **cold, "server_cpu": server_cpu, "speculation": account, "model_rss": model_rss,
        "slow": len(slow), "before": len(before),
        "reuse_rate": len(reused) / max(1, len(outputs) - 1),
        "max_prompt_tokens": max((r.get("prompt_tokens") or 0 for r in outputs.values()),
                                 default=0),
    }


def show(label: str, r: dict[str, Any]) -> None:
    spent = r["speculation"]
    print(f"{label}: {r['predicted']}/{r['cells']} cells got an output prediction "
          f"({r['failed']} failed, {r['superseded']} superseded by the next cell's, the "
          "rest never asked or unanswered: counted as never ready); "
          "cell start -> output "
          f"prediction, cells after the first five: p50 {r['p50']:.3f} s, p95 {r['p95']:.3f} s "
          f"(targets 0.5 s / 1.5 s); first cell {r['first']:.2f} s ({r['first_tokens']}-token "
          "prompt); "
          "ready before the real result for "
          f"{r['before']}/{r['slow']} cells running >= 1 s; prefix reused in "
          f"{r['reuse_rate']:.0%} of predictions; largest prompt {r['max_prompt_tokens']} tokens; "
          f"first streamed piece p50 {r['first_token_p50']:.3f} s after start; "
          f"{r['speculative']} cells took a speculation, ready at start for "
          f"{r['ready_at_start']:.0%} (cells after the first five); cells run after a pause: "
          f"p50 {r['paused_p50']:.3f} s")
    print(f"  speculation: {spent['made']} made, {spent['used']} taken by their cell; CPU "
          f"{spent['cpu_seconds_used']:.1f} s on those taken, "
          f"{spent['cpu_seconds_thrown_away']:.1f} s on those thrown away "
          f"({spent['cpu_seconds_thrown_away'] / max(r['server_cpu'], 1e-9):.0%} of the "
          f"server's and its model process's {r['server_cpu']:.1f} CPU s); model process "
          f"RSS {(r['model_rss'] or 0) / 2**20:.0f} MiB")
    print(f"  cold start (model loaded in {r['load']:.2f} s before): a new session at the live "
          f"budget ({r['cold_tokens']:.0f}-token prompt, {r['cold_read']:.0f} read, the fixed "
          f"part loaded from disk) {r['cold']:.2f} s; the same on a new machine (all "
          f"{r['first_ever_read']:.0f} read) {r['first_ever']:.2f} s; a "
          f"{r['cold_2000_tokens']:.0f}-token prompt ({r['cold_2000_read']:.0f} read) "
          f"{r['cold_2000']:.2f} s, {r['warm']:.2f} s once warmed as on opening its notebook")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--cells", type=int, default=200)
    parser.add_argument("--think", type=float, default=3.0,
                        help="seconds between a cell's result and the next cell (default 3)")
    parser.add_argument("--budget", type=int,
                        default=ThemistoExtension.local_prediction_budget.default_value,
                        help="ThemistoExtension.local_prediction_budget (characters; default "
                             "%(default)s, the server's)")
    parser.add_argument("--verbose", action="store_true", help="print a line per cell")
    parser.add_argument("--prompt-threads", type=int, default=0,
                        help="ThemistoExtension.local_prompt_threads (default 0: the server's "
                             "choice, half the usable CPUs)")
    parser.add_argument("--no-compare", action="store_true",
                        help="skip the run with prefix reuse disabled")
    parser.add_argument("--announce", action="store_true",
                        help="announce each cell's text before it runs (speculation)")
    parser.add_argument("--pause", type=float, default=2.5,
                        help="with --announce: seconds between announcing and running the "
                             "cells run after a pause (default %(default)s)")
    args = parser.parse_args()
    cells = notebook_cells(args.cells)
    pause = args.pause if args.announce else None
    main_run = replay(cells, args.think, True, args.budget, args.verbose, pause,
                      args.prompt_threads)
    show("reuse on ", main_run)
    if not args.no_compare:
        show("reuse off", replay(cells, args.think, False, args.budget, args.verbose, pause,
                                 args.prompt_threads))
    print(json.dumps({key: round(float(main_run[name]), 3) for key, name in (
        ("p50", "p50"), ("p95", "p95"), ("ready_at_start", "ready_at_start"),
        ("first_token_p50", "first_token_p50"), ("cold_start", "cold"),
        ("cold_start_2000", "cold_2000"), ("cold_start_new_machine", "first_ever"),
        ("warm_start", "warm"))} | {
        "speculation_cpu_thrown_away": main_run["speculation"]["cpu_seconds_thrown_away"],
        "model_rss_mib": round((main_run["model_rss"] or 0) / 2**20)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
