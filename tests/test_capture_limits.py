"""Steps are bounded as a whole and no step is lost on the kernel's side: huge outputs,
a journal deleted or truncated under a running kernel, a journal that cannot be written.
Real kernels, real journals, ingested into a real SQLite store."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import RecordingKernel

from themisto_ext.contract import CaptureSettings, read_status, status_path
from themisto_ext.ingest import JournalIngestor
from themisto_ext.store import SQLiteStore
from themisto_ext.trajectory import step_problems


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SQLiteStore]:
    s = SQLiteStore(tmp_path / "store.sqlite3")
    yield s
    s.close()


def ingested(k: RecordingKernel, store: SQLiteStore, ingestor: JournalIngestor) -> list[str]:
    ingestor.poll()
    trajectory = store.latest_for_kernel(k.kernel_id)
    assert trajectory is not None
    return [s["code"] for s in store.iter_steps(trajectory.id)]


def stream_text(shown: list[dict]) -> str:
    return "".join(m["content"].get("text", "") for m in shown if m["msg_type"] == "stream")


def test_huge_outputs_are_bounded_as_a_whole_and_later_cells_are_ingested(
        recording_kernel: RecordingKernel, store: SQLiteStore):
    k = recording_kernel
    ingestor = JournalIngestor(k.journal_dir, store)
    k.run("from IPython.display import display\nfor i in range(120): display('z' * 200_000)")
    k.run("after = 1")
    assert ingested(k, store, ingestor)[-1] == "after = 1"
    settings = CaptureSettings()
    biggest = max(len(line) for path in k.journal_dir.glob("*.jsonl")
                  for line in path.read_bytes().splitlines())
    assert biggest <= settings.step_bytes
    big = k.steps()[0]
    assert len(big["output"]) <= settings.output_length
    assert sum(len(o["text"]) for o in big["outputs"]) <= settings.output_length
    assert len(big["outputs"]) == 120  # every output is there, each cut to its share
    assert big["truncated"]["outputs"] > 23_000_000 and big["truncated"]["output"] > 23_000_000
    assert "[... " in big["outputs"][0]["text"]
    assert step_problems(big) == []
    assert "truncated" not in k.steps()[1]


def test_many_outputs_are_bounded_in_number(tmp_path: Path):
    k = RecordingKernel(tmp_path / "j", "many", CaptureSettings(output_items=30))
    try:
        k.run("from IPython.display import display\nfor i in range(100): display(i)")
    finally:
        k.stop()
    step = k.steps()[0]
    assert [o["text"] for o in step["outputs"]] == [str(i) for i in [*range(20), *range(90, 100)]]
    assert step["truncated"] == {"outputs_dropped": 70, "outputs": 140}  # characters
    assert step["output"].splitlines() == [str(i) for i in range(100)]


def test_a_step_line_never_exceeds_step_bytes(tmp_path: Path):
    """Text JSON escapes to six bytes a character, in many variables: the limits halve."""
    settings = CaptureSettings(step_bytes=300_000, repr_length=2_000)
    k = RecordingKernel(tmp_path / "j", "escaped", settings)
    try:
        k.run("for i in range(400): globals()[f'v{i}'] = '\\x01' * 5_000\n"
              "print('\\x02' * 150_000)")
    finally:
        k.stop()
    lines = [line for path in (tmp_path / "j").glob("*.jsonl")
             for line in path.read_bytes().splitlines()]
    assert max(len(line) for line in lines) <= 300_000
    step = k.steps()[0]
    assert step["truncated"]["reprs"] == 400 and step["truncated"]["output"] > 0
    assert len(step["runtime_variables"]) == 400 + 1  # every variable is still there (and i)


def test_huge_code_is_bounded(recording_kernel: RecordingKernel):
    k = recording_kernel
    k.run("x = 1  # " + "c" * 1_000_000)
    step = k.steps()[0]
    assert len(step["code"]) <= CaptureSettings().code_length
    assert step["code"].startswith("x = 1  # ccc") and step["truncated"]["code"] > 790_000


def test_deleted_journal_keeps_recording(recording_kernel: RecordingKernel, store: SQLiteStore):
    k = recording_kernel
    ingestor = JournalIngestor(k.journal_dir, store)
    k.run("a = 1")
    assert ingested(k, store, ingestor) == ["a = 1"]
    for path in k.journal_dir.glob("*.jsonl"):
        path.unlink()
    k.run("b = 2")
    k.run("c = 3")
    assert ingested(k, store, ingestor) == ["a = 1", "b = 2", "c = 3"]
    fresh = [path for path in k.journal_dir.glob("*.jsonl")]
    assert len(fresh) == 1 and json.loads(fresh[0].read_text().splitlines()[0])["kind"] \
        == "trajectory"
    assert [s["step"] for s in k.steps()] == [2, 3]  # step numbers continue


def test_truncated_journal_keeps_recording(recording_kernel: RecordingKernel,
                                          store: SQLiteStore):
    k = recording_kernel
    ingestor = JournalIngestor(k.journal_dir, store)
    k.run("a = 1")
    k.run("b = 2")
    assert ingested(k, store, ingestor) == ["a = 1", "b = 2"]
    (journal,) = k.journal_dir.glob("*.jsonl")
    os.truncate(journal, 0)
    k.run("c = 3")
    assert ingested(k, store, ingestor) == ["a = 1", "b = 2", "c = 3"]


def test_unwritable_journal_directory_is_reported_and_retried(tmp_path: Path,
                                                             store: SQLiteStore):
    blocked = tmp_path / "journal"
    blocked.write_text("a file where the journal directory should be")
    k = RecordingKernel(blocked, "blocked", CaptureSettings())
    try:
        for code in ("a = 1", "print('b')"):
            reply, shown = k.run(code)
            assert reply["content"]["status"] == "ok"
        assert stream_text(shown) == "b\n"  # nothing of the hook's own
        _, shown = k.run("%themisto status")
        status = stream_text(shown)
        assert "NOT WRITING: cannot create the journal" in status
        assert "record(s) waiting" in status
        assert "cannot write the status file" in status  # its directory is blocked too
        blocked.unlink()
        k.run("c = 3")
        ingestor = JournalIngestor(blocked, store)
        assert ingested(k, store, ingestor) == ["a = 1", "print('b')", "%themisto status",
                                                "c = 3"]
        assert read_status(status_path(blocked, "blocked")).ok  # type: ignore[union-attr]
    finally:
        k.stop()


def test_failing_journal_writes_are_reported_in_the_status_file(
        recording_kernel: RecordingKernel, store: SQLiteStore):
    """A full disk (a file size limit here): the status file says so, steps wait in memory
    and are written when there is room again."""
    k = recording_kernel
    status = status_path(k.journal_dir, k.kernel_id)
    assert read_status(status) is not None and read_status(status).ok  # type: ignore[union-attr]
    (journal,) = k.journal_dir.glob("*.jsonl")
    k.run("import resource, signal\nsignal.signal(signal.SIGXFSZ, signal.SIG_IGN)\n"
          f"resource.setrlimit(resource.RLIMIT_FSIZE, ({journal.stat().st_size + 3000}, "
          "resource.RLIM_INFINITY))")
    k.run("print('x' * 5000)")
    k.run("y = 2")
    report = read_status(status)
    assert report is not None and not report.ok and "File too large" in (report.reason or "")
    assert report.pending >= 1
    k.run("resource.setrlimit(resource.RLIMIT_FSIZE, (resource.RLIM_INFINITY,) * 2)")
    k.run("z = 3")
    assert read_status(status).ok  # type: ignore[union-attr]
    codes = []
    for line in journal.read_bytes().splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue  # the record the limit cut: one bad line, written again whole
        if record["kind"] == "step":
            codes.append(record["code"])
    assert codes[-4:] == ["print('x' * 5000)", "y = 2",
                          "resource.setrlimit(resource.RLIMIT_FSIZE, "
                          "(resource.RLIM_INFINITY,) * 2)", "z = 3"]


def test_journal_directory_removed_under_a_running_kernel(recording_kernel: RecordingKernel,
                                                          store: SQLiteStore):
    k = recording_kernel
    k.run("a = 1")
    shutil.rmtree(k.journal_dir)
    k.run("b = 2")
    ingestor = JournalIngestor(k.journal_dir, store)
    assert ingested(k, store, ingestor) == ["b = 2"]  # what was removed is gone; the rest is not


def test_the_namespace_is_read_only_as_far_as_the_snapshot_keeps():
    """200,000 globals cost a cell 0.14 s when every name was read each cell: the hook
    reads the first ``max_variables`` user variables, and after them only the names the
    cell may have bound (a secret among them is still learnt)."""
    import types

    from themisto_ext.kernel.snapshot import user_variables

    ns = {"_i1": "x = 1", "In": [], "np": types.ModuleType("np"), "hidden": 0}
    ns.update({f"n{i}": i for i in range(10)})
    first, beyond = user_variables(ns, {"hidden": 0}, 3, {"n9", "n1", "gone", "np"})
    assert first == [("n0", 0), ("n1", 1), ("n2", 2)]
    assert beyond == [("n9", 9)]
    everything, none = user_variables(ns, {"hidden": 0})
    assert [name for name, _ in everything] == [f"n{i}" for i in range(10)] and none == []
