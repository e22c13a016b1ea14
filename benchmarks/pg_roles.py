"""What row-level security costs the PostgreSQL store: steps ingested per second through the
tables' owner (no policies apply) and through a hub user's own role (the JupyterHub
deployment of docs/deploying.md: every row checked against its owner), in alternating rounds
on one throw-away PostgreSQL (tests/pg.py, fsync on), one writer, batches as a server's
ingest makes them (50 steps of ~2.5 kB, server_api.py's benchmark steps); then reads of one
trajectory's steps and of the trajectory list the same way.

    python benchmarks/pg_roles.py [--rounds 5] [--steps 5000]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

from server_api import fake_step

from themisto_ext.store import NewStep, NewTrajectory, TrajectoryStore, open_store, parse_store_url
from themisto_ext.store.roles import StoreRoles

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from pg import PASSWORD, Cluster  # the tests' throw-away cluster


def ingest(store: TrajectoryStore, tid: str, user: str, steps: int) -> float:
    """Steps/s of ``steps`` steps in batches of 50 into a new trajectory."""
    store.apply([NewTrajectory(tid, f"k-{tid}", "bench.ipynb", "2026-01-01T00:00:00+00:00",
                               "kernel", user)], None)
    t0 = time.perf_counter()
    for start in range(1, steps + 1, 50):
        batch = [NewStep(fake_step(tid, n)) for n in range(start, min(start + 50, steps + 1))]
        store.apply(list(batch), (f"/journals/{tid}", start))
    return steps / (time.perf_counter() - t0)


def reads(store: TrajectoryStore, tid: str) -> float:
    """Milliseconds to read the trajectory list and all of one trajectory's steps."""
    t0 = time.perf_counter()
    store.list_trajectories(limit=100)
    for _ in store.iter_step_lines(tid):
        pass
    return (time.perf_counter() - t0) * 1000


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--steps", type=int, default=5000)
    args = parser.parse_args()
    cluster = Cluster(fsync=True).start()
    try:
        owner_url = parse_store_url(cluster.create_owned_database(PASSWORD)).with_password(
            PASSWORD)
        role_url, password = StoreRoles(owner_url).ensure("alice")
        stores = {"owner": open_store(owner_url),
                  "role": open_store(role_url.with_password(password))}
        rates: dict[str, list[float]] = {"owner": [], "role": []}
        read_ms: dict[str, list[float]] = {"owner": [], "role": []}
        for r in range(args.rounds):
            order = ("owner", "role") if r % 2 == 0 else ("role", "owner")
            for mode in order:
                tid = f"{mode}{r}"
                rates[mode].append(ingest(stores[mode], tid, "alice", args.steps))
                read_ms[mode].append(reads(stores[mode], tid))
        for mode in ("owner", "role"):
            print(f"{mode:>5}: ingest {statistics.median(rates[mode]):,.0f} steps/s (median "
                  f"of {args.rounds}; {min(rates[mode]):,.0f}-{max(rates[mode]):,.0f}), "
                  f"read list + {args.steps} steps {statistics.median(read_ms[mode]):.0f} ms")
        ratio = statistics.median(rates["role"]) / statistics.median(rates["owner"])
        print(f"row-level security: ingest at {ratio:.0%} of the owner's rate")
        for store in stores.values():
            store.close()
    finally:
        cluster.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
