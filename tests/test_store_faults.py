"""A store in trouble never costs a step nor the server: a full disk, damaged pages and
files SQLite cannot map are a 503 with the reason, and what kernels record waits in their
journals until the store can be written again. Real server processes, real SQLite files,
a real (tiny) tmpfs; the live stream forgets a reader the moment it goes away."""

from __future__ import annotations

import asyncio
import os
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from conftest import ROOT
from test_store import interpret_lines, start, step
from unwritable import unwritable

from themisto_ext.events import LIVE_EVENT_SCHEMA_ID
from themisto_ext.journal import JournalWriter
from themisto_ext.store import SQLiteStore, StoreError, StoreUnavailable

sys.path.insert(0, str(ROOT / "benchmarks"))
from server_api import Server  # the benchmarks' real server process


def wait(check, timeout: float = 30.0, every: float = 0.1):
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(every)


def stored_steps(server: Server, tid: str) -> list[int]:
    r = httpx.get(f"{server.url}/themisto/api/trajectories/{tid}/steps?limit=1000",
                  headers=server.headers)
    return [s["step"] for s in r.json()["steps"]] if r.status_code == 200 else []


def journal_steps(journal_dir: Path, kernel: str, tid: str, steps: range,
                  output: int = 0) -> None:
    """What a kernel writes for ``steps`` (the hook's own journal writer), each with
    ``output`` characters of output."""
    writer = JournalWriter(journal_dir, kernel, tid)
    if steps.start == 1:
        writer.append(start(tid, kernel))
    for n in steps:
        record = step(tid, n)
        if output:
            record["output"] = f"{n}:" + "x" * output
        writer.append(record)
    writer.close()


@pytest.fixture
def home(tmp_path: Path) -> Iterator[Path]:
    yield tmp_path / "home"


@pytest.fixture
def tiny_disk(tmp_path: Path) -> Iterator[Path]:
    """A 16 MiB tmpfs: a disk that really fills up."""
    mount = tmp_path / "disk"
    mount.mkdir()
    made = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16m", "tmpfs", str(mount)],
                          capture_output=True)
    if made.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {made.stderr.decode().strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def test_a_full_disk_is_503_with_the_reason_and_every_step_lands_later(home: Path,
                                                                       tiny_disk: Path):
    journals = home / "journal"
    store = tiny_disk / "t.sqlite3"
    server = Server(home, extra=[f"--ThemistoExtension.store_url=sqlite:///{store}",
                                 f"--ThemistoExtension.journal_dir={journals}",
                                 "--ThemistoExtension.store_retry=0.2",
                                 "--ThemistoExtension.predictors=baseline"])
    try:
        journal_steps(journals, "k1", "t1", range(1, 3))
        assert wait(lambda: stored_steps(server, "t1") == [1, 2])
        filler = tiny_disk / "filler"
        fd = os.open(filler, os.O_WRONLY | os.O_CREAT)
        try:  # fill the disk to its last byte
            while os.write(fd, b"\0" * 512):
                pass
        except OSError:
            pass
        finally:
            os.close(fd)
        # Big enough to spill SQLite's page cache mid-transaction (it rolls back by itself).
        journal_steps(journals, "k1", "t1", range(3, 40), output=150_000)
        log = home / "server.log"
        assert wait(lambda: "disk full" in log.read_text()), log.read_text()[-3000:]
        r = httpx.delete(f"{server.url}/themisto/api/trajectories/t1", headers=server.headers)
        assert r.status_code == 503 and "disk full" in r.json()["message"], r.text
        filler.unlink()
        assert wait(lambda: stored_steps(server, "t1") == list(range(1, 40))), \
            stored_steps(server, "t1")
        assert server.proc.poll() is None
    finally:
        server.stop()
    text = (home / "server.log").read_text()
    assert "cannot rollback" not in text and "Traceback" not in text, text[-3000:]
    assert " 500 " not in text


def damage_steps(path: Path) -> None:
    """Overwrite every page of the ``steps`` table but its root with garbage."""
    with sqlite3.connect(path) as db:
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        size = db.execute("PRAGMA page_size").fetchone()[0]
        pages = [n for (n,) in db.execute(
            "SELECT pageno FROM dbstat WHERE name = 'steps' AND path != '/'")]
    assert pages
    with path.open("r+b") as fh:
        for n in pages:
            fh.seek((n - 1) * size)
            fh.write(b"\xa5" * size)


def test_a_reader_keeps_reading_while_a_refused_write_reopens_the_store(tiny_disk: Path):
    """A page-by-page reader (an export, a long history) that began before a write failed
    for a full disk reads to its end after the store is reopened: the store it reads from
    is put aside, not closed under it (that was "Cannot operate on a closed database")."""
    from themisto_ext.store.guarded import guard
    path = tiny_disk / "t.sqlite3"
    guarded = guard(lambda: SQLiteStore(path), retry=0.0)
    try:
        records = [start("t1"), *(step("t1", n) for n in range(1, 1201))]
        guarded.apply(interpret_lines(records, "kernel"), ("j", 1))
        reader = guarded.iter_steps("t1")  # lazy: pages of 500
        assert next(reader)["step"] == 1
        filler = tiny_disk / "filler"
        with open(filler, "wb", buffering=0) as f, pytest.raises(OSError):
            while True:
                f.write(b"\0" * (1 << 16))
                f.flush()
        big = step("t1", 2000)
        big["output"] = "x" * 2_000_000
        with pytest.raises(StoreUnavailable, match="disk full"):
            guarded.apply(interpret_lines([big], "kernel"), ("j", 2))
        filler.unlink()
        big["output"] = "small"
        guarded.apply(interpret_lines([big], "kernel"), ("j", 2))  # reopens the store
        assert [s["step"] for s in reader] == [*range(2, 1201), 2000]
    finally:
        guarded.close()


def test_a_damaged_store_is_503_with_the_reason_and_new_steps_are_kept(home: Path):
    store_file = home / "data" / "themisto" / "trajectories.sqlite3"
    store_file.parent.mkdir(parents=True)
    store = SQLiteStore(store_file)
    store.apply(interpret_lines([start("old", "k0")] + [step("old", n) for n in range(1, 200)],
                          "kernel", user=""), None)
    store.close()
    damage_steps(store_file)
    server = Server(home, extra=["--ThemistoExtension.predictors=baseline",
                                 "--ThemistoExtension.store_retry=0.2"])
    try:
        api = f"{server.url}/themisto/api"
        for path in ("trajectories/old/steps", "export?trajectory=old",
                     "trajectories/old/history"):
            r = httpx.get(f"{api}/{path}", headers=server.headers)
            assert r.status_code == 503, (path, r.status_code, r.text[:300])
            assert "damaged" in r.json()["message"] and "recover" in r.json()["message"]
        journal_steps(store_file.parent / "journal", "k1", "new", range(1, 4))
        # Stored, or (when the damage is in its way) kept in the journal: never lost.
        landed = wait(lambda: stored_steps(server, "new") == [1, 2, 3], timeout=10)
        if not landed:
            journal = next((store_file.parent / "journal").glob("k1*"))
            assert journal.read_text().count('"kind":"step"') == 3
        assert server.proc.poll() is None
    finally:
        server.stop()
    assert "Traceback" not in (home / "server.log").read_text()


@pytest.mark.skipif(os.geteuid() != 0, reason="chattr +i needs root")
def test_immutable_store_files_never_kill_the_server_or_the_kernel(home: Path):
    server = Server(home, extra=["--ThemistoExtension.predictors=baseline",
                                 "--ThemistoExtension.store_retry=0.2"])
    store = server.store
    client = None
    try:
        kid, client = server.start_kernel()
        client.execute_interactive("a = 1", timeout=60, output_hook=lambda msg: None)
        tid = wait(lambda: httpx.get(f"{server.url}/themisto/api/kernels/{kid}",
                                     headers=server.headers).json()["trajectory_id"])
        assert wait(lambda: stored_steps(server, tid) == [1])
        sides = [store, Path(f"{store}-wal"), Path(f"{store}-shm")]
        for side in sides:
            side.touch()
        with unwritable(sides[0]), unwritable(sides[1]), unwritable(sides[2]):
            for n in range(2, 6):
                client.execute_interactive(f"a = {n}", timeout=60, output_hook=lambda m: None)
            reason = wait(lambda: httpx.get(f"{server.url}/themisto/api/kernels/{kid}",
                                            headers=server.headers).json()["reason"])
            assert reason, "the server says why nothing reaches the store"
            assert server.proc.poll() is None, "the server died"
            reply = client.execute_interactive("print(a)", timeout=60,
                                               output_hook=lambda m: None)
            assert reply["content"]["status"] == "ok"  # the kernel lives
        assert wait(lambda: stored_steps(server, tid) == [1, 2, 3, 4, 5, 6]), \
            stored_steps(server, tid)
    finally:
        if client is not None:
            client.stop_channels()
        server.stop()


def test_a_store_whose_side_files_cannot_be_written_is_refused_before_it_is_mapped(
        tmp_path: Path):
    path = tmp_path / "t.sqlite3"
    SQLiteStore(path).close()
    shm = Path(f"{path}-shm")
    shm.touch()
    with unwritable(shm), pytest.raises(StoreUnavailable, match=r"-shm file .* cannot be written"):
        SQLiteStore(path)
    SQLiteStore(path).close()  # once it can be written, it opens


def test_a_fifo_is_never_opened_as_a_store(tmp_path: Path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    for readonly in (False, True):
        with pytest.raises(StoreError, match="not a regular file"):
            SQLiteStore(fifo, readonly=readonly)


@pytest.fixture
def jp_server_config(themisto_config) -> dict:
    return themisto_config()


async def test_disconnected_live_readers_are_forgotten_at_once(jp_serverapp, jp_ws_fetch):
    """Pages that come and go leave no listener on the event bus behind (each would be
    handed every later event): 10,000 SSE readers once kept 10,000 listeners, server
    memory 116 -> 314 MB and the next event 1.46 s late."""
    logger = jp_serverapp.event_logger
    core = jp_serverapp.web_app.settings["themisto"]

    def listeners() -> int:  # jupyter_events keeps no public count
        return len(logger._modified_listeners.get(LIVE_EVENT_SCHEMA_ID, ()))

    before = listeners()
    for _ in range(300):
        socket = await jp_ws_fetch("api", "events", "subscribe")
        core.events.heartbeat(10.0)
        assert await socket.read_message() is not None
        socket.close()
    deadline = asyncio.get_running_loop().time() + 3
    while listeners() > before and asyncio.get_running_loop().time() < deadline:
        await asyncio.sleep(0.05)
    assert listeners() == before
