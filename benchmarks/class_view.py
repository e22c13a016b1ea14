"""The class view at a university's size: how long ``GET /themisto/api/class`` takes a
teacher's real jupyter server over a generated class (default 500 students x 20 notebooks
x 200 steps = 2,000,000 steps, every notebook with scored predictions), on SQLite or a
throw-away PostgreSQL (tests/pg.py, fsync on).

The class is written straight into the store (steps of ~600 bytes, errors in 1 of 20,
cells 10-90 s apart; 10 scored output predictions of two predictors per notebook), then
a server with the teacher among ``read_all_users`` answers: the first page as the view
opens (sorted by user), sorted by chrF, filtered by a notebook path, a time range, and
the last page. Each timed 5 times; prints the median and the slowest (target: opens in
under 2 s).

    python benchmarks/class_view.py [--users 500] [--notebooks 20] [--steps 200]
        [--engine sqlite|postgresql] [--keep DIR] [--browser RUNS]

With ``--browser RUNS`` Debian's Chromium (Playwright from ui-tests/) also opens the view
from the Themisto menu in fresh contexts: click to the first 100 rows drawn, and a sort.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

import httpx
from server_api import TOKEN, Server

from themisto_ext.store import NewStep, NewTrajectory, TrajectoryStore, open_store

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from pg import PASSWORD, Cluster  # the tests' throw-away cluster

START = datetime(2026, 9, 1, 9, tzinfo=timezone.utc)


def step(tid: str, n: int, at: datetime, seed: int) -> dict:
    code = f"df_{n} = load_data('week{seed % 12}.csv')\ndf_{n}.groupby('group').mean()"
    return {"format_version": 1, "trajectory_id": tid, "kernel_id": f"k-{tid}", "step": n,
            "cell_id": f"c{n}", "notebook_path": None,
            "started_at": (at - timedelta(seconds=1)).isoformat(), "ended_at": at.isoformat(),
            "code": code, "output": f"   value\ngroup\na  {seed % 97}.5\nb  {n}.25",
            "outputs": [], "execution_time": 0.8, "memory_bytes": 150_000_000,
            "runtime_variables": {f"df_{n}": {"type": "DataFrame", "size": 4096,
                                              "size_exact": False, "repr": "<frame>"}},
            "hash_index": f"{(seed * 7919 + n) % 16**16:016x}",
            "error": {"ename": "KeyError", "evalue": "'x'"} if (seed + n) % 20 == 0 else None}


def generate(store: TrajectoryStore, users: int, notebooks: int, steps: int) -> int:
    t0, total = time.perf_counter(), 0
    for u in range(users):
        for b in range(notebooks):
            tid = f"s{u:04d}-nb{b:02d}"
            at = START + timedelta(days=b * 3, minutes=u % 60)
            writes: list = [NewTrajectory(tid, f"k-{tid}", f"course/week{b:02d}.ipynb",
                                          at.isoformat(), "kernel", f"student{u:04d}")]
            for n in range(1, steps + 1):
                at += timedelta(seconds=10 + (u * 31 + b * 17 + n * 13) % 80)
                writes.append(NewStep(step(tid, n, at, u + b)))
            store.apply(writes, None)
            for k in range(10):
                target = 1 + (k * steps) // 10
                for predictor, chrf in (("hybrid", ((u + b + k) % 10) / 10),
                                        ("copy-previous", ((u + k) % 5) / 10)):
                    store.save_prediction({
                        "id": f"{tid}-{k}-{predictor}", "trajectory_id": tid,
                        "target_step": target, "task": "output", "context": "full",
                        "predictor": predictor, "reference": "r", "abstained": False,
                        "error": None, "scores": {"exact_match": float(chrf == 0.9),
                                                  "rouge_l": chrf, "chrf": chrf}})
            total += steps
        if (u + 1) % 25 == 0:
            rate = total / (time.perf_counter() - t0)
            print(f"  generated {u + 1}/{users} students, {total:,} steps ({rate:,.0f}/s)",
                  flush=True)
    return total


def timed(client: httpx.Client, url: str, params: dict, runs: int = 5) -> tuple[float, float,
                                                                                 dict]:
    seconds, body = [], {}
    for _ in range(runs):
        t0 = time.perf_counter()
        r = client.get(url, params=params)
        seconds.append(time.perf_counter() - t0)
        r.raise_for_status()
        body = r.json()
    return statistics.median(seconds), max(seconds), body


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--users", type=int, default=500)
    parser.add_argument("--notebooks", type=int, default=20)
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--engine", choices=["sqlite", "postgresql"], default="sqlite")
    parser.add_argument("--keep", type=Path, help="a directory to keep the store in")
    parser.add_argument("--browser", type=int, default=0, metavar="RUNS",
                        help="also open the view in Chromium RUNS times (class_open.mjs)")
    args = parser.parse_args()
    work = args.keep or Path(tempfile.mkdtemp(prefix="themisto-class-"))
    work.mkdir(parents=True, exist_ok=True)
    cluster = Cluster(fsync=True).start() if args.engine == "postgresql" else None
    server = None
    try:
        if cluster:
            os.environ["PGPASSWORD"] = PASSWORD
            url = cluster.create_database()
        else:
            url = f"sqlite:///{work / 'class.sqlite3'}"
        store = open_store(url)
        existing = store.count_trajectories()
        if existing == 0:
            print(f"generating {args.users} x {args.notebooks} x {args.steps} steps into "
                  f"{args.engine} ...", flush=True)
            t0 = time.perf_counter()
            total = generate(store, args.users, args.notebooks, args.steps)
            print(f"generated {total:,} steps in {time.perf_counter() - t0:.0f} s")
        else:
            print(f"reusing {existing:,} trajectories in {url}")
        store.close()
        if cluster is None:
            size = sum(p.stat().st_size for p in work.glob("class.sqlite3*"))
            print(f"store: {size / 1e9:.2f} GB")
        server = Server(work / "teacher", extra=[
            f"--ThemistoExtension.store_url={url}", "--ThemistoExtension.user=teacher",
            "--ThemistoExtension.read_all_users=teacher",
            "--ThemistoExtension.predictors=baseline",
            "--ThemistoExtension.live_predictions=False"], ready_timeout=120)
        api = f"{server.url}/themisto/api/class"
        with httpx.Client(headers=server.headers, timeout=120) as client:
            cases = [
                ("open (first 100, by user)", {}),
                ("sorted by hybrid's chrF", {"sort": "chrf", "predictor": "hybrid",
                                             "order": "desc"}),
                ("filtered: notebook week07", {"notebook": "week07"}),
                ("filtered: one week active", {"active_after": "2026-09-10T00:00:00+00:00",
                                               "active_before": "2026-09-17T00:00:00+00:00"}),
                ("last page", {"offset": args.users * args.notebooks - 100}),
            ]
            for label, params in cases:
                median, worst, body = timed(client, api, params)
                print(f"  {label:28s} median {median * 1000:6.0f} ms, slowest "
                      f"{worst * 1000:6.0f} ms ({body['total']:,} rows, {body['users']} "
                      f"users, page of {len(body['rows'])}; response "
                      f"{len(json.dumps(body)) / 1024:.0f} kB)")
        if args.browser:
            out = subprocess.run(
                ["node", str(Path(__file__).with_name("class_open.mjs")), server.url, TOKEN,
                 "100", str(args.browser)], capture_output=True, text=True, timeout=900)
            if out.returncode:
                raise RuntimeError(f"the browser run failed:\n{out.stdout}\n{out.stderr}")
            runs = [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]
            for key, label in (("open_ms", "menu click -> first 100 rows drawn"),
                               ("sort_ms", "sort click -> page drawn")):
                values = [r[key] for r in runs]
                print(f"  Chromium, {label}: median {statistics.median(values):,.0f} ms "
                      f"[{min(values):,.0f}-{max(values):,.0f}] ({len(values)} fresh contexts)")
        print("target: the view opens in under 2 s")
    finally:
        if server is not None:
            server.stop()
        if cluster is not None:
            cluster.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
