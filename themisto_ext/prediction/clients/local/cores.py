"""How many cores llama.cpp may use right now without taking one from another process."""

from __future__ import annotations

import os
import time


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
