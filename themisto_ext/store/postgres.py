"""PostgreSQL store: one database shared by many Jupyter servers (a JupyterHub's users).

psycopg 3 over a small connection pool. Every ``apply`` is one transaction that takes only
row locks: steps go in with ``INSERT ... ON CONFLICT DO NOTHING`` on (trajectory id, step),
so retries, replays, restarts and duplicate journals store each step once; a trajectory's
step counter is the only row two writers of the same trajectory contend for, and no lock
is shared between trajectories, so one user's burst never waits for another's. The schema
migrations are ``schema.py``'s, serialised across servers by a table lock (``_MIGRATION_LOCK``).
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from dataclasses import astuple, replace
from typing import Any, TypeVar

import psycopg
from psycopg import errors as pg_errors
from psycopg.abc import Buffer
from psycopg.types.string import StrBinaryDumper, StrDumperUnknown
from psycopg_pool import ConnectionPool, PoolTimeout

from themisto_ext import json_codec
from themisto_ext.errors import QuotaReached
from themisto_ext.records import Prediction, Step
from themisto_ext.store.base import (
    CHARGED_USER,
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
from themisto_ext.store.url import StoreURL

T = TypeVar("T")
_MIGRATION_LOCK = "LOCK TABLE themisto_schema IN SHARE ROW EXCLUSIVE MODE"
"""Migrations one at a time, under a lock no user's role can take or block (users hold
SELECT on the table: ACCESS SHARE only). Not an advisory lock: any role may hold one."""
_RETRIES = 6
"""Attempts of a transaction that lost a deadlock or serialization race (two servers
ingesting copies of one journal); each retry waits 5 ms x 2^attempt."""
_RETRYABLE = (pg_errors.DeadlockDetected, pg_errors.SerializationFailure,
              pg_errors.ForeignKeyViolation)
"""A foreign-key violation is a trajectory deleted while its steps were going in: the
retry's ``EXISTS`` check then drops those steps."""
_INSERT_STEPS = """
    INSERT INTO steps (trajectory_id, step, data)
    SELECT v.tid, v.n, v.data
    FROM unnest(%b::text[], %b::int[], %b::text[]) AS v(tid, n, data)
    WHERE EXISTS (SELECT 1 FROM trajectories t WHERE t.id = v.tid)
    ON CONFLICT DO NOTHING
    RETURNING trajectory_id, step
"""
NUL_STAND_IN = "\ufffd"
"""What a NUL character becomes in PostgreSQL, whose text and jsonb cannot hold one (a cell
may print one; a kernel's record may carry one): the replacement character, as a decoder
writes for what it cannot show. SQLite keeps NULs as they are."""
SESSION_LIMITS = ("-c statement_timeout=60s -c lock_timeout=10s "
                  "-c idle_in_transaction_session_timeout=60s")
"""Bounds on every wait of the pool's sessions: a lock someone else holds (a user's role
may lock its tables), a statement, a transaction left open. Past one the work fails as
unavailable (503, the ingest retries it) instead of waiting as long as the lock is held.
They replace any ``options`` in the store URL."""
_JSON_NUL = re.compile(r"(?<!\\)((?:\\\\)*)\\u0000")
"""A JSON escape of NUL (``\\u0000`` not itself escaped): ``data::jsonb`` refuses it."""
_ROWS_PER_INSERT = 512
"""Rows of one INSERT. Under row-level security (a hub user's role) each statement evaluates
the policies' role lookups once, so one statement a row (``executemany``, as before) spent
a fifth of the ingest in them. The rows travel as three arrays in binary (``%b``): as text,
psycopg escapes each 2.5 kB line in Python (5,000 steps in 2.5 s); as a VALUES list of
three parameters a row, psycopg parses the statement anew each time (more than 50
parameters are not cached), about a fifth of the hub service's cost of a step."""
_COUNT_STEPS = """
    UPDATE trajectories SET steps = trajectories.steps + c.n,
        errors = trajectories.errors + c.e,
        active_seconds = trajectories.active_seconds + c.gaps + COALESCE(
            CASE WHEN trajectories.last_at IS NULL THEN c.first_execution
            ELSE LEAST(GREATEST(EXTRACT(EPOCH FROM c.first_end::timestamptz
                                        - trajectories.last_at::timestamptz), 0), %s) END, 0),
        last_at = GREATEST(trajectories.last_at, c.last_end)
    FROM unnest(%s::text[], %s::int[], %s::int[], %s::float8[], %s::float8[], %s::text[],
                %s::text[]) AS c(id, n, e, gaps, first_execution, first_end, last_end)
    WHERE trajectories.id = c.id
"""
"""New steps into their trajectories' counts and class totals (``roster.py``)."""


class PostgresStore(SharedQueries):
    MARK = "%s"
    ORDER = "seq"
    PAGE = 2000
    SLIM_DATA = "(data::jsonb - 'prompt' - 'raw')::text"
    # The few fields are read by the server (jsonb), not by decoding whole steps here.
    STEP_BRIEFS = (
        "SELECT step, jsonb_build_array(d->'cell_id', d->'execution_time', "
        "d->'memory_bytes', d->'error'->'ename', d->'code')::text "
        "FROM (SELECT step, data::jsonb AS d FROM steps "
        "WHERE trajectory_id = %s AND step > %s ORDER BY step LIMIT %s) s "
        "ORDER BY step")
    PREDICTION_BRIEFS = (
        "SELECT target_step, jsonb_build_array(d->'id', d->'task', d->'predictor', "
        "d->'model', d->'context', d->'scores', d->'error', d->'abstained')::text "
        "FROM (SELECT target_step, seq, "
        "data::jsonb AS d FROM predictions WHERE trajectory_id = %s AND target_step > %s "
        "AND target_step <= %s) p ORDER BY target_step, seq")

    def __init__(self, url: StoreURL, *, pool_size: int = 4, connect_timeout: float = 10) -> None:
        self.url = url
        options: dict[str, Any] = {"autocommit": True,
                                   "connect_timeout": max(1, round(connect_timeout))}
        if url.password is not None:
            options["password"] = url.password
        try:
            # One plain connection first: a wrong address or password is reported at once
            # (the pool would only log it and retry), then the schema is brought up to date.
            # Bounded: a migration waiting on a lock gives up after 10 s (retried by the
            # guard) rather than hold the caller as long as whoever holds it.
            with psycopg.connect(url.target, **options,
                                 options="-c lock_timeout=10s") as conn:
                self._migrate(conn)
            self._pool = ConnectionPool(url.target, min_size=1, max_size=pool_size,
                                        kwargs={**options, "options": SESSION_LIMITS},
                                        name="themisto", open=False,
                                        configure=_nul_free)
        except (psycopg.Error, OSError) as exc:
            raise StoreError(f"cannot open the trajectory store at {url.display}: "
                             f"{_reason(exc)}") from None
        try:
            self._pool.open(wait=True, timeout=connect_timeout)
        except (psycopg.Error, PoolTimeout, OSError) as exc:
            self._pool.close()  # its worker threads would otherwise outlive the error
            raise StoreError(f"cannot open the trajectory store at {url.display}: "
                             f"{_reason(exc)}") from None

    # ------------------------------------------------------------ schema

    def _migrate(self, conn: psycopg.Connection[Any]) -> None:
        version = _version(conn)
        if version == SCHEMA_VERSION:
            return  # up to date: nothing to create (a user's role may create nothing)
        if version is not None and version > SCHEMA_VERSION:
            raise self._newer(version)
        try:
            self._upgrade(conn)
        except pg_errors.InsufficientPrivilege:
            raise StoreError(
                f"{self.url.display} has schema version {version or 0}, this themisto_ext "
                f"needs {SCHEMA_VERSION}, and this role may not change the schema: the "
                "database's owner upgrades it (the hub's spawn hook does, as does any "
                "themisto command run with the owner's credentials)") from None

    def _upgrade(self, conn: psycopg.Connection[Any]) -> None:
        try:
            with conn.transaction():
                conn.execute("CREATE TABLE IF NOT EXISTS themisto_schema "
                             "(version INTEGER NOT NULL)")
        except (pg_errors.UniqueViolation, pg_errors.DuplicateTable):
            pass  # another server created it at the same moment: it exists
        with conn.transaction():
            conn.execute(_MIGRATION_LOCK)
            row = conn.execute("SELECT version FROM themisto_schema").fetchone()
            version = row[0] if row else 0
            if row is None:
                conn.execute("INSERT INTO themisto_schema (version) VALUES (0)")
            if version > SCHEMA_VERSION:
                raise self._newer(version)
            for number in range(version, SCHEMA_VERSION):
                for statement in MIGRATIONS[number].statements("postgresql"):
                    conn.execute(statement)
                conn.execute("UPDATE themisto_schema SET version = %s", (number + 1,))

    def _newer(self, version: int) -> StoreError:
        return StoreError(f"{self.url.display} has schema version {version}, newer than "
                          f"this themisto_ext understands ({SCHEMA_VERSION}); upgrade "
                          "themisto_ext")

    @property
    def schema_version(self) -> int:
        row = self._query("SELECT version FROM themisto_schema")
        return int(row[0][0])

    # ------------------------------------------------------------ plumbing

    def _transaction(self, work: Callable[[psycopg.Connection[Any]], T]) -> T:
        for attempt in range(_RETRIES):
            try:
                with self._pool.connection() as conn, conn.transaction():
                    charged = CHARGED_USER.get()
                    if charged is not None:  # the hub's service, writing for its caller
                        conn.execute("SELECT set_config('themisto.charged_user', %s, true)",
                                     (charged,))
                    return work(conn)
            except _RETRYABLE as exc:
                if attempt == _RETRIES - 1:
                    raise _store_error(self.url, exc) from None
                time.sleep(0.005 * 2 ** attempt)
            except (psycopg.Error, PoolTimeout) as exc:
                raise _store_error(self.url, exc) from None
        raise AssertionError("unreachable")

    def _query(self, sql: str, params: tuple[Any, ...] | list[Any] = ()) -> list[tuple[Any, ...]]:
        try:
            with self._pool.connection() as conn:
                return conn.execute(sql, params).fetchall()
        except (psycopg.Error, PoolTimeout) as exc:
            raise _store_error(self.url, exc) from None

    def _execute(self, sql: str, params: tuple[Any, ...] | list[Any] = ()) -> int:
        return self._transaction(lambda conn: conn.execute(sql, params).rowcount)

    # ------------------------------------------------------------ writes

    def apply(self, writes: list[Write], cursor: tuple[str, int] | None) -> Applied:
        def work(conn: psycopg.Connection[Any]) -> Applied:
            result = Applied()
            batch: list[Step] = []
            for write in writes:
                if refused_write(write, result.refused):
                    continue  # another user's trajectory: nothing of it changes
                if isinstance(write, NewStep):
                    batch.append(write.step)
                    continue
                self._add_steps(conn, batch, result)
                batch = []
                if isinstance(write, NewTrajectory):
                    self._start(conn, write, result)
                elif isinstance(write, TrajectoryEnded):
                    conn.execute("UPDATE trajectories SET ended_at = %s, end_reason = %s "
                                 "WHERE id = %s AND ended_at IS NULL",
                                 (write.at, write.reason, write.trajectory_id))
                elif isinstance(write, NotebookMoved):
                    result.moved += conn.execute(
                        *move_statement(write.old, write.new, write.user, "%s")).rowcount
                elif self._event(conn, write.trajectory_id, write.at, "recording",
                                 "on" if write.on else "off"):
                    result.switches.append(write)
            self._add_steps(conn, batch, result)
            if cursor is not None:
                conn.execute(
                    'INSERT INTO journal_cursors (journal, "offset") VALUES (%s, %s) '
                    'ON CONFLICT (user_name, journal) DO UPDATE '
                    'SET "offset" = GREATEST(journal_cursors."offset", excluded."offset")',
                    cursor)
            return result

        return self._transaction(work)

    @staticmethod
    def _add_steps(conn: psycopg.Connection[Any], batch: list[Step], result: Applied) -> None:
        """One INSERT for a run of steps; a step of a deleted (or never started) trajectory
        is dropped, not an error that would stall the journal."""
        if not batch:
            return
        keys = [(s["trajectory_id"], int(s["step"])) for s in batch]
        inserted = _insert_steps(conn, [(tid, n, json_codec.dumps_text(s))
                                        for (tid, n), s in zip(keys, batch, strict=True)])
        added: list[Step] = []
        for key, step in zip(keys, batch, strict=True):
            if key in inserted:
                inserted.discard(key)  # a step twice in one batch counts once
                added.append(step)
            else:
                result.duplicates += 1
        result.steps.extend(added)
        _count_steps(conn, added)

    def _start(self, conn: psycopg.Connection[Any], start: NewTrajectory,
               result: Applied) -> None:
        tid, started = start.trajectory_id, start.started_at
        previous = conn.execute(
            "SELECT id FROM trajectories WHERE kernel_id = %s AND user_name = %s "
            "AND started_at <= %s AND id <> %s ORDER BY started_at DESC LIMIT 1",
            (start.kernel_id, start.user, started, tid)).fetchone()
        restart_of = previous[0] if previous else None
        created = conn.execute(
            f"INSERT INTO trajectories ({COLUMNS}) "
            "VALUES (%s, %s, %s, %s, NULL, NULL, %s, 0, %s, %s) "
            "ON CONFLICT (id) DO NOTHING RETURNING id",
            (tid, start.kernel_id, start.notebook_path, started, restart_of, start.source,
             start.user)).fetchone()
        if created is None:  # a replayed journal, unless the id is someone else's
            mine = conn.execute("SELECT 1 FROM trajectories WHERE id = %s AND user_name = %s",
                                (tid, start.user)).fetchone()
            if mine is None:  # another user's (row-level security may hide it)
                result.refused[tid] = start.kernel_id
            return
        if restart_of:
            # A kernel restart ends the previous process's trajectory and starts this one.
            conn.execute("UPDATE trajectories SET ended_at = %s, end_reason = 'restart' "
                         "WHERE id = %s AND ended_at IS NULL", (started, restart_of))
            self._event(conn, tid, started, "restart", restart_of)
        result.new_trajectories.append(tid)

    @staticmethod
    def _event(conn: psycopg.Connection[Any], tid: str, at: str, kind: str,
               detail: str) -> bool:
        cur = conn.execute(
            "INSERT INTO events (trajectory_id, at, kind, detail) SELECT %s, %s, %s, %s "
            "WHERE EXISTS (SELECT 1 FROM trajectories WHERE id = %s)",
            (tid, at, kind, detail, tid))
        return cur.rowcount > 0

    # ------------------------------------------------------------ reads

    def journal_cursors(self, prefix: str = "") -> dict[str, int]:
        # This role's own (the owner's are user ''), as the cursor's default user_name
        rows = self._query('SELECT journal, "offset" FROM journal_cursors '
                           "WHERE starts_with(journal, %s) "
                           "AND user_name = COALESCE(themisto_user(), '')", (prefix,))
        return {key: int(offset) for key, offset in rows}

    # ------------------------------------------------------------ predictions

    def save_prediction(self, prediction: Prediction) -> bool:
        """Insert or replace a prediction record; False when its trajectory is gone."""
        row = (prediction["id"], prediction["trajectory_id"], int(prediction["target_step"]),
               prediction["task"], int(prediction.get("reference") is not None),
               nul_free_json(json.dumps(prediction, ensure_ascii=False)),
               prediction["trajectory_id"])

        def work(conn: psycopg.Connection[Any]) -> bool:
            was = conn.execute("SELECT scored FROM predictions WHERE id = %s",
                               (prediction["id"],)).fetchone()
            saved = conn.execute(
                "INSERT INTO predictions (id, trajectory_id, target_step, task, scored, data) "
                "SELECT %s, %s, %s, %s, %s, %s "
                "WHERE EXISTS (SELECT 1 FROM trajectories WHERE id = %s) "
                "ON CONFLICT (id) DO UPDATE SET trajectory_id = excluded.trajectory_id, "
                "target_step = excluded.target_step, task = excluded.task, "
                "scored = excluded.scored, data = excluded.data, seq = DEFAULT", row
            ).rowcount > 0  # a replaced record goes last, as SQLite's REPLACE does
            score = scored(prediction)
            if saved and score is not None and not (was and was[0]):
                conn.execute(SCORE_UPSERT.replace("?", "%s"),
                             (prediction["trajectory_id"], *score))
            return saved

        return self._transaction(work)

    def import_trajectory(self, trajectory: Trajectory, events: list[dict[str, str]]) -> bool:
        def work(conn: psycopg.Connection[Any]) -> bool:
            row = astuple(replace(trajectory, steps=0))
            marks = ", ".join(["%s"] * len(row))
            created = conn.execute(f"INSERT INTO trajectories ({COLUMNS}) VALUES ({marks}) "
                                   "ON CONFLICT (id) DO NOTHING RETURNING id", row).fetchone()
            if created is None:
                return False
            for event in events:
                self._event(conn, trajectory.id, event["at"], event["kind"], event["detail"])
            return True

        return self._transaction(work)

    def import_step_lines(self, trajectory_id: str, lines: list[tuple[int, str]]) -> int:
        def work(conn: psycopg.Connection[Any]) -> int:
            added = _insert_steps(conn, [(trajectory_id, n, line) for n, line in lines])
            _count_steps(conn, [dict(json.loads(line), trajectory_id=trajectory_id)  # type: ignore[misc]
                                for n, line in lines if (trajectory_id, n) in added])
            return len(added)

        return self._transaction(work)

    def close(self) -> None:
        self._pool.close()


def _insert_steps(conn: psycopg.Connection[Any],
                  rows: list[tuple[str, int, str]]) -> set[tuple[str, int]]:
    """Insert ``(trajectory id, step, line)`` rows, skipping those stored already and those
    of unknown trajectories; returns the keys that went in. Rows go in key order, the same
    for every writer, so two servers inserting the same steps wait, never deadlock."""
    if not rows:
        return set()
    ordered = sorted(rows, key=lambda r: r[:2])
    inserted: set[tuple[str, int]] = set()
    for first in range(0, len(ordered), _ROWS_PER_INSERT):
        chunk = ordered[first:first + _ROWS_PER_INSERT]
        params = ([tid for tid, _, _ in chunk], [n for _, n, _ in chunk],
                  [nul_free_json(line) for _, _, line in chunk])
        inserted.update((tid, n) for tid, n in conn.execute(_INSERT_STEPS, params).fetchall())
    return inserted


class _NulFreeText(StrDumperUnknown):
    def dump(self, obj: str) -> Buffer | None:
        return super().dump(obj.replace("\x00", NUL_STAND_IN))


class _NulFreeBinaryText(StrBinaryDumper):
    def dump(self, obj: str) -> Buffer | None:
        return super().dump(obj.replace("\x00", NUL_STAND_IN))


def _nul_free(conn: psycopg.Connection[Any]) -> None:
    """Every text parameter of the pool's connections with its NULs stood in for: one NUL
    in a kernel's record would otherwise fail the whole journal's transaction, forever."""
    conn.adapters.register_dumper(str, _NulFreeText)
    conn.adapters.register_dumper(str, _NulFreeBinaryText)


def nul_free_json(text: str) -> str:
    """A JSON document with its escaped NULs stood in for (``data::jsonb`` reads every
    stored step and prediction)."""
    return _JSON_NUL.sub(r"\1\\ufffd", text) if "\\u0000" in text else text


def _count_steps(conn: psycopg.Connection[Any], steps: list[Step]) -> None:
    if steps:
        runs = totals(steps)
        ids = sorted(runs)  # one order for every writer: no deadlock between two
        t = [runs[i] for i in ids]
        conn.execute(_COUNT_STEPS, (ACTIVE_GAP, ids, [x.n for x in t], [x.errors for x in t],
                                    [x.gaps for x in t], [x.first_execution for x in t],
                                    [x.first_end for x in t], [x.last_end for x in t]))


def _version(conn: psycopg.Connection[Any]) -> int | None:
    """The schema version, or None before the first migration."""
    if conn.execute("SELECT to_regclass('themisto_schema')").fetchone() == (None,):
        return None
    row = conn.execute("SELECT version FROM themisto_schema").fetchone()
    return int(row[0]) if row else None


def _reason(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


def _store_error(url: StoreURL, exc: BaseException) -> StoreError:
    """Lost connections, waits past ``SESSION_LIMITS`` (operational errors too) and a full
    or read-only database are "unavailable" (503, retried); anything else is a plain store
    error."""
    if isinstance(exc, pg_errors.ConfigurationLimitExceeded):
        # A user's quota reached (53400, schema._QUOTAS): that user's, not the store's
        # state; the guard must not hold back every other user's writes for it.
        return QuotaReached(f"trajectory store (PostgreSQL): {_reason(exc)}")
    unavailable = isinstance(exc, (psycopg.OperationalError, PoolTimeout,
                                   pg_errors.ReadOnlySqlTransaction, pg_errors.DiskFull))
    kind = StoreUnavailable if unavailable else StoreError
    # Not the URL: these reach API error bodies and the log, which the user reads.
    return kind(f"trajectory store (PostgreSQL): {_reason(exc)}")
