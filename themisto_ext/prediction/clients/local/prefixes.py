"""The KV state of what every prompt of a context begins with, kept on disk.

A prompt's fixed part (system text and demonstrations, ~800 tokens) depends on the context
only, yet the first prediction after the model process starts would read it from scratch:
3.5-4 s of a 2-core machine for the 135M model, more for larger ones. Reading it once per
model and saving llama.cpp's slot to a file lets later processes load it in milliseconds;
within one process llama.cpp's prompt cache keeps it.

A file is named by a hash of the model file, the runtime's version and the text, so a
changed prompt, model or library never loads a state made for another. llama.cpp aborts the
whole process on a file cut short (an assertion, not an error), so a state is loaded only
if its sha256 is the one written beside it when it was saved; and a process that died
while loading one leaves a mark that makes the next one delete it rather than try again.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from pathlib import Path
from typing import TYPE_CHECKING

from themisto_ext.errors import ModelServerError

if TYPE_CHECKING:
    from themisto_ext.prediction.clients.local.runtime import Runtime

log = logging.getLogger(__name__)

KEPT_FILES = 8
"""Files kept: one per context and model in use; older prompts' files are removed."""

MIN_TOKENS = 128
"""Shorter fixed parts are read faster than a file is written."""


class FixedPrefixes:
    """Saved KV states of fixed prompt parts in ``directory``, by model and text."""

    def __init__(self, directory: Path, model: Path, adapter: Path | None,
                 runtime_version: str) -> None:
        self.directory = directory
        self._unsaved: set[Path] = set()
        self._held: set[str] = set()
        # an adapter changes every layer's keys and values: its states are its own
        files = [model] if adapter is None else [model, adapter]
        self._identity = "\0".join(
            f"{f.resolve()}\0{f.stat().st_size}\0{f.stat().st_mtime_ns}" for f in files
        ).encode() + f"\0{runtime_version}".encode()

    def path(self, text: str) -> Path:
        digest = hashlib.sha256(self._identity)
        digest.update(text.encode())
        return self.directory / f"{digest.hexdigest()[:32]}.kv"

    def held(self, text: str) -> bool:
        """Whether this process read or loaded ``text`` already (llama.cpp's prompt cache
        then has it)."""
        return text in self._held

    def load(self, runtime: Runtime, text: str, tokens: int) -> bool:
        """Replace the slot's state with the saved state of ``text``, if there is a whole
        one."""
        path = self.path(text)
        if not path.is_file():
            return False
        loading = path.with_suffix(".loading")
        reason = _damage(path)
        if loading.exists():
            reason = "a process died while loading it"
        restored = 0
        if reason is None:
            loading.touch()  # removed below, unless llama.cpp ends the process
            try:
                restored = runtime.restore_slot(path.name)
            except ModelServerError as exc:
                reason = str(exc)
            else:
                reason = None if restored >= tokens else f"{restored} tokens, not {tokens}"
            loading.unlink(missing_ok=True)
        if reason is not None:
            log.warning("themisto: ignoring the unreadable model state %s (%s)", path, reason)
            for stale in (path, _digest_file(path), loading):
                stale.unlink(missing_ok=True)
            return False
        self._held.add(text)
        os.utime(path)  # in use: pruned last
        return True

    def save(self, runtime: Runtime, text: str) -> None:
        """Save the slot, which holds ``text`` (and the token sampled after it), with its
        digest beside it; a failure only costs a re-read next time."""
        self._held.add(text)
        path = self.path(text)
        temporary = path.with_name(f"{path.stem}.{os.getpid()}.tmp")
        try:
            runtime.save_slot(temporary.name)
            digest = _digest_file(path)
            digest.write_text(json.dumps({"sha256": _sha256(temporary),
                                          "bytes": temporary.stat().st_size}))
            os.replace(temporary, path)  # other processes never see half a file
            self._prune()
        except (OSError, ModelServerError) as exc:
            if path not in self._unsaved:  # once: every new session would say it again
                self._unsaved.add(path)
                log.warning("themisto: could not save the model state %s (new processes "
                            "read the prompts' fixed part again): %s", path, exc)
            temporary.unlink(missing_ok=True)

    def _prune(self) -> None:
        files = sorted(self.directory.glob("*.kv"), key=_mtime, reverse=True)
        for old in files[KEPT_FILES:]:
            old.unlink(missing_ok=True)
            _digest_file(old).unlink(missing_ok=True)


def _digest_file(path: Path) -> Path:
    return path.with_suffix(".sha256")


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        while block := f.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


def _damage(path: Path) -> str | None:
    """Why ``path`` is not the file that was saved, or None."""
    try:
        recorded = json.loads(_digest_file(path).read_text())
        if path.stat().st_size != recorded["bytes"]:
            return f"{path.stat().st_size} bytes, saved {recorded['bytes']}"
        if _sha256(path) != recorded["sha256"]:
            return "its sha256 is not the one saved"
    except (OSError, ValueError, KeyError, TypeError):
        return "no record of what was saved"
    return None


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:  # removed meanwhile by another process
        return 0.0
