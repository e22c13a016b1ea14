"""Peak memory of `themisto` commands on 1 GB inputs (target: under 300 MB each).

Each input is generated in a temporary directory at run time, one at a time (about 1 GB of
disk each), and the command runs as a shell user runs it. Its peak resident memory is the
high-water mark (VmHWM) of the command's own process after it started, read every 10 ms
until it exits (the kernel `record` starts is another process; wait4's ru_maxrss is not
used: it counts the pages the child shared with this generator before exec).

  * record:       a notebook of 1 GB (200 code cells, each with 5 MB of saved output)
  * validate:     a trajectory file of 1 GB in 10,000 steps of 100 KB of output
  * validate:     a trajectory file whose one step is a 1 GB line (reported, not parsed)
  * import-june:  a JuNE log (CSV) of 1 GB: 10,000 executions of 100 KB of output

    python benchmarks/cli_memory.py [--size-mb 1024] [--only record,validate,june]
"""

from __future__ import annotations

import argparse
import base64
import csv
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

MB = 1024 * 1024


def hwm_kb(pid: int) -> int | None:
    """VmHWM of ``pid`` once it runs the command (before exec it is this process's copy)."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            if b"themisto_ext.cli" not in fh.read():
                return None
        with open(f"/proc/{pid}/status") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def run(args: list[str], cwd: Path) -> tuple[int, float, float, str]:
    """(exit status, peak MB of the command, seconds, last line of stderr)."""
    began = time.monotonic()
    proc = subprocess.Popen([sys.executable, "-m", "themisto_ext.cli", *args], cwd=cwd,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    peak = [0]
    done = threading.Event()

    def watch() -> None:
        while not done.is_set():
            value = hwm_kb(proc.pid)
            if value:
                peak[0] = max(peak[0], value)
            time.sleep(0.01)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    stderr = proc.stderr.read() if proc.stderr else ""
    proc.wait()
    done.set()
    watcher.join()
    return (proc.returncode, peak[0] / 1024, time.monotonic() - began,
            stderr.strip().splitlines()[-1] if stderr.strip() else "")


def make_notebook(path: Path, size: int) -> str:
    cells = 200
    blob = base64.b64encode(os.urandom(size // cells * 3 // 4)).decode()
    with path.open("w") as fh:
        fh.write('{"metadata": {}, "nbformat": 4, "nbformat_minor": 5, "cells": [')
        for i in range(cells):
            cell = {"cell_type": "code", "execution_count": i + 1, "metadata": {},
                    "source": f"x{i} = {i}\n", "outputs": [{
                        "output_type": "display_data", "metadata": {},
                        "data": {"image/png": blob, "text/plain": "<Figure>"}}]}
            fh.write(("," if i else "") + json.dumps(cell))
        fh.write("]}")
    return f"{cells} cells"


def step(n: int, output: str) -> dict:
    return {"format_version": 1, "trajectory_id": "big", "kernel_id": "k", "step": n,
            "cell_id": None, "notebook_path": "big.ipynb",
            "started_at": "2026-01-01T00:00:00+00:00", "ended_at": "2026-01-01T00:00:01+00:00",
            "code": f"print(x{n})", "output": output,
            "outputs": [{"output_type": "stream", "name": "stdout", "mime_types": ["text/plain"],
                         "text": output}],
            "execution_time": 0.01, "memory_bytes": 1000, "runtime_variables": {},
            "hash_index": "0" * 32, "error": None}


def make_trajectory(path: Path, size: int) -> str:
    steps = 10_000
    chunk = size // steps // 2  # output and outputs[].text
    with path.open("w") as fh:
        for n in range(1, steps + 1):
            fh.write(json.dumps(step(n, f"{n:08d} " + "y" * chunk)) + "\n")
    return f"{steps} steps"


def make_one_line(path: Path, size: int) -> str:
    with path.open("w") as fh:
        fh.write(json.dumps(step(1, "ok")) + "\n")
        record = json.dumps(step(2, "z" * (size // 2)))
        fh.write(record + "\n")
        del record
        fh.write(json.dumps(step(3, "ok")) + "\n")
    return "3 steps, one of them a 1 GB line"


def make_june(path: Path, size: int) -> str:
    executions = 10_000
    output = "o" * (size // executions)
    columns = ["action_id", "time", "session_id", "kernel_id", "notebook_name", "event",
               "cell_index", "cell_num", "cell_type", "cell_source", "cell_output", "user_id"]
    with path.open("w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(columns)
        for n in range(executions):
            kernel, cell, at = f"kernel{n % 8}", str(n % 50), 1_700_000_000 + n
            for event, text in (("execute", ""), ("finished_execute", f"{n} {output}")):
                writer.writerow([f"{n}-{event}", at, "s", kernel, "big.ipynb", event, cell, cell,
                                 "code", f"print({n})", text, "u"])
    return f"{executions} executions in 8 kernels"


CASES = {
    "record": ("big.ipynb", make_notebook, ["--store", "s.sqlite3", "record", "big.ipynb"]),
    "validate": ("big.jsonl", make_trajectory, ["validate", "big.jsonl"]),
    "validate-line": ("line.jsonl", make_one_line, ["validate", "line.jsonl"]),
    "june": ("big.csv", make_june, ["import-june", "big.csv", "--out", "june.jsonl"]),
}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--size-mb", type=int, default=1024)
    parser.add_argument("--only", default=",".join(CASES))
    args = parser.parse_args()
    size = args.size_mb * MB
    for name in args.only.split(","):
        filename, make, command = CASES[name]
        with tempfile.TemporaryDirectory(prefix="themisto-cli-mem-") as tmp:
            work = Path(tmp)
            what = make(work / filename, size)
            actual = (work / filename).stat().st_size / MB
            code, peak, seconds, last = run(command, work)
            print(f"{name:14s} {actual:6.0f} MB input ({what}): peak {peak:5.0f} MB, "
                  f"{seconds:5.1f} s, exit {code}; {last[:100]}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
