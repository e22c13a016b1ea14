"""Predictions from a small GGUF model run by llama.cpp on the CPU, offline, in a process of
its own.

The default model is Qwen2.5-Coder-0.5B-Instruct, installed by ``themisto models install``
(``models.py``). The prompts of one session grow by appending (see ``Prompt``), so most of
each prompt is already in llama.cpp's KV cache from the previous step: re-evaluating only
the new tail turns a multi-second cold prompt into a fraction of a second. llama.cpp's
prompt cache keeps the KV states of other recent sessions (up to ``cache_bytes``) so that
interleaved sessions do not wipe each other's prefix.

llama.cpp runs in the model's own process (``process.py``: the ``Engine`` and its one
``Worker``), which ``supervisor.py`` starts on first use and restarts when it dies or
hangs: native code can end that process, never the server or a kernel. It speaks the
prompts' protocol as a chat API does (``engine.py``): the same messages, answer tags, stop
sequences and cap, so ``local`` and ``openai:`` against a llama.cpp server holding the same
GGUF give the same answers. Prompts are fitted to its window (``n_ctx`` tokens) with its
own tokenizer, asked of the model process.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from themisto_ext.contract import default_home
from themisto_ext.prediction.clients.base import Completion, PredictionRequest
from themisto_ext.prediction.clients.local.engine import Run, default_model_path
from themisto_ext.prediction.clients.local.models import Model, by_file, missing_hint
from themisto_ext.prediction.clients.local.runtime import prompt_threads
from themisto_ext.prediction.clients.local.supervisor import Limits, ModelProcess
from themisto_ext.prediction.clients.local.wire import (
    EngineConfig,
    LocalModelError,
    LocalModelOff,
    ModelProcessDied,
    ModelProcessHung,
    adapted,
)
from themisto_ext.prediction.prompts import Prompt
from themisto_ext.prediction.prompts.code import Infill
from themisto_ext.prediction.prompts.window import Window

MiB = 1024 * 1024
T = TypeVar("T")


class LocalPredictor:
    """A Predictor backed by llama.cpp in the model's process; see the module docstring.

    ``n_threads`` evaluate the prompt, the bulk of the work (default: half the usable
    CPUs, see ``runtime.prompt_threads``). Generation, one token at a time, uses
    ``n_threads_decode``: for the 135M model one thread decodes as fast as two on an idle
    machine, and two collapse (~100 -> ~1 token/s, measured) as soon as another process,
    such as the kernel running the cell, keeps the cores busy; prompt threads beyond the
    CPUs left free collapse the same way.

    With ``reuse_prefix``, the KV state of the prompts' fixed part is saved in
    ``prefix_dir`` (default: ``model-states`` in Themisto's data directory) and loaded by
    new sessions and later processes (``prefixes.py``). ``limits`` sets the supervisor's
    deadlines and restart policy.
    """

    writes_cells = True
    """Named on its own (``local``), its model may complete a cell being typed; ``hybrid``
    over the embedded model does not ask it (``prediction/completion.py``)."""

    def __init__(
        self,
        model_path: Path | None = None,
        *,
        n_threads: int | None = None,
        n_threads_decode: int = 1,
        n_ctx: int = 4096,
        max_tokens: int | None = None,
        max_sessions: int = 4,
        cache_bytes: int = 512 * MiB,
        reuse_prefix: bool = True,
        prefix_dir: Path | None = None,
        limits: Limits | None = None,
        share: LocalPredictor | None = None,
        adapter: Path | None = None,
    ) -> None:
        """With ``share``, use that predictor's model process (one model per server
        whatever predictors use it) instead of starting another; the other settings are
        then that process's."""
        self.name = adapted("local" if model_path is None else f"local:{model_path}", adapter)
        self.max_tokens = max_tokens
        """A cap below the protocol's (live predictions); None: the protocol's."""
        self._path = model_path
        self._adapter = adapter
        self._process: ModelProcess = share._process.share() if share is not None \
            else ModelProcess(
            EngineConfig(
                model_path=None if model_path is None else str(model_path),
                n_threads=n_threads or prompt_threads(), n_threads_decode=n_threads_decode,
                n_ctx=n_ctx,
                max_tokens=max_tokens, max_sessions=max_sessions, cache_bytes=cache_bytes,
                reuse_prefix=reuse_prefix,
                prefix_dir=str(prefix_dir or default_home() / "model-states"),
                adapter_path=None if adapter is None else str(adapter)), limits)
        self._namespace = str(id(self))
        self.window = Window(n_ctx, self._count_prompt)
        self._waiting = 0

    @property
    def queued(self) -> int:
        """Requests waiting for the model (the running one excluded), also those waiting
        for its process to start."""
        return self._process.queued + self._waiting

    @property
    def warm_sessions(self) -> list[str]:
        """Sessions whose KV state is kept: the live one first, then least recently used."""
        return self._process.warm_sessions

    @property
    def pid(self) -> int | None:
        """The model process's id while it runs."""
        running = self._process.running
        return None if running is None else running.proc.pid

    def status(self) -> dict[str, Any]:
        """The model process as GET /predictors reports it, and which model it runs."""
        path = self._path
        if path is None:
            with contextlib.suppress(LocalModelError):
                path = default_model_path()
        size = path.stat().st_size if path is not None and path.is_file() else None
        return {"predictor": self.name, **self._process.status(),
                "model": path.name if path is not None else None, "model_bytes": size}

    def _ensure_running(self) -> None:
        if self._process.running is not None:
            return
        path = self._path or default_model_path()
        if not path.is_file():  # said at once, without starting a process
            raise LocalModelError(missing_hint(path))
        if self._adapter is not None and not self._adapter.is_file():
            raise LocalModelError(f"No LoRA adapter file at {self._adapter}")
        self._process.ensure_running()

    async def _ready(self) -> None:
        if self._process.running is None:
            await asyncio.to_thread(self._ensure_running)

    async def load(self) -> None:
        """Start the model process and load the model now rather than on first use."""
        await self._ready()

    def count_tokens(self, text: str) -> int:
        """Tokens of ``text`` for this model (starts the model process if needed)."""
        self._ensure_running()
        return self._process.count("text", text)

    def _count_prompt(self, prompt: Prompt) -> int:
        self._ensure_running()
        return self._process.count("prompt", prompt)

    async def _run(self, call: str, prompt: Prompt | Infill, session: str | None,
                   kind: tuple[str, str] | None, urgent: bool = False,
                   on_text: Callable[[str], None] | None = None,
                   on_cpu: Callable[[float], None] | None = None) -> Run:
        called = time.perf_counter()  # CLOCK_MONOTONIC: the model process reads the same
        self._waiting += 1
        try:
            await self._ready()
            current, pending = self._process.submit(
                call, prompt, session, called, kind, urgent,
                None if on_text is None else _on_loop(on_text),
                None if on_cpu is None else _on_loop(on_cpu))
        finally:
            self._waiting -= 1
        try:
            run: Run = await asyncio.wrap_future(pending.future)
        except asyncio.CancelledError:
            # e.g. a live next-cell prediction the person overtook: stop generating it
            self._process.give_up(current, pending)
            raise
        return run

    async def predict(self, request: PredictionRequest) -> Completion:
        kind = self._kind(request.session,
                          "speculation" if request.speculative else request.task)
        run = await self._run("complete", request.prompt, request.session, kind,
                              urgent=request.task == "output", on_text=request.on_text,
                              on_cpu=request.on_cpu)
        response = run.response
        usage = response["usage"]
        return Completion(
            text=response["choices"][0]["message"]["content"] or "",
            model=self._model_name(),
            # Model time only: restoring the session's KV state, evaluating, generating.
            latency=run.switch_seconds + run.run_seconds,
            queue_seconds=run.queue_seconds,
            prompt_tokens=usage["prompt_tokens"],
            completion_tokens=usage["completion_tokens"],
            cached_tokens=run.cached_tokens,
            raw={
                "response": response,
                "timings": {
                    "queue_seconds": run.queue_seconds,
                    "switch_seconds": run.switch_seconds,
                    "prompt_eval_seconds": run.prompt_eval_seconds,
                    "run_seconds": run.run_seconds,
                    "prompt_threads": run.prompt_threads,
                },
            },
        )

    def _kind(self, session: str | None, task: str) -> tuple[str, str] | None:
        """What a newer request supersedes: the same session and task of this predictor
        (another that shares the process, as ``hybrid`` and ``local`` do, has its own)."""
        return None if session is None else (f"{session} ({self._namespace})", task)

    def _model_name(self) -> str:
        running = self._process.running
        if running is not None and running.info is not None:
            return str(running.info["model"])
        return adapted((self._path or default_model_path()).name, self._adapter)

    def _known(self) -> Model | None:
        """Its model file's entry in ``models`` (None: a GGUF of one's own, or none
        installed)."""
        with contextlib.suppress(LocalModelError):
            return by_file(self._path or default_model_path())
        return None

    @property
    def fills_code(self) -> bool:
        """Whether its model fills in the middle of code (``infill``): a code model."""
        known = self._known()
        return known is not None and known.fills_code

    @property
    def next_cells_beat_copying(self) -> bool:
        """Whether its model's next cells were measured to beat copying (``models``)."""
        known = self._known()
        return known is not None and known.next_cells_beat_copying

    @property
    def outputs_beat_copying(self) -> bool:
        """Whether its model's output answers were measured to beat copying (``models``):
        ``hybrid`` shows them only then."""
        known = self._known()
        return known is not None and known.outputs_beat_copying

    async def infill(self, request: Infill, session: str | None,
                     on_text: Callable[[str], None] | None = None, *,
                     task: str = "completion") -> Completion:
        """The text the model puts at the cursor of a cell being typed (``Engine.infill``).
        A newer request of the session and ``task`` supersedes a queued one; cancelling
        this call stops the model at its next token. A completion is urgent (someone waits
        at the cursor); a next cell (``task="next-cell"``) is written in the background."""
        started = time.perf_counter()
        run = await self._run("infill", request, session, self._kind(session, task),
                              urgent=task == "completion", on_text=on_text)
        usage = run.response["usage"]
        return Completion(text=run.response["choices"][0]["message"]["content"] or "",
                          model=self._model_name(), latency=time.perf_counter() - started,
                          queue_seconds=run.queue_seconds,
                          prompt_tokens=usage["prompt_tokens"],
                          completion_tokens=usage["completion_tokens"],
                          cached_tokens=run.cached_tokens,
                          raw={"timings": run.response.get("timings")})

    async def warm(self, prompt: Prompt, session: str | None) -> int:
        """Read what ``session``'s next prompts share with ``prompt`` into the KV cache in
        the background (``Engine.warm``): behind predictions, and paused by an output
        prediction. Returns the tokens read (0: the session was warm)."""
        run = await self._run("warm", prompt, session, self._kind(session, "warm"))
        read: int = run.response["usage"]["prompt_tokens"] - run.cached_tokens
        return read

    async def aclose(self) -> None:
        await asyncio.to_thread(self._process.close)


def gguf_prompt_counter(path: Path) -> Callable[[Prompt], int]:
    """Counts a prompt's tokens as the model of the GGUF file ``path`` reads its chat: for
    an API model served from that file (``openai:`` against llama.cpp's server). The
    tokenizer runs in a process of its own, as the local model does."""
    if not path.is_file():
        raise LocalModelError(f"No GGUF model file at {path}")
    process = ModelProcess(EngineConfig(
        model_path=str(path), n_threads=1, n_threads_decode=1, n_ctx=512, max_tokens=None,
        max_sessions=1, cache_bytes=0, reuse_prefix=False, prefix_dir=None, vocab_only=True))

    def count(prompt: Prompt) -> int:
        return process.count("prompt", prompt)

    return count


def _on_loop(sink: Callable[[T], None]) -> Callable[[T], None]:
    """``sink`` called on this event loop, from the thread that reads the model process."""
    loop = asyncio.get_running_loop()

    def relay(value: T) -> None:
        with contextlib.suppress(RuntimeError):  # its event loop has closed
            loop.call_soon_threadsafe(sink, value)

    return relay


__all__ = [
    "Limits",
    "LocalModelError",
    "LocalModelOff",
    "LocalPredictor",
    "ModelProcessDied",
    "ModelProcessHung",
    "default_model_path",
    "gguf_prompt_counter",
]
