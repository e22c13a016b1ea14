"""The journal writer keeps writing whatever happens to its file, and every file it writes
can be ingested on its own (it starts with the trajectory record)."""

from __future__ import annotations

import json
import os
import resource
import shutil
import signal
import subprocess
import sys
from pathlib import Path

from themisto_ext.ingest import JournalIngestor
from themisto_ext.journal import JournalWriter, journal_files
from themisto_ext.store import SQLiteStore

HEADER = {"kind": "trajectory", "format_version": 1, "trajectory_id": "t1", "kernel_id": "k",
          "notebook_path": None, "started_at": "2026-01-01T00:00:00+00:00"}


def step(n: int) -> dict:
    return {"kind": "step", "format_version": 1, "trajectory_id": "t1", "kernel_id": "k",
            "step": n, "cell_id": None, "notebook_path": None,
            "started_at": f"2026-01-01T00:00:{n:02d}+00:00",
            "ended_at": f"2026-01-01T00:00:{n:02d}+00:00", "code": f"x = {n}", "output": "",
            "outputs": [], "execution_time": 0.1, "memory_bytes": None,
            "runtime_variables": {}, "hash_index": "0" * 32, "error": None}


def lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def stored_steps(journal_dir: Path, store: SQLiteStore, ingestor: JournalIngestor) -> list[int]:
    ingestor.poll()
    return [s["step"] for s in store.iter_steps("t1")]


def test_deleted_journal_continues_in_a_fresh_file(tmp_path: Path):
    store = SQLiteStore(tmp_path / "s.sqlite3")
    ingestor = JournalIngestor(tmp_path / "j", store)
    writer = JournalWriter(tmp_path / "j", "k", "t1")
    writer.append(HEADER)
    writer.append(step(1))
    assert stored_steps(tmp_path / "j", store, ingestor) == [1]
    first = writer.path
    first.unlink()
    assert writer.append(step(2)) and writer.ok
    assert writer.path != first and writer.path.name == "k--1--t1.jsonl"
    assert [r["kind"] for r in lines(writer.path)] == ["trajectory", "step"]
    assert stored_steps(tmp_path / "j", store, ingestor) == [1, 2]


def test_truncated_journal_continues_in_a_fresh_file(tmp_path: Path):
    store = SQLiteStore(tmp_path / "s.sqlite3")
    ingestor = JournalIngestor(tmp_path / "j", store)
    writer = JournalWriter(tmp_path / "j", "k", "t1")
    writer.append(HEADER)
    writer.append(step(1))
    writer.append(step(2))
    assert stored_steps(tmp_path / "j", store, ingestor) == [1, 2]
    os.truncate(writer.path, 0)  # `: > journal`
    writer.append(step(3))
    writer.append(step(4))
    assert [r.get("step") for r in lines(writer.path)] == [None, 3, 4]
    assert writer.path.stat().st_size > 0 and lines(writer.path)[0] == HEADER
    assert stored_steps(tmp_path / "j", store, ingestor) == [1, 2, 3, 4]


def test_replaced_journal_is_left_alone(tmp_path: Path):
    writer = JournalWriter(tmp_path / "j", "k", "t1")
    writer.append(HEADER)
    writer.append(step(1))
    first = writer.path
    shutil.copy(first, tmp_path / "copy")
    os.replace(tmp_path / "copy", first)  # an editor's save: same name, new file
    writer.append(step(2))
    assert [r.get("step") for r in lines(first)] == [None, 1]
    assert [r.get("step") for r in lines(writer.path)] == [None, 2]
    assert sorted(p.name for p in journal_files(tmp_path / "j")) == ["k--1--t1.jsonl",
                                                                    "k--t1.jsonl"]


def test_unwritable_directory_keeps_records_until_it_can_write(tmp_path: Path):
    blocked = tmp_path / "j"
    blocked.write_text("a file where the journal directory should be")
    writer = JournalWriter(blocked, "k", "t1")
    assert not writer.append(HEADER)
    assert not writer.append(step(1))
    assert not writer.ok and "cannot create the journal" in (writer.reason or "")
    assert writer.pending == 1
    blocked.unlink()
    assert writer.append(step(2)) and writer.ok and writer.pending == 0
    assert [r.get("step") for r in lines(writer.path)] == [None, 1, 2]
    assert lines(writer.path)[0] == HEADER


def _write_with_size_limit(tmp_path: Path, limit: int) -> list:
    """A writer in a child process whose files may not grow past ``limit`` bytes (a full
    disk), until the limit is lifted."""
    code = f"""
import json, resource, signal, sys
from pathlib import Path
from themisto_ext.journal import JournalWriter
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
resource.setrlimit(resource.RLIMIT_FSIZE, ({limit}, resource.RLIM_INFINITY))
header, step = json.loads(sys.argv[1]), json.loads(sys.argv[2])
w = JournalWriter(Path(sys.argv[3]), "k", "t1")
w.append(header)
results = []
for n in range(1, 7):
    if n == 6:
        resource.setrlimit(resource.RLIMIT_FSIZE, (resource.RLIM_INFINITY,) * 2)
    step["step"] = n
    step["code"] = "x" * 300
    results.append([w.append(step), w.reason, w.pending])
print(json.dumps(results))
"""
    done = subprocess.run([sys.executable, "-c", code, json.dumps(HEADER), json.dumps(step(0)),
                           str(tmp_path / "j")], capture_output=True, text=True, timeout=60,
                          check=True)
    return list(json.loads(done.stdout))


def test_full_disk_reports_the_reason_and_loses_no_step(tmp_path: Path):
    assert resource.RLIMIT_FSIZE and signal.SIGXFSZ
    results = _write_with_size_limit(tmp_path, 1500)
    assert results[0] == [True, None, 0]
    failed = [r for r in results if not r[0]]
    assert failed and "cannot write the journal" in failed[0][1]
    assert "File too large" in failed[0][1]
    assert [r[2] for r in failed] == list(range(1, len(failed) + 1))  # waiting in memory
    assert results[-1] == [True, None, 0]
    good, bad = [], 0
    for raw in (tmp_path / "j" / "k--t1.jsonl").read_bytes().splitlines():
        try:
            good.append(json.loads(raw))
        except ValueError:
            bad += 1  # the record the full disk cut: one bad line
    assert bad == 1
    assert good[0] == HEADER and [r["step"] for r in good[1:]] == [1, 2, 3, 4, 5, 6]


def test_journals_and_the_store_are_readable_by_their_user_only(tmp_path: Path):
    """Journals and the SQLite store hold outputs and runtime state: created 0600 in
    directories 0700, whatever the umask (a hub's homes may be 0755)."""
    import os
    import stat

    from themisto_ext.store import SQLiteStore

    previous = os.umask(0o022)
    try:
        writer = JournalWriter(tmp_path / "j", "k1", "t1")
        writer.append({"kind": "trajectory", "trajectory_id": "t1", "kernel_id": "k1",
                       "notebook_path": None, "started_at": "2026-01-01T00:00:00+00:00"})
        writer.close()
        store = SQLiteStore(tmp_path / "store" / "s.sqlite3")
        store.close()
    finally:
        os.umask(previous)
    mode = lambda p: stat.S_IMODE(p.stat().st_mode)  # noqa: E731
    assert mode(tmp_path / "j") == mode(tmp_path / "store") == 0o700
    journals = list((tmp_path / "j").glob("*.jsonl"))
    assert journals and {mode(p) for p in journals} == {0o600}
    assert {mode(p) for p in (tmp_path / "store").iterdir()} == {0o600}
