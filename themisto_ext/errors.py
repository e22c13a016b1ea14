"""One exception tree for the whole package, rooted at ``ThemistoError``.

Each part raises the branch that names what went wrong; callers that only need to know
"themisto refused or failed" catch the root. The REST API maps these to HTTP statuses in
one place (``server/api/base.py``), the CLI prints them as one line.
"""

from __future__ import annotations


class ThemistoError(Exception):
    """Root of every error themisto raises on purpose; the message is safe to show."""


class FormatError(ThemistoError, ValueError):
    """Input that is not in the format it claims (a trajectory file, a benchmark file)."""


class NotFound(ThemistoError, LookupError):
    """What a request names does not exist here (a kernel this server does not run)."""


class StoreError(ThemistoError):
    """The trajectory store cannot be opened or used (a message a person can act on)."""


class StoreUnavailable(StoreError):
    """The store exists but cannot be written right now (read-only, disk full, locked)."""


class ProviderError(ThemistoError):
    """A model call failed; the message is safe to show (never contains an API key)."""

    retryable = False


class JournalUnavailable(ThemistoError):
    """The journal directory (kernels' journals, their switches) cannot be written now."""
