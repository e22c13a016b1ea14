"""Capture-hook overhead in a real ipykernel, on a data-science namespace.

Prints: per-cell hook overhead (median, p95, max) on cells that keep the big objects,
the worst single cell over a hostile namespace (slow, raising and huge values, and the
issue-11 cases: reprs/sizes/lengths/iterators that swallow interruptions forever, a list
subclass whose iterator pops, a metaclass with raising properties, a MagicMock beside a
running thread, PEM-looking output), whether the hostile values were left unchanged, and
the wall-time ratio of running the shared notebooks with and without the hook.

    python benchmarks/capture_overhead.py [--cells 300] [--notebooks DIR]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

import nbformat
from jupyter_client.manager import KernelManager
from nbclient import NotebookClient

from themisto_ext.contract import AUTOLOAD_ARG
from themisto_ext.replay import recording_env

SETUP = """
import numpy as np, pandas as pd
rng = np.random.default_rng(0)
df = pd.DataFrame(rng.random((1_000_000, 9)), columns=[f"c{i}" for i in range(9)])
df["label"] = [f"item-{i % 1000}" for i in range(1_000_000)]
arr = rng.random(10_000_000)
table = {f"key{i}": i for i in range(100_000)}
numbers = list(range(1_000_000))
nested = {f"g{i}": {f"k{j}": [j, str(j)] for j in range(100)} for i in range(500)}
"""

# Cells that read (and sometimes name) the big objects without replacing them.
CELLS = [
    "x = {i}",
    "s = arr[:100].sum()",
    "n = len(numbers) + {i}",
    "df.shape",
    "m = df['c1'].head(3).mean()",
    "v = table['key{i}']",
    "leaf = nested['g1']['k2']",
    "print('step', {i})",
    "small = [{i}, {i} + 1]",
    "total = float(arr[{i}])",
]

HOSTILE = """
import time
class Slow:
    def __repr__(self):
        time.sleep(10)
        return 'slow'
class Raises:
    def __repr__(self):
        raise RuntimeError('repr')
    def __sizeof__(self):
        raise RuntimeError('sizeof')
class Deep:
    def __init__(self, n):
        self.items = [object() for _ in range(n)]
slow, raises, deep = Slow(), Raises(), Deep(200_000)
blob = b'x' * 50_000_000
text = 'y' * 50_000_000
gen = (i for i in range(10))
loop = []; loop.append(loop)
objs = pd.Series([object() for _ in range(100_000)])

import threading
from unittest.mock import MagicMock
def stubborn():
    while True:  # catches every interruption, the hook's deadline included
        try:
            time.sleep(0.01)
        except BaseException:
            pass
class SwallowRepr:
    def __repr__(self):
        stubborn()
class SwallowSizeof:
    def __sizeof__(self):
        stubborn()
class SwallowLen(list):
    def __len__(self):
        stubborn()
class SwallowIter(list):
    def __iter__(self):
        stubborn()
class Queue(list):
    def __iter__(self):
        while list.__len__(self):
            yield self.pop(0)
class Meta(type):
    @property
    def __module__(cls):
        raise RuntimeError('no module')
    @property
    def __name__(cls):
        raise RuntimeError('no name')
class Weird(metaclass=Meta):
    pass
sr, ss, sl, si = SwallowRepr(), SwallowSizeof(), SwallowLen([1]), SwallowIter([1])
q, weird, mock = Queue([1, 2, 3]), Weird(), MagicMock()
thread = threading.Thread(target=time.sleep, args=(3600,), daemon=True)
thread.start()
"""

HOSTILE_CELLS = [
    "slow; raises; deep; x = 1",
    "loop.append(1)",
    "sr.touched = True",            # changed: measured again
    "sl.append(2); si.append(2)",
    "q.append(4)",
    "mock.method(1)",
    "items = [SwallowRepr() for _ in range(3)]",
    "print('-----BEGIN PRIVATE KEY-----\\n' * 5000)",
    "from IPython.display import display\nfor i in range(120): display('z' * 200_000)",
]


class Kernel:
    def __init__(self, record: bool) -> None:
        journal = Path(tempfile.mkdtemp(prefix="themisto-bench-"))
        self.km = KernelManager(kernel_name="python3")
        extra = [AUTOLOAD_ARG] if record else []
        self.km.start_kernel(extra_arguments=extra,
                             env=recording_env(journal, f"bench-{uuid.uuid4().hex[:8]}"))
        self.kc = self.km.client()
        self.kc.start_channels()
        self.kc.wait_for_ready(timeout=120)

    def _execute(self, code: str, **options: object) -> dict:
        msg_id = self.kc.execute(code, **options)
        reply = self.kc.get_shell_msg(timeout=600)
        while reply["parent_header"].get("msg_id") != msg_id:
            reply = self.kc.get_shell_msg(timeout=600)
        return reply

    def run(self, code: str) -> float | None:
        """Execute a cell; return the hook's own overhead for it (seconds).

        The step is finished when the cell's reply is sent, so the figure is read by a
        silent execution afterwards (silent executions are not recorded).
        """
        self._execute(code)
        found = self.evaluate("get_ipython()._themisto_recorder.last_overhead")
        return float(found) if found is not None else None

    def timed(self, code: str) -> tuple[float, float | None]:
        """Wall seconds of a cell (as the client sees it) and the hook's share of it."""
        start = time.perf_counter()
        self._execute(code)
        wall = time.perf_counter() - start
        found = self.evaluate("get_ipython()._themisto_recorder.last_overhead")
        return wall, float(found) if found is not None else None

    def evaluate(self, expression: str) -> str | None:
        reply = self._execute("", silent=True, user_expressions={"o": expression})
        found = reply["content"].get("user_expressions", {}).get("o", {})
        return str(found["data"]["text/plain"]) if found.get("status") == "ok" else None

    def stop(self) -> None:
        self.kc.stop_channels()
        self.km.shutdown_kernel(now=True)


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.3f} ms"


def overhead(cells: int) -> None:
    kernel = Kernel(record=True)
    try:
        setup = kernel.run(SETUP)
        first = [kernel.run(CELLS[i % len(CELLS)].format(i=i)) for i in range(3)]
        samples = [kernel.run(CELLS[i % len(CELLS)].format(i=i)) for i in range(3, cells)]
        values = [s for s in samples if s is not None]
        print(f"data-science namespace, {len(values)} cells keeping the big objects:")
        print(f"  setup cell (creates them): {ms(setup or 0)}; next cells: "
              + ", ".join(ms(f or 0) for f in first))
        print(f"  hook overhead median {ms(statistics.median(values))}, "
              f"p95 {ms(pct(values, 95))}, max {ms(max(values))}  (targets: 1 ms, 10 ms); "
              f"forked children: "
              f"{kernel.evaluate('get_ipython()._themisto_recorder.snapshotter.forks')}")
        setup = kernel.run(HOSTILE)
        hostile = [kernel.run(CELLS[i % len(CELLS)].format(i=i)) for i in range(50)]
        ordinary = max(h for h in hostile if h is not None)
        print(f"hostile namespace: the cell that creates it {ms(setup or 0)}; "
              f"then ordinary cells: worst hook overhead {ms(ordinary)}")
        print("hostile cells (wall time as the client sees it; the hook's share):")
        worst = 0.0
        for code in HOSTILE_CELLS:
            wall, hook = kernel.timed(code)
            worst = max(worst, hook or 0.0)
            print(f"  {wall * 1000:9.1f} ms wall, hook {ms(hook or 0):>12}  {code[:60]!r}")
        print(f"worst hook overhead on a hostile cell: {ms(worst)}  (target: at most 1 s)")
        forks = kernel.evaluate("get_ipython()._themisto_recorder.snapshotter.forks")
        print(f"forked children: {forks}; user data unchanged: "
              f"q == {kernel.evaluate('list.__repr__(q)')} (expected [1, 2, 3, 4]), "
              f"thread alive: {kernel.evaluate('thread.is_alive()')}")
    finally:
        kernel.stop()


def run_notebooks(paths: list[Path], record: bool) -> float:
    start = time.perf_counter()
    journal = Path(tempfile.mkdtemp(prefix="themisto-bench-nb-"))
    for path in paths:
        nb = nbformat.read(path, as_version=4)
        client = NotebookClient(nb, timeout=600, allow_errors=True, kernel_name="python3",
                                extra_arguments=[AUTOLOAD_ARG] if record else [],
                                resources={"metadata": {"path": str(path.parent)}})
        client.execute(env=recording_env(journal, f"nb-{uuid.uuid4().hex[:8]}", str(path)))
    return time.perf_counter() - start


def ratio(directory: Path, rounds: int) -> None:
    paths = sorted(directory.glob("*.ipynb"))
    if not paths:
        print(f"no notebooks in {directory}; skipping the run-time ratio")
        return
    plain, hooked = [], []
    for _ in range(rounds):  # interleaved, so machine noise hits both alike
        plain.append(run_notebooks(paths, record=False))
        hooked.append(run_notebooks(paths, record=True))
    a, b = statistics.median(plain), statistics.median(hooked)
    print(f"{len(paths)} shared notebooks, median of {rounds}: without hook {a:.2f} s, "
          f"with hook {b:.2f} s, ratio {b / a:.3f} (includes kernel start-up)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--cells", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=3)
    default = Path(__file__).resolve().parents[2] / "shared" / "data" / "notebooks"
    parser.add_argument("--notebooks", type=Path, default=default)
    args = parser.parse_args()
    overhead(args.cells)
    ratio(args.notebooks, args.rounds)
    return 0


if __name__ == "__main__":
    sys.exit(main())
