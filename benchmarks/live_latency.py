"""Live prediction latency: a ~200-step notebook replayed through the server, local model.

A real `jupyter server` with `predictors = ["local"]`, `contexts = ["full"]` records a
kernel that runs the shared notebooks' code cells one after another (with a few cells
that sleep, so some run >= 1 s) and a pause between cells, as a person would. For every
cell it measures when the output prediction arrived on the live stream, relative to the
cell's start and to its real result. Run twice, with prefix reuse on and off.

    python benchmarks/live_latency.py [--cells 200] [--think 1.0] [--no-compare]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx
import nbformat
from jupyter_client import BlockingKernelClient
from server_api import Server, stream_events

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


def listen(server: Server, out: dict[str, dict[int, float]], records: dict[int, dict],
           stop: threading.Event) -> None:
    for event, data in stream_events(server, stop):
        if event == "step":
            out["step"][data["step"]["step"]] = time.time()
        elif event == "prediction" and data["prediction"]["task"] == "output":
            target = data["prediction"]["target_step"]
            if data["prediction"]["error"]:
                out["failed"][target] = time.time()
                continue
            out["prediction"].setdefault(target, time.time())
            records.setdefault(target, data["prediction"])


def replay(cells: list[str], think: float, reuse: bool) -> dict[str, object]:
    with tempfile.TemporaryDirectory(prefix="themisto-live-") as tmp:
        server = Server(Path(tmp), root=NOTEBOOKS, ready_timeout=120, extra=[
            "--ThemistoExtension.predictors=local", "--ThemistoExtension.contexts=full",
            f"--ThemistoExtension.local_reuse_prefix={reuse}"])
        arrivals: dict[str, dict[int, float]] = {"prediction": {}, "step": {}, "failed": {}}
        records: dict[int, dict] = {}
        stop = threading.Event()
        threading.Thread(target=listen, args=(server, arrivals, records, stop),
                         daemon=True).start()
        try:
            kid = httpx.post(f"{server.url}/api/kernels", headers=server.headers,
                             json={"name": "python3"}, timeout=60).json()["id"]
            client = BlockingKernelClient(
                connection_file=str(server.home / "runtime" / f"kernel-{kid}.json"))
            client.load_connection_file()
            client.start_channels()
            client.wait_for_ready(timeout=60)
            starts, ends = {}, {}
            for n, code in enumerate(cells, start=1):
                starts[n] = time.time()
                client.execute_interactive(code, timeout=600, allow_stdin=False,
                                           output_hook=lambda msg: None)
                ends[n] = time.time()
                time.sleep(think)
            deadline = time.time() + 120
            while len(arrivals["prediction"]) < len(cells) and time.time() < deadline:
                time.sleep(0.2)
            client.stop_channels()
        finally:
            stop.set()
            server.stop()
    latency = {n: arrivals["prediction"][n] - starts[n] for n in starts
               if n in arrivals["prediction"]}
    later = sorted(v for n, v in latency.items() if n > 5)
    slow = [n for n in starts if ends[n] - starts[n] >= 1.0]
    before = [n for n in slow if arrivals["prediction"].get(n, float("inf")) < ends[n]]
    reused = [r for n, r in records.items() if n > 1 and r.get("prefix_reused")]
    first = records.get(1, {})
    return {
        "cells": len(cells), "predicted": len(latency), "failed": len(arrivals["failed"]),
        "p50": statistics.median(later) if later else float("nan"),
        "p95": later[int(0.95 * (len(later) - 1))] if later else float("nan"),
        "cold": latency.get(1, float("nan")), "cold_tokens": first.get("prompt_tokens"),
        "slow": len(slow), "before": len(before),
        "reuse_rate": len(reused) / max(1, len(records) - 1),
        "max_prompt_tokens": max((r.get("prompt_tokens") or 0 for r in records.values()),
                                 default=0),
    }


def show(label: str, r: dict[str, object]) -> None:
    print(f"{label}: {r['predicted']}/{r['cells']} cells predicted ({r['failed']} failed; "
          "the rest superseded by the next cell before the model got to them); "
          "cell start -> output "
          f"prediction, cells after the first five: p50 {r['p50']:.2f} s, p95 {r['p95']:.2f} s "
          f"(targets 0.5 s / 1.5 s); cold start {r['cold']:.2f} s for a "
          f"{r['cold_tokens']}-token prompt; ready before the real result for "
          f"{r['before']}/{r['slow']} cells running >= 1 s; prefix reused in "
          f"{r['reuse_rate']:.0%} of predictions; largest prompt {r['max_prompt_tokens']} tokens")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--cells", type=int, default=200)
    parser.add_argument("--think", type=float, default=1.0,
                        help="seconds between a cell's result and the next cell (default 1)")
    parser.add_argument("--no-compare", action="store_true",
                        help="skip the run with prefix reuse disabled")
    args = parser.parse_args()
    cells = notebook_cells(args.cells)
    show("reuse on ", replay(cells, args.think, reuse=True))
    if not args.no_compare:
        show("reuse off", replay(cells, args.think, reuse=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
