"""Line-level execution traces (issue 24): ``%%themisto_trace`` in a real kernel."""

from __future__ import annotations

import json
from typing import Any

from conftest import RecordingKernel

from themisto_ext.kernel.tracer import EVENTS, PER_LINE, SECONDS, TRACE_BYTES
from themisto_ext.trajectory import step_problems

LOOP = """%%themisto_trace
total = 0
for i in range(30):
    total += i
def double(a):
    b = a * 2
    return b
c = double(total)
print(c)"""


def last_step(k: RecordingKernel) -> dict[str, Any]:
    return k.steps()[-1]


def printed(shown: list[dict[str, Any]]) -> str:
    return "".join(m["content"]["text"] for m in shown if m["msg_type"] == "stream")


def test_a_traced_loop_shows_lines_changes_and_summarises_iterations(
        recording_kernel: RecordingKernel):
    k = recording_kernel
    reply, shown = k.run(LOOP)
    assert reply["content"]["status"] == "ok" and printed(shown) == "870\n"
    step = last_step(k)
    assert step_problems(step) == []
    trace = step["trace"]
    events = trace["events"]
    # Line numbers are the cell's as written (the magic is line 1).
    assert events[0] == {"line": 2, "changed": {"total": "0"}}
    assert events[1] == {"line": 3, "changed": {"i": "0"}}
    assert events[3] == {"line": 3, "changed": {"i": "1"}}
    assert events[4] == {"line": 4, "changed": {"total": "1"}}
    # The first PER_LINE iterations in full, the rest counted.
    assert sum(1 for e in events if e["line"] == 4) == PER_LINE
    assert trace["hits"]["4"] == 30 and trace["omitted"]["4"] == 30 - PER_LINE
    # The loop's last test, which ends it, is recorded: what the omitted iterations left.
    assert trace["hits"]["3"] == 31 and trace["omitted"]["3"] == 31 - PER_LINE - 1
    ending = events.index({"line": 3, "changed": {"i": "29", "total": "435"}})
    assert events[ending + 1]["line"] == 5
    assert events[ending + 1]["changed"]["double"].startswith("<function double at 0x")
    assert events[ending + 2:] == [
        {"line": 6, "function": "double", "changed": {"a": "435", "b": "870"}},
        {"line": 7, "function": "double", "changed": {}},
        {"line": 8, "changed": {"c": "870"}},
        {"line": 9, "changed": {}}]
    assert "truncated" not in trace
    assert step["code"] == LOOP and step["output"] == "870\n"


def test_an_untraced_cell_has_no_trace_and_no_tracer(recording_kernel: RecordingKernel):
    k = recording_kernel
    k.run(LOOP)
    _, shown = k.run("import sys\nprint(sys.gettrace())")
    assert printed(shown) == "None\n"
    assert "trace" not in last_step(k)


def test_a_secret_assigned_in_a_traced_cell_is_masked_in_the_trace(
        recording_kernel: RecordingKernel):
    k = recording_kernel
    # Built at run time: the code does not show it, only the values do.
    k.run("%%themisto_trace\ndb_password = 'xkcd' * 3 + str(936 * 7)\n"
          "copy = 'pw: ' + db_password\nlength = len(db_password)")
    journal = "".join(p.read_text() for p in k.journal_dir.glob("*.jsonl"))
    assert "xkcdxkcdxkcd6552" not in journal
    events = last_step(k)["trace"]["events"]
    assert events[0]["changed"] == {"db_password": "<redacted>"}
    assert events[1]["changed"]["copy"].startswith("'pw: ")
    assert events[2]["changed"] == {"length": "16"}


USER_TRACER = """import sys
seen = []
def mine(frame, event, arg):
    if 'acc' in frame.f_code.co_names:
        seen.append((event, frame.f_lineno))
    return mine
sys.settrace(mine)"""
BODY = "acc = []\nfor j in range(3):\n    acc.append(j * 2)"


def test_the_users_trace_function_sees_its_events_and_is_restored(
        recording_kernel: RecordingKernel):
    k = recording_kernel
    k.run(USER_TRACER)
    k.run(BODY)
    _, shown = k.run("alone = list(seen); seen.clear()")
    k.run("%%themisto_trace\n" + BODY)
    _, shown = k.run("print(seen == alone, len(alone) > 8, sys.gettrace() is mine)")
    assert printed(shown) == "True True True\n"
    trace = k.steps()[-2]["trace"]
    assert [e["line"] for e in trace["events"][:3]] == [2, 3, 4]
    assert trace["events"][-2:] == [{"line": 4, "changed": {"acc": "[0, 2, 4]"}},
                                    {"line": 3, "changed": {}}]
    assert "truncated" not in trace


def test_a_repr_with_side_effects_is_never_called(recording_kernel: RecordingKernel):
    k = recording_kernel
    k.run("calls = []\nclass Loud:\n    def __repr__(self):\n        calls.append(1)\n"
          "        return 'LOUD'\n    def __eq__(self, other):\n        calls.append(2)\n"
          "        return True\n    __hash__ = object.__hash__")
    k.run("%%themisto_trace\nobj = Loud()\nboth = [obj, 7]\nobj = Loud()")
    _, shown = k.run("print(calls)")
    assert printed(shown) == "[]\n"
    events = k.steps()[-2]["trace"]["events"]
    assert events[0]["changed"] == {"obj": "<Loud>"}
    assert events[1]["changed"] == {"both": "[<Loud>, 7]"}
    assert events[2]["changed"] == {"obj": "<Loud>"}  # another object: a change


def test_a_huge_loop_is_bounded_in_size_and_time(recording_kernel: RecordingKernel):
    k = recording_kernel
    loop = ("import time\nt0 = time.perf_counter()\nn = 0\nfor i in range(3_000_000):\n"
            "    n += i\nelapsed = time.perf_counter() - t0\nprint(n)")
    _, plain = k.run(loop)
    _, seconds = k.run("print(elapsed)")
    untraced = float(printed(seconds))
    _, traced_out = k.run("%%themisto_trace\n" + loop, timeout=120)
    assert printed(traced_out) == printed(plain)  # the cell did what it does
    _, seconds = k.run("print(elapsed)")
    traced = float(printed(seconds))
    step = k.steps()[-2]
    trace = step["trace"]
    assert trace["truncated"] == "time"
    assert len(json.dumps(trace)) <= TRACE_BYTES
    assert trace["hits"]["6"] > PER_LINE and trace["omitted"]["6"] == trace["hits"]["6"] - PER_LINE
    # The tracer leaves after SECONDS: the rest of the loop runs at full speed.
    assert traced <= untraced + SECONDS + 1.5, (untraced, traced)
    assert step_problems(step) == []


def test_a_long_cell_is_cut_at_the_event_limit(recording_kernel: RecordingKernel):
    k = recording_kernel
    lines = "\n".join(f"v{n} = {n}" for n in range(EVENTS + 200))
    reply, _ = k.run("%%themisto_trace\n" + lines + "\nprint(v1100)")
    assert reply["content"]["status"] == "ok"
    step = last_step(k)
    assert step["output"] == "1100\n"
    trace = step["trace"]
    assert len(trace["events"]) == EVENTS and trace["truncated"] == "events"
    assert trace["events"][-1] == {"line": EVENTS + 1, "changed": {f"v{EVENTS - 1}":
                                                                   str(EVENTS - 1)}}
    assert step_problems(step) == []


def test_a_tracer_that_is_no_python_function_is_left_alone(recording_kernel: RecordingKernel):
    """coverage's C tracer is not a Python function; nor is a partial, used here."""
    k = recording_kernel
    k.run(USER_TRACER.replace("sys.settrace(mine)",
                              "import functools\ntheirs = functools.partial(mine)\n"
                              "sys.settrace(theirs)"))
    k.run("%%themisto_trace\n" + BODY)
    _, shown = k.run("print(len(seen) > 8, sys.gettrace() is theirs)")
    assert printed(shown) == "True True\n"
    trace = k.steps()[-2]["trace"]
    assert trace == {"events": [], "hits": {}, "truncated": "c-tracer"}


def test_the_tracer_holds_no_object_of_the_user(recording_kernel: RecordingKernel):
    """A value the cell drops is freed when it is dropped, as without the tracer."""
    k = recording_kernel
    k.run("class Noisy:\n    def __del__(self):\n        print('freed')")
    _, shown = k.run("%%themisto_trace\nobj = Noisy()\nobj = None\nprint('after')")
    assert printed(shown) == "freed\nafter\n"
    assert k.steps()[-1]["trace"]["events"][1] == {"line": 3, "changed": {"obj": "None"}}


def test_a_trace_of_long_reprs_is_cut_at_its_byte_limit(recording_kernel: RecordingKernel):
    k = recording_kernel
    names = " = ".join(f"a{n}" for n in range(20))
    lines = "\n".join(f"{names} = 'x' * 300 + '{n}'" for n in range(100))
    k.run("%%themisto_trace\n" + lines)
    step = last_step(k)
    trace = step["trace"]
    assert trace["truncated"] == "bytes"
    assert len(json.dumps(trace, ensure_ascii=False)) <= TRACE_BYTES
    assert 30 < len(trace["events"]) < 100
    assert len(trace["events"][0]["changed"]) == 20
    assert all(len(r) <= 200 for r in trace["events"][0]["changed"].values())
    assert step_problems(step) == []


def test_an_exception_in_a_traced_cell_is_shown_and_recorded(
        recording_kernel: RecordingKernel):
    k = recording_kernel
    _, shown = k.run("%%themisto_trace\nx = 1\ny = x / 0\nz = 2")
    assert any(m["msg_type"] == "error" for m in shown)
    step = last_step(k)
    assert step["error"]["ename"] == "ZeroDivisionError"
    assert step["trace"]["events"] == [{"line": 2, "changed": {"x": "1"}},
                                       {"line": 3, "changed": {}}]
    _, shown = k.run("import sys\nprint(sys.gettrace())")
    assert printed(shown) == "None\n"
