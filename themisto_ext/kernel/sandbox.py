"""Reprs that run user code, computed in a forked copy of the kernel that is killed on time.

Inside the kernel, nothing can stop a ``__repr__`` that catches every exception in a
loop: the alarm's exception is caught, and a trace function that raises is switched off
by the interpreter the first time it does. A forked child can simply be killed. The
child sees the kernel's memory as it is (copy-on-write, so whatever the repr changes is
the child's), writes its answers to a pipe and exits; the kernel waits at most the given
seconds and then kills it with SIGKILL. Before running user code the child points its
standard streams at ``/dev/null`` and closes every inherited file descriptor, so a repr
can neither print into the notebook (ipykernel forwards the kernel's own fd 1 and 2)
nor write to the kernel's sockets, databases or files; a repr that needs them gets an
error placeholder instead.

Cost (2 cores, shared with other work): ``fork`` returns in 1-2 ms for a kernel with
NumPy and pandas loaded, the child answers in another 1-5 ms; its exit (~10 ms of
tearing down the copy) is not waited for, the child is reaped at the next call. Paid
only by cells that must re-measure a value whose repr is user code (``reprs.py`` renders
everything else in the kernel).
"""

from __future__ import annotations

import ctypes
import os
import platform
import select
import signal
import sys
from collections.abc import Callable
from typing import Any

from themisto_ext.contract import dumps, loads
from themisto_ext.kernel.deadline import DeadlineExceeded, deadline
from themisto_ext.kernel.private import clock
from themisto_ext.kernel.safe import type_name

_unreaped: list[int] = []

TIMED_OUT = "timed out"
CRASHED = "ended the measuring process"
_PR_SET_PDEATHSIG = 1
try:  # loaded once here, not in every child
    _LIBC: Any = ctypes.CDLL(None, use_errno=True)
    # PyDLL keeps the GIL across the call: the copy must not start while another thread
    # of the kernel holds it (that thread does not exist in the copy).
    _SYSCALL: Any = ctypes.PyDLL(None, use_errno=True).syscall
    _SYSCALL.restype = ctypes.c_long
except (OSError, AttributeError):  # pragma: no cover - not Linux
    _LIBC = _SYSCALL = None
_SYS_CLONE = {"x86_64": 56, "aarch64": 220}.get(platform.machine())
_WALL = 0x40000000  # waitpid's __WALL: a child that signals nothing on exit is waited for too


def available() -> bool:
    return hasattr(os, "fork") and sys.platform.startswith("linux")


def run(values: list[Any], render: Callable[[Any], str], per_value: float,
        seconds: float) -> list[str | None]:
    """``render(value)`` for each value, in a child; ``TIMED_OUT`` for the value the child
    was still on when time ran out if it had ``per_value`` seconds, ``CRASHED`` for the one
    it died on, None for those it did not reach (or had barely begun)."""
    results: list[str | None] = [None] * len(values)
    _reap()
    if not values or seconds <= 0:
        return results
    read_end, write_end = os.pipe()
    pid = _fork()
    if pid == 0:  # pragma: no cover - the child never returns
        _child(values, render, per_value, read_end, write_end)
    _own_group(pid)
    os.close(write_end)
    ended, began, began_at = False, -1, 0.0
    try:
        ended, began, began_at = _collect(read_end, results, clock() + seconds)
    finally:
        os.close(read_end)
        if not ended:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        _unreaped.append(pid)
        _reap()
    reached = next((i for i, r in enumerate(results) if r is None), None)
    if reached is None:
        return results
    if ended:
        results[reached] = CRASHED
    elif began == reached and clock() - began_at >= per_value:
        # Only a value that had its whole budget is blamed: on a loaded machine the copy
        # may start late, and a value it had barely begun stays pending (measured later).
        results[reached] = TIMED_OUT
    return results


def _fork() -> int:
    """A copy of the kernel that its user cannot observe: ``clone`` with no exit signal,
    not ``os.fork``. ``os.fork`` ran the user's ``os.register_at_fork`` handlers (their
    print showed in two cells), its child was reaped by the user's ``os.wait()`` and its
    exit sent them a SIGCHLD. A child that signals nothing on exit is invisible to
    ``wait()`` without ``__WALL`` and to SIGCHLD handlers, and nothing runs around the
    clone: neither Python's at-fork handlers nor C libraries' (``pthread_atfork``). The
    copy is therefore not tidied for its threads that are gone: a repr that needs a lock
    another thread held at that instant (a BLAS pool, malloc in another thread) hangs in
    the copy, which is killed on time like any other, and the value says "timed out".
    Elsewhere than Linux on x86-64 or arm64, ``os.fork`` (with what it shows)."""
    if _SYSCALL is not None and _SYS_CLONE is not None:
        pid = int(_SYSCALL(ctypes.c_long(_SYS_CLONE), ctypes.c_long(0), ctypes.c_long(0),
                           ctypes.c_long(0), ctypes.c_long(0), ctypes.c_long(0)))
        if pid >= 0:
            return pid
    return os.fork()


def _own_group(pid: int) -> None:
    """Put the copy in a process group of its own (the child does the same, whichever
    runs first). ipykernel, shutting down or restarting, waits for every process of its
    own group to be gone, escalating signals over seconds; a copy already killed but not
    yet reaped (reaped at the next call) stays in the process table until then, and
    held each shutdown 2.3 s. Nothing else sends signals to the copy's group: it is
    killed by pid."""
    try:
        os.setpgid(pid, pid)
    except OSError:
        pass  # it ran first and did it itself, or it is gone


def _reap() -> None:
    """Collect children that have exited, without waiting: tearing down a copy of a large
    kernel takes the child ~10 ms, which the cell need not wait for."""
    for pid in list(_unreaped):
        try:
            done, _ = os.waitpid(pid, os.WNOHANG | _WALL)
        except ChildProcessError:
            done = pid  # reaped by someone else's SIGCHLD handler
        if done:
            _unreaped.remove(pid)


def _collect(fd: int, results: list[str | None], until: float) -> tuple[bool, int, float]:
    """Read answers until the child closes the pipe (True) or time runs out (False), with
    the value the child last began (-1: none) and when that was seen."""
    buffer = b""
    began, began_at = -1, 0.0
    while True:
        left = until - clock()
        if left <= 0 or not select.select([fd], [], [], left)[0]:
            return False, began, began_at
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            # the child is done (or died: what it did not send is missing)
            return True, began, began_at
        buffer += chunk
        *lines, buffer = buffer.split(b"\n")
        for line in lines:
            index, text = loads(line)
            if text is None:  # the child begins this value
                began, began_at = index, clock()
            else:
                results[index] = text


def _child(values: list[Any], render: Callable[[Any], str], per_value: float,
           read_end: int, write_end: int) -> None:  # pragma: no cover - runs in the child
    try:
        os.close(read_end)
        _own_group(0)
        _die_with_parent()
        devnull = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(devnull, fd)
        os.closerange(3, write_end)
        os.closerange(write_end + 1, 1 << 20)
        sys.stdout = sys.stderr = open(os.devnull, "w")  # noqa: SIM115 - lives until _exit
        for index, value in enumerate(values):
            _send(write_end, [index, None])
            try:
                with deadline(per_value):
                    text = render(value)
            except DeadlineExceeded:
                text = TIMED_OUT
            except BaseException as exc:  # the user's repr failed: say so
                text = f"raised {type_name(type(exc))}"
            _send(write_end, [index, text])
    finally:
        os._exit(0)


def _send(fd: int, message: list[Any]) -> None:  # pragma: no cover - runs in the child
    line = dumps(message, compact=False).encode() + b"\n"  # ASCII
    while line:
        line = line[os.write(fd, line):]


def _die_with_parent() -> None:  # pragma: no cover - runs in the child
    """Ask Linux to kill the child if the kernel dies first (no orphaned endless repr)."""
    if _LIBC is not None:
        _LIBC.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
