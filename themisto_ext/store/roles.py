"""A PostgreSQL role per hub user, so that no user's server holds the database's keys.

The database's owner (the role that created the tables; only the hub holds its
password) makes, for each user, a login role whose rows the schema's row-level security
(``schema._ROW_SECURITY``) limits to that user's, and which may read every user's rows
only when the user holds the read-all scope. Each call to ``ensure`` gives the role a new
random password: a user's server is started with it, and one from an earlier start no
longer opens anything. Whoever runs code on a user's server can find that password (the
server needs it), and with it reads and writes that user's own rows and nothing else.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from typing import Any

import psycopg
from psycopg import sql

from themisto_ext.errors import StoreError
from themisto_ext.store.url import POSTGRESQL, StoreURL

GROUP = "themisto_users"
"""The role every user's role is a member of: the table privileges are granted to it."""
TABLES = ("trajectories", "steps", "events", "predictions", "journal_cursors", "score_totals",
          "user_settings")
READ_ONLY = ("themisto_schema", "themisto_roles", "themisto_quota", "themisto_usage")
CONNECTION_LIMIT = 16
"""Connections one user's role may hold (a server's pool holds at most 4): one user
cannot exhaust the database's connections for the class."""
SERIALISE = "LOCK TABLE themisto_roles IN SHARE ROW EXCLUSIVE MODE"
"""Role changes one at a time (grants race otherwise), under a lock no user's role can take
or block: this mode needs more than the SELECT users hold on the table, and conflicts with
none of the ACCESS SHARE locks their reads take. (An advisory lock would not do: any role
may take any advisory lock and hold it, and every spawn would wait on it.)"""


def role_name(user: str, key: str) -> str:
    """``themisto_u_`` and 20 hex digits of the name's HMAC-SHA-256 under the database's
    role key (``schema._ROLE_KEY``): distinct for every user, and no user's name for others
    to read or test (every role can list the database's roles in ``pg_roles``: named after
    users, or after an unkeyed hash of their names, they would tell every student who is
    in the class)."""
    digest = hmac.new(key.encode(), user.encode(), hashlib.sha256).hexdigest()
    return f"themisto_u_{digest[:20]}"


class StoreRoles:
    """Creates and updates users' roles, connected as the database's owner."""

    def __init__(self, owner: StoreURL) -> None:
        if owner.engine != POSTGRESQL:
            raise StoreError("per-user roles need a PostgreSQL store")
        self.owner = owner
        from themisto_ext.store.postgres import PostgresStore

        PostgresStore(owner, pool_size=1).close()  # creates or upgrades the schema

    def ensure(self, user: str, *, read_all: bool = False) -> tuple[StoreURL, str]:
        """The user's role exists with a new password, may read every user's rows iff
        ``read_all``; returns the store URL naming that role, and its password."""
        password = secrets.token_urlsafe(32)
        try:
            with self._connect() as conn, conn.transaction():
                conn.execute(SERIALISE)
                self._grant_group(conn)
                role = role_name(user, _key(conn))
                self._rename_earlier(conn, user, role)
                exists = conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s",
                                      (role,)).fetchone()
                # CREATE ROLE's defaults: no superuser, createdb, createrole or
                # bypassrls (saying so in ALTER would need a superuser)
                verb = sql.SQL("ALTER" if exists else "CREATE")
                conn.execute(sql.SQL(
                    "{} ROLE {} LOGIN CONNECTION LIMIT {} PASSWORD {}").format(
                        verb, sql.Identifier(role), sql.Literal(CONNECTION_LIMIT),
                        sql.Literal(password)))
                conn.execute(sql.SQL("GRANT {} TO {}").format(sql.Identifier(GROUP),
                                                              sql.Identifier(role)))
                conn.execute(
                    "INSERT INTO themisto_roles (role_name, user_name, read_all) "
                    "VALUES (%s, %s, %s) ON CONFLICT (role_name) DO UPDATE "
                    "SET user_name = excluded.user_name, read_all = excluded.read_all",
                    (role, user, read_all))
        except psycopg.Error as exc:
            raise StoreError(f"cannot set up {user!r}'s role in {self.owner.display}: "
                             f"{str(exc).strip().splitlines()[0]}") from None
        return self._as(role), password

    def set_quota(self, max_bytes: int | None, max_steps: int | None) -> None:
        """Every user's quota: bytes of rows and steps their role may store (None: no
        limit). A write past it fails whole, saying so; the user's server reports it as
        its kernels' recording reason, and their journals keep what was not stored."""
        try:
            with self._connect() as conn:
                conn.execute("UPDATE themisto_quota SET max_bytes = %s, max_steps = %s",
                             (max_bytes, max_steps))
        except psycopg.Error as exc:
            raise StoreError(f"cannot set the quota: {str(exc).strip().splitlines()[0]}") \
                from None

    def usage(self, user: str) -> tuple[int, int]:
        """Bytes and steps ``user``'s role has stored, as its quota counts them."""
        with self._connect() as conn:
            row = conn.execute("SELECT bytes, steps FROM themisto_usage WHERE user_name = %s",
                               (user,)).fetchone()
        return (int(row[0]), int(row[1])) if row else (0, 0)

    def revoke(self, user: str) -> None:
        """The user's role may no longer log in (their rows stay theirs)."""
        with self._connect() as conn:
            for role in _roles_of(conn, user):
                conn.execute(sql.SQL("ALTER ROLE {} NOLOGIN").format(sql.Identifier(role)))

    def role_of(self, user: str) -> str | None:
        """The name of ``user``'s role, None if they have none."""
        with self._connect() as conn:
            return next(iter(_roles_of(conn, user)), None)

    @staticmethod
    def _rename_earlier(conn: psycopg.Connection[Any], user: str, role: str) -> None:
        """A role made before the key (named by the unkeyed hash) takes its keyed name, its
        rows staying its user's: the schema's policies look the name up in
        ``themisto_roles``, renamed with it."""
        for earlier in _roles_of(conn, user):
            if earlier == role:
                continue
            if conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s",
                            (role,)).fetchone() is None:
                conn.execute(sql.SQL("ALTER ROLE {} RENAME TO {}").format(
                    sql.Identifier(earlier), sql.Identifier(role)))
            conn.execute("UPDATE themisto_roles SET role_name = %s WHERE role_name = %s",
                         (role, earlier))

    def _connect(self) -> psycopg.Connection[Any]:
        options: dict[str, Any] = {"autocommit": True, "connect_timeout": 10}
        if self.owner.password is not None:
            options["password"] = self.owner.password
        return psycopg.connect(self.owner.target, **options)

    @staticmethod
    def _grant_group(conn: psycopg.Connection[Any]) -> None:
        """The group role and its privileges (again each time: a migration may have added
        a table or sequence since)."""
        if conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (GROUP,)).fetchone() is None:
            conn.execute(sql.SQL("CREATE ROLE {} NOLOGIN").format(sql.Identifier(GROUP)))
        group = sql.Identifier(GROUP)
        tables = sql.SQL(", ").join(sql.Identifier(t) for t in TABLES)
        conn.execute(sql.SQL("GRANT SELECT, INSERT, UPDATE, DELETE ON {} TO {}").format(
            tables, group))
        conn.execute(sql.SQL("GRANT SELECT ON {} TO {}").format(
            sql.SQL(", ").join(sql.Identifier(t) for t in READ_ONLY), group))
        conn.execute(sql.SQL("GRANT USAGE ON ALL SEQUENCES IN SCHEMA {} TO {}").format(
            sql.Identifier(_schema(conn)), group))

    def _as(self, role: str) -> StoreURL:
        from urllib.parse import quote, urlsplit, urlunsplit

        parts = urlsplit(self.owner.target)
        host = parts.hostname or ""
        netloc = f"{quote(role)}@{f'[{host}]' if ':' in host else host}"
        if parts.port:
            netloc += f":{parts.port}"
        return StoreURL(POSTGRESQL, urlunsplit((parts.scheme, netloc, parts.path,
                                                parts.query, "")))


def _key(conn: psycopg.Connection[Any]) -> str:
    row = conn.execute("SELECT key FROM themisto_role_key").fetchone()
    if row is None:
        raise StoreError("the database has no role key (schema migration 9)")
    return str(row[0])


def _roles_of(conn: psycopg.Connection[Any], user: str) -> list[str]:
    return [str(r[0]) for r in conn.execute(
        "SELECT role_name FROM themisto_roles WHERE user_name = %s ORDER BY role_name",
        (user,)).fetchall()]


def _schema(conn: psycopg.Connection[Any]) -> str:
    row = conn.execute("SELECT current_schema()").fetchone()
    return str(row[0]) if row and row[0] else "public"
