"""The journal's records have one typed definition each and one encoder/decoder pair
(``contract.py``): what a real kernel writes decodes to them and encodes back to the same
line, and a line that does not decode is skipped with a warning saying why, never
stopping ingestion."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from conftest import RecordingKernel, read_journal
from test_store import start, step

from themisto_ext.contract import (
    JOURNAL_KINDS,
    StartedRecord,
    StepRecord,
    TrajectoryRecord,
    decode_record,
    encode_record,
)
from themisto_ext.ingest import JournalIngestor
from themisto_ext.journal import JournalWriter
from themisto_ext.store import SQLiteStore


def test_every_record_a_real_kernel_writes_round_trips(recording_kernel: RecordingKernel):
    k = recording_kernel
    k.run("a = 1")
    k.switch(False)
    k.run("b = 2")
    k.switch(True)
    k.run("c = 3")
    k.restart()  # the first trajectory's kernel ends: an ``end`` record
    records = read_journal(k.journal_dir)
    assert {r["kind"] for r in records} == set(JOURNAL_KINDS)
    for raw in records:
        decoded = decode_record(raw)
        assert not isinstance(decoded, str), (decoded, raw)
        assert decoded.kind == raw["kind"]
        assert encode_record(decoded) == raw  # nothing lost, nothing added
    header = decode_record(records[0])
    assert isinstance(header, TrajectoryRecord) and header.kernel_id == "test-kernel"
    assert isinstance(header.pid, int) and header.format_version == 1
    started = [decode_record(r) for r in records if r["kind"] == "started"]
    assert [(s.step, s.code) for s in started if isinstance(s, StartedRecord)] == \
        [(1, "a = 1"), (2, "c = 3")]


@pytest.mark.parametrize("raw,reason", [
    ({"kind": "telemetry", "trajectory_id": "t"}, "an unknown kind 'telemetry'"),
    ({"kind": "end"}, "without a trajectory_id"),
    ({"kind": "recording", "trajectory_id": "t", "at": "x"}, "without on: true or false"),
    ({"kind": "recording", "trajectory_id": "t", "on": "yes"}, "without on: true or false"),
    ({"kind": "started", "trajectory_id": "t", "step": 1}, "without its code"),
    ({"kind": "started", "trajectory_id": "t", "step": 0, "code": ""}, "step is not a number"),
    ({"kind": "step", "trajectory_id": "t", "step": True}, "step is not a number"),
    ({"kind": "step", "trajectory_id": "t", "step": 2}, "a 'step' record without code,"),
    ({**step("t", 1), "kernel_id": 7}, "kernel_id or started_at is not text"),
])
def test_a_record_that_does_not_decode_says_why(raw: dict, reason: str):
    decoded = decode_record(raw)
    assert isinstance(decoded, str) and reason in decoded


def test_fields_an_older_kernel_left_out_get_their_defaults():
    header = decode_record({"kind": "trajectory", "trajectory_id": "t"})
    assert header == TrajectoryRecord("t", "unknown", None, "", None, None)
    end = decode_record({"kind": "end", "trajectory_id": "t"})
    assert not isinstance(end, str) and (end.at, end.reason) == (None, "shutdown")


def test_unknown_and_malformed_records_are_skipped_with_a_warning(
        tmp_path: Path, caplog: pytest.LogCaptureFixture):
    journal = JournalWriter(tmp_path / "journal", "k", "t")
    journal.append(start("t"))
    journal.append(step("t", 1))
    journal.append({"kind": "telemetry", "trajectory_id": "t"})  # a newer kernel's kind
    journal.append({"kind": "recording", "trajectory_id": "t", "at": "x"})
    journal.append({"kind": "started", "trajectory_id": "t", "step": 2, "code": "x = 2",
                    "at": "2026-01-01T00:00:00+00:00"})
    journal.append(step("t", 2))
    store = SQLiteStore(tmp_path / "s.sqlite3")
    ingestor = JournalIngestor(tmp_path / "journal", store)
    with caplog.at_level(logging.WARNING, logger="themisto_ext.ingest"):
        result = ingestor.poll()
    assert [s["step"] for s in store.iter_steps("t")] == [1, 2]
    assert result.switches == [] and ingestor.bad_lines == 2
    assert [(s.trajectory_id, s.step, s.code) for s in result.started] == [("t", 2, "x = 2")]
    warned = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warned) == 2, warned
    assert "an unknown kind 'telemetry'" in warned[0] and str(journal.path) in warned[0]
    assert "at byte" in warned[0] and "reading goes on after it" in warned[0]
    assert "'recording' record without on" in warned[1]


def test_a_step_record_encodes_with_its_kind_first():
    line = encode_record(StepRecord({k: v for k, v in step("t", 1).items()  # type: ignore
                                     if k != "kind"}))
    assert next(iter(line)) == "kind" and line == step("t", 1)
