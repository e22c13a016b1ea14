"""The KV state of what every prompt of a context begins with, kept on disk.

A prompt's fixed part (system text and demonstrations, ~800 tokens) depends on the context
only, yet a new session, or the first prediction after the server starts, read it from
scratch: 3.5-4 s of this machine's 2 cores. Reading it once per model and saving the KV
state lets every later session, and later servers, load it in milliseconds.

A file is named by a hash of the model file, the llama.cpp version and the tokens, so a
changed prompt, model or library never loads a state made for another; llama.cpp checks
the file's sizes too and refuses a mismatch, which is then read afresh.
"""

from __future__ import annotations

import ctypes
import hashlib
import logging
import os
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from llama_cpp import Llama

log = logging.getLogger(__name__)

KEPT_FILES = 8
"""Files kept: one per context and model in use; older prompts' files are removed."""

MIN_TOKENS = 128
"""Shorter fixed parts are read faster than a file is written."""


class FixedPrefixes:
    """Saved KV states of fixed prompt parts in ``directory``, by model and tokens."""

    def __init__(self, directory: Path, model: Path, adapter: Path | None = None) -> None:
        import llama_cpp

        self.directory = directory
        self._unsaved: set[Path] = set()
        # an adapter changes every layer's keys and values: its states are its own
        files = [model] if adapter is None else [model, adapter]
        self._identity = "\0".join(
            f"{f.resolve()}\0{f.stat().st_size}\0{f.stat().st_mtime_ns}" for f in files
        ).encode() + f"\0{llama_cpp.__version__}".encode()

    def path(self, tokens: list[int]) -> Path:
        digest = hashlib.sha256(self._identity)
        digest.update(b"".join(t.to_bytes(4, "little", signed=True) for t in tokens))
        return self.directory / f"{digest.hexdigest()[:32]}.kv"

    def load(self, llm: Llama, tokens: list[int]) -> bool:
        """Replace the context with the saved state of ``tokens``, if there is one."""
        from llama_cpp import llama_cpp

        path = self.path(tokens)
        if not path.is_file():
            return False
        held = (llama_cpp.llama_token * llm.n_ctx())()
        count = ctypes.c_size_t(0)
        if not llama_cpp.llama_state_load_file(llm.ctx, str(path).encode(), held,
                                               llm.n_ctx(), ctypes.byref(count)) \
                or list(held[:count.value]) != tokens:
            log.warning("themisto: ignoring the unreadable model state %s", path)
            llm.reset()  # what llama.cpp may have loaded is overwritten from position 0
            return False
        llm.input_ids[:len(tokens)] = tokens
        llm.n_tokens = len(tokens)
        os.utime(path)  # in use: pruned last
        return True

    def save(self, llm: Llama, tokens: list[int]) -> None:
        """Save the context, which holds exactly ``tokens``; a failure only costs a re-read
        next time."""
        from llama_cpp import llama_cpp

        path = self.path(tokens)
        temporary = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            array = (llama_cpp.llama_token * len(tokens))(*tokens)
            if not llama_cpp.llama_state_save_file(llm.ctx, str(temporary).encode(), array,
                                                   len(tokens)):
                raise OSError("llama.cpp could not write it")
            os.replace(temporary, path)  # other servers never see half a file
            self._prune()
        except OSError as exc:
            if path not in self._unsaved:  # once: every new session would say it again
                self._unsaved.add(path)
                log.warning("themisto: could not save the model state %s (new sessions read "
                            "the prompts' fixed part again): %s", path, exc)
            temporary.unlink(missing_ok=True)

    def _prune(self) -> None:
        files = sorted(self.directory.glob("*.kv"), key=_mtime, reverse=True)
        for old in files[KEPT_FILES:]:
            old.unlink(missing_ok=True)


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:  # removed meanwhile by another server
        return 0.0
