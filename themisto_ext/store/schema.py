"""The store's schema: one list of versioned migrations for both engines, and the SQL both
engines' queries share.

Migration N brings a store from version N-1 to N. SQLite records the version in
``PRAGMA user_version``, PostgreSQL in the ``themisto_schema`` table; both apply the same
list in order, each step in one transaction. Where the engines' SQL must differ (row ids,
column types), a migration carries both texts; otherwise one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from themisto_ext.store.base import TrajectoryFilter


@dataclass(frozen=True)
class Migration:
    description: str
    sqlite: str
    postgresql: str | None = None
    """``None``: the SQLite text is valid PostgreSQL too."""

    def statements(self, engine: str) -> list[str]:
        text = self.postgresql if engine == "postgresql" and self.postgresql else self.sqlite
        # Split at semicolons outside $$-quoted bodies (PL/pgSQL blocks and functions).
        statements, current = [], ""
        for index, part in enumerate(text.split("$$")):
            if index % 2:  # inside a body: taken whole
                current += "$$" + part + "$$"
                continue
            pieces = part.split(";")
            current += pieces[0]
            for piece in pieces[1:]:
                statements.append(current)
                current = piece
        statements.append(current)
        return [s.strip() for s in statements if s.strip()]


_TRAJECTORIES = """
    CREATE TABLE trajectories (
        id TEXT PRIMARY KEY,
        kernel_id TEXT NOT NULL,
        notebook_path TEXT,
        started_at TEXT NOT NULL,
        ended_at TEXT,
        end_reason TEXT,
        restart_of TEXT,
        steps INTEGER NOT NULL DEFAULT 0,
        source TEXT NOT NULL DEFAULT 'kernel'
    );
    CREATE INDEX trajectories_kernel ON trajectories (kernel_id, started_at);
    CREATE INDEX trajectories_notebook ON trajectories (notebook_path, started_at);
"""

_USER = "(SELECT r.user_name FROM themisto_roles r WHERE r.role_name = current_user)"
"""The hub user the connected role records as (NULL for a role that is no user's: the
owner, whom no policy binds, or the group role). A subquery, not a function: the planner
runs it once a statement, and the table it names is fixed when the policy is made, so a
temporary table of the same name cannot stand in for it."""
_READS_ALL = ("COALESCE((SELECT r.read_all FROM themisto_roles r "
              "WHERE r.role_name = current_user), FALSE)")
_OWNED = f"(SELECT t.user_name FROM trajectories t WHERE t.id = trajectory_id) = {_USER}"
"""A row of a trajectory its role's user owns: looked up by the trajectory's id alone, so
the primary key answers (a condition on user_name too could send the planner through the
user's index, over all their trajectories, for every row)."""

_ROW_SECURITY = f"""
    CREATE TABLE themisto_roles (
        role_name TEXT PRIMARY KEY,
        user_name TEXT NOT NULL UNIQUE,
        read_all BOOLEAN NOT NULL DEFAULT FALSE
    );
    ALTER TABLE themisto_roles ENABLE ROW LEVEL SECURITY;
    CREATE POLICY own_role ON themisto_roles FOR SELECT USING (role_name = current_user);
    DO $$
    BEGIN
        -- For a column's default, where a subquery may not stand. It names its table
        -- with the schema: with pg_temp searched first (PostgreSQL's default) a role
        -- could otherwise shadow it with a temporary table of its own.
        EXECUTE format('CREATE FUNCTION themisto_user() RETURNS TEXT LANGUAGE sql STABLE '
                       'AS %L', format('SELECT user_name FROM %I.themisto_roles '
                                       'WHERE role_name = current_user', current_schema()));
    END
    $$;
    ALTER TABLE journal_cursors ADD COLUMN user_name TEXT NOT NULL
        DEFAULT COALESCE(themisto_user(), '');
    ALTER TABLE journal_cursors DROP CONSTRAINT journal_cursors_pkey;
    ALTER TABLE journal_cursors ADD PRIMARY KEY (user_name, journal);
    ALTER TABLE trajectories ENABLE ROW LEVEL SECURITY;
    CREATE POLICY owner ON trajectories USING (user_name = {_USER});
    CREATE POLICY reader ON trajectories FOR SELECT USING ({_READS_ALL});
    ALTER TABLE steps ENABLE ROW LEVEL SECURITY;
    CREATE POLICY owner ON steps USING ({_OWNED});
    CREATE POLICY reader ON steps FOR SELECT USING ({_READS_ALL});
    ALTER TABLE events ENABLE ROW LEVEL SECURITY;
    CREATE POLICY owner ON events USING ({_OWNED});
    CREATE POLICY reader ON events FOR SELECT USING ({_READS_ALL});
    ALTER TABLE predictions ENABLE ROW LEVEL SECURITY;
    CREATE POLICY owner ON predictions USING ({_OWNED});
    CREATE POLICY reader ON predictions FOR SELECT USING ({_READS_ALL});
    ALTER TABLE journal_cursors ENABLE ROW LEVEL SECURITY;
    CREATE POLICY owner ON journal_cursors USING (user_name = {_USER});
"""
"""Row-level security (PostgreSQL): each table's rows are their user's; a reader (a
hub user holding the read-all scope) may read every row and write only their own. A
journal's cursor is its user's too (``''``: the owner's), keyed by user and journal: a
role never collides with a cursor it cannot see (one written before roles existed)."""

ACTIVE_GAP = 300.0
"""Seconds between two cells' ends counted as active time at most: a longer pause is a
break (the first cell counts its execution time)."""

def _class(field: str, real: str) -> str:
    """Migration 6 in an engine's dialect: ``field`` reads a step's JSON field."""
    error, time, ended = (field.format(name) for name in ("error", "execution_time",
                                                          "ended_at"))
    return f"""
    ALTER TABLE trajectories ADD COLUMN errors INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE trajectories ADD COLUMN active_seconds {real} NOT NULL DEFAULT 0;
    ALTER TABLE trajectories ADD COLUMN last_at TEXT;
    UPDATE trajectories SET
        errors = (SELECT count(*) FROM steps WHERE steps.trajectory_id = trajectories.id
                  AND {error} IS NOT NULL),
        active_seconds = COALESCE((SELECT sum(CAST({time} AS {real})) FROM steps
                                   WHERE steps.trajectory_id = trajectories.id), 0),
        last_at = (SELECT max({ended}) FROM steps WHERE steps.trajectory_id = trajectories.id);
    CREATE TABLE score_totals (
        trajectory_id TEXT NOT NULL REFERENCES trajectories (id) ON DELETE CASCADE,
        predictor TEXT NOT NULL,
        context TEXT NOT NULL,
        task TEXT NOT NULL,
        n INTEGER NOT NULL,
        em_sum {real} NOT NULL,
        chrf_sum {real} NOT NULL,
        PRIMARY KEY (trajectory_id, predictor, context, task)
    );
    CREATE TABLE user_settings (
        user_name TEXT PRIMARY KEY,
        consent INTEGER NOT NULL,
        changed_at TEXT NOT NULL
    )
"""


_CLASS_SECURITY = f"""
    ;
    ALTER TABLE score_totals ENABLE ROW LEVEL SECURITY;
    CREATE POLICY owner ON score_totals USING ({_OWNED});
    CREATE POLICY reader ON score_totals FOR SELECT USING ({_READS_ALL});
    ALTER TABLE user_settings ENABLE ROW LEVEL SECURITY;
    CREATE POLICY owner ON user_settings USING (user_name = {_USER});
    CREATE POLICY reader ON user_settings FOR SELECT USING ({_READS_ALL})
"""
"""A user's settings and score totals are theirs; a reader sees whose consent is off."""


_CHARGED = ("trajectories", "steps", "events", "predictions", "journal_cursors",
            "score_totals", "user_settings")
"""Every table a user's role may write: what it writes there counts against its quota."""

_ROLE_USER = "(SELECT user_name FROM themisto_roles WHERE role_name = session_user)"
"""Whom a write is charged to: the user of the session's role (a user's own role)..."""
_ROLE_OR_CALLER = (f"COALESCE({_ROLE_USER}, "
                   "NULLIF(current_setting('themisto.charged_user', true), ''))")
"""... or, for the owner's sessions, the user the hub's Themisto service writes for
(``base.CHARGED_USER``, set per transaction). A user's own role is always charged as
itself, whatever it sets."""


def _charge_function(create: str, who: str) -> str:
    """The quota trigger's function (``_QUOTAS``), ``who`` naming whom it charges."""
    return _CHARGE_FUNCTION.replace("@CREATE@", create).replace("@WHO@", who)


_CHARGE_FUNCTION = """
    DO $$
    BEGIN
        -- Runs as the owner (SECURITY DEFINER), with a fixed search path: no role can
        -- shadow what it reads, and none may write the usage table itself. (%% is a %
        -- of the inner format, this one's being the schema's %I.)
        EXECUTE format($f$
        @CREATE@ themisto_charge() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER
        SET search_path = %I, pg_catalog AS $b$
        DECLARE
            who TEXT := @WHO@;
            added BIGINT := 0;
            removed BIGINT := 0;
            counted BIGINT := 0;
            used RECORD;
            quota RECORD;
        BEGIN
            IF who IS NULL THEN
                RETURN NULL;  -- the owner (the hub, its commands) is charged nothing
            END IF;
            IF TG_OP IN ('INSERT', 'UPDATE') THEN
                SELECT COALESCE(sum(octet_length(r::text)), 0), count(*) INTO added, counted
                FROM new_rows r;
            END IF;
            IF TG_OP IN ('DELETE', 'UPDATE') THEN
                SELECT COALESCE(sum(octet_length(r::text)), 0) INTO removed FROM old_rows r;
            END IF;
            IF TG_TABLE_NAME <> 'steps' OR TG_OP = 'UPDATE' THEN
                counted := 0;
            ELSIF TG_OP = 'DELETE' THEN
                SELECT -count(*) INTO counted FROM old_rows;
            END IF;
            INSERT INTO themisto_usage AS u (user_name, bytes, steps)
            VALUES (who, added - removed, counted)
            ON CONFLICT (user_name) DO UPDATE
            SET bytes = u.bytes + excluded.bytes, steps = u.steps + excluded.steps
            RETURNING u.bytes, u.steps INTO used;
            SELECT max_bytes, max_steps INTO quota FROM themisto_quota;
            IF added > removed AND (used.bytes > quota.max_bytes
                                    OR used.steps > quota.max_steps) THEN
                RAISE EXCEPTION USING ERRCODE = '53400', MESSAGE = format(
                    'storage quota reached: %%s bytes of %%s, %%s steps of %%s; nothing of '
                    'this write was stored', used.bytes, COALESCE(quota.max_bytes::text,
                    'no limit'), used.steps, COALESCE(quota.max_steps::text, 'no limit'));
            END IF;
            RETURN NULL;
        END
        $b$
        $f$, current_schema());
    END
    $$;
"""

_QUOTAS = """
    CREATE TABLE themisto_quota (
        id BOOLEAN PRIMARY KEY DEFAULT TRUE CHECK (id),
        max_bytes BIGINT,
        max_steps BIGINT
    );
    INSERT INTO themisto_quota (id) VALUES (TRUE);
    CREATE TABLE themisto_usage (
        user_name TEXT PRIMARY KEY,
        bytes BIGINT NOT NULL DEFAULT 0,
        steps BIGINT NOT NULL DEFAULT 0
    );
    ALTER TABLE themisto_usage ENABLE ROW LEVEL SECURITY;
    CREATE POLICY own_usage ON themisto_usage FOR SELECT USING (user_name = """ + _USER + """);
""" + _charge_function("CREATE FUNCTION", _ROLE_USER) + """
""" + "".join(f"""
    CREATE TRIGGER charge_insert AFTER INSERT ON {t} REFERENCING NEW TABLE AS new_rows
        FOR EACH STATEMENT EXECUTE FUNCTION themisto_charge();
    CREATE TRIGGER charge_update AFTER UPDATE ON {t}
        REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
        FOR EACH STATEMENT EXECUTE FUNCTION themisto_charge();
    CREATE TRIGGER charge_delete AFTER DELETE ON {t} REFERENCING OLD TABLE AS old_rows
        FOR EACH STATEMENT EXECUTE FUNCTION themisto_charge();""" for t in _CHARGED)
"""Per-user quotas (PostgreSQL): what each user's role writes is counted (bytes of the rows,
and steps) as it is written, and a write past the quota fails whole with a message saying
so. No quota is set by default (NULL); ``StoreRoles.set_quota`` and the hub's hook set it.
What the owner writes or deletes is not counted (a user's own deletions give it back)."""


_ROLE_KEY = """
    CREATE TABLE themisto_role_key (
        id BOOLEAN PRIMARY KEY DEFAULT TRUE CHECK (id),
        key TEXT NOT NULL
    );
    INSERT INTO themisto_role_key (key)
    VALUES (replace(gen_random_uuid()::text || gen_random_uuid()::text, '-', ''));
"""
"""The key of users' role names (``roles.role_name``): 244 random bits (``gen_random_uuid``
draws from the server's strong random source), granted to no user's role, so that no one
but the owner can tell from ``pg_roles`` whose role is whose."""


MIGRATIONS: tuple[Migration, ...] = (
    Migration(
        "trajectories, their steps (full JSON), events, and ingestion cursors",
        _TRAJECTORIES + """
        CREATE TABLE steps (
            trajectory_id TEXT NOT NULL REFERENCES trajectories (id) ON DELETE CASCADE,
            step INTEGER NOT NULL,
            data TEXT NOT NULL,
            PRIMARY KEY (trajectory_id, step)
        ) WITHOUT ROWID;
        CREATE TABLE events (
            trajectory_id TEXT NOT NULL REFERENCES trajectories (id) ON DELETE CASCADE,
            at TEXT NOT NULL,
            kind TEXT NOT NULL,
            detail TEXT
        );
        CREATE INDEX events_trajectory ON events (trajectory_id);
        CREATE TABLE journal_cursors (
            journal TEXT PRIMARY KEY,
            offset INTEGER NOT NULL
        );
        """,
        # PostgreSQL: no WITHOUT ROWID (a primary key is an index anyway); events get an
        # explicit sequence for their order; "offset" is a reserved word there.
        _TRAJECTORIES + """
        CREATE TABLE steps (
            trajectory_id TEXT NOT NULL REFERENCES trajectories (id) ON DELETE CASCADE,
            step INTEGER NOT NULL,
            data TEXT NOT NULL,
            PRIMARY KEY (trajectory_id, step)
        );
        CREATE TABLE events (
            seq BIGSERIAL PRIMARY KEY,
            trajectory_id TEXT NOT NULL REFERENCES trajectories (id) ON DELETE CASCADE,
            at TEXT NOT NULL,
            kind TEXT NOT NULL,
            detail TEXT
        );
        CREATE INDEX events_trajectory ON events (trajectory_id);
        CREATE TABLE journal_cursors (
            journal TEXT PRIMARY KEY,
            "offset" BIGINT NOT NULL
        );
        """),
    Migration(
        "predictions, each tied to the step it predicts",
        """
        CREATE TABLE predictions (
            id TEXT PRIMARY KEY,
            trajectory_id TEXT NOT NULL REFERENCES trajectories (id) ON DELETE CASCADE,
            target_step INTEGER NOT NULL,
            task TEXT NOT NULL,
            scored INTEGER NOT NULL DEFAULT 0,
            data TEXT NOT NULL
        );
        CREATE INDEX predictions_target ON predictions (trajectory_id, target_step);
        """,
        """
        CREATE TABLE predictions (
            id TEXT PRIMARY KEY,
            seq BIGSERIAL,
            trajectory_id TEXT NOT NULL REFERENCES trajectories (id) ON DELETE CASCADE,
            target_step INTEGER NOT NULL,
            task TEXT NOT NULL,
            scored INTEGER NOT NULL DEFAULT 0,
            data TEXT NOT NULL
        );
        CREATE INDEX predictions_target ON predictions (trajectory_id, target_step, seq);
        """),
    Migration(
        "ownership: the user who ran each trajectory ('' for trajectories recorded before)",
        """
        ALTER TABLE trajectories ADD COLUMN user_name TEXT NOT NULL DEFAULT '';
        CREATE INDEX trajectories_user ON trajectories (user_name, started_at);
        """),
    Migration(
        "PostgreSQL: steps compressed with lz4 (2-3x the insert rate of the default pglz for "
        "2.5 kB steps, measured); nothing to do on SQLite, or on a server without lz4",
        "",
        """
        DO $$
        BEGIN
            IF current_setting('server_version_num')::int >= 140000 THEN
                EXECUTE 'ALTER TABLE steps ALTER COLUMN data SET COMPRESSION lz4';
            END IF;
        EXCEPTION WHEN feature_not_supported OR invalid_parameter_value THEN
            NULL;  -- built without lz4: keep pglz
        END
        $$
        """),
    Migration(
        "PostgreSQL: row-level security, so that a database role per hub user (store/roles.py "
        "creates them) reads and writes only its user's rows, and a reader's role reads "
        "all. The owner that created the tables is not subject to it: a store used through "
        "one role works as before. Nothing to do on SQLite (one user's file)",
        "",
        _ROW_SECURITY),
    Migration(
        "a class at a glance: each trajectory's errors, active time and last activity kept "
        "as steps arrive, prediction score totals per predictor, and each user's consent",
        _class("json_extract(data, '$.{}')", "REAL"),
        _class("(data::jsonb->>'{}')", "DOUBLE PRECISION") + _CLASS_SECURITY),
    Migration(
        "PostgreSQL: per-user storage quotas (bytes and steps) on what users' roles write; "
        "nothing to do on SQLite (one user's file)",
        "",
        _QUOTAS),
    Migration(
        "PostgreSQL: what the hub's Themisto service writes for a user is charged to that "
        "user's quota (the service connects as the owner); nothing to do on SQLite",
        "",
        _charge_function("CREATE OR REPLACE FUNCTION", _ROLE_OR_CALLER)),
    Migration(
        "PostgreSQL: a secret key for users' role names, readable by the owner only (an "
        "unkeyed hash of a name let anyone test who is enrolled); nothing to do on SQLite",
        "",
        _ROLE_KEY),
)

SCHEMA_VERSION = len(MIGRATIONS)

COLUMNS = ("id, kernel_id, notebook_path, started_at, ended_at, end_reason, restart_of, "
           "steps, source, user_name")
"""The trajectory columns in the order of ``Trajectory``'s fields."""


def where_clause(where: TrajectoryFilter | None, mark: str) -> tuple[str, list[Any]]:
    """`` WHERE ...`` for a trajectory filter, with ``mark`` as the engine's placeholder."""
    where = where or TrajectoryFilter()
    clauses: list[str] = []
    params: list[Any] = []
    for column, op, value in (("notebook_path", "=", where.notebook_path),
                              ("kernel_id", "=", where.kernel_id),
                              ("user_name", "=", where.user),
                              ("started_at", ">=", where.started_after),
                              ("started_at", "<", where.started_before)):
        if isinstance(value, tuple):
            clauses.append(f"{column} IN ({', '.join([mark] * len(value))})")
            params.extend(value)
        elif value is not None:
            clauses.append(f"{column} {op} {mark}")
            params.append(value)
    return (" WHERE " + " AND ".join(clauses) if clauses else ""), params


def predictions_clause(trajectory_id: str, since_step: int, target_step: int | None,
                       until_step: int | None, unscored: bool,
                       mark: str) -> tuple[str, list[Any]]:
    """`` WHERE ...`` selecting a trajectory's predictions, as ``predictions()`` asks."""
    clauses = [f"trajectory_id = {mark}", f"target_step > {mark}"]
    params: list[Any] = [trajectory_id, since_step]
    for op, value in (("=", target_step), ("<=", until_step)):
        if value is not None:
            clauses.append(f"target_step {op} {mark}")
            params.append(value)
    if unscored:
        clauses.append("scored = 0")
    return " WHERE " + " AND ".join(clauses), params


def move_statement(old: str, new: str, user: str, mark: str) -> tuple[str, list[Any]]:
    """``UPDATE`` giving a renamed notebook's (or folder's) trajectories the new path.

    The folder test compares a prefix, not ``LIKE``: ``%`` and ``_`` are ordinary
    characters in file names.
    """
    folder = old.rstrip("/") + "/"
    sql = (f"UPDATE trajectories SET notebook_path = CASE WHEN notebook_path = {mark} "
           f"THEN {mark} ELSE {mark} || substr(notebook_path, {mark}) END "
           f"WHERE user_name = {mark} AND (notebook_path = {mark} "
           f"OR substr(notebook_path, 1, {mark}) = {mark})")
    params: list[Any] = [old, new, new.rstrip("/"), len(folder), user, old, len(folder), folder]
    return sql, params
