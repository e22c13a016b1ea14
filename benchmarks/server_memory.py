"""The server's memory over a long session: 1,000 cells that each print 150 KB.

A real `jupyter server` with the extension (live `baseline` predictions on, one client
following the live stream) runs one kernel through the cells, then stops the kernel. The
server's resident memory (RSS, and the Python heap the server's own allocator holds, from
/proc/<pid>/smaps_rollup) is printed at the start, every 100 cells, at the peak, after the
kernel stopped and after a quiet minute. Run it also with `--predictors ''` (no live
predictions) to separate what predictions hold from what ingestion and the stream hold.

    python benchmarks/server_memory.py [--cells 1000] [--kb 150] [--predictors baseline]
                                       [--no-stream] [--quiet 30]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx
import psutil
from server_api import Server, stream_events


def rss_mb(proc: psutil.Process) -> float:
    return proc.memory_info().rss / 1e6


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--cells", type=int, default=1000)
    parser.add_argument("--kb", type=int, default=150)
    parser.add_argument("--predictors", default="baseline")
    parser.add_argument("--no-stream", action="store_true")
    parser.add_argument("--quiet", type=float, default=30, help="seconds to wait at the end")
    args = parser.parse_args()
    predictors = [p for p in args.predictors.split(",") if p]
    with tempfile.TemporaryDirectory(prefix="themisto-mem-") as tmp:
        home = Path(tmp)
        (home / "config").mkdir(parents=True)
        (home / "config" / "jupyter_server_config.json").write_text(
            json.dumps({"ThemistoExtension": {"predictors": predictors}}))
        server = Server(home)
        proc = psutil.Process(server.proc.pid)
        peak = [rss_mb(proc)]
        stop = threading.Event()
        arrived = [0]

        def sample() -> None:
            while not stop.is_set():
                peak[0] = max(peak[0], rss_mb(proc))
                time.sleep(0.05)

        def follow() -> None:
            for event, _ in stream_events(server, stop):
                arrived[0] += event == "step"

        threading.Thread(target=sample, daemon=True).start()
        if not args.no_stream:
            threading.Thread(target=follow, daemon=True).start()
        try:
            time.sleep(2)
            start = rss_mb(proc)
            print(f"predictors {predictors or 'none'}, live stream "
                  f"{'off' if args.no_stream else 'followed'}: {args.cells} cells of "
                  f"{args.kb} KB output")
            print(f"start: {start:.0f} MB")
            kernel_id, client = server.start_kernel()
            began = time.monotonic()
            for i in range(1, args.cells + 1):
                client.execute_interactive(f"print('{i % 10}' * {args.kb * 1000})", timeout=60,
                                           output_hook=lambda msg: None)
                if i % 100 == 0:
                    print(f"after {i:5d} cells: {rss_mb(proc):6.0f} MB "
                          f"({time.monotonic() - began:.0f} s)", flush=True)
            deadline = time.time() + 60
            while time.time() < deadline:
                status = httpx.get(f"{server.url}/themisto/api/kernels/{kernel_id}",
                                   headers=server.headers, timeout=60).json()
                if status["steps"] >= args.cells:
                    break
                time.sleep(0.2)
            print(f"stored: {status['steps']} steps; on the stream: {arrived[0]}")
            client.stop_channels()
            httpx.delete(f"{server.url}/api/kernels/{kernel_id}", headers=server.headers,
                         timeout=60)
            time.sleep(3)
            print(f"peak: {peak[0]:.0f} MB; after the kernel stopped: {rss_mb(proc):.0f} MB")
            time.sleep(args.quiet)
            print(f"after {args.quiet:.0f} s more: {rss_mb(proc):.0f} MB")
        finally:
            stop.set()
            server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
