"""Store locations: ``sqlite:///path``, ``postgresql://user@host:port/db``, the hub's Themisto
service (``http://host:port/``, ``https://...``), or a plain path.

One parser for the server's ``store_url`` and the CLI's ``--store``. A plain path (no
scheme) stays a SQLite file, as before URLs existed. A password written into a
PostgreSQL URL is accepted (libpq reads it) but never shown: ``StoreURL.display`` is the
form for logs and error messages; the documented way is ``PGPASSWORD`` or ``~/.pgpass``.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from urllib.parse import unquote, urlsplit, urlunsplit

from themisto_ext.errors import StoreError

SQLITE = "sqlite"
POSTGRESQL = "postgresql"
SERVICE = "service"
"""The hub's Themisto service (``hub/service.py``): the server holds no database login."""
_POSTGRES_SCHEMES = ("postgresql", "postgres")


@dataclass(frozen=True)
class StoreURL:
    engine: str
    """``sqlite`` or ``postgresql``."""
    target: str
    """The SQLite file path, or the libpq connection URL (password included, if given)."""
    password: str | None = field(default=None, repr=False, compare=False)
    """A PostgreSQL password given apart from the URL (``with_password``): a hub user's
    role password, which the server takes out of its environment so that no kernel
    inherits it; for the service, the token the server presents."""

    def with_password(self, password: str | None) -> StoreURL:
        return replace(self, password=password) if password else self

    @property
    def path(self) -> Path:
        """The SQLite file (only for ``engine == "sqlite"``)."""
        if self.engine != SQLITE:
            raise StoreError(f"{self.display} is not a SQLite store")
        return Path(self.target)

    @property
    def display(self) -> str:
        """The location as it may appear in logs: never a password."""
        if self.engine == SQLITE:
            return f"sqlite:///{self.target}"  # four slashes for an absolute path
        parts = urlsplit(self.target)
        if self.engine == SERVICE:  # no user, query or fragment: tokens may hide there
            return urlunsplit((parts.scheme, parts.netloc.rpartition("@")[2], parts.path,
                               "", ""))
        host = parts.hostname or ""
        if ":" in host:
            host = f"[{host}]"
        netloc = (f"{parts.username}@" if parts.username else "") + host
        if parts.port:
            netloc += f":{parts.port}"
        return urlunsplit((parts.scheme, netloc, parts.path, "", ""))

    def __str__(self) -> str:
        return self.display


def parse_store_url(location: str | Path) -> StoreURL:
    """``sqlite:///relative``, ``sqlite:////absolute``, a plain path, or a PostgreSQL URL."""
    text = str(location).strip()
    if not text:
        raise StoreError("empty store location")
    scheme, sep, rest = text.partition("://")
    if not sep:
        return StoreURL(SQLITE, text)
    scheme = scheme.lower()
    if scheme == SQLITE:
        # SQLAlchemy's convention: three slashes then the path, four for an absolute one.
        if not rest.startswith("/"):
            raise StoreError(f"bad SQLite URL {text!r}: write sqlite:///relative/path or "
                             "sqlite:////absolute/path")
        path = unquote(rest[1:])
        if not path:
            raise StoreError(f"bad SQLite URL {text!r}: no file path")
        return StoreURL(SQLITE, path)
    if scheme in _POSTGRES_SCHEMES:
        parts = urlsplit(text)
        try:
            parts.port  # noqa: B018  # raises on a port that is not a number
        except ValueError:
            raise StoreError(f"bad PostgreSQL URL for host {parts.hostname!r}: the port is "
                             "not a number") from None
        if not parts.path.strip("/"):
            raise StoreError(f"PostgreSQL URL {StoreURL(POSTGRESQL, text).display!r} names "
                             "no database: postgresql://user@host:port/DATABASE")
        return StoreURL(POSTGRESQL, text)
    if scheme in ("http", "https"):
        parts = urlsplit(text)
        try:
            parts.port  # noqa: B018
        except ValueError:
            raise StoreError("bad Themisto service URL: the port is not a number") from None
        if not parts.hostname:
            raise StoreError("bad Themisto service URL: write http(s)://HOST:PORT/PATH")
        return StoreURL(SERVICE, text)
    raise StoreError(f"unknown store URL scheme {scheme!r}: use sqlite:///PATH, "
                     "postgresql://USER@HOST:PORT/DATABASE or the hub's Themisto service, "
                     "http(s)://HOST:PORT/")
