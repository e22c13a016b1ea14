"""What ``%%themisto_trace`` costs per executed line, in a real ipykernel with the hook.

Each cell runs once untraced and once traced (``--repeat`` times, the medians compared);
the cell times itself with ``time.perf_counter``, so only its own run is measured:

* ``loop``: a 2-line loop body run ``--iterations`` times: past 10 iterations a line is
  only counted (the common case of a loop);
* ``calls``: the loop calls a small function of the cell (a call event and its lines);
* ``recorded``: 999 distinct assignments in one statement, every line recorded (reprs,
  change detection);
* ``statements``: 1,000 top-level statements: IPython runs each as a module of its own,
  and its own Python code between them runs under the trace hook too.

Prints microseconds added per line event for each, and whether the trace was cut.

    python benchmarks/trace_overhead.py [--iterations 20000] [--repeat 5]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

from jupyter_client.manager import KernelManager

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from themisto_ext.contract import AUTOLOAD_ARG  # noqa: E402
from themisto_ext.replay import recording_env  # noqa: E402

CELLS = {
    "loop": ("s = 0\nfor i in range({n}):\n    s += i\n    t = s % 7", lambda n: 2 * n + 1),
    "calls": ("def f(x):\n    y = x * 2\n    return y\ns = 0\nfor i in range({n}):\n"
              "    s += f(i)", lambda n: 4 * n + 1),
    "recorded": ("if True:\n" + "\n".join(f"    v{k} = {k}" for k in range(999)),
                 lambda n: 1000),
    "statements": ("\n".join(f"v{k} = {k}" for k in range(1000)), lambda n: 1000),
}
TIMED = "import time as _t\n_t0 = _t.perf_counter()\n{body}\n_took = _t.perf_counter() - _t0"


def traced_steps(journal: Path) -> list[dict[str, Any]]:
    records = [json.loads(line) for path in sorted(journal.glob("*.jsonl"))
               for line in path.read_text().splitlines() if line.strip()]
    return [r for r in records if r["kind"] == "step" and "trace" in r]


def run(kc: Any, code: str) -> str:
    text: list[str] = []
    kc.execute_interactive(code, timeout=300, output_hook=lambda m: text.append(
        m["content"].get("text", "")) if m["msg_type"] == "stream" else None)
    return "".join(text)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--iterations", type=int, default=20_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    journal = Path(tempfile.mkdtemp()) / "journal"
    env = recording_env(journal, "trace-bench")
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    km = KernelManager(kernel_name="python3")
    km.start_kernel(extra_arguments=[AUTOLOAD_ARG], env=env)
    kc = km.client()
    kc.start_channels()
    kc.wait_for_ready(timeout=60)
    try:
        print(f"{'cell':<10} {'lines':>7} {'untraced s':>11} {'traced s':>9} "
              f"{'us/line':>8}  cut")
        for name, (template, lines) in CELLS.items():
            body = TIMED.format(body=template.format(n=args.iterations))
            times: dict[str, list[float]] = {"": [], "%%themisto_trace\n": []}
            for _ in range(args.repeat):
                for prefix, found in times.items():
                    run(kc, prefix + body)
                    found.append(float(run(kc, "print(_took)")))
            plain, traced = (statistics.median(t) for t in times.values())
            cut = traced_steps(journal)[-1]["trace"].get("truncated", "-")
            n = lines(args.iterations)
            print(f"{name:<10} {n:>7} {plain:>11.4f} {traced:>9.4f} "
                  f"{(traced - plain) / n * 1e6:>8.2f}  {cut}")
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
