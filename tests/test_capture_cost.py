"""What the hook costs does not grow with what the namespace or the output holds (issue 23):
every text pass over outputs is linear (time(4n)/time(n) as for the redaction patterns),
a frame's width, a bytearray's length and a cell's length cost nothing extra. Figures
are printed by benchmarks/capture_overhead.py; these tests pin the behaviour."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import RecordingKernel
from test_redaction_values import LINEAR, ratio

from themisto_ext.contract import CaptureSettings
from themisto_ext.kernel.measure import size_of
from themisto_ext.kernel.outputs import OutputCollector
from themisto_ext.kernel.reprs import pandas_object_columns
from themisto_ext.trajectory.text import strip_ansi


@pytest.mark.parametrize("make", [
    lambda n: "\x1b]" * (n // 2),                     # unterminated OSC, each to the end
    lambda n: "\x1b]0;title" * (n // 9),
    lambda n: "\x1b]8;;http://x" + "y" * n,
    lambda n: "\x1b[" * (n // 2),
    lambda n: "\x1b[1;31" * (n // 6),
    lambda n: ("\x1b]0;t\x07" + "text\n") * (n // 10),
])
def test_output_cleaning_runs_in_linear_time(make: Callable[[int], str]):
    assert ratio(strip_ansi, make) < LINEAR


def test_terminated_escapes_are_removed_and_unterminated_ones_kept():
    text = "a\x1b]0;title\x07b\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\ \x1b[31mred\x1b[0m \x1b]open"
    assert strip_ansi(text) == "ablink red \x1b]open"


def test_collecting_many_stream_messages_is_linear():
    def collect(messages: list[tuple[str, dict]]) -> None:
        collector = OutputCollector()
        collector.start()
        for kind, content in messages:
            collector._observe(kind, content)
        collector.stop()

    def make(n: int) -> list[tuple[str, dict]]:  # a cell that flushes every print
        return [("stream", {"name": "stdout", "text": f"line {i}\n"}) for i in range(n // 8)]

    assert ratio(collect, make, n=40_000) < LINEAR


def wide_frame(columns: int) -> pd.DataFrame:
    return pd.DataFrame(np.zeros((2, columns)))


def test_a_frames_width_does_not_make_measuring_it_slower():
    def measure(frame: pd.DataFrame) -> None:
        size_of(frame)
        pandas_object_columns(frame, 6)

    narrow, wide = wide_frame(1_000), wide_frame(100_000)
    # column by column, 100 times the columns took ~100 times as long
    assert ratio(lambda width: measure(narrow if width == 1 else wide),
                 lambda n: 1 if n < 40_000 else 100) < LINEAR
    size, exact = size_of(wide)
    assert exact and size >= wide.values.nbytes


def test_object_columns_are_sampled_in_total_not_per_column():
    frame = pd.DataFrame({f"c{i}": [f"x{j}" for j in range(100)] for i in range(3_000)})
    size, exact = size_of(frame)
    per_string = size_of("x10")[0]
    assert not exact and 0.8 * 300_000 * per_string < size < 300_000 * (per_string + 16)


@pytest.fixture
def kernel(tmp_path: Path) -> Iterator[RecordingKernel]:
    k = RecordingKernel(tmp_path / "journal", "cost-kernel", CaptureSettings())
    yield k
    k.km.shutdown_kernel(now=True)
    k.kc.stop_channels()


def printed(k: RecordingKernel, code: str) -> str:
    _, shown = k.run(code)
    return "".join(m["content"].get("text", "") for m in shown if m["msg_type"] == "stream")


def test_a_huge_bytearray_is_never_copied(kernel: RecordingKernel):
    kernel.run("import resource\ndef peak():\n"
               "    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024")
    kernel.run("before = peak()\nba = bytearray(200 * 2**20)")
    grown = int(printed(kernel, "print(peak() - before)"))
    assert grown < 1.3 * 200 * 2**20, grown  # the bytearray, not a second copy of it
    info = kernel.steps()[-1]["runtime_variables"]["ba"]
    assert info["size"] >= 200 * 2**20 and info["size_exact"]


def test_a_long_cell_is_transformed_once(kernel: RecordingKernel):
    kernel.run("shell = get_ipython()\ncalls = []\noriginal = shell.transform_cell\n"
               "def counting(cell):\n    calls.append(len(cell))\n    return original(cell)\n"
               "shell.transform_cell = counting")
    kernel.run("\n".join(f"x{i} = {i} != {i + 1}" for i in range(20_000)))
    lengths = json.loads(printed(kernel, "print(calls)"))
    big, small = max(lengths), min(lengths)
    # as often as IPython transforms any cell (this one, without %!?, the hook never does)
    assert lengths.count(big) == lengths.count(small), lengths
    assert kernel.steps()[-2]["runtime_variables"]["x0"]["repr"] == "True"


def test_a_value_left_for_later_still_has_its_size(tmp_path: Path):
    # no budget at all: every value is pending, a str's size costs nothing all the same
    k = RecordingKernel(tmp_path / "journal", "pending-kernel",
                        CaptureSettings(cell_budget=0.0))
    try:
        k.run("s = 'x' * 10**8")
        info = k.steps()[-1]["runtime_variables"]["s"]
        assert info["size"] >= 10**8 and info["size_exact"] and info["repr"].startswith(
            "<pending")
    finally:
        k.stop()
