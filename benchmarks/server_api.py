"""Server figures: ingestion throughput, live delay with 8 busy kernels, a 100k-step export.

Runs a real `jupyter server` with the extension in a temporary home (loopback only) and
prints:
  * ingestion: steps/s from kernel journals into SQLite (target >= 1,000);
  * live: 8 kernels executing cells at once; delay from a cell's end to its step arriving
    on the live stream (jupyter_server's event bus WebSocket), median and p95 (targets
    200 ms / 1 s), and that none was lost or mixed;
  * export: a 100,000-step trajectory set streamed through the API (target <= 5 s) and the
    server's peak RSS while doing it.

    python benchmarks/server_api.py [--kernels 8] [--cells 25] [--export-steps 100000]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import queue
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

import httpx
import psutil
from jupyter_client import BlockingKernelClient

from themisto_ext.events import LIVE_EVENT_SCHEMA_ID, live_event
from themisto_ext.ingest import JournalIngestor
from themisto_ext.journal import JournalWriter
from themisto_ext.store import SQLiteStore

TOKEN = "themisto-benchmark-token"


def fake_step(tid: str, n: int) -> dict:
    variables = {f"v{i}": {"type": "int", "size": 28, "size_exact": True, "repr": str(n * i)}
                 for i in range(20)}
    variables["df"] = {"type": "DataFrame", "size": 80_000_128, "size_exact": True,
                       "shape": [1_000_000, 10], "repr": "     a    b\n0  1.0  2.0\n" * 20}
    return {"kind": "step", "format_version": 1, "trajectory_id": tid, "kernel_id": "bench",
            "step": n, "cell_id": None, "notebook_path": "bench.ipynb",
            "started_at": "2026-01-01T00:00:00+00:00", "ended_at": "2026-01-01T00:00:01+00:00",
            "code": f"x = df['a'].mean() + {n}\nprint(x)", "output": f"{n}.5\n",
            "outputs": [{"output_type": "stream", "name": "stdout", "mime_types": ["text/plain"],
                         "text": f"{n}.5\n"}],
            "execution_time": 0.01, "memory_bytes": 123_456_789, "runtime_variables": variables,
            "hash_index": f"{n:032x}", "error": None}


def write_journals(directory: Path, trajectories: int, steps: int) -> None:
    for t in range(trajectories):
        tid = f"bench{t:04d}"
        writer = JournalWriter(directory, f"kernel{t}", tid)
        writer.append({"kind": "trajectory", "trajectory_id": tid, "kernel_id": f"kernel{t}",
                       "notebook_path": "bench.ipynb",
                       "started_at": f"2026-01-01T00:00:{t % 60:02d}+00:00"})
        for n in range(1, steps + 1):
            writer.append(fake_step(tid, n))
        writer.close()


def ingestion(work: Path) -> None:
    journal = work / "ingest" / "journal"
    write_journals(journal, 8, 2500)
    store = SQLiteStore(work / "ingest" / "s.sqlite3")
    start = time.perf_counter()
    result = JournalIngestor(journal, store).poll()
    elapsed = time.perf_counter() - start
    n = len(result.steps)
    print(f"ingestion: {n} steps from 8 journals in {elapsed:.2f} s = {n / elapsed:,.0f} steps/s "
          "(target >= 1,000)")


class Server:
    def __init__(self, home: Path, root: Path | None = None, extra: list[str] | None = None,
                 ready_timeout: float = 60, env: dict[str, str] | None = None) -> None:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.home = home
        env = dict(os.environ, HOME=str(home), JUPYTER_DATA_DIR=str(home / "data"),
                   JUPYTER_RUNTIME_DIR=str(home / "runtime"),
                   JUPYTER_CONFIG_DIR=str(home / "config"), **(env or {}))
        self.store = home / "data" / "themisto" / "trajectories.sqlite3"
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "jupyter_server", "--no-browser", "--allow-root",
             f"--port={self.port}", "--ip=127.0.0.1", f"--IdentityProvider.token={TOKEN}",
             f"--ServerApp.root_dir={root or home}",
             f"--ThemistoExtension.store_path={self.store}",
             *(extra or [])],
            env=env, stdout=subprocess.DEVNULL, stderr=self.log_file(home))
        self.url = f"http://127.0.0.1:{self.port}"
        self.headers = {"Authorization": f"token {TOKEN}"}
        self._stopping = False
        deadline = time.time() + ready_timeout
        while time.time() < deadline:
            try:
                if httpx.get(f"{self.url}/themisto/api", headers=self.headers).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            time.sleep(0.2)
        raise RuntimeError(f"the server did not start; see {home / 'server.log'}")

    @staticmethod
    def log_file(home: Path) -> int:
        home.mkdir(parents=True, exist_ok=True)
        return os.open(home / "server.log", os.O_WRONLY | os.O_CREAT | os.O_TRUNC)

    def start_kernel(self, timeout: float = 60) -> tuple[str, BlockingKernelClient]:
        """A python3 kernel started through the REST API, as JupyterLab starts one (the
        server's provisioner loads the hook), and a client ready on it."""
        kid: str = httpx.post(f"{self.url}/api/kernels", headers=self.headers,
                              json={"name": "python3"}, timeout=timeout).json()["id"]
        client = BlockingKernelClient(
            connection_file=str(self.home / "runtime" / f"kernel-{kid}.json"))
        client.load_connection_file()
        client.hb_channel.time_to_dead = 30.0  # a loaded machine misses 1 s heartbeats
        client.start_channels()
        client.wait_for_ready(timeout=timeout)
        return kid, client

    def fail_fast(self) -> None:
        """If the server dies before ``stop``, say so and end this benchmark at once (exit
        3) rather than wait for answers that will never come."""
        def watch() -> None:
            code = self.proc.wait()
            if self._stopping:
                return
            how = f"signal {-code}" if code < 0 else f"exit code {code}"
            log = (self.home / "server.log").read_text(errors="replace")[-2000:]
            print(f"\nthe Jupyter server died ({how}) during the benchmark; the end of "
                  f"{self.home / 'server.log'}:\n{log}", file=sys.stderr, flush=True)
            os._exit(3)

        threading.Thread(target=watch, daemon=True, name="server-watch").start()

    def model_process(self) -> psutil.Process | None:
        """The server's local-model process, if it runs one."""
        for child in psutil.Process(self.proc.pid).children(recursive=True):
            try:
                if "clients.local.process" in " ".join(child.cmdline()):
                    return child
            except psutil.Error:
                continue
        return None

    def stop(self) -> None:
        self._stopping = True
        self.proc.terminate()
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def stream_events(server: Server, stop: threading.Event) -> Iterator[tuple[str, dict]]:
    """``(type, data)`` of the server's live events until ``stop`` is set (``timed_events``
    without the times)."""
    for _, event, data in timed_events(server, stop):
        yield event, data


def timed_events(server: Server, stop: threading.Event) -> Iterator[tuple[float, str, dict]]:
    """``(arrival, type, data)`` of the server's live events until ``stop`` is set, read as
    JupyterLab reads them: jupyter_server's event bus WebSocket, themisto's schema; first
    ``("connected", {})`` once subscribed. ``arrival`` is ``time.time()`` when the reader
    got the message off the socket.

    Read by tornado on a thread of its own, a buffer at a time: a client that reads each
    frame with its own small ``recv`` calls (websocket-client) waited for the GIL behind
    the 8 kernel clients at every call, and its backlog, not the server, made the figure
    (median 1.3 s instead of 0.1 s). The arrival is taken there too, as the message comes
    off the socket, not when the consumer thread gets its turn."""
    messages: queue.Queue[tuple[float, str] | None] = queue.Queue()

    async def read() -> None:
        from tornado.httpclient import HTTPRequest
        from tornado.websocket import websocket_connect

        socket = await websocket_connect(HTTPRequest(
            f"ws://127.0.0.1:{server.port}/api/events/subscribe",
            headers={"Authorization": f"token {TOKEN}"}))
        messages.put((time.time(), ""))
        while not stop.is_set() and (message := await socket.read_message()) is not None:
            messages.put((time.time(), str(message)))
        socket.close()
        messages.put(None)

    threading.Thread(target=lambda: asyncio.run(read()), daemon=True).start()
    while (item := messages.get()) is not None:
        arrival, message = item
        if not message:
            yield arrival, "connected", {}
            continue
        data = json.loads(message)
        if data.pop("schema_id", None) == LIVE_EVENT_SCHEMA_ID:
            event = live_event(data)
            yield arrival, event["type"], dict(event)
        if stop.is_set():
            return


def follow_stream(server: Server, arrivals: dict[tuple[str, int], float], stop: threading.Event,
                  steps: dict[tuple[str, int], dict]) -> None:
    for arrival, event, data in timed_events(server, stop):
        if event == "step":
            key = (data["kernel_id"], data["step"]["step"])
            arrivals[key] = arrival
            steps[key] = data["step"]


def ended_at(server: Server, kernels: list[str]) -> dict[tuple[str, int], float]:
    """When each kernel's cells ended, by the kernel's clock, read from the REST API: the
    live stream's steps leave ``ended_at`` out."""
    ended = {}
    for kid in kernels:
        (trajectory,) = httpx.get(f"{server.url}/themisto/api/trajectories",
                                  params={"kernel": kid}, headers=server.headers,
                                  timeout=30).json()["trajectories"]
        steps = httpx.get(f"{server.url}/themisto/api/trajectories/{trajectory['id']}/steps",
                          headers=server.headers, timeout=30).json()["steps"]
        for step in steps:
            ended[(kid, step["step"])] = datetime.fromisoformat(step["ended_at"]).timestamp()
    return ended


def live(work: Path, kernels: int, cells: int) -> None:
    # baseline predictions run too (as in a default install they would), but no model
    # competes with the kernels for the two cores: this measures the data path
    server = Server(work / "live", extra=["--ThemistoExtension.predictors=baseline"])
    arrivals: dict[tuple[str, int], float] = {}
    steps: dict[tuple[str, int], dict] = {}
    stop = threading.Event()
    threading.Thread(target=follow_stream, args=(server, arrivals, stop, steps),
                     daemon=True).start()
    try:
        ids, clients = [], []
        for _ in range(kernels):
            kid, client = server.start_kernel()
            ids.append(kid)
            clients.append(client)

        def run(client: BlockingKernelClient, kid: str) -> None:
            for i in range(cells):
                client.execute_interactive(f"value_{i} = {i} * 2\nprint('{kid}', value_{i})",
                                           timeout=60, output_hook=lambda msg: None)

        threads = [threading.Thread(target=run, args=(c, k)) for c, k in zip(clients, ids,
                                                                             strict=True)]
        server_process = psutil.Process(server.proc.pid)
        cpu_before = sum(server_process.cpu_times()[:2])
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        deadline = time.time() + 10
        while len(arrivals) < kernels * cells and time.time() < deadline:
            time.sleep(0.05)
        cpu = sum(server_process.cpu_times()[:2]) - cpu_before  # its own, not its kernels'
        ended = ended_at(server, ids)
        delays = []
        mixed = 0
        for (kid, n), step in steps.items():
            delays.append(arrivals[(kid, n)] - ended[(kid, n)])
            if f"print('{kid}'" not in step["code"] or step["kernel_id"] != kid:
                mixed += 1
        delays.sort()
        print(f"live: {kernels} kernels x {cells} cells: {len(steps)}/{kernels * cells} steps "
              f"arrived, {mixed} mixed; delay cell end -> live stream: median "
              f"{statistics.median(delays) * 1000:.0f} ms, p95 "
              f"{delays[int(0.95 * (len(delays) - 1))] * 1000:.0f} ms, max "
              f"{delays[-1] * 1000:.0f} ms (targets 200 ms / 1 s); server CPU {cpu:.2f} s "
              f"({cpu / (kernels * cells) * 1000:.1f} ms a cell)")
        for client in clients:
            client.stop_channels()
    finally:
        stop.set()
        server.stop()


def export(work: Path, total: int) -> None:
    home = work / "export"
    store_path = home / "data" / "themisto" / "trajectories.sqlite3"
    journal = store_path.parent / "journal"
    write_journals(journal, 10, total // 10)
    JournalIngestor(journal, SQLiteStore(store_path)).poll()  # what a server finds at start
    server = Server(home, extra=["--ThemistoExtension.predictors=baseline"])
    proc = psutil.Process(server.proc.pid)
    peak = proc.memory_info().rss
    baseline = peak
    try:
        start = time.perf_counter()
        lines = size = 0
        with httpx.stream("GET", f"{server.url}/themisto/api/export?all=true",
                          headers=server.headers, timeout=120) as response:
            for chunk in response.iter_bytes():
                lines += chunk.count(b"\n")
                size += len(chunk)
                peak = max(peak, proc.memory_info().rss)
        elapsed = time.perf_counter() - start
        print(f"export: {lines:,} steps ({size / 1e6:.0f} MB) in {elapsed:.2f} s (target <= 5 s); "
              f"server RSS {baseline / 1e6:.0f} MB before, peak {peak / 1e6:.0f} MB during")
    finally:
        server.stop()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--kernels", type=int, default=8)
    parser.add_argument("--cells", type=int, default=25)
    parser.add_argument("--export-steps", type=int, default=100_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="themisto-bench-") as tmp:
        work = Path(tmp)
        ingestion(work)
        live(work, args.kernels, args.cells)
        export(work, args.export_steps)
    return 0


if __name__ == "__main__":
    sys.exit(main())
