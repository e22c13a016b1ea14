"""SQLite store: one file, WAL mode, a versioned schema migrated forward on open."""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import stat
import threading
from collections.abc import Callable
from dataclasses import astuple, replace
from pathlib import Path
from typing import Any

from themisto_ext.records import Prediction, Step
from themisto_ext.store.base import (
    Applied,
    NewStep,
    NewTrajectory,
    NotebookMoved,
    StoreError,
    StoreUnavailable,
    Trajectory,
    TrajectoryEnded,
    Write,
    refused_write,
)
from themisto_ext.store.roster import SCORE_UPSERT, scored, totals
from themisto_ext.store.schema import (
    ACTIVE_GAP,
    COLUMNS,
    MIGRATIONS,
    SCHEMA_VERSION,
    move_statement,
)
from themisto_ext.store.sql import SharedQueries
from themisto_ext.trajectory import dumps_step

__all__ = ["SCHEMA_VERSION", "SQLiteStore"]

_HEADER = b"SQLite format 3\x00"

_UNAVAILABLE = {
    3: "permission denied",        # SQLITE_PERM
    5: "busy",                     # SQLITE_BUSY
    6: "locked",                   # SQLITE_LOCKED
    8: "read-only",                # SQLITE_READONLY
    10: "disk I/O error",          # SQLITE_IOERR
    11: "damaged: some of its pages are corrupt; `sqlite3 FILE .recover` saves what is "
        "left",                    # SQLITE_CORRUPT
    13: "disk full",               # SQLITE_FULL
    14: "cannot open its files",   # SQLITE_CANTOPEN
    26: "damaged: its file is no longer a database",  # SQLITE_NOTADB
}
"""SQLite result codes (primary, low byte) that mean "cannot be used right now", not a bug."""


_COUNT_STEPS = (
    "UPDATE trajectories SET steps = steps + ?, errors = errors + ?, active_seconds = "
    "active_seconds + ? + COALESCE(CASE WHEN last_at IS NULL THEN ? ELSE "
    "min(max((julianday(?) - julianday(last_at)) * 86400.0, 0), ?) END, 0), "
    "last_at = CASE WHEN last_at IS NULL OR last_at < ? THEN ? ELSE last_at END WHERE id = ?")


def _count_steps(db: sqlite3.Connection, steps: list[Step]) -> None:
    """New steps into their trajectories' counts and class totals (``roster.py``)."""
    for tid, t in totals(steps).items():
        db.execute(_COUNT_STEPS, (t.n, t.errors, t.gaps, t.first_execution, t.first_end,
                                  ACTIVE_GAP, t.last_end, t.last_end, tid))


def _failure(path: Path, exc: sqlite3.Error) -> StoreError:
    """The store's error for a SQLite one: unavailable (503, retried) or a plain error."""
    code = getattr(exc, "sqlite_errorcode", None)
    what = _UNAVAILABLE.get(code & 0xFF) if code is not None else next(
        (name for word, name in (("readonly", "read-only"), ("locked", "locked"),
                                 ("disk", "disk")) if word in str(exc)), None)
    if what is None and isinstance(exc, sqlite3.ProgrammingError) and "closed" in str(exc):
        what = "closed under this request while it was reopened; try again"
    if what is not None:
        return StoreUnavailable(f"the trajectory store {path} cannot be used ({what}: {exc})")
    return StoreError(f"trajectory store {path}: {exc}")


def _not_a_store(path: Path) -> str | None:
    """Why an existing file at ``path`` must not be opened as a store (never overwritten)."""
    try:
        mode = path.stat().st_mode
    except OSError as exc:
        return f"cannot be read ({exc.strerror})"
    if stat.S_ISDIR(mode):
        return "is a directory"
    if not stat.S_ISREG(mode):  # a FIFO blocks the first read forever, a device is no store
        return "is not a regular file (a FIFO, socket or device), not a trajectory store"
    try:
        with path.open("rb") as fh:
            head = fh.read(len(_HEADER))
    except IsADirectoryError:
        return "is a directory"
    except OSError as exc:
        return f"cannot be read ({exc.strerror})"
    if not head:
        return "is an empty file, not a trajectory store"
    if head != _HEADER:
        return "is not a trajectory store (not a SQLite database)"
    return None


def _unwritable_side_file(path: Path) -> str | None:
    """Why the store's ``-wal`` or ``-shm`` file cannot be used for writing, checked before
    SQLite opens them: it maps ``-shm`` into memory, and a mapping of a file it cannot write
    or extend (read-only, immutable) has killed the server with SIGBUS, kernels with it."""
    for suffix in ("-wal", "-shm"):
        side = Path(f"{path}{suffix}")
        try:
            mode = side.lstat().st_mode
        except FileNotFoundError:
            continue
        except OSError as exc:
            return f"its {suffix} file {side} cannot be read ({exc.strerror})"
        if not stat.S_ISREG(mode):
            return f"its {suffix} file {side} is not a regular file"
        try:
            os.close(os.open(side, os.O_RDWR | os.O_NOFOLLOW))
        except OSError as exc:
            return (f"its {suffix} file {side} cannot be written ({exc.strerror}: read-only "
                    "or immutable)")
    return None


class SQLiteStore(SharedQueries):
    SLIM_DATA = "json_remove(data, '$.prompt', '$.raw')"
    # json_extract reads the few fields in C: decoding 2,000 whole steps in Python took
    # 1.7x as long (0.15 s vs 0.09 s, 30 kB steps).
    STEP_BRIEFS = (
        "SELECT step, json_extract(data, '$.cell_id', '$.execution_time', "
        "'$.memory_bytes', '$.error.ename', '$.code') FROM steps WHERE trajectory_id = ? "
        "AND step > ? ORDER BY step LIMIT ?")
    PREDICTION_BRIEFS = (
        "SELECT target_step, json_extract(data, '$.id', '$.task', '$.predictor', "
        "'$.model', '$.context', '$.scores', '$.error', '$.abstained') FROM predictions "
        "WHERE trajectory_id = ? "
        "AND target_step > ? AND target_step <= ? ORDER BY target_step, rowid")
    """``readonly``: for commands that only read: nothing is created, migrated or written
    (a missing store is an error, not a new empty one)."""

    def __init__(self, path: Path | str, readonly: bool = False) -> None:
        self.path = Path(path)
        self.readonly = readonly
        if self.path.exists():
            problem = _not_a_store(self.path)
            if problem:
                raise StoreError(f"cannot open the trajectory store at {self.path}: it "
                                 f"{problem}; nothing was changed")
        elif readonly:
            raise StoreError(f"no trajectory store at {self.path}")
        if not readonly and (problem := _unwritable_side_file(self.path)):
            raise StoreUnavailable(f"cannot open the trajectory store at {self.path}: "
                                   f"{problem}; nothing was changed")
        try:
            if readonly:
                self._db = sqlite3.connect(f"{self.path.resolve().as_uri()}?mode=ro", uri=True,
                                           timeout=30, check_same_thread=False,
                                           isolation_level=None)
            else:
                self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
                # Created readable by its user only (SQLite's own default is 0644, and its
                # -wal/-shm files take the database's mode): steps hold outputs and state.
                with contextlib.suppress(FileExistsError):  # an existing one keeps its mode
                    os.close(os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
                self._db = sqlite3.connect(self.path, timeout=30, check_same_thread=False,
                                           isolation_level=None)
            self._check_ours()  # before anything is written, even the journal mode
            if not readonly:
                self._db.execute("PRAGMA journal_mode=WAL")
                self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.execute("PRAGMA foreign_keys=ON")
            if not readonly:
                self._migrate()
        except sqlite3.Error as exc:
            failure = _failure(self.path, exc)
            raise type(failure)(f"cannot open the trajectory store at {self.path}: {exc}") \
                from exc
        except OSError as exc:
            raise StoreUnavailable(f"cannot open the trajectory store at {self.path}: "
                                   f"{exc.strerror or exc}") from exc
        self._lock = threading.RLock()

    def _check_ours(self) -> None:
        """Refuse a SQLite database that some other program made (never add our tables)."""
        version = self._db.execute("PRAGMA user_version").fetchone()[0]
        tables = {name for (name,) in self._db.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table'")}
        if version == 0 and tables:
            raise StoreError(f"{self.path} is a SQLite database but not a trajectory store "
                             "(it has other tables); nothing was changed")
        if self.readonly and version == 0:
            raise StoreError(f"{self.path} is an empty database, not a trajectory store")
        if version > SCHEMA_VERSION:
            raise StoreError(
                f"{self.path} has schema version {version}, newer than this themisto_ext "
                f"understands ({SCHEMA_VERSION}); upgrade themisto_ext")

    # ------------------------------------------------------------ schema

    def _migrate(self) -> None:
        version = self._db.execute("PRAGMA user_version").fetchone()[0]
        for number in range(version, SCHEMA_VERSION):
            self._db.execute("BEGIN IMMEDIATE")
            try:
                # re-check inside the write lock: another process may have migrated
                if self._db.execute("PRAGMA user_version").fetchone()[0] > number:
                    self._db.execute("COMMIT")
                    continue
                for statement in MIGRATIONS[number].statements("sqlite"):
                    self._db.execute(statement)
                self._db.execute(f"PRAGMA user_version = {number + 1}")
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise

    def _transaction(self, work: Callable[[sqlite3.Connection], Any]) -> Any:
        with self._lock:
            try:
                self._db.execute("BEGIN IMMEDIATE")
                try:
                    result = work(self._db)
                    self._db.execute("COMMIT")
                except BaseException:
                    self._rollback()
                    raise
                return result
            except sqlite3.Error as exc:
                raise _failure(self.path, exc) from exc

    def _rollback(self) -> None:
        """Undo the open transaction, if SQLite has not already: on a full disk or an I/O
        error it rolls back by itself, and a second ROLLBACK ("cannot rollback - no
        transaction is active") would replace the real cause (a 500 instead of a 503)."""
        if self._db.in_transaction:
            try:
                self._db.execute("ROLLBACK")
            except sqlite3.Error:
                pass  # the error being raised says why; the transaction is gone either way

    # ------------------------------------------------------------ writes

    def apply(self, writes: list[Write], cursor: tuple[str, int] | None) -> Applied:
        def work(db: sqlite3.Connection) -> Applied:
            result = Applied()
            for write in writes:
                if refused_write(write, result.refused):
                    continue  # another user's trajectory: nothing of it changes
                if isinstance(write, NewStep):
                    self._add_step(db, write.step, result)
                elif isinstance(write, NewTrajectory):
                    self._start(db, write, result)
                elif isinstance(write, TrajectoryEnded):
                    db.execute("UPDATE trajectories SET ended_at = ?, end_reason = ? "
                               "WHERE id = ? AND ended_at IS NULL",
                               (write.at, write.reason, write.trajectory_id))
                elif isinstance(write, NotebookMoved):
                    result.moved += db.execute(
                        *move_statement(write.old, write.new, write.user, "?")).rowcount
                elif db.execute("SELECT 1 FROM trajectories WHERE id = ?",
                                (write.trajectory_id,)).fetchone():
                    self._event(db, write.trajectory_id, write.at, "recording",
                                "on" if write.on else "off")
                    result.switches.append(write)
            _count_steps(db, result.steps)
            if cursor is not None:
                db.execute(
                    "INSERT INTO journal_cursors (journal, offset) VALUES (?, ?) "
                    "ON CONFLICT (journal) DO UPDATE SET offset = max(offset, excluded.offset)",
                    cursor)
            return result

        result: Applied = self._transaction(work)
        return result

    @staticmethod
    def _add_step(db: sqlite3.Connection, step: Step, result: Applied) -> None:
        tid = step["trajectory_id"]
        # A step of a deleted (or never started) trajectory is dropped, not an error
        # that would stall ingestion of the whole journal.
        cur = db.execute(
            "INSERT OR IGNORE INTO steps (trajectory_id, step, data) "
            "SELECT ?, ?, ? WHERE EXISTS (SELECT 1 FROM trajectories WHERE id = ?)",
            (tid, int(step["step"]), dumps_step(step), tid))
        if cur.rowcount:
            result.steps.append(step)
        else:
            result.duplicates += 1

    def _start(self, db: sqlite3.Connection, start: NewTrajectory, result: Applied) -> None:
        tid, kernel_id, started = start.trajectory_id, start.kernel_id, start.started_at
        stored = db.execute("SELECT user_name FROM trajectories WHERE id = ?", (tid,)).fetchone()
        if stored is not None:  # a replayed journal, unless the id is someone else's
            if stored[0] != start.user:
                result.refused[tid] = kernel_id
            return
        previous = db.execute(
            "SELECT id FROM trajectories WHERE kernel_id = ? AND user_name = ? "
            "AND started_at <= ? ORDER BY started_at DESC LIMIT 1",
            (kernel_id, start.user, started)).fetchone()
        restart_of = previous[0] if previous else None
        db.execute(
            f"INSERT INTO trajectories ({COLUMNS}) VALUES (?, ?, ?, ?, NULL, NULL, ?, 0, ?, ?)",
            (tid, kernel_id, start.notebook_path, started, restart_of, start.source, start.user))
        if restart_of:
            # A kernel restart ends the previous process's trajectory and starts this one.
            db.execute("UPDATE trajectories SET ended_at = ?, end_reason = 'restart' "
                       "WHERE id = ? AND ended_at IS NULL", (started, restart_of))
            self._event(db, tid, started, "restart", restart_of)
        result.new_trajectories.append(tid)

    @staticmethod
    def _event(db: sqlite3.Connection, tid: str, at: str, kind: str, detail: str) -> None:
        db.execute("INSERT INTO events (trajectory_id, at, kind, detail) VALUES (?, ?, ?, ?)",
                   (tid, at, kind, detail))

    # ------------------------------------------------------------ reads

    def _query(self, sql: str,
               params: tuple[Any, ...] | list[Any] = ()) -> list[tuple[Any, ...]]:
        with self._lock:
            try:
                return self._db.execute(sql, params).fetchall()
            except sqlite3.Error as exc:
                raise _failure(self.path, exc) from exc

    def _execute(self, sql: str, params: tuple[Any, ...] | list[Any] = ()) -> int:
        changed: int = self._transaction(lambda db: db.execute(sql, params).rowcount)
        return changed

    def journal_cursors(self, prefix: str = "") -> dict[str, int]:
        return dict(self._query("SELECT journal, offset FROM journal_cursors "
                                "WHERE substr(journal, 1, ?) = ?", (len(prefix), prefix)))

    # ------------------------------------------------------------ predictions

    def save_prediction(self, prediction: Prediction) -> bool:
        """Insert or replace a prediction record; False when its trajectory is gone."""
        def work(db: sqlite3.Connection) -> bool:
            was = db.execute("SELECT scored FROM predictions WHERE id = ?",
                             (prediction["id"],)).fetchone()
            cur = db.execute(
                "INSERT OR REPLACE INTO predictions "
                "(id, trajectory_id, target_step, task, scored, data) "
                "SELECT ?, ?, ?, ?, ?, ? WHERE EXISTS (SELECT 1 FROM trajectories WHERE id = ?)",
                (prediction["id"], prediction["trajectory_id"], int(prediction["target_step"]),
                 prediction["task"], int(prediction.get("reference") is not None),
                 json.dumps(prediction, ensure_ascii=False), prediction["trajectory_id"]))
            score = scored(prediction)
            if cur.rowcount and score is not None and not (was and was[0]):
                db.execute(SCORE_UPSERT, (prediction["trajectory_id"], *score))
            return cur.rowcount > 0

        saved: bool = self._transaction(work)
        return saved

    def import_trajectory(self, trajectory: Trajectory, events: list[dict[str, str]]) -> bool:
        def work(db: sqlite3.Connection) -> bool:
            row = astuple(replace(trajectory, steps=0))
            marks = ", ".join("?" * len(row))
            if not db.execute(f"INSERT OR IGNORE INTO trajectories ({COLUMNS}) "
                              f"VALUES ({marks})", row).rowcount:
                return False
            for event in events:
                self._event(db, trajectory.id, event["at"], event["kind"], event["detail"])
            return True

        imported: bool = self._transaction(work)
        return imported

    def import_step_lines(self, trajectory_id: str, lines: list[tuple[int, str]]) -> int:
        def work(db: sqlite3.Connection) -> int:
            if not lines:
                return 0
            have = {n for (n,) in db.execute(
                "SELECT step FROM steps WHERE trajectory_id = ? AND step BETWEEN ? AND ?",
                (trajectory_id, min(n for n, _ in lines), max(n for n, _ in lines)))}
            new = dict((n, line) for n, line in lines if n not in have)
            db.executemany("INSERT OR IGNORE INTO steps (trajectory_id, step, data) "
                           "VALUES (?, ?, ?)", [(trajectory_id, n, line)
                                                for n, line in new.items()])
            _count_steps(db, [dict(json.loads(line), trajectory_id=trajectory_id)  # type: ignore[misc]
                              for line in new.values()])
            return len(new)

        added: int = self._transaction(work)
        return added

    def close(self) -> None:
        with self._lock:
            self._db.close()
