"""A process of the rules' own, for the one evaluation that must change a process's state.

pandas' display options are the process's (NumPy's print options too before 2.0): showing
values under the options a notebook set means setting them, and in the server that would
reach every other rendering. So such an evaluation runs here: ``apart(function, *args)``
sends it to a worker started with ``python -m themisto_ext.rules.apart`` (not
multiprocessing's spawn, which re-runs the parent's ``__main__`` script: a benchmark's
unguarded code, or nothing at all under ``python -c``), one evaluation at a time. The
worker is started on first need and lives as long as its parent's end of the pipe; one
that dies or takes longer than ``SECONDS`` is killed and the caller gets ``fallback``
(unknown); the next call starts a new one.
"""

from __future__ import annotations

import pickle
import subprocess
import sys
import threading
from collections.abc import Callable
from typing import IO, Any, TypeVar, cast

from themisto_ext.contract import child_env

T = TypeVar("T")
SECONDS = 120.0
"""An evaluation's work is bounded far below this: past it the worker has gone astray."""

_own_process = False
_worker: subprocess.Popen[bytes] | None = None
_turn = threading.Lock()  # one evaluation at a time, as the worker runs them


def in_own_process() -> bool:
    """Whether this is the rules' own process, where the process's options may change."""
    return _own_process


def apart(function: Callable[..., T], *args: Any, fallback: T) -> T:
    """``function(*args)`` in the rules' own process (both picklable); ``fallback`` when
    that process dies, is lost or raises."""
    global _worker
    with _turn:
        if _worker is None or _worker.poll() is not None:
            # as the model process: no secret inherited, this package's code, and a
            # session of its own (a terminal's Ctrl-C is the server's)
            _worker = subprocess.Popen([sys.executable, "-m", __name__], stdin=subprocess.PIPE,
                                       stdout=subprocess.PIPE, env=child_env(),
                                       start_new_session=True)
        worker = _worker
        watchdog = threading.Timer(SECONDS, worker.kill)
        watchdog.start()
        try:
            pipe_in, pipe_out = cast(IO[bytes], worker.stdin), cast(IO[bytes], worker.stdout)
            pickle.dump((function, args), pipe_in)
            pipe_in.flush()
            ok, result = pickle.load(pipe_out)
        except (OSError, EOFError, pickle.PickleError, ValueError):
            worker.kill()  # dead, killed by the watchdog, or mid-answer: start anew
            worker.wait()
            _worker = None
            return fallback
        finally:
            watchdog.cancel()
    return result if ok else fallback


def _serve() -> None:
    """The worker: evaluations in, ``(ok, result)`` out, until the parent goes."""
    global _own_process
    _own_process = True
    requests, replies = sys.stdin.buffer, sys.stdout.buffer
    sys.stdout = sys.stderr  # what an evaluation prints must not enter the replies
    while True:
        try:
            function, args = pickle.load(requests)
        except EOFError:  # the parent closed its end (or ended)
            return
        try:
            reply: tuple[bool, Any] = (True, function(*args))
        except Exception as exc:  # told to the caller as unknown, never a dead worker
            reply = (False, repr(exc))
        pickle.dump(reply, replies)
        replies.flush()


if __name__ == "__main__":
    # run as a script this module is __main__; the rules read the flag of the package's
    from themisto_ext.rules import apart as package_module

    package_module._serve()
