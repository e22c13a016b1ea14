"""A 500-student class on one PostgreSQL, each student through their own database role
(row-level security) or, with ``--service``, through the hub's Themisto service with a
token each (docs/deploying.md): ``multiuser.py --users 500 [--service]`` runs this.

Each student is what their server does for them: a journal their kernel appends to and
an ingestor (``JournalIngestor``, the server's) storing it through a ``PostgresStore`` of
the student's role, polled every 50 ms. Realistic pacing: a cell every 20-60 s per
student, and now and then (5 % of cells) a Run All of 15 cells 0.1 s apart. Students are
spread over a few worker processes, each polling its students one after another (so
what a student waits includes its neighbours' turns: an upper bound on a server of its
own; each student's start, its cursors read and trajectory stored, is done before the
class and timed apart). Prints cell end (the journal line written) -> step stored,
p50/p95/max; the cells/s; the CPU and memory of PostgreSQL and of the workers; then the class view's
first page through a teacher's real server (GET /themisto/api/class).
"""

from __future__ import annotations

import multiprocessing as mp
import random
import statistics
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import psutil

from themisto_ext.ingest import JournalIngestor
from themisto_ext.journal import JournalWriter
from themisto_ext.store import POSTGRESQL, open_store, parse_store_url
from themisto_ext.store.postgres import PostgresStore


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * (len(ordered) - 1) + 0.5))]


def _step(tid: str, n: int) -> dict[str, Any]:
    now = time.time()
    return {"kind": "step", "format_version": 1, "trajectory_id": tid, "kernel_id": f"k-{tid}",
            "step": n, "cell_id": f"c{n}", "notebook_path": "lab.ipynb",
            "started_at": time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime(now - 0.2)),
            "ended_at": time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime(now)),
            "code": f"result_{n} = data.groupby('week').score.mean()\nresult_{n}",
            "output": "week\n1    71.5\n2    74.0", "outputs": [], "execution_time": 0.2,
            "memory_bytes": 120_000_000,
            "runtime_variables": {f"result_{n}": {"type": "Series", "size": 512,
                                                  "size_exact": False, "repr": "<series>"}},
            "hash_index": f"{n:016x}", "error": None}


def worker(users: list[tuple[str, str, str]], root: str, seconds: float, seed: int,
           out: Any) -> None:
    """Simulate ``users`` (name, role URL, password) for ``seconds``; put the latencies."""
    rng = random.Random(seed)
    sent: dict[tuple[str, int], float] = {}
    lock = threading.Lock()
    people = []
    for name, url, password in users:
        journal = Path(root) / name
        where = parse_store_url(url).with_password(password)
        store = PostgresStore(where, pool_size=1) if where.engine == POSTGRESQL \
            else open_store(where)  # the service: the password is the student's token
        ingestor = JournalIngestor(journal, store, user=name)
        writer = JournalWriter(journal, f"k-{name}", f"t-{name}")
        writer.append({"kind": "trajectory", "trajectory_id": f"t-{name}",
                       "kernel_id": f"k-{name}", "notebook_path": "lab.ipynb",
                       "started_at": time.strftime("%Y-%m-%dT%H:%M:%S+00:00")})
        people.append({"name": name, "store": store, "ingestor": ingestor, "writer": writer,
                       "n": 0, "next": time.monotonic() + rng.uniform(0, 40), "burst": 0})
    # Each student's server starting: its cursors read and its trajectory stored, once,
    # before class (a worker does this for its students one after another, which no
    # server does for another: timed apart, as the start-up it is).
    began = time.perf_counter()
    for p in people:
        p["ingestor"].poll()
    out.put(("start", time.perf_counter() - began))
    stop = time.monotonic() + seconds
    latencies: list[float] = []

    def write() -> None:
        while time.monotonic() < stop:
            now = time.monotonic()
            for p in people:
                if now < p["next"]:
                    continue
                p["n"] += 1
                with lock:
                    sent[(p["name"], p["n"])] = time.perf_counter()
                p["writer"].append(_step(f"t-{p['name']}", p["n"]))
                if p["burst"] > 0:
                    p["burst"] -= 1
                    p["next"] = now + 0.1
                elif rng.random() < 0.05:
                    p["burst"], p["next"] = 14, now + 0.1  # Run All: 15 cells
                else:
                    p["next"] = now + rng.uniform(20, 60)
            time.sleep(0.01)

    writing = threading.Thread(target=write, daemon=True)
    writing.start()
    while time.monotonic() < stop + 2:
        began = time.monotonic()
        for p in people:
            result = p["ingestor"].poll()
            done = time.perf_counter()
            with lock:
                for s in result.steps:
                    at = sent.pop((p["name"], int(s["step"])), None)
                    if at is not None:
                        latencies.append(done - at)
        time.sleep(max(0.0, 0.05 - (time.monotonic() - began)))
    for p in people:
        p["writer"].close()
        p["store"].close()
    out.put((latencies, len(sent)))


def simulate(cluster: Any, owner_url: str, users: int, seconds: float, processes: int,
             teacher_server: Any, accounts: list[tuple[str, str, str]] | None = None) -> None:
    """``accounts``: (name, store URL, password or token) of each student; default: a
    database role each, made here."""
    from themisto_ext.store.roles import StoreRoles

    t0 = time.perf_counter()
    how = "a token each for the Themisto service"
    if accounts is None:
        roles = StoreRoles(parse_store_url(owner_url))
        accounts = []
        for i in range(users):
            url, password = roles.ensure(f"student{i:03d}")
            accounts.append((f"student{i:03d}", url.target, password))
        how = f"a database role each ({time.perf_counter() - t0:.1f} s to create them)"
    print(f"class: {users} students, {how}; {processes} worker processes, {seconds:.0f} s "
          "of class")
    root = tempfile.mkdtemp(prefix="themisto-class-")
    queue: Any = mp.Queue()
    procs = [mp.Process(target=worker, args=(accounts[k::processes], root, seconds, k, queue))
             for k in range(processes)]
    for p in procs:
        p.start()
    started = [queue.get(timeout=600)[1] for _ in procs]
    print(f"  start: each worker's {users // processes} students' servers read their cursors "
          f"and stored their trajectory in {max(started):.1f} s (one after another)")
    samples: dict[str, list[float]] = {"pg_cpu": [], "pg_mem": [], "w_cpu": [], "w_mem": []}
    watched = {p.pid: psutil.Process(p.pid) for p in procs}
    postgres: dict[int, psutil.Process] = {}
    end = time.monotonic() + seconds
    tick = 0
    while time.monotonic() < end:
        # The database's backends come and go with the students' connections: found
        # again each second (a process is measured from its second sample on).
        for proc in psutil.process_iter(["name"]):
            if (proc.info["name"] or "").startswith("postgres") and proc.pid not in postgres:
                postgres[proc.pid] = proc
                try:
                    proc.cpu_percent(None)
                except psutil.Error:
                    pass
        time.sleep(1)
        tick += 1
        for key, group in (("pg", postgres), ("w", watched)):
            cpu = mem = 0.0
            for proc in list(group.values()):
                try:
                    cpu += proc.cpu_percent(None)
                    # unique memory (shared buffers once, not once per backend), every 10 s
                    if tick % 10 == 0:
                        mem += proc.memory_full_info().uss
                except psutil.Error:
                    pass
            samples[f"{key}_cpu"].append(cpu)
            if tick % 10 == 0:
                samples[f"{key}_mem"].append(mem)
    latencies: list[float] = []
    unstored = 0
    for _ in procs:
        got, left = queue.get(timeout=120)
        latencies += got
        unstored += left
    for p in procs:
        p.join(30)
    if latencies:
        print(f"  {len(latencies):,} cells in {seconds:.0f} s ({len(latencies) / seconds:.1f} "
              f"cells/s); cell end -> step stored: p50 {pct(latencies, .5) * 1000:.0f} ms, "
              f"p95 {pct(latencies, .95) * 1000:.0f} ms, max {max(latencies) * 1000:.0f} ms; "
              f"{unstored} written but not stored by the end")
    for label, key in (("PostgreSQL (all its processes)", "pg"),
                       ("workers (the students' ingest)", "w")):
        cpu, mem = samples[f"{key}_cpu"], samples[f"{key}_mem"]
        if cpu:
            print(f"  {label}: CPU mean {statistics.mean(cpu):.0f} %, max {max(cpu):.0f} % "
                  f"(of one core); memory (unique, sampled every 10 s) max "
                  f"{max(mem or [0]) / 2**20:.0f} MB")
    if teacher_server is not None:
        import httpx

        with httpx.Client(headers=teacher_server.headers, timeout=60) as http:
            times = []
            for _ in range(5):
                t0 = time.perf_counter()
                r = http.get(f"{teacher_server.url}/themisto/api/class")
                times.append(time.perf_counter() - t0)
            body = r.json()
        print(f"  class view, first page: median {statistics.median(times) * 1000:.0f} ms "
              f"({body['total']} rows, {body['users']} users)")
