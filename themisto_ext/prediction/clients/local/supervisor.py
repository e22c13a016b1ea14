"""The server's side of the model's process: start it, speak to it, watch it, restart it.

Whatever happens to the model process — a signal, an exit, a hang — the server goes on:
the requests in flight end as ``ModelProcessDied`` / ``ModelProcessHung`` errors, the
process is restarted after a backoff, and after ``max_crashes`` crashes within
``crash_window`` seconds the local model is switched off for this server with one
message (``LocalModelOff``). A process that cannot start (no model, a corrupt GGUF) is
one clear error, never a crash loop. Its first start self-tests llama.cpp on a few tokens;
if that faults (a CPU that advertises instructions the VM refuses), the process starts
again in safe mode, without llama.cpp's extra buffer types, and says so.

Loop-agnostic on purpose: one reader thread per process turns its messages into
``concurrent.futures`` results and callbacks, so the server's event loop, the CLI's
``asyncio.run`` calls and plain threads (token counts while fitting a prompt) all use it.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import itertools
import logging
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future, InvalidStateError
from dataclasses import dataclass, field, replace
from multiprocessing.connection import Connection
from typing import Any

from themisto_ext.contract import child_env
from themisto_ext.prediction.clients.base import ProviderError
from themisto_ext.prediction.clients.local import wire

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Limits:
    """How long the supervisor waits, and how often it restarts."""

    job_deadline: float = 120.0
    """Seconds a running job may go without finishing a decoded batch before it counts as
    hung (a batch is one generated token, or up to 512 prompt tokens: ~2-5 s on 2 busy
    cores)."""
    heartbeat: float = 5.0
    """Seconds between heartbeats to an idle or busy process."""
    hang_after: float = 30.0
    """Seconds without an answer to a heartbeat before the process counts as hung."""
    start_timeout: float = 120.0
    """Seconds a process may take to load the model and self-test."""
    max_crashes: int = 3
    crash_window: float = 300.0
    """``max_crashes`` deaths or hangs within this many seconds switch the model off."""
    backoff: float = 0.5
    """Seconds before the first restart; doubled for each further crash in the window."""


@dataclass(eq=False)
class Pending:
    """A request in flight: its future, and the callbacks that relay what streams."""

    id: int
    future: Future[Any] = field(default_factory=Future)
    on_text: Callable[[str], None] | None = None
    on_cpu: Callable[[float], None] | None = None
    started: bool = False


def settle(future: Future[Any], result: Any = None,
           error: BaseException | None = None) -> None:
    """Resolve ``future`` unless it is already (its caller may have cancelled it)."""
    with contextlib.suppress(InvalidStateError):
        if error is None:
            future.set_result(result)
        else:
            future.set_exception(error)


class Incarnation:
    """One model process: its pipe, its reader thread, what it is working on."""

    def __init__(self, proc: subprocess.Popen[bytes], conn: Connection, safe: bool) -> None:
        self.proc = proc
        self.conn = conn
        self.safe = safe
        self.ready = threading.Event()
        self.info: dict[str, Any] | None = None
        self.fatal: str | None = None
        self.dead = False
        self.closing = False
        self.kill_reason: str | None = None
        self.pending: dict[int, Pending] = {}
        self.unacked = 0
        self.queued = 0
        self.warm: list[str] = []
        self.running: Pending | None = None
        self.last_progress = time.monotonic()
        self.ping_sent: float | None = None
        self.last_ping = time.monotonic()
        self.stderr_tail: deque[str] = deque(maxlen=5)
        self._send_lock = threading.Lock()

    def send(self, *message: Any) -> None:
        with self._send_lock:
            self.conn.send(message)


class ModelProcess:
    """The one model process of a ``LocalPredictor``; see the module docstring."""

    def __init__(self, config: wire.EngineConfig, limits: Limits | None = None) -> None:
        self._config = config
        self.limits = limits or Limits()
        self._lock = threading.RLock()
        self._start_lock = threading.Lock()
        self._ids = itertools.count(1)
        self._current: Incarnation | None = None
        self._state = "idle"
        self._reason: str | None = None
        self._crashes: deque[float] = deque()
        self._crash_count = 0
        self._restarts = 0
        self._restart_at = 0.0
        self._safe = config.safe
        self._monitor: threading.Thread | None = None
        self._wake = threading.Event()
        self._users = 1

    def share(self) -> ModelProcess:
        """One more predictor uses this process: it ends when the last one closes it."""
        with self._lock:
            self._users += 1
        return self

    # -- what callers see --------------------------------------------------------------

    @property
    def running(self) -> Incarnation | None:
        current = self._current
        return current if current is not None and current.info is not None \
            and not current.dead and self._state == "running" else None

    @property
    def queued(self) -> int:
        current = self.running
        return 0 if current is None else current.queued + current.unacked

    @property
    def warm_sessions(self) -> list[str]:
        current = self.running
        return [] if current is None else list(current.warm)

    def status(self) -> dict[str, Any]:
        """What GET /predictors says of this process."""
        with self._lock:
            current = self._current
            alive = current is not None and not current.dead and current.info is not None
            rss = None
            if alive and current is not None:
                with contextlib.suppress(Exception):
                    import psutil

                    rss = psutil.Process(current.proc.pid).memory_info().rss
            return {"state": self._state, "reason": self._reason,
                    "pid": current.proc.pid if alive and current is not None else None,
                    "restarts": self._restarts, "crashes": self._crash_count,
                    "safe_mode": self._safe, "rss_bytes": rss}

    def ensure_running(self) -> Incarnation:
        """The running process, started (or restarted) if need be; blocks while it
        loads. Raises the reason when the model is closed, off or cannot start."""
        current = self.running
        if current is not None:
            return current
        with self._start_lock:
            current = self.running
            if current is not None:
                return current
            self._refuse_if_down()
            wait = self._restart_at - time.monotonic()
            if wait > 0:
                time.sleep(wait)
                self._refuse_if_down()
            return self._start()

    def _refuse_if_down(self) -> None:
        with self._lock:
            if self._state == "closed":
                raise ProviderError("The local predictor is closed")
            if self._state == "off":
                raise wire.LocalModelOff(self._reason or "the local model is off")
            if self._state == "failed":
                raise wire.LocalModelError(self._reason or "the local model cannot start")

    def submit(self, call: str, prompt: Any, session: str | None, called: float,
               kind: tuple[str, str] | None, urgent: bool,
               on_text: Callable[[str], None] | None,
               on_cpu: Callable[[float], None] | None) -> tuple[Incarnation, Pending]:
        """Send a job to the running process (started first if need be)."""
        pending = Pending(next(self._ids), on_text=on_text, on_cpu=on_cpu)
        current = self._request(pending, wire.JOB, pending.id, call, prompt, session, called,
                                kind, urgent, on_text is not None)
        return current, pending

    def _request(self, pending: Pending, *message: Any) -> Incarnation:
        """Register ``pending`` with the running process and send ``message``; the reader
        resolves it, also with the reason if the process dies meanwhile."""
        current = self.ensure_running()
        with self._lock:
            if current.dead or self._state == "closed":
                self._refuse_if_down()
                raise wire.ModelProcessDied("the local model's process ended; retry")
            current.pending[pending.id] = pending
            if message[0] == wire.JOB:
                current.unacked += 1
        with contextlib.suppress(OSError, ValueError):  # it died: the reader says why
            current.send(*message)
        return current

    def give_up(self, current: Incarnation, pending: Pending) -> None:
        with contextlib.suppress(OSError, ValueError):
            current.send(wire.GIVE_UP, pending.id)

    def count(self, what: str, value: Any) -> int:
        """Tokens of a text or a prompt, counted by the model's own tokenizer."""
        pending = Pending(next(self._ids))
        self._request(pending, wire.COUNT, pending.id, what, value)
        try:
            tokens: int = pending.future.result(timeout=self.limits.hang_after)
        except concurrent.futures.TimeoutError:
            raise wire.ModelProcessHung(
                f"no token count in {self.limits.hang_after:g} s") from None
        return tokens

    def close(self, timeout: float = 30.0) -> None:
        """Refuse new work; the running job finishes; the process exits (once the last
        predictor sharing it closes it)."""
        with self._lock:
            self._users -= 1
            if self._users > 0:
                return
            self._state = "closed"
            self._wake.set()
        with self._start_lock:  # a start under way ends first (and sees "closed")
            current = self._current
        if current is None or current.dead:
            return
        current.closing = True
        with contextlib.suppress(OSError, ValueError):
            current.send(wire.CLOSE)
        try:
            current.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            current.proc.kill()
            current.proc.wait()

    # -- starting ----------------------------------------------------------------------

    def _start(self) -> Incarnation:
        """Start a process (called with the start lock held); on a fault during its
        self-test, once more in safe mode."""
        current = self._spawn(self._safe)
        if current.info is None and current.fatal is None and current.kill_reason is None \
                and not self._safe and (current.proc.returncode or 0) < 0:
            death = wire.describe_exit(current.proc.returncode)
            log.warning("llama.cpp crashed on its self-test (%s): starting the local model "
                        "again without its extra buffer types (AMX, repacked weights), "
                        "slower but safe on this CPU", death)
            self._safe = True
            current = self._spawn(True)
        if current.info is None:
            with self._lock:
                self._state = "failed"
                self._reason = self._start_failure(current)
            log.error("The local model cannot start: %s", self._reason)
            raise wire.LocalModelError(self._reason)
        with self._lock:
            if self._state == "closed":
                current.closing = True
                with contextlib.suppress(OSError, ValueError):
                    current.send(wire.CLOSE)
                raise ProviderError("The local predictor is closed")
            if self._state == "restarting":
                self._restarts += 1
            self._state = "running"
            self._reason = None
        info = current.info
        log.info("local model process %s ready in %.2f s (%s%s)", info["pid"],
                 info["seconds"], info["model"],
                 ", safe mode: no extra buffer types" if info["safe"] else "")
        return current

    def _start_failure(self, current: Incarnation) -> str:
        if current.fatal is not None:
            return current.fatal
        if current.kill_reason is not None:
            return f"the model process {current.kill_reason}"
        death = wire.describe_exit(current.proc.returncode)
        tail = "; ".join(current.stderr_tail)
        where = " even in safe mode: this llama.cpp build does not run on this CPU" \
            if current.safe else ""
        return (f"the model process died while loading the model ({death}){where}"
                + (f": {tail}" if tail else ""))

    def _spawn(self, safe: bool) -> Incarnation:
        ours, theirs = socket.socketpair()
        try:
            proc = subprocess.Popen(
                [sys.executable, "-m", "themisto_ext.prediction.clients.local.process",
                 str(theirs.fileno())],
                pass_fds=(theirs.fileno(),), stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=child_env(),
                start_new_session=True)
        except OSError as exc:
            ours.close()
            raise wire.LocalModelError(f"cannot start the model process: {exc}") from None
        finally:
            theirs.close()
        conn = Connection(os.dup(ours.fileno()))
        ours.close()
        current = Incarnation(proc, conn, safe)
        with self._lock:
            self._current = current
        threading.Thread(target=self._read, args=(current,), daemon=True,
                         name=f"local-llm-reader-{proc.pid}").start()
        threading.Thread(target=self._read_stderr, args=(current,), daemon=True,
                         name=f"local-llm-stderr-{proc.pid}").start()
        self._start_monitor()
        try:
            current.send(wire.START, replace(self._config, safe=safe))
        except (OSError, ValueError):
            pass
        if not current.ready.wait(self.limits.start_timeout):
            self._kill(current, f"did not start in {self.limits.start_timeout:g} s")
            current.ready.wait(10)
        return current

    # -- reading -----------------------------------------------------------------------

    def _read_stderr(self, current: Incarnation) -> None:
        assert current.proc.stderr is not None
        for raw in current.proc.stderr:
            line = raw.decode("utf-8", "replace").rstrip()
            if line:
                current.stderr_tail.append(line[:500])
                log.warning("local model process %s: %s", current.proc.pid, line[:2000])

    def _read(self, current: Incarnation) -> None:
        while True:
            try:
                message = current.conn.recv()
            except (EOFError, OSError, ValueError):
                break
            except Exception as exc:  # an unreadable message: the process is not sane
                self._kill(current, f"sent an unreadable message ({exc})")
                break
            try:
                self._handle(current, message)
            except Exception:  # a caller's callback failed: the others still get answers
                log.exception("handling the local model's message %r", message[:2])
        with contextlib.suppress(subprocess.TimeoutExpired):
            current.proc.wait(timeout=30)
        if current.proc.returncode is None:
            current.proc.kill()
            current.proc.wait()
        with contextlib.suppress(OSError):
            current.conn.close()
        self._died(current)

    def _handle(self, current: Incarnation, message: tuple[Any, ...]) -> None:
        tag = message[0]
        now = time.monotonic()
        if tag == wire.TEXT:
            current.last_progress = now
            pending = current.pending.get(message[1])
            if pending is not None and pending.on_text is not None:
                pending.on_text(message[2])
        elif tag == wire.PROGRESS:
            current.last_progress = now
        elif tag in (wire.DONE, wire.FAILED):
            with self._lock:
                pending = current.pending.get(message[1])
                if pending is not None and not (pending.started and pending.on_cpu):
                    current.pending.pop(message[1], None)
                current.warm, current.queued = message[-2], message[-1]
                if current.running is pending:
                    current.running = None
            if pending is not None:
                if tag == wire.DONE:
                    settle(pending.future, message[2])
                else:
                    settle(pending.future, error=wire.error_of(message[2], message[3]))
        elif tag == wire.CPU:
            with self._lock:
                pending = current.pending.pop(message[1], None)
            if pending is not None and pending.on_cpu is not None:
                pending.on_cpu(message[2])
        elif tag == wire.STARTED:
            with self._lock:
                pending = current.pending.get(message[1])
                current.queued = message[2]
                current.last_progress = now
                if pending is not None:
                    pending.started = True
                    current.running = pending
        elif tag == wire.ACK:
            with self._lock:
                current.unacked -= 1
                current.queued = message[2]
        elif tag == wire.COUNTED:
            with self._lock:
                pending = current.pending.pop(message[1], None)
            if pending is not None:
                if message[2] is None:
                    settle(pending.future, error=wire.error_of(message[3], message[4]))
                else:
                    settle(pending.future, message[2])
        elif tag == wire.PONG:
            current.ping_sent = None
        elif tag == wire.LOG:
            logging.getLogger(message[2]).log(message[1], "%s", message[3])
        elif tag == wire.READY:
            current.info = message[1]
            current.ready.set()
        elif tag == wire.FATAL:
            current.fatal = message[1]

    # -- dying -------------------------------------------------------------------------

    def _died(self, current: Incarnation) -> None:
        with self._lock:
            current.dead = True
            current.ready.set()
            pending = list(current.pending.values())
            current.pending.clear()
            closing = current.closing or self._state == "closed"
            reason = current.kill_reason or wire.describe_exit(current.proc.returncode)
            counts = current.info is not None and not closing
            if counts:
                self._crash(reason, hung=current.kill_reason is not None)
        error: ProviderError
        if closing:
            error = ProviderError("The local predictor was closed")
        elif current.kill_reason is not None:
            error = wire.ModelProcessHung(
                f"{reason}: the local model's process was killed and is restarted")
        else:
            error = wire.ModelProcessDied(
                f"{reason}: the local model's process died while it worked on this "
                "request; it is restarted")
        for request in pending:
            settle(request.future, error=error)

    def _crash(self, reason: str, hung: bool) -> None:
        # Called with the lock held.
        now = time.monotonic()
        self._crash_count += 1
        self._crashes.append(now)
        while self._crashes and now - self._crashes[0] > self.limits.crash_window:
            self._crashes.popleft()
        what = "stopped answering" if hung else "died"
        if len(self._crashes) >= self.limits.max_crashes:
            self._state = "off"
            self._reason = (
                f"the local model's process {what} {len(self._crashes)} times in "
                f"{self.limits.crash_window:g} s (last: {reason}): the local model is off "
                "for this server until it restarts; rule-based predictors go on")
            log.error("%s", self._reason)
            return
        delay = self.limits.backoff * 2 ** (len(self._crashes) - 1)
        self._state = "restarting"
        self._reason = f"the local model's process {what} ({reason}); restarting"
        self._restart_at = now + delay
        log.warning("The local model's process %s (%s); restarting it in %.1f s", what,
                    reason, delay)
        self._wake.set()

    def _kill(self, current: Incarnation, reason: str) -> None:
        if current.kill_reason is None:
            current.kill_reason = reason
        with contextlib.suppress(ProcessLookupError):
            os.kill(current.proc.pid, signal.SIGKILL)

    # -- watching ----------------------------------------------------------------------

    def _start_monitor(self) -> None:
        with self._lock:
            if self._monitor is None:
                self._monitor = threading.Thread(target=self._watch, daemon=True,
                                                 name="local-llm-monitor")
                self._monitor.start()

    def _watch(self) -> None:
        """Heartbeats and job deadlines; an eager restart once the backoff is over, so
        the next prediction finds the model loaded."""
        limits = self.limits
        while True:
            self._wake.wait(min(0.25, limits.heartbeat))
            self._wake.clear()
            with self._lock:
                state, current = self._state, self._current
            if state == "closed":
                return
            now = time.monotonic()
            if state == "running" and current is not None and not current.dead:
                if current.ping_sent is not None and now - current.ping_sent > limits.hang_after:
                    self._kill(current, f"gave no answer to a heartbeat in "
                                        f"{limits.hang_after:g} s")
                elif current.running is not None \
                        and now - current.last_progress > limits.job_deadline:
                    self._kill(current, f"gave no answer in {limits.job_deadline:g} s")
                elif current.ping_sent is None and now - current.last_ping >= limits.heartbeat:
                    current.ping_sent = current.last_ping = now
                    with contextlib.suppress(OSError, ValueError):
                        current.send(wire.PING, 0)
            elif state == "restarting" and now >= self._restart_at:
                with contextlib.suppress(ProviderError):
                    self.ensure_running()

