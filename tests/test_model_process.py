"""The embedded model in its own process: its death, its hangs and its faults never reach
the caller's process (real model, real llama.cpp, real signals)."""

from __future__ import annotations

import asyncio
import itertools
import json
import logging
import os
import signal
import subprocess
import sys
import textwrap
import time
from dataclasses import replace
from pathlib import Path

import psutil
import pytest

from themisto_ext.events import LIVE_EVENT_SCHEMA_ID, live_event
from themisto_ext.prediction.clients.base import PredictionRequest
from themisto_ext.prediction.clients.local import (
    Limits,
    LocalModelError,
    LocalModelOff,
    LocalPredictor,
    ModelProcessDied,
    ModelProcessHung,
    default_model_path,
)
from themisto_ext.prediction.clients.local.process import FAULT_ENV
from themisto_ext.prediction.prompts import PredictionTask, Prompt

STORY = "Write a very long story about a notebook, at least 250 words."


def request(text: str, session: str | None = None, task: PredictionTask = "next-cell",
            on_text=None) -> PredictionRequest:
    prompt = Prompt(task=task, context="none", system="You write.", prefix="", suffix=text)
    return PredictionRequest(task=task, history=[], target_code=None, prompt=prompt,
                             session=session, on_text=on_text)


async def wait_until(condition, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "condition not met in time"
        await asyncio.sleep(0.01)


async def kill_while_writing(p: LocalPredictor, sig: signal.Signals) -> BaseException:
    """Start a long answer, send ``sig`` to the model process once it writes, and return
    what the prediction ended with."""
    written: list[str] = []
    job = asyncio.create_task(p.predict(request(STORY, "story", on_text=written.append)))
    await wait_until(lambda: len(written) >= 3)
    pid = p.pid
    assert pid is not None and pid != os.getpid()
    os.kill(pid, sig)
    with pytest.raises(LocalModelError) as failed:
        await job
    return failed.value


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGSEGV])
async def test_a_model_process_killed_while_writing_ends_the_prediction_and_restarts(sig):
    p = LocalPredictor(max_tokens=300, reuse_prefix=False)
    try:
        await p.load()
        first_pid = p.pid
        error = await kill_while_writing(p, sig)
        assert isinstance(error, ModelProcessDied)
        assert f"signal {sig.value} ({sig.name})" in str(error), error
        # this process goes on, and the next prediction is answered by a new model process
        answer = await p.predict(request("Reply with one word: ok", "after"))
        assert answer.text.strip()
        assert p.pid is not None and p.pid != first_pid
        status = p.status()
        assert status["state"] == "running" and status["crashes"] == 1
        assert status["restarts"] == 1 and status["rss_bytes"] > 50_000_000
    finally:
        await p.aclose()


async def test_a_job_that_hangs_is_ended_at_its_deadline():
    # SIGSTOP: the process neither answers nor dies, as a native hang would. The deadline
    # (no progress for 10 s) is short for a test, yet long enough for the process that
    # replaces it to load and answer beside two busy cores (2 s was not: the replacement
    # was killed too).
    p = LocalPredictor(max_tokens=300, reuse_prefix=False,
                       limits=Limits(job_deadline=10.0, heartbeat=3600, hang_after=3600))
    try:
        await p.load()
        started = time.monotonic()
        error = await kill_while_writing(p, signal.SIGSTOP)
        assert isinstance(error, ModelProcessHung)
        assert "no answer in 10 s" in str(error), error
        assert time.monotonic() - started < 60
        answer = await p.predict(request("Reply with one word: ok", "after"))
        assert answer.text.strip()
    finally:
        await p.aclose()


async def test_a_long_prompt_reports_progress_batch_by_batch():
    """The job deadline counts from the last sign of progress, and a cold prompt is read in
    batches of 512 tokens, each reported: a prompt that takes longer to read than the
    deadline is not taken for a hang, a batch that never ends is."""
    p = LocalPredictor(max_tokens=4, reuse_prefix=False)
    try:
        await p.load()
        history = "".join(f"# In[{i}]\nframe_{i} = load({i}, rows={i * 37})\n"
                          f"# Out[{i}]\n({i * 37}, 4) mean {i * 0.25:.2f}\n"
                          for i in range(1, 75))
        written: list[str] = []
        job = asyncio.create_task(p.predict(request(
            history + "# In[75]\nframe_74.shape\n", task="output", on_text=written.append)))
        signs: set[float] = set()
        while not job.done() and not written:
            running = p._process.running
            if running is not None and running.running is not None:
                signs.add(running.last_progress)
            await asyncio.sleep(0.02)
        answer = await job
        assert answer.prompt_tokens is not None and answer.prompt_tokens > 3000
        assert len(signs) >= 4, signs  # the start, then reports while it read the prompt
    finally:
        await p.aclose()


async def test_a_process_that_stops_answering_heartbeats_is_replaced():
    p = LocalPredictor(max_tokens=8, reuse_prefix=False,
                       limits=Limits(heartbeat=0.2, hang_after=1.0))
    try:
        await p.load()
        stopped = p.pid
        assert stopped is not None
        os.kill(stopped, signal.SIGSTOP)  # idle, so only the heartbeat can tell
        await wait_until(lambda: not psutil.pid_exists(stopped)
                         or psutil.Process(stopped).status() == psutil.STATUS_ZOMBIE)
        await wait_until(lambda: p.status()["state"] == "running" and p.pid != stopped)
        assert "heartbeat" not in (p.status()["reason"] or "")  # running again: no reason
        answer = await p.predict(request("Reply with one word: ok", "after", task="output"))
        assert answer.text.strip()
    finally:
        await p.aclose()


async def test_repeated_crashes_switch_the_local_model_off_with_the_reason(caplog):
    p = LocalPredictor(max_tokens=300, reuse_prefix=False,
                       limits=Limits(max_crashes=2, crash_window=600, backoff=0.1))
    try:
        await p.load()
        await kill_while_writing(p, signal.SIGSEGV)
        await kill_while_writing(p, signal.SIGKILL)
        status = p.status()
        assert status["state"] == "off" and status["pid"] is None
        assert "died 2 times in 600 s" in status["reason"]
        assert "signal 9 (SIGKILL)" in status["reason"]
        with pytest.raises(LocalModelOff, match="the local model is off"):
            await p.predict(request("Reply with one word: ok"))
        with pytest.raises(LocalModelOff):
            p.count_tokens("no process is started again")
        said = [r for r in caplog.records if "the local model is off" in r.getMessage()]
        assert len(said) == 1 and said[0].levelno == logging.ERROR
    finally:
        await p.aclose()


async def test_a_corrupt_model_file_is_one_clear_error_and_never_a_crash_loop(tmp_path, caplog):
    bad = tmp_path / "corrupt.gguf"
    bad.write_bytes(b"GGUF" + os.urandom(4096))
    p = LocalPredictor(bad)
    try:
        with pytest.raises(LocalModelError, match="could not load") as first:
            await p.predict(request("hello"))
        assert p.status()["state"] == "failed"
        spawned = [r for r in caplog.records if "cannot start" in r.getMessage()]
        with pytest.raises(LocalModelError) as again:
            await p.predict(request("hello"))
        assert str(again.value) == str(first.value)
        assert p.status()["restarts"] == 0 and p.status()["crashes"] == 0
        assert len([r for r in caplog.records if "cannot start" in r.getMessage()]) \
            == len(spawned) == 1
    finally:
        await p.aclose()


async def test_a_build_that_faults_on_its_self_test_starts_again_in_safe_mode(
        monkeypatch, caplog):
    """What an AMX-advertising VM does to llama.cpp at its first batch, injected: the model
    process faults on its self-test, and the model starts again without extra buffers."""
    monkeypatch.setenv(FAULT_ENV, "self-test")
    p = LocalPredictor(max_tokens=8, reuse_prefix=False)
    try:
        answer = await p.predict(request("Reply with one word: ok", task="output"))
        assert answer.text.strip()
        status = p.status()
        assert status["safe_mode"] is True and status["state"] == "running"
        assert status["crashes"] == 0  # a start-up fault is not a crash of a working model
        assert any("crashed on its self-test (signal 11 (SIGSEGV))" in r.getMessage()
                   for r in caplog.records)
    finally:
        await p.aclose()


async def test_safe_mode_answers_as_the_default_build_does():
    prompt_request = request("Reply with the word ok, then stop.", task="output")
    answers = []
    for safe in (False, True):
        p = LocalPredictor(max_tokens=16, reuse_prefix=False)
        p._process._safe = safe
        try:
            answers.append((await p.predict(prompt_request)).text)
            assert p.status()["safe_mode"] is safe
        finally:
            await p.aclose()
    assert answers[0] == answers[1]


async def test_the_model_process_inherits_no_secrets(monkeypatch):
    monkeypatch.setenv("PGPASSWORD", "hunter2-database")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-" + "x" * 24)
    monkeypatch.setenv("THEMISTO_HARMLESS", "kept")
    p = LocalPredictor(max_tokens=4, reuse_prefix=False)
    try:
        await p.load()
        assert p.pid is not None
        environ = psutil.Process(p.pid).environ()
        assert "PGPASSWORD" not in environ and "OPENAI_API_KEY" not in environ
        assert environ["THEMISTO_HARMLESS"] == "kept"
    finally:
        await p.aclose()


def test_the_model_process_ends_when_its_server_is_killed(tmp_path: Path):
    script = textwrap.dedent("""
        import asyncio, sys
        from themisto_ext.prediction.clients.local import LocalPredictor
        p = LocalPredictor(max_tokens=4, reuse_prefix=False)
        asyncio.run(p.load())
        print(p.pid, flush=True)
        sys.stdin.read()
    """)
    server = subprocess.Popen([sys.executable, "-c", script], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True,
                              cwd=Path(__file__).resolve().parent.parent)
    try:
        assert server.stdout is not None
        model_pid = int(server.stdout.readline())
        assert psutil.Process(model_pid).ppid() == server.pid
        server.kill()
        server.wait()
        psutil.Process(model_pid).wait(timeout=10)  # it noticed, and exited
    finally:
        if server.poll() is None:
            server.kill()


async def test_a_streamed_answer_arrives_whole_through_the_pipe():
    p = LocalPredictor(max_tokens=40, reuse_prefix=False)
    try:
        pieces: list[str] = []
        streamed = await p.predict(replace(request(STORY), on_text=pieces.append))
        await wait_until(lambda: bool(pieces) and streamed.text.startswith(pieces[-1]), timeout=5)
        assert len(pieces) >= 10
        assert all(b.startswith(a) for a, b in itertools.pairwise(pieces))
    finally:
        await p.aclose()


async def test_hybrid_keeps_answering_from_its_rules_when_the_model_is_off():
    from themisto_ext.prediction.clients.hybrid import HybridPredictor
    from themisto_ext.prediction.prompts.build import build_prompt

    local = LocalPredictor(max_tokens=300, reuse_prefix=False,
                           limits=Limits(max_crashes=1, backoff=0.1))
    hybrid = HybridPredictor(local, outputs=True)  # asks its model, as hybrid:local does
    try:
        await local.load()
        await kill_while_writing(local, signal.SIGSEGV)
        assert hybrid.status()["state"] == "off"
        assert hybrid.status()["predictor"] == "hybrid"
        steps = [{"step": 1, "code": "a = 6\nb = a * 7", "output": "", "execution_time": 0.0,
                  "memory_bytes": None, "error": None,
                  "runtime_variables": {"a": {"type": "int", "size": 28, "repr": "6"},
                                        "b": {"type": "int", "size": 28, "repr": "42"}}}]
        prompt = build_prompt(steps, "output", "full", target_code="b")  # type: ignore[arg-type]
        ruled = await hybrid.predict(PredictionRequest(
            task="output", history=steps, target_code="b", prompt=prompt))  # type: ignore[arg-type]
        assert ruled.model == "hybrid:baseline" and ruled.answer == "42"
        unknown = build_prompt([], "output", "full", target_code="mystery(3)")
        with pytest.raises(LocalModelOff):
            await hybrid.predict(PredictionRequest(task="output", history=[],
                                                   target_code="mystery(3)", prompt=unknown))
        # the default hybrid does not ask its model for outputs at all: it abstains
        gated = await HybridPredictor(local).predict(PredictionRequest(
            task="output", history=[], target_code="mystery(3)", prompt=unknown))
        assert (gated.model, gated.answer, gated.abstained) == ("hybrid:abstain", "", True)
    finally:
        await hybrid.aclose()


def test_safe_mode_loads_without_extra_buffer_types():
    from themisto_ext.prediction.clients.local.runtime import server_params

    def params(safe: bool):
        return server_params(default_model_path(), n_ctx=512, n_threads=2,
                             n_threads_decode=1, cache_bytes=0, slot_dir=None, safe=safe,
                             adapter=None)

    assert params(True).no_extra_bufts is True
    assert params(False).no_extra_bufts is False


def test_prompt_threads_are_half_the_cpus_a_container_may_use(tmp_path):
    """llama.cpp's threads spin at a barrier after every operation: more of them than the
    cores left free (a kernel computing) stall each other, so the default takes half of
    what the process may use, and a container's quota counts, not the node's CPUs."""
    from themisto_ext.prediction.clients.local.runtime import prompt_threads, usable_cpus

    allowed = len(os.sched_getaffinity(0))
    root, own = tmp_path / "cgroup", tmp_path / "self-cgroup"
    root.mkdir()
    own.write_text("0::/user.slice/user-1000.slice/jupyter.service\n")
    assert usable_cpus(root, own) == allowed  # no quota files
    group = root / "user.slice" / "user-1000.slice" / "jupyter.service"
    group.mkdir(parents=True)
    (group / "cpu.max").write_text("max 100000\n")
    assert usable_cpus(root, own) == allowed
    (group.parent / "cpu.max").write_text("150000 100000\n")  # the user's slice: 1.5 CPUs
    assert usable_cpus(root, own) == 1
    (group.parent / "cpu.max").unlink()
    own.write_text("4:memory:/x\n1:cpu,cpuacct:/hub/alice\n0::/\n")  # cgroup v1
    v1 = root / "cpu" / "hub" / "alice"
    v1.mkdir(parents=True)
    (v1 / "cpu.cfs_quota_us").write_text("-1\n")
    (v1 / "cpu.cfs_period_us").write_text("100000\n")
    assert usable_cpus(root, own) == allowed
    (v1 / "cpu.cfs_quota_us").write_text("50000\n")
    assert usable_cpus(root, own) == 1
    assert usable_cpus(root, tmp_path / "missing") == allowed  # no /proc: the root only
    assert [prompt_threads(n) for n in (1, 2, 3, 4, 8, 64)] == [1, 1, 1, 2, 4, 4]


@pytest.mark.parametrize("threads", [None, 3])
def test_the_server_option_sets_the_prompt_threads(threads):
    """``ThemistoExtension.local_prompt_threads`` (0: automatic) reaches the model's
    process through ``make_predictor``; nothing is started to see it."""
    from traitlets import TraitError

    from themisto_ext.prediction.clients import make_predictor
    from themisto_ext.prediction.clients.local.runtime import prompt_threads
    from themisto_ext.server.app import ThemistoExtension

    assert ThemistoExtension.local_prompt_threads.default_value == 0
    with pytest.raises(TraitError):  # a negative count is refused when configured
        ThemistoExtension(local_prompt_threads=-1)
    local = make_predictor("local", local_threads=threads)
    assert isinstance(local, LocalPredictor)
    assert local._process._config.n_threads == (threads or prompt_threads())


def test_the_model_server_listens_on_loopback_only_and_wants_its_key(tmp_path):
    """llama.cpp's server routes (tokenizing, slot files) are for the model process only:
    another user of the machine reaching the port gets 401."""
    import httpx

    from themisto_ext.prediction.clients.local.runtime import Runtime

    runtime = Runtime(default_model_path(), n_ctx=512, n_threads=1, n_threads_decode=1,
                      cache_bytes=0, slot_dir=tmp_path, safe=False, adapter=None)
    try:
        address = runtime._address
        assert address.startswith("http://127.0.0.1:")
        assert runtime.tokenize("hello world", special=False)
        for route in ("/tokenize", "/slots/0?action=save", "/v1/chat/completions"):
            answer = httpx.post(address + route, json={"content": "x", "filename": "f"})
            assert answer.status_code == 401, (route, answer.status_code)
        assert not list(tmp_path.iterdir())
    finally:
        runtime.close()


class TestInTheServer:
    """A real server and kernel with the local model: its process crashes, the rest goes on."""

    @pytest.fixture
    def jp_server_config(self, themisto_config) -> dict:
        return themisto_config(predictors=["local"], contexts=["full"], local_max_crashes=2,
                               local_max_tokens=64)

    async def test_model_crashes_never_reach_the_server_or_the_kernel(self, jp_fetch,
                                                                      jp_serverapp):
        import json

        from test_live_predictions import store_of, wait_for
        from test_server import start_kernel, wait_for_steps

        themisto = jp_serverapp.web_app.settings["themisto"]
        (local,) = themisto.live.predictors
        killed: list[int] = []

        async def crash_on_first_piece(logger, schema_id, data) -> None:
            # on the event loop, as the first piece of an output prediction is published:
            # the model is writing it
            event = live_event(data)
            if event["type"] == "writing" and event["task"] == "output" and kill_now:
                kill_now.pop()
                killed.append(event["target_step"])
                os.kill(local.pid, signal.SIGSEGV)

        kill_now: list[bool] = []
        themisto.events.logger.add_listener(schema_id=LIVE_EVENT_SCHEMA_ID,
                                            listener=crash_on_first_piece)

        def unsubscribe() -> None:
            themisto.events.logger.remove_listener(schema_id=LIVE_EVENT_SCHEMA_ID,
                                                   listener=crash_on_first_piece)
        kernel_id, client = await start_kernel(jp_fetch, jp_serverapp)
        store = store_of(jp_serverapp)

        def outputs(tid: str, step: int) -> list[dict]:
            return [p for p in store.predictions(tid, target_step=step) if p["task"] == "output"]

        try:
            await local.load()
            for step, code in enumerate(("values = list(range(5))",
                                         "print(values, sum(values))",
                                         "total = sum(values) * 2",
                                         "print('total', total)"), start=1):
                kill_now[:] = [True] if step in (2, 4) else []
                await client.execute_interactive(code, timeout=60)
                status = await wait_for_steps(jp_fetch, kernel_id, step, timeout=60)
                tid = status["trajectory_id"]
                await wait_for(lambda tid=tid, step=step: outputs(tid, step), timeout=120)
                if step == 2:
                    (died,) = outputs(tid, 2)
                    assert died["error"]["type"] == "ModelProcessDied", died["error"]
                    assert "signal 11 (SIGSEGV)" in died["error"]["message"]
                if step == 3:  # answered by the restarted model
                    (answered,) = outputs(tid, 3)
                    assert answered["error"] is None, answered["error"]
                    assert answered["answer"] is not None
            assert killed == [2, 4]
            # every cell was recorded, the kernel still runs, the server still answers
            assert (await wait_for_steps(jp_fetch, kernel_id, 4))["steps"] == 4
            reply = await client.execute_interactive("print('still here')", timeout=30)
            assert reply["content"]["status"] == "ok"
            r = await jp_fetch("themisto", "api", "predictors")
            (model,) = json.loads(r.body)["local_models"]
            assert model["predictor"] == "local" and model["state"] == "off"
            assert model["crashes"] == 2 and "died 2 times" in model["reason"]
            assert "SIGSEGV" in model["reason"]
        finally:
            unsubscribe()
            client.stop_channels()


def model_processes_of(pid: int) -> list[psutil.Process]:
    return [c for c in psutil.Process(pid).children(recursive=True)
            if "clients.local.process" in " ".join(c.cmdline())]


def test_bench_with_the_local_model_survives_its_crash_as_an_error_row(tmp_path,
                                                                       recorded_notebooks):
    """`themisto bench --predictor local`: the model process is killed with SIGSEGV in the
    middle of the run; that example is an error row, the others are answered."""
    from themisto_ext.evaluation.run import RESULTS_FILE
    from themisto_ext.evaluation.sample import sample, write_examples

    examples = tmp_path / "output.jsonl"
    with examples.open("w", encoding="utf-8") as fh:
        write_examples(sample([recorded_notebooks], "output", n=6, seed=2).examples, fh)
    out = tmp_path / "results"
    root = Path(__file__).resolve().parent.parent
    command = [sys.executable, "-m", "themisto_ext.cli", "bench", str(examples), "--predictor",
               "local", "--context", "none", "--out", str(out), "--concurrency", "1"]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(root),
                                                       os.environ.get("PYTHONPATH", "")]))
    cli = subprocess.Popen(command, cwd=root, env=env, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True)
    try:
        results = out / RESULTS_FILE
        deadline = time.monotonic() + 300
        while not (results.exists() and len(results.read_text().splitlines()) >= 2):
            assert cli.poll() is None, cli.communicate()
            assert time.monotonic() < deadline, "no results in time"
            time.sleep(0.05)
        (model,) = model_processes_of(cli.pid)
        while model.cpu_percent(interval=0.05) < 50:  # killed while it works on an example
            assert time.monotonic() < deadline, "the model never worked again"
        model.send_signal(signal.SIGSEGV)
        _, err = cli.communicate(timeout=600)
    finally:
        if cli.poll() is None:
            cli.kill()
    assert cli.returncode == 1, err  # some calls failed: said, not crashed
    assert "Traceback" not in err and "Segmentation" not in err
    rows = [json.loads(line) for line in results.read_text().splitlines()]
    assert len(rows) == 6
    died = [r for r in rows if r["error"]]
    assert len(died) == 1 and died[0]["error"]["type"] == "ModelProcessDied", died
    assert "SIGSEGV" in died[0]["error"]["message"]
    assert all(r["answer"] is not None for r in rows if not r["error"])


async def test_local_and_hybrid_in_one_server_share_one_model_process():
    from themisto_ext.prediction.clients import make_predictor

    models: dict = {}
    local = make_predictor("local", max_tokens=8, models=models)
    hybrid = make_predictor("hybrid", max_tokens=8, models=models)
    try:
        await local.load()  # type: ignore[attr-defined]
        assert hybrid.status()["pid"] == local.pid  # type: ignore[attr-defined]
        # the same session and task from both: neither supersedes the other's request
        same = [local.predict(request(f"Reply with the word {w}.", "s", task="output"))
                for w in ("one", "two")]
        same.append(hybrid._model.predict(  # type: ignore[attr-defined]
            request("Reply with the word three.", "s", task="output")))
        answers = await asyncio.gather(*same, return_exceptions=True)
        # local's first may be superseded by its second (if still queued); hybrid's never is
        assert not isinstance(answers[1], Exception), answers[1]
        assert not isinstance(answers[2], Exception), answers[2]
        pid = local.pid  # type: ignore[attr-defined]
        await local.aclose()
        assert psutil.pid_exists(pid) and hybrid.status()["state"] == "running"
    finally:
        await hybrid.aclose()
    assert not psutil.pid_exists(pid)  # the last one closed it
