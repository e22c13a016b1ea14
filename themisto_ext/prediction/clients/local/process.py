"""The local model's own process: llama.cpp, its KV sessions and the job queue live here.

A fault in native code (an instruction the VM advertises but refuses, a bad GGUF, an
out-of-memory kill) then ends this process, never the Jupyter server or a kernel;
``supervisor.py`` starts it, speaks to it (``wire.py``) and restarts it. Run as
``python -m themisto_ext.prediction.clients.local.process FD``, FD being its end of the
socket pair. Its main thread reads messages and never runs the model, so a heartbeat, a
give-up or a token count is answered while the worker thread generates.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from themisto_ext.prediction.clients.base import ProviderError
from themisto_ext.prediction.clients.local import wire
from themisto_ext.prediction.clients.local.engine import Engine, Run
from themisto_ext.prediction.clients.local.worker import Job, Worker

FAULT_ENV = "THEMISTO_MODEL_PROCESS_FAULT"
"""Fault injection for tests: ``self-test`` makes the self-test fault (SIGSEGV) as
llama.cpp does on a CPU whose advertised AMX the VM refuses, unless in safe mode."""

PROGRESS_EVERY = 0.5
"""Seconds between two progress messages: the server's job deadline counts from the last."""


class Channel:
    """The process's end of the socket pair: sends from any thread."""

    def __init__(self, conn: Connection) -> None:
        self._conn = conn
        self._lock = threading.Lock()

    def send(self, *message: Any) -> None:
        try:
            with self._lock:
                self._conn.send(message)
        except (OSError, ValueError):
            os._exit(0)  # the server is gone: nobody wants the answers

    def recv(self) -> tuple[Any, ...]:
        try:
            message: tuple[Any, ...] = self._conn.recv()
        except (EOFError, OSError):
            os._exit(0)
        return message


class Forward(logging.Handler):
    """Log records go to the server, which logs them under the same logger name."""

    def __init__(self, channel: Channel) -> None:
        super().__init__(logging.INFO)
        self._channel = channel

    def emit(self, record: logging.LogRecord) -> None:
        self._channel.send(wire.LOG, record.levelno, record.name, record.getMessage())


def start(config: wire.EngineConfig, channel: Channel) -> Engine:
    """The engine loaded and self-tested, or a ``FATAL`` message and exit 2."""
    engine = Engine(
        Path(config.model_path) if config.model_path else None,
        n_threads=config.n_threads, n_threads_decode=config.n_threads_decode,
        n_ctx=config.n_ctx, max_tokens=config.max_tokens, max_sessions=config.max_sessions,
        cache_bytes=config.cache_bytes, reuse_prefix=config.reuse_prefix,
        prefix_dir=Path(config.prefix_dir) if config.prefix_dir else None,
        safe=config.safe, vocab_only=config.vocab_only,
        adapter=Path(config.adapter_path) if config.adapter_path else None)
    try:
        engine.load()
        if not config.vocab_only:
            if os.environ.get(FAULT_ENV) == "self-test" and not config.safe:
                os.kill(os.getpid(), signal.SIGSEGV)
            engine.self_test()
    except wire.LocalModelError as exc:
        channel.send(wire.FATAL, str(exc))
        os._exit(2)
    return engine


class Server:
    """Runs the jobs the server sends on one ``Worker`` and reports on them."""

    def __init__(self, engine: Engine, channel: Channel) -> None:
        self._engine = engine
        self._channel = channel
        self._worker = Worker()
        self._jobs: dict[int, Job] = {}
        self._last_progress = 0.0
        engine.on_progress = self._progress

    def _progress(self) -> None:
        now = time.monotonic()
        if now - self._last_progress >= PROGRESS_EVERY:
            self._last_progress = now
            self._channel.send(wire.PROGRESS)

    def serve(self) -> None:
        while True:
            message = self._channel.recv()
            tag = message[0]
            if tag == wire.JOB:
                self._submit(*message[1:])
            elif tag == wire.GIVE_UP:
                job = self._jobs.get(message[1])
                if job is not None:
                    self._worker.give_up(job)
            elif tag == wire.COUNT:
                self._count(*message[1:])
            elif tag == wire.PING:
                self._channel.send(wire.PONG, message[1])
            elif tag == wire.CLOSE:
                thread = self._worker.close()  # the running job finishes and reports
                if thread is not None:
                    thread.join()
                self._engine.close()
                return

    def _submit(self, job_id: int, call: str, prompt: Any, session: str | None,
                called: float, kind: tuple[str, str] | None, urgent: bool,
                stream: bool) -> None:
        abort = threading.Event()
        channel = self._channel

        def on_text(text: str) -> None:
            channel.send(wire.TEXT, job_id, text)

        def run() -> Run:
            channel.send(wire.STARTED, job_id, self._worker.queued)
            if call == "warm":
                return self._engine.warm(prompt, session, called, abort)
            if call == "infill":
                return self._engine.infill(prompt, session, called, abort,
                                           on_text if stream else None)
            return self._engine.complete(prompt, session, called, abort,
                                         on_text if stream else None)

        def on_cpu(seconds: float) -> None:
            channel.send(wire.CPU, job_id, seconds)

        job = Job(kind, run, abort=abort, urgent=urgent, on_cpu=on_cpu)
        self._jobs[job_id] = job
        job.future.add_done_callback(self._reporter(job_id))
        try:
            self._worker.submit(job)
        except ProviderError as exc:  # closed
            if not job.future.done():
                job.future.set_exception(exc)
        channel.send(wire.ACK, job_id, self._worker.queued)

    def _reporter(self, job_id: int) -> Callable[[Future[Run]], None]:
        def report(future: Future[Run]) -> None:
            self._jobs.pop(job_id, None)
            warm = self._engine.warm_sessions()
            error = future.exception()
            if error is None:
                self._channel.send(wire.DONE, job_id, future.result(), warm,
                                   self._worker.queued)
            else:
                self._channel.send(wire.FAILED, job_id, wire.error_name(error), str(error),
                                   warm, self._worker.queued)
        return report

    def _count(self, request_id: int, what: str, value: Any) -> None:
        try:
            tokens = (self._engine.count_tokens(value) if what == "text"
                      else self._engine.count_prompt(value))
        except Exception as exc:
            self._channel.send(wire.COUNTED, request_id, None, wire.error_name(exc), str(exc))
        else:
            self._channel.send(wire.COUNTED, request_id, tokens)


def main(argv: list[str]) -> None:
    # Ctrl-C in the server's terminal is the server's to handle; it closes this process.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    channel = Channel(Connection(int(argv[0])))
    logging.basicConfig(level=logging.INFO, handlers=[Forward(channel)], force=True)
    first = channel.recv()
    if first[0] != wire.START:  # closed before it started
        os._exit(0)
    config = first[1]
    began = time.perf_counter()
    engine = start(config, channel)
    channel.send(wire.READY, {"pid": os.getpid(), "model": engine.model_name,
                              "safe": config.safe, "seconds": time.perf_counter() - began,
                              "system_info": engine.system_info()})
    Server(engine, channel).serve()
    os._exit(0)


if __name__ == "__main__":
    main(sys.argv[1:])
