"""The package's version, for whoever needs it without importing the package's ``__init__``
(the server's API: importing the package from inside it is a cycle)."""

from __future__ import annotations

try:
    from themisto_ext._version import __version__
except ImportError:  # running from a source tree that was never built
    __version__ = "0.0.0+unknown"

__all__ = ["__version__"]
