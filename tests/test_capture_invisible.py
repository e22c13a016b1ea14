"""Nothing the user can observe differs with the hook loaded (issue 23): the same cells in
a kernel without the hook and in a recording kernel print the same, whatever the cells
count (user dunders, a replaced ``builtins.repr``), watch (trace and profile functions,
at-fork handlers, ``os.wait``, SIGCHLD) or patch (a frozen ``time.perf_counter``)."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT, RecordingKernel
from jupyter_client import KernelManager

from themisto_ext.contract import CaptureSettings
from themisto_ext.kernel.snapshot import PENDING

COUNTING = """
import time
counter = [0]
class Counting:
    def __repr__(self):
        counter[0] += 1
        time.sleep(0.3)
        return "counting"
    __str__ = __repr__
    def __hash__(self):
        return 7
    def __eq__(self, other):
        return self is other
"""


class PlainKernel:
    """A python3 kernel without the hook: what the user sees without themisto."""

    def __init__(self) -> None:
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT),
                                                           os.environ.get("PYTHONPATH", "")]))
        self.km = KernelManager(kernel_name="python3")
        self.km.start_kernel(env=env)
        self.kc = self.km.client()
        self.kc.start_channels()
        self.kc.wait_for_ready(timeout=60)

    def run(self, code: str, timeout: float = 60) -> tuple[dict[str, Any], list[dict]]:
        shown: list[dict] = []
        reply = self.kc.execute_interactive(code, timeout=timeout, output_hook=shown.append)
        return reply, shown

    def stop(self) -> None:
        self.kc.stop_channels()
        self.km.shutdown_kernel(now=True)


def seen(shown: list[dict]) -> list[tuple[str, str]]:
    """What a cell showed: stream text, results, error names and messages."""
    out = []
    for m in shown:
        content = m["content"]
        if m["msg_type"] == "stream":
            out.append((content["name"], content["text"]))
        elif m["msg_type"] in ("execute_result", "display_data"):
            out.append(("data", content["data"].get("text/plain", "")))
        elif m["msg_type"] == "error":
            out.append(("error", f"{content['ename']}: {content['evalue']}"))
    return out


@pytest.fixture
def kernels(request: pytest.FixtureRequest,
            tmp_path: Path) -> Iterator[tuple[PlainKernel, RecordingKernel]]:
    settings = getattr(request, "param", None) or CaptureSettings()
    plain = PlainKernel()
    recording = RecordingKernel(tmp_path / "journal", "invisible-kernel", settings)
    yield plain, recording
    plain.stop()
    recording.km.shutdown_kernel(now=True)
    recording.kc.stop_channels()


def same_in_both(kernels: tuple[PlainKernel, RecordingKernel],
                 cells: list[str]) -> list[list[tuple[str, str]]]:
    plain, recording = kernels
    shown = []
    for code in cells:
        without, with_hook = seen(plain.run(code)[1]), seen(recording.run(code)[1])
        assert with_hook == without, code
        shown.append(with_hook)
    return shown


def test_user_dunders_the_cell_never_shows_never_run(kernels):
    cells = [
        COUNTING,
        "import numpy as np, pandas as pd\nlabelled = pd.DataFrame({Counting(): [1, 2]})",
        "named = pd.Series([1, 2], name=Counting())",
        "categorical = pd.Series(pd.Categorical([Counting(), Counting()]))",
        "fields = np.zeros(2, dtype=[('x', 'O'), ('y', 'i4')])\nfields['x'][0] = Counting()",
        "class Meta(type):\n    def __eq__(cls, other):\n        counter[0] += 1\n"
        "        return cls is other\n    __hash__ = type.__hash__\n"
        "class A(metaclass=Meta): pass\nclass B(metaclass=Meta): pass\nv = A()",
        "v = B()",
        "raise ValueError(Counting())",
        "print(counter[0])",
    ]
    same_in_both(kernels, cells)  # the counter included (IPython's traceback runs __str__)
    steps = kernels[1].steps()
    assert steps[1]["runtime_variables"]["labelled"]["shape"] == [2, 1]


def test_a_replaced_builtins_repr_is_never_called_by_the_hook(kernels):
    same_in_both(kernels, [
        "import builtins\ncalls = [0]\nreal = builtins.repr\n"
        "def counting(obj):\n    calls[0] += 1\n    return real(obj)\nbuiltins.repr = counting",
        "x = [1, 2, 'three']\ny = {'a': (1, 2)}",
        "class U:\n    def __repr__(self):\n        return 'u'\nu = U()",
        "print(calls[0])",
    ])


def test_trace_and_profile_functions_see_only_the_hooks_entry(kernels):
    cells = ["import sys\nframes = set()\n"
             "def watch(frame, event, arg):\n"
             "    frames.add((frame.f_code.co_filename, frame.f_code.co_name))\n"
             "    return watch\n"
             "sys.settrace(watch)\nsys.setprofile(watch)",
             "x = [1, 2, 3]", "class U:\n    def __repr__(self):\n        return 'u'\nu = U()",
             "print(len(x))",
             "sys.settrace(None)\nsys.setprofile(None)\n"
             "hook = sorted({name for file, name in frames if 'themisto_ext' in file})"]
    plain, recording = kernels
    for code in cells:
        recording.run(code)
        plain.run(code)
    shown = seen(recording.run("import json\nprint(json.dumps(hook))")[1])
    names = set(json.loads(shown[0][1]))
    # before: 1,166 / 779 of the hook's frames a cell; now the calls that enter it
    # (``visit``: the AST transformer's entry, kernel/deletions.py)
    assert names <= {"_pre_run_cell", "_post_run_cell", "send", "untraced", "visit"}, names


# A budget a loaded CI machine cannot run out of: starting the copy took > 0.1 s there
# (the default cell budget) and left ``t`` pending, which is right but not what this tests.
@pytest.mark.parametrize("kernels", [CaptureSettings(cell_budget=5.0, value_budget=2.0)],
                         indirect=True, ids=["generous-budget"])
def test_the_measuring_copy_is_invisible(kernels):
    shown = same_in_both(kernels, [
        "import os, signal, time\nchld = []\n"
        "os.register_at_fork(before=lambda: print('before fork'),\n"
        "                    after_in_parent=lambda: print('after fork'))\n"
        "signal.signal(signal.SIGCHLD, lambda signum, frame: chld.append(signum))",
        "class Slow:\n    def __repr__(self):\n        return 'slow'\ns = Slow()",
        "t = Slow()",
        "time.sleep(0.3)\nprint('SIGCHLD received:', len(chld))",
        "try:\n    print(os.wait())\nexcept ChildProcessError:\n    print('no child to reap')",
    ])
    assert shown[-2:] == [[("stdout", "SIGCHLD received: 0\n")],
                          [("stdout", "no child to reap\n")]]
    # measured in the copy: at its cell, or, when that copy hung before it began (a lock
    # another kernel thread held at the clone, e.g. malloc's: about 1 run in 5 here, and
    # the value stays pending, as sandbox.py documents), by the copy of a later cell
    steps = kernels[1].steps()
    measured = [step["runtime_variables"]["t"]["repr"] for step in steps[2:]]
    assert "slow" in measured, measured
    assert set(measured) <= {"slow", PENDING}, measured


def test_a_frozen_clock_does_not_stretch_the_snapshot_budget(kernels):
    _, recording = kernels
    recording.run("import time\nclass Slow:\n    def __repr__(self):\n"
                  "        time.sleep(0.03)\n        return 'slow'\n"
                  "time.perf_counter = lambda: 1000.0  # what freezegun does")
    recording.run("for i in range(100):\n    globals()[f's{i}'] = Slow()")
    variables = recording.steps()[-1]["runtime_variables"]
    measured = [n for n, v in variables.items() if n.startswith("s") and v["repr"] == "slow"]
    # 0.1 s of budget on the real clock: a few of the 100 (3 s of reprs), not all
    assert len(measured) < 50, len(measured)


def test_deleting_a_secret_named_variable_behaves_as_without_the_hook(kernels):
    """The call the hook puts before ``del password`` (to learn the value while it exists)
    changes no output, no error, no traceback line and leaves no name behind."""
    plain, recording = kernels
    same_in_both(kernels, [
        "api_password = 'x' * 12\nprint('before')\ndel api_password\n"
        "print('api_password' in dir())",
        "try:\n    del missing_password\nexcept NameError as e:\n    print(e)",
        "for i in range(2):\n    tok_secret = i\n    if i:\n        del tok_secret, i",
        "print(sorted(k for k in globals() if 'themisto' in k), tok_secret)",
    ])
    code = "auth_token = 1\n\ndel auth_token\ndel auth_token"
    tracebacks = []
    for kernel in (plain, recording):
        error = next(m["content"] for m in kernel.run(code)[1] if m["msg_type"] == "error")
        text = re.sub(r"\x1b\[[0-9;]*m", "", "\n".join(error["traceback"]))
        tracebacks.append([line for line in text.splitlines() if "del auth_token" in line])
    assert tracebacks[0] == tracebacks[1] and tracebacks[0], tracebacks
