"""``themisto bench`` on real recorded trajectories: fake server, baseline, resume, order."""

from __future__ import annotations

import asyncio
import io
import json
import os
import re
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
from conftest import ROOT
from fake_llm import FakeLLM, error, ok

from themisto_ext.cli.main import main
from themisto_ext.cli.predictions import END_MARK, SYSTEM_MARK, USER_MARK, prompt_text
from themisto_ext.evaluation.run import (
    RESULTS_FILE,
    SUMMARY_FILE,
    BenchConfig,
    history_plan,
    load_results,
    run_bench,
)
from themisto_ext.evaluation.sample import read_examples, sample, write_examples
from themisto_ext.prediction.metrics import score
from themisto_ext.prediction.prompts import Prompt
from themisto_ext.prediction.prompts.build import build_prompt
from themisto_ext.prediction.prompts.window import estimated_window, fit_prompt

CONTEXTS = ["none", "full", "curated"]


@pytest.fixture(scope="module")
def benches(tmp_path_factory, recorded_notebooks: Path) -> dict[str, Path]:
    """Output and next-cell benchmarks of 12 examples from two recorded notebooks."""
    work = tmp_path_factory.mktemp("bench")
    trajectories = recorded_notebooks
    paths = {}
    for task in ("output", "next-cell"):
        paths[task] = work / f"{task}.jsonl"
        with paths[task].open("w", encoding="utf-8") as fh:
            write_examples(sample([trajectories], task, n=12, seed=1).examples, fh)
    return paths


def prompt_of(example: dict, context: str, contexts: list[str] = CONTEXTS) -> tuple[str, str]:
    """The prompt as build_prompt makes it, with the history every context of the run
    shares (the benchmarks' window of 16,384 tokens holds the 24,000-character budget)."""
    built = shared_prompt(example, context, contexts)
    return built.system, built.user


def shared_prompt(example: dict, context: str, contexts: list[str],
                  budget: int = 24_000) -> Prompt:
    code = example["target"]["code"] if example["task"] == "output" else None
    plan = history_plan(example, contexts, budget, None)  # type: ignore[arg-type]
    return build_prompt(example["history"], example["task"], context, target_code=code,
                        budget_chars=plan.budget_chars, min_dropped=plan.dropped)


def request_prompts(llm: FakeLLM, start: int = 0) -> list[tuple[str, str]]:
    """The (system, user) prompts of the requests from the ``start``-th on; a request whose
    body never arrived whole (its sender was SIGKILLed mid-request) has none."""
    return [(r.body["messages"][0]["content"], r.body["messages"][-1]["content"])
            for r in llm.requests[start:] if r.body is not None]


def bench(*args: str) -> int:
    return main(["bench", *args])


def test_bench_against_the_fake_server(benches, tmp_path, capsys):
    examples = read_examples(benches["output"])
    out = tmp_path / "results"
    with FakeLLM(answer="array([1, 2, 3])") as llm:
        llm.script(*[ok(delay=0.02) for _ in range(36)])
        code = bench(str(benches["output"]), "--predictor", "openai:fake", "--base-url",
                     llm.openai_url, "--out", str(out), "--concurrency", "3")
        assert code == 0
        assert len(llm.requests) == 36
        assert 1 < llm.max_in_flight <= 3
        sent = Counter(request_prompts(llm))
    expected = {prompt_of(e, c): (e, c) for e in examples for c in CONTEXTS}
    assert sent == Counter(expected.keys())  # every prompt once, exactly as build_prompt makes it

    lines = (out / RESULTS_FILE).read_text().splitlines()
    records = [json.loads(line) for line in lines]
    assert len(records) == 36
    by_id = {e["id"]: e for e in examples}
    for r in records:
        example = by_id[r["example_id"]]
        assert r["task"] == "output" and r["predictor"] == "openai:fake" and r["error"] is None
        assert r["context"] in CONTEXTS
        assert (r["prompt"]["system"], r["prompt"]["user"]) == prompt_of(example, r["context"])
        assert r["raw"] == r["answer"] == "array([1, 2, 3])"
        assert r["reference"] == example["target"]["output"]
        assert r["scores"] == score(r["answer"], r["reference"])
        assert r["latency"] >= 0.02 and r["prompt_tokens"] > 0 and r["completion_tokens"] > 0
    summary = json.loads((out / SUMMARY_FILE).read_text())
    assert summary["records"] == 36 and summary["errors"] == 0
    for group in summary["groups"]:
        mine = [r for r in records if r["context"] == group["context"]]
        assert group["n"] == 12
        for metric, mean in group["means"].items():
            assert mean == pytest.approx(sum(r["scores"][metric] for r in mine) / 12)
    err = capsys.readouterr().err
    assert "bench [" in err and "36/36" in err


def test_a_failed_call_is_recorded_and_retried_on_the_next_run(benches, tmp_path, capsys):
    out = tmp_path / "results"
    args = [str(benches["output"]), "--predictor", "openai:fake", "--context", "none,full",
            "--out", str(out), "--concurrency", "1"]
    with FakeLLM(answer="42") as llm:
        llm.script(ok(), ok(), error(400, "scripted refusal"))
        assert bench(*args, "--base-url", llm.openai_url) == 1
        assert "1 calls failed" in capsys.readouterr().err
        assert len(llm.requests) == 24
        records = load_results(out / RESULTS_FILE).latest
        failed = [r for r in records.values() if r["error"]]
        assert len(failed) == 1 and "scripted refusal" in failed[0]["error"]["message"]
        assert failed[0]["scores"] is None
        assert json.loads((out / SUMMARY_FILE).read_text())["errors"] == 1

        assert bench(*args, "--base-url", llm.openai_url) == 0
        assert len(llm.requests) == 25  # only the failed pair again
        retried = request_prompts(llm)[-1]
        assert retried == (failed[0]["prompt"]["system"], failed[0]["prompt"]["user"])
    latest = load_results(out / RESULTS_FILE)
    assert latest.lines == 25 and len(latest.latest) == 24
    assert not any(r["error"] for r in latest.latest.values())
    assert json.loads((out / SUMMARY_FILE).read_text())["errors"] == 0


def test_an_interrupted_run_continues_without_paying_twice(benches, tmp_path, capsys):
    examples = read_examples(benches["next-cell"])
    out = tmp_path / "results"
    with FakeLLM(answer="df.head()") as llm:
        # The first run gets through a third of the examples (as if stopped there) ...
        config = BenchConfig(["openai:fake"], CONTEXTS, out, base_url=llm.openai_url)  # type: ignore[arg-type]
        asyncio.run(run_bench(examples[:4], benches["next-cell"], config,
                              progress_stream=io.StringIO()))
        assert len(llm.requests) == 12
        # ... and was killed while writing a line.
        with (out / RESULTS_FILE).open("a") as fh:
            fh.write('{"example_id": "next-cell-')
        assert bench(str(benches["next-cell"]), "--predictor", "openai:fake", "--base-url",
                     llm.openai_url, "--out", str(out)) == 0
        assert len(llm.requests) == 36
        assert len(set(request_prompts(llm))) == 36  # no call made twice
    loaded = load_results(out / RESULTS_FILE)
    assert len(loaded.latest) == 36 and loaded.unreadable == 1
    assert "12 done before, 24 run now" in capsys.readouterr().out


def test_a_killed_process_resumes_where_it_stopped(benches, tmp_path):
    out = tmp_path / "results"
    results = out / RESULTS_FILE
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT),
                                                       os.environ.get("PYTHONPATH", "")]))
    with FakeLLM(answer="x") as llm:
        llm.script(*[ok(delay=0.1) for _ in range(36)])
        cmd = [sys.executable, "-m", "themisto_ext.cli", "bench", str(benches["output"]),
               "--predictor", "openai:fake", "--base-url", llm.openai_url, "--out", str(out),
               "--concurrency", "1"]
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and (
                not results.exists() or len(results.read_text().splitlines()) < 5):
            time.sleep(0.02)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        done = len(load_results(results).latest)
        assert 5 <= done < 36
        asked_before = len(llm.requests)
        llm.script()  # nothing scripted any more: instant answers
        assert bench(str(benches["output"]), "--predictor", "openai:fake", "--base-url",
                     llm.openai_url, "--out", str(out)) == 0
        after = request_prompts(llm, asked_before)
    finished = {(r["prompt"]["system"], r["prompt"]["user"])
                for r in list(load_results(results).latest.values())[:done]}
    assert not finished & set(after)           # nothing that had finished was asked again
    assert len(after) == 36 - done
    assert len(load_results(results).latest) == 36


def test_in_order_runs_each_trajectory_in_step_order_with_the_same_results(benches, tmp_path):
    examples = read_examples(benches["output"])
    where = {prompt_of(e, c): (e["provenance"]["trajectory_id"], c, e["target"]["step"])
             for e in examples for c in CONTEXTS}
    with FakeLLM() as llm:  # echoes the prompt's last line: answers depend on the prompt only
        llm.script(*[ok(delay=0.01) for _ in range(36)])
        assert bench(str(benches["output"]), "--predictor", "openai:fake", "--base-url",
                     llm.openai_url, "--out", str(tmp_path / "ordered"), "--in-order") == 0
        sequences: dict[tuple[str, str], list[int]] = {}
        for prompt in request_prompts(llm):
            trajectory, context, step = where[prompt]
            sequences.setdefault((trajectory, context), []).append(step)
        assert len(sequences) == 6
        for steps in sequences.values():
            assert steps == sorted(steps)
        assert bench(str(benches["output"]), "--predictor", "openai:fake", "--base-url",
                     llm.openai_url, "--out", str(tmp_path / "any")) == 0
    ordered = load_results(tmp_path / "ordered" / RESULTS_FILE).latest
    unordered = load_results(tmp_path / "any" / RESULTS_FILE).latest
    assert ordered.keys() == unordered.keys()
    for key, record in ordered.items():
        assert (record["answer"], record["scores"]) == \
            (unordered[key]["answer"], unordered[key]["scores"])


@pytest.mark.parametrize("task", ["output", "next-cell"])
def test_baseline_predictor_results_do_not_depend_on_order(benches, tmp_path, capsys, task):
    for flags, name in (([], "a"), (["--in-order", "--concurrency", "1"], "b")):
        assert bench(str(benches[task]), "--predictor", "baseline", "--context", "none,curated",
                     "--out", str(tmp_path / name), *flags) == 0
    a = load_results(tmp_path / "a" / RESULTS_FILE).latest
    b = load_results(tmp_path / "b" / RESULTS_FILE).latest
    assert len(a) == 24 and a.keys() == b.keys()
    for key in a:
        assert a[key]["error"] is None
        assert a[key]["scores"] == score(a[key]["answer"], a[key]["reference"])
        assert (a[key]["answer"], a[key]["scores"]) == (b[key]["answer"], b[key]["scores"])
    if task == "next-cell":  # it repeats an earlier cell; for outputs it often abstains
        assert any(r["answer"] for r in a.values())
    assert main(["report", str(tmp_path / "a"), "--resamples", "100",
                 "--figure", str(tmp_path / "f.png")]) == 0
    out = capsys.readouterr().out
    # under curated the baseline reads the state, under none it cannot; a next cell it
    # predicts from code alone. Contexts giving the same answers are not tested.
    differ = any(a[(e, "baseline", "curated")]["answer"] != a[(e, "baseline", "none")]["answer"]
                 for e, _, _ in a)
    assert differ == ("| baseline: curated - none | 12 | 2 |" in out)
    assert differ != ("baseline: curated - none not tested (the same answers" in out)
    assert not (task == "next-cell" and differ)
    assert (tmp_path / "f.png").stat().st_size > 0


def test_dump_prompts_writes_every_prompt_and_calls_nothing(benches, tmp_path, capsys):
    examples = read_examples(benches["next-cell"])
    folder = tmp_path / "prompts"
    assert bench(str(benches["next-cell"]), "--context", "none,full",
                 "--dump-prompts", str(folder)) == 0
    files = sorted(folder.rglob("*.txt"))
    assert len(files) == 24
    example = examples[3]
    text = (folder / "full" / f"{example['id']}.txt").read_text()
    assert text == prompt_text(shared_prompt(example, "full", ["none", "full"]))
    assert text.startswith(f"{SYSTEM_MARK}\n") and text.endswith(f"\n{END_MARK}\n")
    assert text.count(USER_MARK) == 3  # two demonstration questions, then the real one
    assert "wrote 24 prompts" in capsys.readouterr().out


def test_results_directory_belongs_to_one_benchmark(benches, tmp_path, capsys):
    out = str(tmp_path / "results")
    assert bench(str(benches["output"]), "--predictor", "baseline", "--context", "none",
                 "--out", out) == 0
    assert bench(str(benches["next-cell"]), "--predictor", "baseline", "--context", "none",
                 "--out", out) == 1
    assert "holds results of another benchmark" in capsys.readouterr().err


@pytest.mark.parametrize(("args", "message"), [
    (["--predictor", "gpt5", "--out", "r"], "unknown predictor 'gpt5'"),
    (["--predictor", "baseline", "--context", "none,some", "--out", "r"], "unknown context some"),
    (["--out", "r"], "give at least one --predictor"),
    (["--predictor", "baseline"], "give the results directory with --out"),
])
def test_usage_errors_are_one_line(benches, tmp_path, capsys, args, message):
    args = [a if a != "r" else str(tmp_path / "r") for a in args]
    assert bench(str(benches["output"]), *args) == 1
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1
    assert not (tmp_path / "r").exists()  # nothing written


def test_results_carry_strata_and_the_run_describes_its_examples(benches, tmp_path, capsys):
    out = tmp_path / "r"
    assert bench(str(benches["output"]), "--predictor", "baseline", "--predictor",
                 "copy-previous", "--context", "none,full", "--out", str(out)) == 0
    records = load_results(out / RESULTS_FILE).latest.values()
    examples = {e["id"]: e for e in read_examples(benches["output"])}
    for r in records:
        example = examples[r["example_id"]]
        assert r["stratum"] == example["stratum"]
        assert r["trajectory_id"] == example["provenance"]["trajectory_id"]
        assert r["queue_seconds"] is None or r["queue_seconds"] >= 0
    run = json.loads((out / "run.json").read_text())
    assert run["sampling"]["output"] == {"n": 12, "seed": 1, "errors": "drop",
                                         "environment": "keep", "source": "any",
                                         "candidates": run["sampling"]["output"]["candidates"],
                                         "census": False}
    assert run["realism"]["trajectories"] == 2 and run["realism"]["reruns"] == 0
    # counted per task, from the examples' own flags
    assert run["targets"] == {"output": 12}
    assert run["environment_targets"] == {
        "output": sum(e["environment_dependent"] for e in examples.values())}
    for r in records:
        assert r["environment_dependent"] == examples[r["example_id"]]["environment_dependent"]
    assert main(["report", str(out), "--resamples", "200"]) == 0
    report = capsys.readouterr().out
    assert "## What the trajectories are like" in report
    assert "2 trajectories" in report and "0 re-runs (0% of steps; 0 edited, 0%)" in report
    assert "| copy-previous | none | 12 | 0 | 0 | 12 | 2 |" in report


def test_in_order_chains_keep_their_slot_so_caches_are_not_interleaved(benches, tmp_path):
    examples = read_examples(benches["output"])
    where = {prompt_of(e, c): (e["provenance"]["trajectory_id"], c)
             for e in examples for c in CONTEXTS}
    with FakeLLM(answer="1") as llm:
        assert bench(str(benches["output"]), "--predictor", "openai:fake", "--base-url",
                     llm.openai_url, "--out", str(tmp_path / "r"), "--in-order",
                     "--concurrency", "1") == 0
        chains = [where[prompt] for prompt in request_prompts(llm)]
    runs = [chain for i, chain in enumerate(chains) if i == 0 or chains[i - 1] != chain]
    assert len(runs) == len(set(chains)) == 6  # each chain ran in one go


def test_window_options_are_checked(benches, tmp_path, capsys):
    with pytest.raises(SystemExit) as usage:  # a usage error, before anything runs
        bench(str(benches["output"]), "--predictor", "openai:m", "--out",
              str(tmp_path / "r"), "--window", "0")
    assert usage.value.code == 2
    assert "--window: must be at least 1, got 0" in capsys.readouterr().err
    assert bench(str(benches["output"]), "--predictor", "openai:m", "--out",
                 str(tmp_path / "r"), "--tokenizer", "absent.gguf") == 1
    assert "--tokenizer absent.gguf: no such file" in capsys.readouterr().err


CELL = re.compile(r'<cell step="(\d+)"[^>]*>\n<code>\n(.*?)\n</code>\n<output[^>]*>(.*?)</output>',
                  re.DOTALL)


def history_cells(user: str) -> tuple[tuple[str, str, str], ...]:
    """(step, code, output) of every history cell a prompt shows."""
    return tuple(CELL.findall(user.split("<target_cell>", 1)[0]))


def test_every_context_of_an_example_shows_the_same_history(benches, tmp_path):
    """Issue 25, item 2: fitted one by one to a small window, ``full`` (its state changes)
    keeps fewer history cells than ``none``; a "state helps" contrast would then mix state
    with less history. Every context gets the cut of the one that needs most room."""
    examples = read_examples(benches["output"])
    window = estimated_window(3_000)
    alone = {(e["id"], c): fit_prompt(lambda b, e=e, c=c: build_prompt(
        e["history"], "output", c, target_code=e["target"]["code"], budget_chars=b),
        24_000, window) for e in examples for c in CONTEXTS}
    # without the shared plan, the contexts' histories differ (else this test shows nothing)
    assert any(len({history_cells(alone[(e["id"], c)].user) for c in CONTEXTS}) > 1
               for e in examples)
    out = tmp_path / "r"
    with FakeLLM(answer="1") as llm:
        assert bench(str(benches["output"]), "--predictor", "openai:fake", "--base-url",
                     llm.openai_url, "--out", str(out), "--window", "3000") == 0
    records = load_results(out / RESULTS_FILE).latest
    for example in examples:
        shown = {c: records[(example["id"], "openai:fake", c)] for c in CONTEXTS}
        cells = {c: history_cells(r["prompt"]["user"]) for c, r in shown.items()}
        assert cells["none"] == cells["full"] == cells["curated"], example["id"]
        assert cells["none"], "every prompt here shows some history"
        assert len({r["dropped_steps"] for r in shown.values()}) == 1
        assert len({json.dumps(r["history_plan"]) for r in shown.values()}) == 1
        plan = shown["full"]["history_plan"]
        assert plan["dropped_steps"] == shown["full"]["dropped_steps"]
        for context, record in shown.items():  # and each prompt fits the window
            prompt = build_prompt(example["history"], "output", context,
                                  target_code=example["target"]["code"],
                                  budget_chars=plan["budget_chars"],
                                  min_dropped=plan["dropped_steps"])
            assert record["prompt"]["user"] == prompt.user
            assert window.count(prompt) <= window.room(prompt)
    summary = tmp_path / "s.json"
    assert main(["report", str(out), "--resamples", "200", "--json", str(summary),
                 "--out", str(tmp_path / "r.md")]) == 0
    assert json.loads(summary.read_text())["tasks"][0]["histories"] == \
        {"openai:fake": {"equal": 12, "examples": 12}}
    assert "show the same history cells under every context (the cut the context needing " \
        "most room needs), on 12 of 12 examples for openai:fake" in \
        (tmp_path / "r.md").read_text().replace("\n", " ")


def test_a_demonstration_echo_and_other_garbage_are_flagged(benches, tmp_path):
    """Issue 25, item 3: SmolLM2 returned the prompt's own example answer for 65 of 180
    next cells. Each answer that is no prediction (the demonstration's answer, markup,
    empty, cut off at the cap) is counted per predictor, with its interval."""
    demonstration = build_prompt([], "output", "none", target_code="x").demonstrations[0]
    echoed = demonstration.assistant.removeprefix("<output>\n").removesuffix("\n</output>")
    assert echoed == "radius 2.0\n4.0"
    replies = [echoed] * 4 + ["1\n<state_changes>\nx: int\n"] * 3 + [""] * 2 \
        + ["x = 1\n" * 300] * 3  # 1,800 characters: every one of the 256 tokens
    out = tmp_path / "r"
    with FakeLLM() as llm:
        llm.script(*[ok(text) for text in replies])
        assert bench(str(benches["output"]), "--predictor", "openai:fake", "--predictor",
                     "copy-previous", "--base-url", llm.openai_url, "--context", "none",
                     "--out", str(out)) == 0
    records = [r for r in load_results(out / RESULTS_FILE).latest.values()
               if r["predictor"] == "openai:fake"]
    assert Counter(r["answer"] for r in records)[echoed] == 4
    assert all(r["answer_cap"] == 256 for r in records)
    summary_path = tmp_path / "s.json"
    assert main(["report", str(out), "--resamples", "200", "--json", str(summary_path),
                 "--out", str(tmp_path / "r.md")]) == 0
    summary = json.loads(summary_path.read_text())
    rates = {g["predictor"]: g for g in summary["garbage"]}
    assert rates["openai:fake"]["kinds"] == {"demonstration": 4, "markup": 3, "empty": 2,
                                             "cap": 3}
    assert rates["openai:fake"]["rate"] == 1.0 and rates["openai:fake"]["n"] == 12
    assert rates["copy-previous"]["kinds"]["demonstration"] == 0
    assert "| openai:fake | none | 1.000 [1.000, 1.000] | 4 | 3 | 2 | 3 |" in \
        (tmp_path / "r.md").read_text()
