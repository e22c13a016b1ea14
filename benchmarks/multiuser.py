"""Many users, one store: 8 Jupyter servers x 4 kernels recording into one database.

Each server is a real `jupyter server` with the extension, its own home, journal directory
and user (user0..user7), all on one store: a throw-away PostgreSQL (Debian's binaries,
fsync on, as deployed; tests/pg.py) or, for comparison, one shared SQLite file. Prints:

  * synthetic: 4 journals per server appended as fast as a writer can (benchmark steps of
    ~2.5 kB, server_api.py's), the aggregate steps/s the 8 servers ingest (target >= 5,000),
    while 2 servers are SIGKILLed and restarted mid-run; then the count check: every step
    stored exactly once (0 lost, 0 duplicated, step counters agree);
  * probe latency under a paced load (default 1,000 steps/s in all, ~30 per kernel: far
    above a person's cell rate): one step appended to a probe journal per server every
    0.25 s, time until the server's API returns it (p50/p95; targets 100 ms / 500 ms);
  * real kernels: N kernels per server (ipykernel with the capture hook) executing cells
    back to back; executed vs ingested cells/s, and cell end (the step's ended_at) -> step
    published on the server's live stream, which happens once it is stored and readable
    through the API (p50/p95).

With ``--roles`` each server records as a PostgreSQL role of its own under row-level
security (themisto_ext.hub.StoreRolesHook); with ``--service`` through the hub's Themisto
service, which alone holds the database's login, each server with a token of its own
user (the service's ``--tokens-file`` in place of the hub), as docs/deploying.md's JupyterHub
deployment does. The count check reads as the owner.

    python benchmarks/multiuser.py [--engine postgresql|sqlite] [--roles|--service] [--servers 8]
        [--kernels 4] [--steps 2500] [--rate 1000] [--real-kernels 4] [--cells 20]
    python benchmarks/multiuser.py --users 500 [--seconds 120]    # a class: classroom.py
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from datetime import datetime
from pathlib import Path

import httpx
from jupyter_client import BlockingKernelClient
from server_api import Server, fake_step, stream_events

from themisto_ext.contract import STORE_PASSWORD_ENV
from themisto_ext.journal import JournalWriter
from themisto_ext.store import TrajectoryStore, open_store, parse_store_url
from themisto_ext.store.roles import StoreRoles

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from pg import PASSWORD, Cluster  # the tests' throw-away cluster


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * (len(ordered) - 1) + 0.5))]


def start_servers(work: Path, url: str, count: int) -> list[Server]:
    return [start_server(work, url, i) for i in range(count)]


SERVICE_OPTIONS: list[str] = []
"""More options for the service (``--service-processes``)."""
SERVER_OPTIONS: list[str] = []
"""More options for every server (``--ingest-interval``)."""


ROLES: dict[int, tuple[str, str]] = {}
"""``--roles``: server i's own database role (store URL, password), as the hub's spawn
hook gives it (themisto_ext.hub); empty: every server uses the one store URL."""


def start_server(work: Path, url: str, i: int) -> Server:
    home = work / f"server{i}"
    env = {}
    if i in ROLES:
        url, env[STORE_PASSWORD_ENV] = ROLES[i]
    return Server(home, env=env, extra=[
        f"--ThemistoExtension.store_url={url}", f"--ThemistoExtension.user=user{i}",
        f"--ThemistoExtension.journal_dir={home / 'data' / 'themisto' / 'journal'}",
        "--ThemistoExtension.predictors=baseline", "--ThemistoExtension.live_predictions=False",
        *SERVER_OPTIONS], ready_timeout=120)


def journal_dir(server: Server) -> Path:
    return server.home / "data" / "themisto" / "journal"


def stored_steps(store: TrajectoryStore, prefix: str) -> int:
    return sum(t.steps for t in store.list_trajectories(limit=10**9) if t.id.startswith(prefix))


def probe(servers: list[Server], index: int, stop: threading.Event,
          delays: list[float]) -> None:
    """Append one step every 0.25 s to a probe journal; time until the API serves it (from
    the server as it is now: a restarted one listens on a new port)."""
    tid = f"probe{index}"
    writer = JournalWriter(journal_dir(servers[index]), f"probe-kernel{index}", tid)
    writer.append({"kind": "trajectory", "trajectory_id": tid, "kernel_id": f"probe{index}",
                   "notebook_path": "probe.ipynb", "started_at": "2026-01-01T00:00:00+00:00"})
    n = 0
    with httpx.Client(headers=servers[index].headers, timeout=10) as http:
        while not stop.is_set():
            n += 1
            written = time.perf_counter()
            writer.append(fake_step(tid, n))
            while not stop.is_set():
                try:
                    r = http.get(f"{servers[index].url}/themisto/api/trajectories/{tid}/steps",
                                 params={"since_step": n - 1, "limit": 1})
                    if r.status_code == 200 and r.json()["steps"]:
                        delays.append(time.perf_counter() - written)
                        break
                except httpx.HTTPError:
                    pass  # a killed server: its probe resumes after the restart
                time.sleep(0.005)
            stop.wait(0.25)
    writer.close()


def synthetic(work: Path, url: str, servers: list[Server], kernels: int, steps: int, *,
              prefix: str, rate: float | None = None) -> None:
    """Unpaced (``rate`` None): as fast as writers write, two servers SIGKILLed and restarted
    at 40%; paced: ``rate`` steps/s in all, probes timing append -> readable via the API."""
    store = open_store(url)
    lines = [[(json.dumps(fake_step(f"{prefix}{i}k{k}", n), separators=(",", ":")) + "\n")
              .encode() for n in range(1, steps + 1)]
             for i in range(len(servers)) for k in range(kernels)]
    total = len(servers) * kernels * steps
    stop = threading.Event()
    delays: list[float] = []
    probes = [threading.Thread(target=probe, args=(servers, i, stop, delays), daemon=True)
              for i in range(len(servers))] if rate else []
    per_write = 50 if rate is None else 1
    tick = 0.0 if rate is None else kernels * len(servers) / rate

    def write(i: int) -> None:
        writers = []
        for k in range(kernels):
            tid = f"{prefix}{i}k{k}"
            w = JournalWriter(journal_dir(servers[i]), f"{prefix}kernel{k}", tid)
            w.append({"kind": "trajectory", "trajectory_id": tid, "kernel_id": f"kernel{k}",
                      "notebook_path": "bench.ipynb",
                      "started_at": "2026-01-01T00:00:00+00:00"})
            writers.append(w)
        began = time.perf_counter()
        for n, start in enumerate(range(0, steps, per_write)):  # kernels interleaved
            if tick:
                time.sleep(max(0.0, began + n * tick - time.perf_counter()))
            for k, w in enumerate(writers):
                os.write(w._fd, b"".join(lines[i * kernels + k][start:start + per_write]))
        for w in writers:
            w.close()

    def restart(i: int) -> None:
        servers[i] = start_server(work, url, i)

    for t in probes:
        t.start()
    t0 = time.perf_counter()
    writers = [threading.Thread(target=write, args=(i,)) for i in range(len(servers))]
    for t in writers:
        t.start()
    killed_at = restarted_at = None
    at_kill = at_restart = 0
    while True:
        time.sleep(0.25)
        done = stored_steps(store, prefix)
        if rate is None and killed_at is None and done >= 0.4 * total:
            # kill two servers mid-ingest; restart them a second later on the same journals
            for i in (0, 1):
                servers[i].proc.send_signal(signal.SIGKILL)
                servers[i].proc.wait()
            killed_at, at_kill = time.perf_counter() - t0, done
            time.sleep(1.0)
            restarts = [threading.Thread(target=restart, args=(i,)) for i in (0, 1)]
            for t in restarts:
                t.start()
            for t in restarts:
                t.join()
            restarted_at, at_restart = time.perf_counter() - t0, stored_steps(store, prefix)
        if done >= total or time.perf_counter() - t0 > 600:
            break
    elapsed = time.perf_counter() - t0
    for t in writers:
        t.join()
    stop.set()
    for t in probes:
        t.join(15)
    rows = [t for t in store.list_trajectories(limit=10**9) if t.id.startswith(prefix)]
    per = {t.id: (t.steps, sum(1 for _ in store.iter_step_lines(t.id))) for t in rows}
    stored = sum(n for _, n in per.values())
    mismatched = sum(1 for counter, n in per.values() if counter != n)
    owners_ok = all(t.user == f"user{t.id[len(prefix):].split('k')[0]}" for t in rows)
    pace = "as fast as written" if rate is None else f"paced at {rate:,.0f} steps/s"
    print(f"synthetic ({pace}): {len(servers)} servers x {kernels} journals x {steps} steps = "
          f"{total:,} steps in {elapsed:.1f} s = {total / elapsed:,.0f} steps/s aggregate")
    if killed_at is not None and restarted_at is not None:
        print(f"  all {len(servers)} up: {at_kill:,} steps in {killed_at:.1f} s = "
              f"{at_kill / killed_at:,.0f} steps/s (target >= 5,000); servers 0 and 1 "
              f"SIGKILLed at {killed_at:.1f} s, "
              f"back at {restarted_at:.1f} s; after: {(total - at_restart):,} steps in "
              f"{elapsed - restarted_at:.1f} s = "
              f"{(total - at_restart) / max(elapsed - restarted_at, 1e-9):,.0f} steps/s")
    print(f"  check: {len(rows)} trajectories, {stored:,} steps stored, {total - stored} lost, "
          f"{mismatched} step counters disagreeing with the rows (duplicates), owners "
          f"{'right' if owners_ok else 'WRONG'}")
    if delays:
        print(f"  probe latency (append -> readable via the API), {len(delays)} samples: p50 "
              f"{pct(delays, .5) * 1000:.0f} ms, p95 {pct(delays, .95) * 1000:.0f} ms, max "
              f"{max(delays) * 1000:.0f} ms (targets 100 ms / 500 ms)")
    store.close()


def real_kernels(servers: list[Server], kernels: int, cells: int) -> None:
    clients: list[tuple[Server, str, BlockingKernelClient]] = []
    for server in servers:
        for _ in range(kernels):
            kid, client = server.start_kernel(timeout=120)
            clients.append((server, kid, client))
    delays: list[float] = []
    missing = [0]
    # Each server's live stream, as the front end follows it: a step is published once
    # stored, so its arrival is when the API can serve it. (Polling the API every 5 ms from
    # 32 threads, as this benchmark did before, was itself most of the machine's load.)
    arrivals: dict[tuple[str, int], float] = {}
    stop = threading.Event()

    def follow(server: Server, listening: threading.Event) -> None:
        for event, data in stream_events(server, stop):
            if event == "connected":
                listening.set()
            elif event == "step":
                arrivals[(data["kernel_id"], data["step"]["step"])] = time.time()

    for server in servers:
        listening = threading.Event()
        threading.Thread(target=follow, args=(server, listening), daemon=True).start()
        listening.wait(30)

    def run(server: Server, kid: str, client: BlockingKernelClient) -> None:
        with httpx.Client(headers=server.headers, timeout=30) as http:
            for i in range(1, cells + 1):
                client.execute_interactive(f"value_{i} = {i} * 2\nprint('{kid}', value_{i})",
                                           timeout=60, output_hook=lambda msg: None)
                deadline = time.time() + 30
                while (kid, i) not in arrivals and time.time() < deadline:
                    time.sleep(0.005)
                if (kid, i) not in arrivals:
                    missing[0] += 1
                    continue
                # When the kernel ended the cell: the stored step's own field, read once.
                tid = http.get(f"{server.url}/themisto/api/trajectories",
                               params={"kernel": kid}).json()["trajectories"][0]["id"]
                step = http.get(f"{server.url}/themisto/api/trajectories/{tid}/steps",
                                params={"since_step": i - 1, "limit": 1}).json()["steps"][0]
                ended = datetime.fromisoformat(step["ended_at"])
                delays.append(arrivals[(kid, i)] - ended.timestamp())

    t0 = time.perf_counter()
    threads = [threading.Thread(target=run, args=c) for c in clients]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - t0
    n = len(clients) * cells
    print(f"real kernels: {len(servers)} servers x {kernels} kernels x {cells} cells = {n} "
          f"cells in {elapsed:.1f} s = {n / elapsed:.1f} cells/s executed (each cell waits "
          f"for its step to be readable); {missing[0]} never readable")
    if delays:
        print("  cell end -> step on the live stream (stored, readable): "
              f"p50 {pct(delays, .5) * 1000:.0f} ms, "
              f"p95 {pct(delays, .95) * 1000:.0f} ms, max {max(delays) * 1000:.0f} ms "
              f"(targets 100 ms / 500 ms), mean {statistics.mean(delays) * 1000:.0f} ms")
    stop.set()
    for _, _, client in clients:
        client.stop_channels()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--engine", choices=["postgresql", "sqlite"], default="postgresql")
    parser.add_argument("--servers", type=int, default=8)
    parser.add_argument("--kernels", type=int, default=4)
    parser.add_argument("--steps", type=int, default=2500)
    parser.add_argument("--rate", type=float, default=1000,
                        help="aggregate steps/s of the paced run with probes (0: skip)")
    parser.add_argument("--paced-steps", type=int, default=300)
    parser.add_argument("--real-kernels", type=int, default=4,
                        help="real kernels per server (0: skip)")
    parser.add_argument("--cells", type=int, default=20)
    parser.add_argument("--synchronous-commit", choices=["on", "off"], default="on",
                        help="PostgreSQL: off trades the last ~0.6 s of commits on a "
                             "database crash (the journals still hold them) for latency")
    parser.add_argument("--roles", action="store_true",
                        help="PostgreSQL: each server records as a database role of its "
                             "own under row-level security, as docs/deploying.md "
                             "does (default: all through the owner's role)")
    parser.add_argument("--service", action="store_true",
                        help="PostgreSQL: servers record through the hub's Themisto service "
                             "(themisto_ext.hub.service), holding no database login")
    parser.add_argument("--service-processes", type=int, default=None,
                        help="--service: its worker processes (default: the service's)")
    parser.add_argument("--users", type=int, default=0,
                        help="simulate a class of this many students instead, each "
                             "through a database role of their own (classroom.py)")
    parser.add_argument("--seconds", type=float, default=120,
                        help="--users: how long the class runs")
    parser.add_argument("--ingest-interval", type=float, default=None,
                        help="ThemistoExtension.ingest_interval of every server (seconds; "
                             "default: the server's)")
    args = parser.parse_args()
    if args.service_processes is not None:
        SERVICE_OPTIONS.append(f"--processes={args.service_processes}")
    if args.users:
        return classroom_run(args.users, args.seconds, args.service)
    if args.ingest_interval is not None:
        SERVER_OPTIONS.append(f"--ThemistoExtension.ingest_interval={args.ingest_interval}")
    os.environ["PGPASSWORD"] = PASSWORD
    with tempfile.TemporaryDirectory(prefix="themisto-multi-") as tmp:
        work = Path(tmp)
        cluster = Cluster(fsync=True).start() if args.engine == "postgresql" else None
        url = cluster.create_owned_database(PASSWORD) if cluster else \
            f"sqlite:///{work}/shared.sqlite3"
        if cluster and args.roles:
            roles = StoreRoles(parse_store_url(url))
            for i in range(args.servers):
                role_url, password = roles.ensure(f"user{i}")
                ROLES[i] = (role_url.target, password)
        service = None
        if cluster and args.service:
            service, base, tokens = start_service(work, url,
                                                  [f"user{i}" for i in range(args.servers)])
            ROLES.update({i: (base, tokens[f"user{i}"]) for i in range(args.servers)})
        if cluster and args.synchronous_commit == "off":
            import psycopg

            with psycopg.connect(url, autocommit=True) as conn:
                conn.execute(f"ALTER DATABASE {url.rsplit('/', 1)[1]} SET "  # type: ignore[arg-type]
                             "synchronous_commit = off")
        print(f"engine: {args.engine} (synchronous_commit {args.synchronous_commit}"
              f"{'; a role per server, row-level security' if ROLES and not service else ''}"
              f"{'; through the Themisto service' if service else ''}); load "
              f"before: {os.getloadavg()[0]:.2f}")
        servers: list[Server] = []
        try:
            servers = start_servers(work, url, args.servers)
            synthetic(work, url, servers, args.kernels, args.steps, prefix="s")
            print(f"  load after: {os.getloadavg()[0]:.2f}")
            if args.rate:
                synthetic(work, url, servers, args.kernels, args.paced_steps, prefix="paced",
                          rate=args.rate)
                print(f"  load after: {os.getloadavg()[0]:.2f}")
            if args.real_kernels:
                real_kernels(servers, args.real_kernels, args.cells)
                print(f"  load after the real-kernel run: {os.getloadavg()[0]:.2f}")
        finally:
            for server in servers:
                server.stop()
            if service is not None:
                service.terminate()
                service.wait(30)
            if cluster:
                cluster.stop()
    return 0


def start_service(work: Path, url: str, users: list[str], read_all: frozenset[str] | set[str]
                  = frozenset()) -> tuple[subprocess.Popen, str, dict[str, str]]:
    """The hub's Themisto service on its own port with a token per user (the token travels
    as a server's store password, as a role's would); returns it, its URL, the tokens."""
    from pg import free_port

    tokens = {name: secrets.token_hex(16) for name in users}
    (work / "tokens.json").write_text(json.dumps(
        {token: {"user": name, "read_all": name in read_all}
         for name, token in tokens.items()}))
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "themisto_ext.hub.service", "--store-url", url,
         "--tokens-file", str(work / "tokens.json"), "--bind", f"http://127.0.0.1:{port}",
         *SERVICE_OPTIONS],
        env={**os.environ, "THEMISTO_DB_PASSWORD": PASSWORD},
        stderr=(work / "service.log").open("w"))
    base = f"http://127.0.0.1:{port}/services/themisto/"
    token = next(iter(tokens.values()))
    deadline = time.monotonic() + 60
    while True:
        try:
            if httpx.get(base + "api/whoami", headers={"Authorization": f"token {token}"},
                         timeout=5).status_code == 200:
                break
        except httpx.HTTPError:
            pass
        if time.monotonic() > deadline or process.poll() is not None:
            raise RuntimeError("the service did not start:\n"
                               + (work / "service.log").read_text()[-2000:])
        time.sleep(0.2)
    return process, base, tokens


def classroom_run(users: int, seconds: float, through_service: bool) -> int:
    from classroom import simulate

    os.environ["PGPASSWORD"] = PASSWORD
    cluster = Cluster(fsync=True, max_connections=users + 100).start()
    teacher = None
    service = None
    try:
        url = cluster.create_owned_database(PASSWORD)
        with tempfile.TemporaryDirectory(prefix="themisto-teacher-") as home:
            accounts = None
            store_url, env = url, {}
            if through_service:
                names = [f"student{i:03d}" for i in range(users)] + ["teacher"]
                service, base, tokens = start_service(Path(home), url, names,
                                                      read_all={"teacher"})
                accounts = [(name, base, tokens[name]) for name in names[:-1]]
                store_url, env = base, {STORE_PASSWORD_ENV: tokens["teacher"]}
            teacher = Server(Path(home), env=env, extra=[
                f"--ThemistoExtension.store_url={store_url}",
                "--ThemistoExtension.user=teacher",
                "--ThemistoExtension.read_all_users=teacher",
                "--ThemistoExtension.predictors=baseline",
                "--ThemistoExtension.live_predictions=False"], ready_timeout=120)
            simulate(cluster, url, users, seconds, processes=4, teacher_server=teacher,
                     accounts=accounts)
            teacher.stop()
    finally:
        if service is not None:
            service.terminate()
            service.wait(30)
        cluster.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
