"""How long the README's set-up takes from a clean clone, phase by phase, with no compiler.

    python benchmarks/setup_time.py [--repo .] [--with-tests] [--warm-cache]

Clones the repository's HEAD into a temporary folder and runs ``bash scripts/run.sh
--no-browser`` there with an empty pip cache (``--warm-cache``: the user's) and every C/C++
compiler on PATH replaced by one that fails, until JupyterLab answers; prints when each
phase the script announces began and ended (venv, Python packages and the front-end build,
the model, first answer), then times ``themisto --help`` and ``themisto record`` of a
one-cell notebook against nbclient running the same notebook (medians of 5). With
``--with-tests`` it then runs ``bash scripts/test.sh`` in the same clone and times it whole.
The last line is JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

COMPILERS = ("cc", "c++", "gcc", "g++", "clang", "clang++", "cmake", "ninja", "make")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as r:
            return bool(r.status == 200)
    except OSError:
        return False


def median_seconds(command: list[str], env: dict[str, str], cwd: Path, runs: int = 5) -> float:
    times = []
    for _ in range(runs):
        began = time.perf_counter()
        subprocess.run(command, env=env, cwd=cwd, capture_output=True, check=True)
        times.append(time.perf_counter() - began)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repo", type=Path, default=Path(__file__).resolve().parent.parent)
    parser.add_argument("--with-tests", action="store_true")
    parser.add_argument("--warm-cache", action="store_true")
    parser.add_argument("--keep", action="store_true", help="keep the clone")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="themisto-setup-"))
    clone = work / "clone"
    subprocess.run(["git", "clone", "-q", str(args.repo), str(clone)], check=True)
    fake = work / "no-compilers"
    fake.mkdir()
    for name in COMPILERS:
        (fake / name).write_text(f"#!/bin/sh\necho 'setup_time: {name} was run' >&2\nexit 1\n")
        (fake / name).chmod(0o755)
    env = {k: v for k, v in os.environ.items() if not k.startswith("VIRTUAL_ENV")}
    env["PATH"] = f"{fake}:{env['PATH']}"
    if not args.warm_cache:
        env["PIP_CACHE_DIR"] = str(work / "pip-cache")
    port = free_port()
    began = time.monotonic()
    phases: list[tuple[float, str]] = [(0.0, "start")]
    compiled: list[str] = []
    proc = subprocess.Popen(["bash", "scripts/run.sh", "--no-browser", f"--port={port}",
                             "--ServerApp.token=", "--ip=127.0.0.1"], cwd=clone, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)

    def read() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            if line.startswith("==> "):
                phases.append((time.monotonic() - began, line[4:].strip()))
            if "was run" in line:
                compiled.append(line.strip())

    threading.Thread(target=read, daemon=True).start()
    try:
        while not answers(f"http://127.0.0.1:{port}/lab"):
            if proc.poll() is not None:
                raise SystemExit(f"scripts/run.sh ended with {proc.returncode}")
            time.sleep(0.5)
        answered = time.monotonic() - began
        phases.append((answered, "JupyterLab answers"))
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    for (at, what), (until, _) in zip(phases, [*phases[1:], (answered, "")], strict=True):
        print(f"{at:7.1f} s  {what}  ({until - at:.1f} s)")
    print(f"JupyterLab answered after {answered:.1f} s; compilers run: {len(compiled)}")

    venv = clone / ".venv" / "bin"
    notebook = work / "one.ipynb"
    notebook.write_text(json.dumps({"nbformat": 4, "nbformat_minor": 5, "metadata": {
        "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}},
        "cells": [{"cell_type": "code", "id": "a", "metadata": {}, "execution_count": None,
                   "outputs": [], "source": "print(6 * 7)"}]}))
    run_env = {**env, "THEMISTO_STORE_PATH": str(work / "store.sqlite3")}
    help_s = median_seconds([str(venv / "themisto"), "--help"], run_env, work)
    record_s = median_seconds([str(venv / "themisto"), "record", str(notebook)], run_env, work)
    nbclient_s = median_seconds([str(venv / "jupyter"), "execute", str(notebook)], run_env,
                                work)
    print(f"themisto --help {help_s:.2f} s; themisto record {record_s:.2f} s; "
          f"jupyter execute (nbclient) {nbclient_s:.2f} s; record over nbclient "
          f"{record_s - nbclient_s:+.2f} s (medians of 5)")
    tests_s = None
    if args.with_tests:
        started = time.monotonic()
        done = subprocess.run(["bash", "scripts/test.sh"], cwd=clone, env=env, check=False,
                              capture_output=True, text=True)
        tests_s = time.monotonic() - started
        print(f"scripts/test.sh: exit {done.returncode} in {tests_s:.0f} s; "
              f"{done.stdout.strip().splitlines()[-1] if done.stdout.strip() else ''}")
    print(json.dumps({"run_sh_answered_s": answered, "compilers_run": len(compiled),
                      "phases": [{"at_s": at, "phase": what} for at, what in phases],
                      "help_s": help_s, "record_s": record_s, "nbclient_s": nbclient_s,
                      "tests_s": tests_s, "pip_cache": "warm" if args.warm_cache else "empty"}))
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    sys.exit(1 if compiled else 0)


if __name__ == "__main__":
    main()
