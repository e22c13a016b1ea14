"""``ThemistoExtension.capture_level``: what an administrator lets kernels record. Below
the full level the kernel never takes the snapshot, the step leaves the kernel without
what is not captured, the server strips it again at ingest, and no output prediction is
made where outputs are not recorded."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from conftest import RecordingKernel
from test_server import start_kernel, wait_for_steps
from test_store import step
from traitlets import TraitError

from themisto_ext.contract import (
    CAPTURE_LEVELS,
    EMPTY_STATE_HASH,
    CaptureSettings,
    within_level,
)
from themisto_ext.ingest import JournalIngestor
from themisto_ext.journal import JournalWriter
from themisto_ext.store import SQLiteStore
from themisto_ext.trajectory import step_problems

CELL = "sauce = list(range(1, 4))\nprint('sh' + 'own')\nsum(sauce)"
"""(Its state and outputs are texts its code does not hold.)"""


def full_step() -> dict:
    s = step("t", 1)
    s.pop("kind")
    s.update(output="out", runtime_variables={"x": {"type": "int", "size": 28,
                                                   "size_exact": True, "repr": "1"}},
             memory_bytes=1000,
             error={"ename": "ValueError", "evalue": "bad"})
    return s


@pytest.mark.parametrize("level", CAPTURE_LEVELS)
def test_within_level_keeps_only_what_the_level_records(level):
    kept = within_level(full_step(), level)
    assert kept["code"] and kept["execution_time"] is not None
    state = level == "code+outputs+state"
    outputs = level != "code"
    assert bool(kept["runtime_variables"]) is state
    assert (kept["memory_bytes"] is not None) is state
    assert (kept["hash_index"] != EMPTY_STATE_HASH) is state
    assert (kept["output"] == "out") is outputs and (kept["error"] is not None) is outputs
    assert step_problems(kept) == []


def test_an_unknown_level_records_the_least_state():
    assert within_level(full_step(), "everything")["runtime_variables"] == {}


@pytest.mark.parametrize("level", ["code", "code+outputs"])
def test_the_kernel_writes_nothing_beyond_its_level(tmp_path: Path, level):
    kernel = RecordingKernel(tmp_path / "journal", "k", CaptureSettings(level=level))
    try:
        reply, _ = kernel.run(CELL)
        assert reply["content"]["status"] == "ok"  # the cell itself ran as ever
        kernel.run("1 / 0")
        journal = "".join(p.read_text() for p in (tmp_path / "journal").glob("*.jsonl"))
        first, second = kernel.steps()
    finally:
        kernel.stop()
    assert first["code"] == CELL and first["execution_time"] > 0
    assert first["runtime_variables"] == {} and first["hash_index"] == EMPTY_STATE_HASH
    assert first["memory_bytes"] is None and "[1, 2, 3]" not in journal
    if level == "code":
        assert first["output"] == "" and first["outputs"] == [] and second["error"] is None
        assert "shown" not in journal and "ZeroDivisionError" not in journal
    else:
        assert first["output"] == "shown\n6" and second["error"]["ename"] == "ZeroDivisionError"


def test_ingest_strips_what_a_journal_holds_beyond_the_servers_level(tmp_path: Path):
    store = SQLiteStore(tmp_path / "s.sqlite3")
    writer = JournalWriter(tmp_path / "journal", "k", "t")
    writer.append({"kind": "trajectory", "trajectory_id": "t", "kernel_id": "k",
                   "notebook_path": "nb.ipynb", "started_at": "2026-01-01T00:00:00+00:00"})
    writer.append({"kind": "step", **full_step()})
    writer.close()
    ingestor = JournalIngestor(tmp_path / "journal", store)
    ingestor.level = "code"
    ingestor.poll()
    [stored] = list(store.iter_steps("t"))
    assert stored["output"] == "" and stored["runtime_variables"] == {}
    assert stored["error"] is None and stored["code"] == full_step()["code"]
    store.close()


def test_the_server_refuses_an_unknown_level(themisto_config):
    from themisto_ext.server.app import ThemistoExtension

    with pytest.raises(TraitError, match="capture_level"):
        ThemistoExtension(capture_level="all of it")


class TestCodeOnlyServer:
    @pytest.fixture
    def jp_server_config(self, themisto_config) -> dict:
        return themisto_config(capture_level="code", predictors=["baseline"])

    async def test_records_code_and_timing_and_predicts_no_outputs(self, jp_fetch,
                                                                   jp_serverapp):
        kernel_id, client = await start_kernel(jp_fetch, jp_serverapp)
        try:
            for code in ("x = 40", "x + 2", "print(x)"):
                await client.execute_interactive(code, timeout=30)
            status = await wait_for_steps(jp_fetch, kernel_id, 3)
            themisto = jp_serverapp.web_app.settings["themisto"]
            steps = list(themisto.store.sync.iter_steps(status["trajectory_id"]))
            assert [s["output"] for s in steps] == ["", "", ""]
            assert all(s["runtime_variables"] == {} for s in steps)
            # Next-cell predictions are made (the predictor works) and output ones not.
            tasks: set[str] = set()
            for _ in range(100):
                r = await jp_fetch("themisto", "api", "trajectories", status["trajectory_id"],
                                   "predictions")
                tasks = {p["task"] for p in json.loads(r.body)["predictions"]}
                if tasks:
                    break
                await asyncio.sleep(0.05)
            await asyncio.sleep(0.5)
            assert tasks == {"next-cell"}
        finally:
            client.stop_channels()
