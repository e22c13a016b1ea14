"""What the server and the model's process say to each other (``supervisor.py`` and
``process.py``): the engine's settings, the message tags, the errors that cross.

Messages are tuples, tag first, pickled over a socket pair the server makes and the model
process inherits (``multiprocessing.connection``): no port, no path anyone else can reach,
and both ends run this package's code, so pickling trusts no one new.
"""

from __future__ import annotations

import signal
from dataclasses import dataclass
from pathlib import Path

# The errors that cross are in the one exception tree; re-exported under their old home.
from themisto_ext.errors import (
    LocalModelError,
    LocalModelOff,
    ModelProcessDied,
    ModelProcessHung,
    PredictionSuperseded,
    ProviderError,
    ProviderRequestError,
)

__all__ = ["LocalModelError", "LocalModelOff", "ModelProcessDied", "ModelProcessHung"]


@dataclass(frozen=True)
class EngineConfig:
    """The settings the model process builds its ``Engine`` from."""

    model_path: str | None
    n_threads: int
    n_threads_decode: int
    n_ctx: int
    max_tokens: int | None
    max_sessions: int
    cache_bytes: int
    reuse_prefix: bool
    prefix_dir: str | None
    safe: bool = False
    """Load the model without llama.cpp's extra buffer types (AMX tiles, repacked
    weights): slower, but runs on a CPU that advertises instructions it faults on."""
    adapter_path: str | None = None
    """A llama.cpp LoRA adapter GGUF applied over the model (``themisto finetune``)."""
    vocab_only: bool = False
    """Only the tokenizer and chat template: a process that counts tokens (for an API model
    served from this GGUF), never generates."""


def adapted(name: str, adapter: str | Path | None) -> str:
    """A model's (or predictor's) name with the LoRA adapter it applies: ``M.gguf+A.gguf``."""
    return name if adapter is None else f"{name}+{Path(adapter).name}"


# server -> model process
START = "start"        # (START, EngineConfig)
JOB = "job"            # (JOB, id, call "complete" | "warm", Prompt, session, called, kind,
#                         urgent, stream)
GIVE_UP = "give-up"    # (GIVE_UP, id)
COUNT = "count"        # (COUNT, id, "text" | "prompt", str | Prompt)
PING = "ping"          # (PING, n)
CLOSE = "close"        # (CLOSE,)

# model process -> server
READY = "ready"        # (READY, info: dict)
FATAL = "fatal"        # (FATAL, message): it cannot start; it exits
ACK = "ack"            # (ACK, id, queued)
STARTED = "started"    # (STARTED, id, queued)
PROGRESS = "progress"  # (PROGRESS,): the running job evaluated something
TEXT = "text"          # (TEXT, id, text so far)
CPU = "cpu"            # (CPU, id, seconds)
DONE = "done"          # (DONE, id, Run, warm sessions, queued)
FAILED = "failed"      # (FAILED, id, error type, message, warm sessions, queued)
COUNTED = "counted"    # (COUNTED, id, tokens) or (COUNTED, id, None, type, message)
PONG = "pong"          # (PONG, n)
LOG = "log"            # (LOG, level, logger name, message)

_ERRORS: dict[str, type[ProviderError]] = {
    cls.__name__: cls for cls in (PredictionSuperseded, ProviderRequestError, LocalModelError,
                                  ProviderError)
}


def error_of(type_name: str, message: str) -> ProviderError:
    """The exception a model process reported, as the server raises it."""
    return _ERRORS.get(type_name, LocalModelError)(message)


def error_name(exc: BaseException) -> str:
    """How ``exc`` crosses to the server: its class if the server knows it."""
    for cls in type(exc).__mro__:
        if cls.__name__ in _ERRORS:
            return cls.__name__
    return LocalModelError.__name__


def describe_exit(returncode: int | None) -> str:
    """``signal 11 (SIGSEGV)`` or ``exit code 3``, as a process ended."""
    if returncode is None:
        return "still running"
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            return f"signal {-returncode}"
        return f"signal {-returncode} ({name})"
    return f"exit code {returncode}"
