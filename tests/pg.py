"""A throw-away PostgreSQL cluster for the tests and benchmarks: Debian's binaries, a temp
directory, 127.0.0.1 on a free port, password authentication, stopped at the end.

PostgreSQL refuses to run as root (CI runs as root): then every server command runs as the
``postgres`` system user (``runuser``), which owns the temp directory.
"""

from __future__ import annotations

import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import uuid
from pathlib import Path

PASSWORD = "themisto-test-pw"
"""The superuser's password: given to clients through PGPASSWORD, never in a URL."""


def pg_bin() -> Path:
    found = shutil.which("pg_ctl")
    if found:
        return Path(os.path.realpath(found)).parent
    versions = sorted(Path("/usr/lib/postgresql").glob("*/bin/pg_ctl"),
                      key=lambda p: int(p.parent.parent.name) if p.parent.parent.name.isdigit()
                      else 0)
    if not versions:
        raise RuntimeError("PostgreSQL server binaries not found: apt-get install postgresql "
                           "(scripts/test.sh does)")
    return versions[-1].parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Cluster:
    def __init__(self, *, fsync: bool = False, max_connections: int = 300) -> None:
        self.bin = pg_bin()
        self.max_connections = max_connections
        self.root = Path(tempfile.mkdtemp(prefix="themisto-pg-"))
        self.data = self.root / "data"
        self.port = free_port()
        self.fsync = fsync
        self._as: list[str] = []
        if os.geteuid() == 0:
            account = pwd.getpwnam("postgres")
            os.chown(self.root, account.pw_uid, account.pw_gid)
            self._as = ["runuser", "-u", "postgres", "--"]

    def _run(self, *args: str) -> None:
        done = subprocess.run([*self._as, *args], capture_output=True, text=True, timeout=120,
                              cwd=self.root)
        if done.returncode:
            raise RuntimeError(f"{' '.join(args[:2])} failed: {done.stdout}{done.stderr}")

    def start(self) -> Cluster:
        pwfile = self.root / "pw"
        pwfile.write_text(PASSWORD + "\n")
        if self._as:
            shutil.chown(pwfile, "postgres")
        self._run(str(self.bin / "initdb"), "-D", str(self.data), "-U", "postgres",
                  "-E", "UTF8", "--locale=C", "--auth-local=trust",
                  "--auth-host=scram-sha-256", f"--pwfile={pwfile}", "--no-sync")
        options = (f"-c listen_addresses=127.0.0.1 -p {self.port} -k {self.root} "
                   f"-c max_connections={self.max_connections} -c shared_buffers=128MB")
        if not self.fsync:
            options += " -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
        self._run(str(self.bin / "pg_ctl"), "-D", str(self.data), "-l",
                  str(self.root / "log"), "-o", options, "-w", "-t", "60", "start")
        return self

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{database}"

    def create_database(self, name: str | None = None) -> str:
        """A new empty database; returns its URL (no password: PGPASSWORD holds it)."""
        import psycopg

        name = name or f"t_{uuid.uuid4().hex[:12]}"
        with psycopg.connect(self.url(), password=PASSWORD, autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')  # type: ignore[arg-type]
        return self.url(name)

    def create_owned_database(self, password: str) -> str:
        """A new empty database owned by a new role of its own that may create roles (not
        a superuser), as docs/deploying.md's set-up makes it; returns its URL (no password)."""
        import psycopg

        name = f"o_{uuid.uuid4().hex[:12]}"
        with psycopg.connect(self.url(), password=PASSWORD, autocommit=True) as conn:
            conn.execute(f"CREATE ROLE {name} LOGIN CREATEROLE "  # type: ignore[arg-type]
                         f"PASSWORD '{password}'")
            conn.execute(f'CREATE DATABASE "{name}" OWNER {name}')  # type: ignore[arg-type]
        return f"postgresql://{name}@127.0.0.1:{self.port}/{name}"

    def stop(self) -> None:
        try:
            self._run(str(self.bin / "pg_ctl"), "-D", str(self.data), "-m", "immediate",
                      "-w", "stop")
        finally:
            shutil.rmtree(self.root, ignore_errors=True)
