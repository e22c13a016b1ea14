"""One exception tree for the whole package, rooted at ``ThemistoError``, in one module
(as httpx's ``_exceptions.py``)::

    ThemistoError
    ├── FormatError (ValueError) .......... input not in the format it claims
    │   └── TrajectoryFormatError ......... (trajectory/: it carries the problems found)
    ├── NotFound (LookupError)
    ├── StoreError
    │   ├── StoreUnavailable
    │   ├── StoreForbidden
    │   ├── QuotaReached
    │   └── ServiceBusy
    ├── JournalUnavailable
    ├── ProviderError ..................... a model call failed
    │   ├── ProviderConnectionError, ProviderTimeoutError, ProviderAuthError,
    │   │   ProviderRateLimitError, ProviderServerError, ProviderRequestError,
    │   │   ProviderResponseError
    │   ├── PredictionSuperseded
    │   └── LocalModelError
    │       └── ModelProcessDied, ModelProcessHung, LocalModelOff
    ├── PromptTooLong (ValueError)
    ├── PredictorSpecError (ValueError)
    ├── ReplayError (RuntimeError)
    ├── SampleInputError (ValueError)
    ├── SplitSpecError (ValueError)
    └── OutputRefused (ValueError)

Each part raises the branch that names what went wrong; callers that only need to know
"themisto refused or failed" catch the root. The REST API maps these to HTTP statuses in
one place (``server/api/base.py``), the CLI prints them as one line. The second base of a
branch (``ValueError``, ``RuntimeError``) is what it was before it joined the tree, so that
callers catching it still do. The modules that raise them re-export them under their old
names. Not here, on purpose: ``kernel/deadline.py``'s ``DeadlineExceeded`` (a
``BaseException``, so that user code's ``except Exception`` cannot swallow it) and private
control-flow signals that never leave their module.

A prediction's stored error names the class (``error.type``) and the branch it is on as
a closed code (``error.code``, ``prediction.schema.json``; ``prediction/run.py``
``prediction_error``): the front end matches the code, never a class name.
"""

from __future__ import annotations


class ThemistoError(Exception):
    """Root of every error themisto raises on purpose; the message is safe to show."""


# ---------------------------------------------------------------- input and lookup


class FormatError(ThemistoError, ValueError):
    """Input that is not in the format it claims (a trajectory file, a benchmark file)."""


class NotFound(ThemistoError, LookupError):
    """What a request names does not exist here (a kernel this server does not run)."""


class PredictorSpecError(ThemistoError, ValueError):
    """A predictor name that is none of the documented forms."""


class SampleInputError(ThemistoError, ValueError):
    """A trajectory file the benchmark cannot be built from."""


class SplitSpecError(ThemistoError, ValueError):
    """A ``--split`` that is not NAME=FRACTION,... with fractions summing to 1."""


class OutputRefused(ThemistoError, ValueError):
    """An output path the command will not write (printed as one line, exit status 1)."""


class ReplayError(ThemistoError, RuntimeError):
    """The notebook could not be read or run (a message for the command line)."""


# ---------------------------------------------------------------- storage


class StoreError(ThemistoError):
    """The trajectory store cannot be opened or used (a message a person can act on)."""


class StoreUnavailable(StoreError):
    """The store exists but cannot be written right now (read-only, disk full, locked)."""


class QuotaReached(StoreError):
    """A user's storage quota is reached: their write was refused whole (others write on)."""


class ServiceBusy(StoreError):
    """The hub's Themisto service runs as many of a user's calls at once as it allows
    (429 there; a server's store retries)."""


class StoreForbidden(StoreError):
    """The hub's Themisto service refused the caller this call: another user's data, or
    a call only the database's owner may make."""


class JournalUnavailable(ThemistoError):
    """The journal directory (kernels' journals, their switches) cannot be written now."""


# ---------------------------------------------------------------- prediction


class PromptTooLong(ThemistoError, ValueError):
    """Even the fixed instructions and the target do not fit the model's window."""


class ProviderError(ThemistoError):
    """A model call failed; the message is safe to show (never contains an API key)."""

    retryable = False


class ProviderConnectionError(ProviderError):
    """The endpoint could not be reached (refused, DNS, TLS)."""

    retryable = True


class ProviderTimeoutError(ProviderError):
    """No complete answer within the timeout."""

    retryable = True


class ProviderAuthError(ProviderError):
    """401/403: the key is missing, wrong or not allowed to use the model."""


class ProviderRateLimitError(ProviderError):
    """429 after the retries ran out."""

    retryable = True


class ProviderServerError(ProviderError):
    """5xx after the retries ran out."""

    retryable = True


class ProviderRequestError(ProviderError):
    """Another 4xx: the request itself was refused (unknown model, bad parameters)."""


class ProviderResponseError(ProviderError):
    """The answer could not be understood (malformed JSON, missing fields)."""


class PredictionSuperseded(ProviderError):
    """A newer request of the same session replaced this one before it ran to the end,
    or the next cell started before the prediction was made."""


class LocalModelError(ProviderError):
    """The local model or llama.cpp is missing, or the model could not be loaded or run."""


class ModelServerError(LocalModelError):
    """An error llama.cpp's server reported for one request (``kind``: its error type)."""

    def __init__(self, message: str, kind: str = "") -> None:
        super().__init__(message)
        self.kind = kind


class ModelProcessDied(LocalModelError):
    """The model's process ended (a signal, an exit) while it worked on this request."""


class ModelProcessHung(LocalModelError):
    """The model's process stopped answering: it was killed and is restarted."""


class LocalModelOff(LocalModelError):
    """The local model is switched off for this server (it crashed too often)."""
