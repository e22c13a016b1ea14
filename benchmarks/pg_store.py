"""PostgreSQL store at size: a 1,000,000-step export streamed through the API, and
`themisto migrate` of a 100,000-step SQLite store (the same on SQLite for comparison).

A throw-away PostgreSQL (tests/pg.py, fsync on) on 127.0.0.1. Prints:
  * export: N steps (100 trajectories; server_api.py's ~2.5 kB benchmark steps) streamed by
    GET /themisto/api/export?all=true from a real jupyter server on the store (target
    <= 60 s for 1,000,000 from PostgreSQL) and the server's RSS before and at peak, sampled
    every 50 ms (flat memory: the export never sits in memory);
  * migrate: `themisto migrate` of a 100,000-step SQLite store into PostgreSQL (target
    <= 60 s), and into a new SQLite file for comparison.

    python benchmarks/pg_store.py [--export-steps 1000000] [--migrate-steps 100000]
        [--engine postgresql|sqlite]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx
import psutil
from server_api import Server, fake_step

from themisto_ext.contract import decode_record
from themisto_ext.ingest import interpret
from themisto_ext.store import Trajectory, TrajectoryStore, open_store
from themisto_ext.trajectory import dumps_step

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from pg import PASSWORD, Cluster  # the tests' throw-away cluster

MARK = 987654321


def template(tid: str) -> str:
    step = {k: v for k, v in fake_step(tid, MARK).items() if k != "kind"}
    return dumps_step(step)  # type: ignore[arg-type]


def load(store: TrajectoryStore, trajectories: int, steps: int, user: str) -> None:
    """Bulk-load benchmark steps (as `themisto migrate` writes them)."""
    for t in range(trajectories):
        tid = f"bench{t:04d}"
        store.import_trajectory(Trajectory(tid, f"kernel{t}", "bench.ipynb",
                                           f"2026-01-01T00:{t // 60 % 60:02d}:{t % 60:02d}",
                                           user=user), [])
        line = template(tid)
        for start in range(1, steps + 1, 5000):
            page = [(n, line.replace(str(MARK), str(n)))
                    for n in range(start, min(start + 5000, steps + 1))]
            store.import_step_lines(tid, page)


def export(work: Path, url: str, total: int) -> None:
    store = open_store(url)
    t0 = time.perf_counter()
    load(store, 100, total // 100, "bench")
    store.close()
    print(f"  loaded {total:,} steps in {time.perf_counter() - t0:.0f} s")
    server = Server(work / "export", extra=[
        f"--ThemistoExtension.store_url={url}", "--ThemistoExtension.user=bench",
        "--ThemistoExtension.predictors=baseline"], ready_timeout=120)
    proc = psutil.Process(server.proc.pid)
    before = proc.memory_info().rss
    peak = [before]
    done = threading.Event()

    def sample() -> None:
        while not done.wait(0.05):
            peak[0] = max(peak[0], proc.memory_info().rss)

    threading.Thread(target=sample, daemon=True).start()
    try:
        load_before = os.getloadavg()[0]
        start = time.perf_counter()
        lines = size = 0
        with httpx.stream("GET", f"{server.url}/themisto/api/export?all=true",
                          headers=server.headers, timeout=600) as response:
            for chunk in response.iter_bytes():
                lines += chunk.count(b"\n")
                size += len(chunk)
        elapsed = time.perf_counter() - start
        done.set()
        print(f"export: {lines:,} steps ({size / 1e9:.2f} GB) in {elapsed:.1f} s = "
              f"{lines / elapsed:,.0f} steps/s, {size / 1e6 / elapsed:.0f} MB/s (target <= 60 s "
              f"for 1,000,000 from PostgreSQL); server RSS {before / 1e6:.0f} MB before, peak "
              f"{peak[0] / 1e6:.0f} MB during; load {load_before:.2f} before, "
              f"{os.getloadavg()[0]:.2f} after")
    finally:
        done.set()
        server.stop()


def migrate(work: Path, target: str, steps: int) -> None:
    source = work / f"single-{time.monotonic_ns()}.sqlite3"
    store = open_store(source)
    per = steps // 20
    for t in range(20):  # 20 trajectories as a kernel recorded them (journal writes)
        tid = f"mine{t:02d}"
        records = [{"kind": "trajectory", "trajectory_id": tid, "kernel_id": f"k{t}",
                    "notebook_path": "nb.ipynb", "started_at": f"2026-01-01T00:00:{t:02d}"}]
        records += [fake_step(tid, n) for n in range(1, per + 1)]
        lines = [decode_record(r) for r in records]  # as ingestion reads journal lines
        store.apply(interpret([r for r in lines if not isinstance(r, str)], "kernel"),
                    None)  # '' owner: recorded before owners
    store.close()
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "themisto_ext.cli", "migrate", "--from",
                           str(source), "--to", target, "--user", "me"],
                          capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    if done.returncode:
        raise RuntimeError(done.stderr)
    again = time.perf_counter()
    subprocess.run([sys.executable, "-m", "themisto_ext.cli", "migrate", "--from", str(source),
                    "--to", target], capture_output=True, text=True, check=True)
    rerun = time.perf_counter() - again
    kind = target.split(":", 1)[0]
    print(f"migrate: {per * 20:,} steps SQLite -> {kind} in {elapsed:.1f} s = "
          f"{per * 20 / elapsed:,.0f} steps/s (target <= 60 s); a second run (nothing new) "
          f"{rerun:.1f} s; {done.stdout.strip()}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--export-steps", type=int, default=1_000_000)
    parser.add_argument("--migrate-steps", type=int, default=100_000)
    parser.add_argument("--engine", choices=["postgresql", "sqlite"], default="postgresql",
                        help="the store the export runs on")
    args = parser.parse_args()
    os.environ["PGPASSWORD"] = PASSWORD
    with tempfile.TemporaryDirectory(prefix="themisto-pgbench-") as tmp:
        work = Path(tmp)
        cluster = Cluster(fsync=True).start()
        try:
            print(f"load before: {os.getloadavg()[0]:.2f}")
            if args.migrate_steps:
                migrate(work, cluster.create_database("migrated"), args.migrate_steps)
                migrate(work, f"sqlite:///{work}/migrated.sqlite3", args.migrate_steps)
            if args.export_steps:
                url = cluster.create_database("exported") if args.engine == "postgresql" \
                    else f"sqlite:///{work}/exported.sqlite3"
                print(f"export from {args.engine}:")
                export(work, url, args.export_steps)
        finally:
            cluster.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
