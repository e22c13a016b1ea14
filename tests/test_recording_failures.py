"""Recording never stops silently: real jupyter_server, real kernels, real files.

A cell too big for the journal reader, a journal truncated or deleted under a running
kernel, a live trajectory deleted through the API: later cells are still recorded. When
recording does fail (journal directory or store that cannot be written), the kernel's
state says ``recording: false`` with the reason, on the API and on the live stream.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from pathlib import Path

import pytest
from contract import follow_live
from test_server import kernel_status, start_kernel
from unwritable import unwritable, writable_again

from themisto_ext.store import SQLiteStore


@pytest.fixture
def jp_server_config(themisto_config) -> dict:
    return themisto_config()


def themisto_of(jp_serverapp):
    return jp_serverapp.web_app.settings["themisto"]


async def wait_for(check, timeout: float = 30, every: float = 0.1):
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        value = await check()
        if value or asyncio.get_running_loop().time() > deadline:
            return value
        await asyncio.sleep(every)


def codes(jp_serverapp, trajectory_id: str) -> list[tuple[int, str]]:
    store = themisto_of(jp_serverapp).store.sync
    return [(s["step"], s["code"]) for s in store.iter_steps(trajectory_id)]


async def run(client, code: str) -> None:
    await client.execute_interactive(code, timeout=120, output_hook=lambda msg: None)


async def test_a_cell_over_the_journal_window_does_not_stop_later_cells(jp_fetch, jp_serverapp):
    kernel_id, client = await start_kernel(jp_fetch, jp_serverapp)
    try:
        await run(client, "before = 1")
        await run(client, "for i in range(120):\n    display('z' * 200_000)")  # 24 MB
        await run(client, "after = 2")
        await run(client, "print(after)")

        async def landed():
            status = await kernel_status(jp_fetch, kernel_id)
            tid = status["trajectory_id"]
            return tid and (4, "print(after)") in codes(jp_serverapp, tid) and status

        status = await wait_for(landed)
        assert status, "the cells after the big one were not recorded"
        assert status["recording"] is True
        assert {(1, "before = 1"), (3, "after = 2")} <= set(codes(jp_serverapp,
                                                                  status["trajectory_id"]))
    finally:
        client.stop_channels()


async def test_deleting_a_live_trajectory_keeps_recording(jp_fetch, jp_serverapp, api):
    kernel_id, client = await start_kernel(jp_fetch, jp_serverapp)
    try:
        await run(client, "private = 1")
        await run(client, "private + 1")

        async def steps(n: int):
            status = await kernel_status(jp_fetch, kernel_id)
            return status if status["steps"] >= n else None

        tid = (await wait_for(lambda: steps(2)))["trajectory_id"]
        assert (await api(f"trajectories/{tid}", method="DELETE")).code == 204
        assert (await api(f"trajectories/{tid}")).code == 404
        journals = list(Path(themisto_of(jp_serverapp).journal_dir).glob(f"*--{tid}.jsonl"))
        assert all(b"private" not in j.read_bytes() for j in journals)  # deleted means gone

        await run(client, "later = 3")
        await run(client, "later + 1")
        status = await wait_for(lambda: steps(2))
        assert status and status["recording"] is True and status["reason"] is None
        # later cells: the same trajectory id, numbered on after the deleted steps
        assert status["trajectory_id"] == tid
        assert codes(jp_serverapp, tid) == [(3, "later = 3"), (4, "later + 1")]
    finally:
        client.stop_channels()


async def test_a_truncated_journal_keeps_recording(jp_fetch, jp_serverapp):
    kernel_id, client = await start_kernel(jp_fetch, jp_serverapp)
    try:
        await run(client, "a = 1")
        first = await wait_for(lambda: _with_steps(jp_fetch, kernel_id, 1))
        for journal in Path(themisto_of(jp_serverapp).journal_dir).glob("*.jsonl"):
            journal.write_bytes(b"")  # someone empties the kernel's journal
        await run(client, "b = 2")
        await run(client, "c = 3")
        assert await wait_for(lambda: _with_steps(jp_fetch, kernel_id, 3))
        assert [c for _, c in codes(jp_serverapp, first["trajectory_id"])] == \
            ["a = 1", "b = 2", "c = 3"]
    finally:
        client.stop_channels()


async def test_deleted_journal_keeps_recording(jp_fetch, jp_serverapp):
    kernel_id, client = await start_kernel(jp_fetch, jp_serverapp)
    try:
        await run(client, "a = 1")
        await wait_for(lambda: _with_steps(jp_fetch, kernel_id, 1))
        for journal in Path(themisto_of(jp_serverapp).journal_dir).glob("*.jsonl"):
            journal.unlink()
        await run(client, "b = 2")
        assert await wait_for(lambda: _with_steps(jp_fetch, kernel_id, 2), timeout=10)
    finally:
        client.stop_channels()


async def _recording_again(jp_fetch, kernel_id: str):
    status = await kernel_status(jp_fetch, kernel_id)
    return status if status["recording"] is True else None


async def _with_steps(jp_fetch, kernel_id: str, n: int):
    status = await kernel_status(jp_fetch, kernel_id)
    return status if status["steps"] >= n else None


class TestUnwritableJournalDirectory:
    @pytest.fixture
    def jp_server_config(self, themisto_config, tmp_path: Path):
        journal = tmp_path / "locked-journal"
        journal.mkdir()
        with unwritable(journal):
            yield themisto_config(journal_dir=str(journal))

    async def test_recording_is_reported_off_with_the_reason(self, jp_fetch, jp_ws_fetch,
                                                             jp_serverapp, api, api_contract):
        stream = await follow_live(jp_ws_fetch, api_contract, jp_serverapp)
        events = stream.events
        kernel_id, client = await start_kernel(jp_fetch, jp_serverapp)
        try:
            await run(client, "x = 1")
            status = await kernel_status(jp_fetch, kernel_id)
            assert status["recording"] is False
            assert "journal directory" in status["reason"] and status["steps"] == 0

            async def told():
                return [data for name, data in events
                        if name == "recording" and data["kernel_id"] == kernel_id]

            (event, *_) = await wait_for(told, timeout=10)
            assert event["recording"] is False and "journal directory" in event["reason"]
            r = await api(f"kernels/{kernel_id}", method="PUT",
                          body=json.dumps({"recording": False}))
            assert r.code == 503 and "journal directory" in json.loads(r.body)["message"]
        finally:
            stream.close()
            client.stop_channels()


class TestReadOnlyStore:
    @pytest.fixture
    def jp_server_config(self, themisto_config, store_path: Path):
        store = SQLiteStore(store_path)  # a store with one trajectory, then made read-only
        from test_store import apply, start, step

        apply(store, [start("old", "k-old"), step("old", 1)], "kernel", None)
        store.close()
        with unwritable(store_path):
            yield themisto_config(store_retry=0.5)

    async def test_requests_get_503_and_one_log_line(self, jp_fetch, jp_serverapp, api,
                                                     store_path, caplog):
        kernel_id, client = await start_kernel(jp_fetch, jp_serverapp)
        try:
            with caplog.at_level(logging.INFO):
                await run(client, "waiting = 1")
                await asyncio.sleep(1.5)  # thirty ingest scans
                status = await kernel_status(jp_fetch, kernel_id)
                assert status["recording"] is False and "read-only" in status["reason"]
                for call in (api("trajectories/old", method="DELETE"),
                             api("predictions", method="POST", body=json.dumps(
                                 {"kernel_id": kernel_id, "task": "next-cell"}))):
                    r = await call
                    assert r.code == 503 and "read-only" in json.loads(r.body)["message"]
                assert (await api("trajectories/old")).code == 200  # reading still works
            said = [r for r in caplog.records if r.name.startswith("themisto")
                    and r.levelno >= logging.WARNING]
            assert len(said) == 1 and "read-only" in said[0].getMessage(), \
                [r.getMessage() for r in said]
            assert not any(r.exc_info for r in caplog.records if r.name.startswith("themisto"))
            writable_again(store_path)  # the step waited in the journal
            status = await wait_for(lambda: _with_steps(jp_fetch, kernel_id, 1), timeout=10)
            assert status
            # The problem is cleared when the ingestion pass that stored the step returns:
            # a status read while it finishes may still give the old reason.
            status = await wait_for(lambda: _recording_again(jp_fetch, kernel_id), timeout=10)
            assert status and status["steps"] >= 1 and status["reason"] is None
        finally:
            client.stop_channels()


async def test_a_trajectory_id_someone_else_holds_is_refused_and_said(jp_fetch, jp_serverapp,
                                                                      caplog):
    """Another user stored a trajectory under this kernel's id before its first step landed
    (a journal's name tells the id): nothing is stored into theirs, and the kernel's state,
    the live status and the log say why, instead of "recording, 0 steps"."""
    from test_store import interpret_lines, start, step

    themisto = themisto_of(jp_serverapp)
    await jp_serverapp.extension_manager.start_all_extensions()
    themisto._ingest_task.cancel()  # this test ingests itself, once the race is set
    with contextlib.suppress(asyncio.CancelledError):
        await themisto._ingest_task
    kernel_id, client = await start_kernel(jp_fetch, jp_serverapp)
    try:
        await run(client, "mine = 1")
        journal_dir = Path(themisto.journal_dir)

        async def journal():
            return next(iter(journal_dir.glob(f"{kernel_id}--*.jsonl")), None)

        path = await wait_for(journal)
        assert path is not None
        tid = path.stem.split("--", 1)[1]
        store = themisto.store.sync
        store.apply(interpret_lines([start(tid, "other-kernel"), step(tid, 7)], "kernel",
                                    user="bob"), None)
        with caplog.at_level(logging.WARNING, logger="themisto_ext"):
            await themisto.ingest_now()
        status = await kernel_status(jp_fetch, kernel_id)
        assert status["recording"] is False
        assert "belongs to another user" in status["reason"], status
        assert any("belongs to another user" in r.getMessage() for r in caplog.records)
        assert [s["step"] for s in store.iter_steps(tid)] == [7]  # bob's, untouched
        assert store.get_trajectory(tid).user == "bob"
    finally:
        client.stop_channels()
