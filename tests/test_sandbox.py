"""The measuring copy (``kernel/sandbox.py``) run directly: answers, errors, and who is
blamed when time runs out. Real forked copies, real signals.

Each case runs in a fresh interpreter, as a kernel's would: the copy is a ``clone`` that
nothing tidies, so in the test process (threads left by a thousand earlier tests: pools,
servers' executors) a lock another thread held at that instant can hang the copy until it
is killed, and the answers come back as "not reached" (seen once in CI: [None, None]).
That is the sandbox working as designed, not what these cases test."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from themisto_ext.kernel import sandbox

pytestmark = pytest.mark.skipif(not sandbox.available(), reason="needs Linux fork")


def stubborn(_: object) -> str:
    """A repr that swallows the deadline's exception and goes on for 2 s."""
    end = time.monotonic() + 2
    while time.monotonic() < end:
        try:
            time.sleep(0.01)
        except BaseException:  # the point of this repr
            pass
    return "done"


def fresh(call: str) -> object:
    """``call`` (an expression over ``sandbox`` and this module's ``stubborn``) evaluated in
    a new interpreter; its JSON result."""
    code = ("import json, sys; sys.path.insert(0, 'tests'); import test_sandbox as t; "
            "from themisto_ext.kernel import sandbox; stubborn = t.stubborn; "
            f"print(json.dumps({call}))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=60, cwd=Path(__file__).resolve().parent.parent)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_answers_and_errors_come_back_in_order():
    assert fresh("sandbox.run([2, 0], lambda v: str(1 / v), 0.5, 2.0)") == \
        ["0.5", "raised ZeroDivisionError"]


def test_a_value_that_had_its_whole_budget_is_timed_out_and_the_next_is_pending():
    assert fresh("sandbox.run([1, 2], stubborn, per_value=0.2, seconds=1.0)") == \
        [sandbox.TIMED_OUT, None]


def test_a_value_barely_begun_when_time_runs_out_is_pending_not_blamed():
    # The call ends before the value had its budget (a copy that started late on a loaded
    # machine): it stays pending, to be measured at a later cell, instead of "timed out".
    assert fresh("sandbox.run([1, 2], stubborn, per_value=1.0, seconds=0.3)") == [None, None]
