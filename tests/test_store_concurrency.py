"""Many servers at once on one store (both engines): concurrent and duplicate ingestion,
a server killed mid-ingest, and no global lock on PostgreSQL."""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from test_store import apply, opened, start, step  # noqa: F401  # the opened fixture

from themisto_ext.ingest import JournalIngestor
from themisto_ext.journal import JournalWriter
from themisto_ext.store import open_store


def test_two_ingesters_at_once_never_duplicate(tmp_path: Path, opened):  # noqa: F811
    journal_dir = tmp_path / "journal"
    writer = JournalWriter(journal_dir, "k", "t")
    writer.append(start("t"))
    for n in range(1, 501):
        writer.append(step("t", n))
    opened()
    results = []
    stores = [opened(), opened()]

    def ingest(store) -> None:
        results.append(len(JournalIngestor(journal_dir, store).poll().steps))

    threads = [threading.Thread(target=ingest, args=(s,)) for s in stores]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sum(results) == 500
    assert opened().get_trajectory("t").steps == 500


def test_many_servers_with_duplicate_journals_store_each_step_once(tmp_path: Path,
                                                                   opened):  # noqa: F811
    """Six writers: three users' journals, each journal also copied to a second server."""
    users = ("alice", "bob", "carol")
    for user in users:
        for copy in ("a", "b"):
            writer = JournalWriter(tmp_path / user / copy, "k", f"t-{user}")
            writer.append(start(f"t-{user}"))
            for n in range(1, 301):
                writer.append(step(f"t-{user}", n))
    counts: list[int] = []
    errors: list[BaseException] = []

    def ingest(directory: Path, user: str) -> None:
        try:
            counts.append(len(JournalIngestor(directory, opened(), user=user).poll().steps))
        except BaseException as exc:
            errors.append(exc)

    opened()  # created once: six first opens of one new SQLite file would race
    threads = [threading.Thread(target=ingest, args=(tmp_path / u / c, u))
               for u in users for c in ("a", "b")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == [] and sum(counts) == 900
    store = opened()
    for user in users:
        assert store.get_trajectory(f"t-{user}").steps == 300
        assert [s["step"] for s in store.iter_steps(f"t-{user}")] == list(range(1, 301))


INGEST_FOREVER = """
import sys, time
from pathlib import Path
from themisto_ext.ingest import JournalIngestor
from themisto_ext.store import open_store
ingestor = JournalIngestor(Path(sys.argv[2]), open_store(sys.argv[1]), user="alice")
while True:
    ingestor.poll()
    time.sleep(0.002)
"""


def test_a_server_killed_mid_ingest_loses_and_duplicates_nothing(tmp_path: Path, store_url,
                                                                 opened):  # noqa: F811
    """SIGKILL the ingesting process twice while the kernel keeps writing; after a restart
    every step is stored exactly once and the step count agrees."""
    journal_dir = tmp_path / "journal"
    writer = JournalWriter(journal_dir, "k", "t")
    writer.append(start("t"))

    def server() -> subprocess.Popen:
        return subprocess.Popen([sys.executable, "-c", INGEST_FOREVER, store_url,
                                 str(journal_dir)])

    process = server()
    total = 3000
    for batch in range(30):
        for n in range(batch * 100 + 1, batch * 100 + 101):
            writer.append(step("t", n))
        time.sleep(0.02)
        if batch in (10, 20):
            process.send_signal(signal.SIGKILL)
            process.wait()
            process = server()
    store = opened()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        trajectory = store.get_trajectory("t")
        if trajectory is not None and trajectory.steps >= total:
            break
        time.sleep(0.1)
    process.send_signal(signal.SIGKILL)
    process.wait()
    assert [s["step"] for s in store.iter_steps("t")] == list(range(1, total + 1))
    assert store.get_trajectory("t").steps == total


def test_one_users_open_write_does_not_stall_another(pg_cluster):
    """No global lock on PostgreSQL: while one server's transaction on alice's trajectory is
    still open, bob's server stores his steps at once."""
    import psycopg

    url = pg_cluster.create_database()
    store = open_store(url)
    apply(store, [start("a", "ka")], "kernel", None, "alice")
    apply(store, [start("b", "kb")], "kernel", None, "bob")
    with psycopg.connect(url) as held:  # a transaction left open mid-ingest
        held.execute("INSERT INTO steps (trajectory_id, step, data) VALUES ('a', 1, '{}')")
        held.execute("UPDATE trajectories SET steps = steps + 1 WHERE id = 'a'")
        held.execute("""INSERT INTO journal_cursors (journal, "offset") VALUES ('ja', 1)""")
        began = time.perf_counter()
        result = apply(store, [step("b", n) for n in range(1, 101)], "kernel", ("jb", 9))
        waited = time.perf_counter() - began
        assert len(result.steps) == 100 and waited < 1.0
        held.rollback()
    assert store.get_trajectory("b").steps == 100 and store.get_trajectory("a").steps == 0
    store.close()
