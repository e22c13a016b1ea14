"""Prompt building time on a long synthetic session, for every task and context.

Builds a realistic 500-step trajectory (varied cells and outputs, 20-50 variables per step
with reprs up to 1 kB), then times ``build_prompt`` at many points of the session. Also
counts how often the cached prefix changes when a session is replayed step by step, and
times the first prompt over the whole history when nothing is memoised yet.

    python benchmarks/prompt_speed.py [--steps 500] [--budget 24000]

Target: at most 20 ms per prompt.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from typing import Any

from themisto_ext.prediction.prompts import CONTEXTS, TASKS
from themisto_ext.prediction.prompts.build import build_prompt

TARGET_MS = 20.0

TYPES = ["DataFrame", "Series", "ndarray", "int", "float", "str", "list", "dict", "function",
         "Figure", "LinearRegression", "tuple"]


def _frame_repr(rng: random.Random, rows: int, cols: int) -> str:
    header = "      " + "  ".join(f"col_{c:<6}" for c in range(cols))
    body = [f"{r:<6}" + "  ".join(f"{rng.uniform(-1e3, 1e3):>10.3f}" for _ in range(cols))
            for r in range(rows)]
    return "\n".join([header, *body, f"\n[{rows * 37} rows x {cols} columns]"])


def _value(rng: random.Random, kind: str) -> dict[str, Any]:
    if kind == "DataFrame":
        rows, cols = rng.randint(3, 10), rng.randint(2, 8)
        text = _frame_repr(rng, rows, cols)[:1000]
        return {"type": kind, "size": rng.randint(10**3, 10**8), "size_exact": True,
                "shape": [rows * 37, cols], "length": rows * 37, "repr": text}
    if kind in ("Series", "ndarray", "list", "tuple"):
        n = rng.randint(1, 200)
        text = "[" + ", ".join(f"{rng.random():.4f}" for _ in range(n)) + "]"
        entry: dict[str, Any] = {"type": kind, "size": 8 * n + 96, "size_exact": kind != "list",
                                 "length": n, "repr": text[:1000]}
        if kind in ("Series", "ndarray"):
            entry["shape"] = [n]
        return entry
    if kind == "dict":
        n = rng.randint(1, 40)
        text = "{" + ", ".join(f"'key_{i}': {rng.randint(0, 10**6)}" for i in range(n)) + "}"
        return {"type": kind, "size": 64 * n, "size_exact": False, "length": n,
                "repr": text[:1000]}
    if kind == "str":
        text = "".join(rng.choice("abcdefghij klmnop\n") for _ in range(rng.randint(1, 900)))
        return {"type": kind, "size": 49 + len(text), "size_exact": True, "length": len(text),
                "repr": repr(text)[:1000]}
    if kind in ("int", "float"):
        number = rng.randint(-10**6, 10**6) if kind == "int" else rng.uniform(-1, 1)
        return {"type": kind, "size": 28, "size_exact": True, "repr": repr(number)}
    return {"type": kind, "size": rng.randint(100, 10**5), "size_exact": False,
            "repr": f"<{kind} object at 0x7f{rng.randint(0, 16**8):08x}>"}


def _cell(rng: random.Random, names: list[str]) -> tuple[str, str]:
    a, b = rng.sample(names, 2)
    kind = rng.randrange(7)
    if kind == 0:
        return f"{a}.head()", _frame_repr(rng, 5, rng.randint(2, 6))
    if kind == 1:
        return (f"{a} = {b}.groupby('col_1').agg(['mean', 'std'])\n{a}.shape",
                f"({rng.randint(1, 999)}, {rng.randint(1, 9)})")
    if kind == 2:
        lines = [f"epoch {i}: loss={rng.random():.4f}" for i in range(rng.randint(1, 60))]
        return (f"for epoch in range({len(lines)}):\n    loss = train({a}, {b})\n"
                f"    print(f'epoch {{epoch}}: loss={{loss:.4f}}')", "\n".join(lines))
    if kind == 3:
        return (f"fig, ax = plt.subplots()\nax.plot({a}, {b})\nplt.show()",
                "<Figure size 640x480 with 1 Axes>\n<image/png>")
    if kind == 4:
        return (f"{a}['missing_column']",
                "---------------------------------------------------------------------------\n"
                "KeyError                                  Traceback (most recent call last)\n"
                + "\n".join(f"File site-packages/pandas/core/frame.py:{rng.randint(1, 5000)}"
                            for _ in range(rng.randint(3, 30)))
                + "\nKeyError: 'missing_column'")
    if kind == 5:
        body = "\n".join(f"    {a}_{i} = {b} * {rng.random():.3f}" for i in range(20))
        return f"def step_{rng.randint(0, 999)}({b}):\n{body}\n    return {a}_0", ""
    return f"{a}.describe()", _frame_repr(rng, 8, rng.randint(2, 8))


def synthetic_trajectory(steps: int, seed: int = 0) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    pool = [f"var_{i}" for i in range(80)]
    kinds = {name: rng.choice(TYPES) for name in pool}
    state: dict[str, dict[str, Any]] = {}
    memory = 150_000_000
    out = []
    for number in range(1, steps + 1):
        wanted = rng.randint(20, 50)
        while len(state) < wanted:
            name = rng.choice(pool)
            state.setdefault(name, _value(rng, kinds[name]))
        while len(state) > wanted:
            state.pop(rng.choice(list(state)))
        for name in rng.sample(list(state), rng.randint(0, 3)):
            state[name] = _value(rng, kinds[name])
        code, output = _cell(rng, list(state))
        memory += rng.randint(-10**6, 5 * 10**6)
        error = {"ename": "KeyError", "evalue": "'missing_column'", "traceback": output} \
            if output.endswith("KeyError: 'missing_column'") else None
        out.append({"format_version": 1, "trajectory_id": "bench", "kernel_id": "bench",
                    "step": number, "code": code, "output": output,
                    "execution_time": rng.lognormvariate(-4, 2), "memory_bytes": memory,
                    "runtime_variables": {k: dict(v) for k, v in state.items()},
                    "hash_index": f"{number:032x}", "error": error})
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=500)
    parser.add_argument("--budget", type=int, default=24_000)
    args = parser.parse_args(argv)
    steps = synthetic_trajectory(args.steps)
    targets = sorted({*range(10, args.steps, max(1, args.steps // 25)), args.steps - 1})
    worst = 0.0
    print(f"{args.steps}-step synthetic trajectory, budget {args.budget} characters; "
          f"{len(targets)} targets per task x context")
    print(f"{'task':<10} {'context':<8} {'median ms':>9} {'max ms':>7} {'prompt chars':>12} "
          f"{'dropped':>7} {'prefix changes':>14}")
    for task in TASKS:
        for context in CONTEXTS:
            build_prompt(steps[:10], task, context, budget_chars=args.budget,
                         target_code=steps[10]["code"] if task == "output" else None)  # warm-up
            timings = []
            for i in targets:
                code = steps[i]["code"] if task == "output" else None
                start = time.perf_counter()
                prompt = build_prompt(steps[:i], task, context, target_code=code,
                                      budget_chars=args.budget)
                timings.append((time.perf_counter() - start) * 1000)
            # Replay the session step by step: how often would a prefix cache miss?
            changes, previous = 0, None
            for i in range(1, args.steps):
                code = steps[i]["code"] if task == "output" else None
                prefix = build_prompt(steps[:i], task, context, target_code=code,
                                      budget_chars=args.budget).prefix
                changes += previous is not None and not prefix.startswith(previous)
                previous = prefix
            worst = max(worst, max(timings))
            size = len(prompt.system) + len(prompt.user)
            print(f"{task:<10} {context:<8} {statistics.median(timings):>9.2f} "
                  f"{max(timings):>7.2f} {size:>12} {prompt.dropped_steps:>7} "
                  f"{changes:>8} / {args.steps - 2}")
    # A session's prompts render only their new cells (rendered cells are memoised); a
    # first prompt over a long history, e.g. after a server restart, renders them all.
    for context in CONTEXTS:
        fresh = [dict(step) for step in steps]  # new objects: nothing memoised for them
        start = time.perf_counter()
        build_prompt(fresh[:-1], "output", context, target_code=fresh[-1]["code"],
                     budget_chars=args.budget)
        print(f"first prompt of a {args.steps - 1}-step history, nothing memoised, {context}: "
              f"{(time.perf_counter() - start) * 1000:.1f} ms")
    verdict = "OK" if worst <= TARGET_MS else "TOO SLOW"
    print(f"worst prompt: {worst:.2f} ms (target <= {TARGET_MS:.0f} ms): {verdict}")
    return 0 if worst <= TARGET_MS else 1


if __name__ == "__main__":
    sys.exit(main())
