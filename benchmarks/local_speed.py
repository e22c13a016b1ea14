"""Speed of the local predictor (llama.cpp, SmolLM2-135M GGUF) on this machine.

Prints: model load time; prompt and generation rates (tokens/s); the time to a complete
output prediction for a ~2,000-token notebook trajectory from a cold context; then, with
the next step appended, the same with prefix reuse (warm) and with reuse disabled. Each
repeat uses a different trajectory, so every cold run is really cold.

    python benchmarks/local_speed.py [--tokens 2000] [--repeats 3] [--max-tokens 64] [--busy N]
                                     [--pipe 20]

``--busy N`` keeps N cores busy with other processes meanwhile, as a kernel running the cell
being predicted would. The model runs in its own process (as the server runs it); ``--pipe``
predictions of a warm session (a new short cell each, streamed) are then made both through
that process and by the same engine in this process, alternately, to measure what the
process boundary costs a prediction, and the model process's memory is read.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace

import psutil

from themisto_ext.contract import default_home
from themisto_ext.prediction.clients.base import PredictionRequest
from themisto_ext.prediction.clients.local import LocalPredictor
from themisto_ext.prediction.clients.local.engine import Engine, Run
from themisto_ext.prediction.clients.local.worker import Job, Worker
from themisto_ext.prediction.prompts import Prompt

SYSTEM = (
    "You simulate a Jupyter kernel. Below are the cells this notebook executed, in order, "
    "with their outputs. Predict exactly what the target cell prints or displays. Reply "
    "with the output only, no explanation."
)
COLUMNS = ["price", "quantity", "discount", "rating", "age", "income", "score", "visits"]
CATEGORIES = ["region", "segment", "channel", "store"]
LEVELS = ["north", "south", "east", "west", "online", "retail"]


def table(rng: random.Random, index: list[str], columns: list[str]) -> str:
    width = max(len(i) for i in index) + 2
    lines = [" " * width + "".join(f"{c:>11}" for c in columns)]
    for i in index:
        values = "".join(f"{rng.uniform(0, 900):>11.2f}" for _ in columns)
        lines.append(f"{i:<{width}}{values}")
    return "\n".join(lines)


def make_cell(rng: random.Random, name: str) -> tuple[str, str]:
    """One data-science cell and what it printed, in the styles notebooks show."""
    cols = rng.sample(COLUMNS, 4)
    cat, num = rng.choice(CATEGORIES), cols[0]
    kind = rng.randrange(8)
    if kind == 0:
        shape = f"({rng.randrange(1_000, 90_000)}, {len(cols) + 2})"
        return f"{name} = pd.read_csv('data/{name}.csv')\n{name}.shape", shape
    if kind == 1:
        return f"{name}.head()", table(rng, [str(i) for i in range(5)], cols)
    if kind == 2:
        stats = ["count", "mean", "std", "min", "25%", "50%", "75%", "max"]
        return f"{name}[{cols}].describe()", table(rng, stats, cols)
    if kind == 3:
        counts = "\n".join(f"{c:<10}{rng.randrange(0, 400)}" for c in cols)
        return f"{name}.isna().sum()", f"{counts}\ndtype: int64"
    if kind == 4:
        groups = rng.sample(LEVELS, 4)
        lines = "\n".join(f"{g:<8}{rng.uniform(10, 500):.2f}" for g in groups)
        return (
            f"{name}.groupby('{cat}')['{num}'].mean().round(2)",
            f"{cat}\n{lines}\nName: {num}, dtype: float64",
        )
    if kind == 5:
        code = (
            f"X = {name}[{cols[1:]}]\ny = {name}['{num}']\n"
            "X_train, X_test, y_train, y_test = train_test_split(X, y, random_state=0)\n"
            "model = LinearRegression().fit(X_train, y_train)\n"
            "print(f'R^2 = {model.score(X_test, y_test):.3f}')"
        )
        return code, f"R^2 = {rng.uniform(0.2, 0.95):.3f}"
    if kind == 6:
        code = f"{name}['{cat}'].astype(int)"
        return code, (
            "---------------------------------------------------------------------------\n"
            "ValueError                                Traceback (most recent call last)\n"
            f"Cell In[1], line 1\n----> 1 {code}\n"
            f"ValueError: invalid literal for int() with base 10: '{rng.choice(LEVELS)}'"
        )
    lines = "\n".join(f"{q} {rng.uniform(0, 900):.3f}" for q in (0.25, 0.5, 0.75))
    return f"for q in (0.25, 0.5, 0.75):\n    print(q, {name}['{num}'].quantile(q))", lines


def render(n: int, code: str, output: str) -> str:
    return f"In [{n}]:\n{code}\nOut [{n}]:\n{output}\n\n"


def suffix(n: int, code: str, frame: str) -> str:
    return (
        f"Variables now: {frame}: DataFrame, model: LinearRegression\n"
        f"Target cell In [{n}]:\n{code}\nPredicted output:\n"
    )


class Trajectory:
    """A notebook session whose prompt is ~``tokens`` long, and its next step."""

    def __init__(self, predictor: LocalPredictor, seed: int, tokens: int) -> None:
        rng = random.Random(seed)
        self.frame = rng.choice(["sales", "churn", "visits", "claims", "orders"]) + str(seed)
        self.cells: list[tuple[str, str]] = []
        prefix = ""
        budget = tokens - predictor.count_tokens(SYSTEM) - 40  # 40: template and suffix
        while predictor.count_tokens(prefix) < budget:
            self.cells.append(make_cell(rng, self.frame))
            prefix += render(len(self.cells), *self.cells[-1])
        # Two more cells: the target of this step, then the target of the next step.
        self.cells += [make_cell(rng, self.frame), make_cell(rng, self.frame)]

    def request(self, step: int, session: str) -> PredictionRequest:
        """Step 0 predicts the second-last cell, step 1 the last, with step 0's cell added."""
        n = len(self.cells) - 1 + step  # the target's 1-based cell number
        prefix = "".join(render(i + 1, *cell) for i, cell in enumerate(self.cells[: n - 1]))
        code = self.cells[n - 1][0]
        prompt = Prompt("output", "full", SYSTEM, prefix, suffix(n, code, self.frame))
        return PredictionRequest("output", [], code, prompt, session)


def summary(values: list[float], unit: str = "", digits: int = 2) -> str:
    median = f"{statistics.median(values):8.{digits}f} {unit}".rstrip()
    if len(values) == 1:
        return median
    return f"{median} (median; min {min(values):.{digits}f}, max {max(values):.{digits}f})"


@contextmanager
def busy_cores(count: int) -> Iterator[None]:
    # Each spinner stops by itself after 10 minutes even if this process dies.
    spin = "import time\nend = time.monotonic() + 600\nwhile time.monotonic() < end: pass"
    spinners = [subprocess.Popen([sys.executable, "-c", spin]) for _ in range(count)]
    try:
        yield
    finally:
        for spinner in spinners:
            spinner.kill()
            spinner.wait()


class InProcess:
    """The engine in this process, as the server ran it before the model had a process of
    its own: the reference for what the process boundary costs."""

    def __init__(self, max_tokens: int) -> None:
        self.engine = Engine(None, n_threads=2, n_threads_decode=1, n_ctx=4096,
                             max_tokens=max_tokens, max_sessions=4, cache_bytes=512 << 20,
                             reuse_prefix=True, prefix_dir=default_home() / "model-states")
        self.worker = Worker()

    async def predict(self, request: PredictionRequest) -> Run:
        called = time.perf_counter()
        loop = asyncio.get_running_loop()
        sink = request.on_text
        relay = None if sink is None else (
            lambda text: loop.call_soon_threadsafe(sink, text))
        job = Job((request.session or "", "output"), lambda: self.engine.complete(
            request.prompt, request.session, called, None, relay), urgent=True)
        self.worker.submit(job)
        return await asyncio.wrap_future(job.future)

    def close(self) -> None:
        thread = self.worker.close()
        if thread is not None:
            thread.join()
        self.engine.close()


async def pipe_cost(count: int) -> None:
    """Caller-observed time of the same streamed predictions through the model process and
    in this process, alternately, on the same warm session shape."""
    out_of_process = LocalPredictor(max_tokens=16)
    in_process = InProcess(16)
    await out_of_process.load()
    await asyncio.to_thread(in_process.engine.load)
    rng = random.Random(7)
    history = "".join(render(i + 1, *make_cell(rng, "sales")) for i in range(12))
    walls: dict[str, list[float]] = {"process": [], "in-process": []}
    pieces: dict[str, list[int]] = {"process": [], "in-process": []}
    for i in range(count + 1):  # the first of each warms its session: not counted
        code = f"sales['price'].head({i + 2}).sum()"
        prompt = Prompt("output", "full", SYSTEM, history, suffix(13, code, "sales"))
        for name, predictor in (("process", out_of_process), ("in-process", in_process)):
            seen: list[str] = []
            request = replace(PredictionRequest("output", [], code, prompt, "pipe"),
                              on_text=seen.append)
            began = time.perf_counter()
            await predictor.predict(request)
            if i:
                walls[name].append(time.perf_counter() - began)
                pieces[name].append(len(seen))
    pid = out_of_process.pid
    rss = psutil.Process(pid).memory_info().rss if pid else 0
    await out_of_process.aclose()
    in_process.close()
    gap = [a - b for a, b in zip(walls["process"], walls["in-process"], strict=True)]
    print(f"\nprocess boundary, {count} streamed predictions of a warm session "
          f"(16 tokens at most, {statistics.median(pieces['process']):.0f} pieces each):")
    print(f"through the model process:     {summary(walls['process'], 's', 3)}")
    print(f"in this process:               {summary(walls['in-process'], 's', 3)}")
    print(f"difference per prediction:     {summary([g * 1000 for g in gap], 'ms', 1)}")
    print(f"model process RSS:             {rss / 2**20:8.0f} MiB")
    print(f"this process's RSS:            "
          f"{psutil.Process().memory_info().rss / 2**20:8.0f} MiB (with the in-process engine)")


async def main(tokens: int, repeats: int, max_tokens: int, busy: int, pipe: int) -> None:
    print(f"load average before: {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")
    warm_predictor = LocalPredictor(max_tokens=max_tokens)
    no_reuse = LocalPredictor(max_tokens=max_tokens, reuse_prefix=False)
    began = time.perf_counter()
    await warm_predictor.load()  # starts the model process: its load and self-test
    load = time.perf_counter() - began
    await no_reuse.load()

    rows: dict[str, list[float]] = {}

    def add(key: str, value: float) -> None:
        rows.setdefault(key, []).append(value)

    for r in range(repeats):
        trajectory = Trajectory(warm_predictor, seed=r, tokens=tokens)
        session = f"bench-{r}"
        cold = await warm_predictor.predict(trajectory.request(0, session))
        warm = await warm_predictor.predict(trajectory.request(1, session))
        off = await no_reuse.predict(trajectory.request(1, session))
        for key, c in (("cold", cold), ("warm", warm), ("off", off)):
            timings = c.raw["timings"]
            evaluated = c.prompt_tokens - c.cached_tokens
            generating = timings["run_seconds"] - timings["prompt_eval_seconds"]
            add(f"{key} latency", c.latency)
            add(f"{key} prompt tokens", c.prompt_tokens)
            add(f"{key} cached tokens", c.cached_tokens)
            add(f"{key} completion tokens", c.completion_tokens)
            if evaluated >= 200:  # short evaluations say little about throughput
                add("prompt rate", evaluated / timings["prompt_eval_seconds"])
            if c.completion_tokens > 1:
                add("generation rate", c.completion_tokens / generating)
        print(
            f"  repeat {r + 1}: cold {cold.latency:.2f} s ({cold.prompt_tokens} tokens), "
            f"warm {warm.latency:.2f} s ({warm.cached_tokens}/{warm.prompt_tokens} reused), "
            f"reuse off {off.latency:.2f} s",
            flush=True,
        )

    await warm_predictor.aclose()
    await no_reuse.aclose()
    speedup = [o / w for o, w in zip(rows["off latency"], rows["warm latency"], strict=True)]
    print(f"\nmodel: {cold.model}, threads: 2 for the prompt, 1 to decode")
    print(f"up to {max_tokens} new tokens, {repeats} repeats, {busy} cores kept busy")
    print(f"load time:                     {load:8.2f} s")
    print(f"prompt evaluation:             {summary(rows['prompt rate'], 'tokens/s')}")
    print(f"generation:                    {summary(rows['generation rate'], 'tokens/s')}")
    print(f"prompt tokens, cold:           {summary(rows['cold prompt tokens'], digits=0)}")
    print(f"prompt tokens, next step:      {summary(rows['warm prompt tokens'], digits=0)}")
    print(f"completion tokens, cold:       {summary(rows['cold completion tokens'], digits=0)}")
    print(f"cold output prediction:        {summary(rows['cold latency'], 's')}")
    print(f"next step, prefix reused:      {summary(rows['warm latency'], 's')}")
    print(f"  reused prompt tokens:        {summary(rows['warm cached tokens'], digits=0)}")
    print(f"next step, reuse disabled:     {summary(rows['off latency'], 's')}")
    print(f"speed-up from reuse:           {summary(speedup, 'x')}")
    if pipe:
        await pipe_cost(pipe)
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, default=2000, help="cold prompt length")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--max-tokens", type=int, default=64, help="tokens to generate at most")
    parser.add_argument("--busy", type=int, default=0, help="cores to keep busy meanwhile")
    parser.add_argument("--pipe", type=int, default=20,
                        help="predictions for the process-boundary comparison (0: none)")
    args = parser.parse_args()
    with busy_cores(args.busy):
        asyncio.run(main(args.tokens, args.repeats, args.max_tokens, args.busy, args.pipe))
