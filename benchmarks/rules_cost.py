"""What the output rules cost per cell (``baseline.determined``, which ``hybrid`` runs on
every cell in a worker thread): the random plain-Python cells of
``tests/test_baseline_python.py``, and cells written to cost the most (loops that index,
search or build on a big list or string, nested comprehensions, prints in a loop) over a
snapshot holding a list and a string as long as the capture's default ``repr_length``
(1,000 characters) lets a snapshot hold whole, then as long as a ``repr_length`` raised to
400,000 lets it (a list of 50,000 items, a string of 100,000 characters).

    python benchmarks/rules_cost.py [--cells 2000] [--seed 1]

Prints p50/p95/max milliseconds per cell for each group and the share the rules answered
completely, then one JSON line. The bounds it measures: 2,000 loop or comprehension steps
and 2 million characters and items computed or read per cell (``flow.py``).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from test_baseline_python import VALUES, cells, snapshot

from themisto_ext.prediction.clients.baseline import determined

SIZES = {"default": (list(range(200)), "ab" * 490),
         "raised": (list(range(50_000)), "ab" * 50_000)}
COSTLY = [
    "total = 0\nfor i in range(2000):\n    total += big[i]\ntotal",
    "c = 0\nfor i in range(2000):\n    if i in big:\n        c += 1\nc",
    "c = 0\nfor i in range(2000):\n    c += big.count(i)\nc",
    "s = 0\nfor x in big:\n    s += x\ns",
    "s = 0\nfor x in big[:150]:\n    s += x * x\ns",
    "sum(big)",
    "sorted(big, reverse=True)[:5]",
    "[x * 2 for x in big[:2000]]",
    "[[i * j for j in range(50)] for i in range(50)]",
    "for i in range(2000):\n    print(text[:50])",
    "out = ''\nfor i in range(2000):\n    out += text[:1000]\nlen(out)",
    "c = 0\nfor i in range(2000):\n    c += text.count('a')\nc",
    "'-'.join(str(x) for x in big[:2000])",
]


def timed(code: str, history: list[dict[str, Any]]) -> tuple[float, bool]:
    started = time.perf_counter()
    found = determined(code, history)
    return time.perf_counter() - started, bool(found and found.complete)


def summary(times: list[tuple[float, bool]]) -> dict[str, float]:
    ms = sorted(t * 1000 for t, _ in times)
    return {"cells": len(ms), "p50_ms": round(statistics.median(ms), 2),
            "p95_ms": round(ms[int(0.95 * (len(ms) - 1))], 2), "max_ms": round(ms[-1], 2),
            "complete": round(sum(c for _, c in times) / len(times), 3)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cells", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    results: dict[str, Any] = {}
    for size, (big, text) in SIZES.items():
        variables = snapshot()
        variables["big"] = {"type": "list", "repr": repr(big), "length": len(big),
                            "size": 8 * len(big), "size_exact": True}
        variables["text"] = {"type": "str", "repr": repr(text), "length": len(text),
                             "size": len(text), "size_exact": True}
        history = [{"code": "xs, big, text = ...", "runtime_variables": variables,
                    "outputs": [], "output": "", "error": None}]
        determined("1", history)  # IPython's printer imported once, as a running server has
        if size == "default":
            results["random"] = summary([timed(code, history)
                                         for code in cells(args.seed, args.cells)])
        results[f"costly, {size} repr_length"] = summary(
            [timed(code, history) for code in COSTLY])
    for group, s in results.items():
        print(f"{group}: {s['cells']} cells, p50 {s['p50_ms']} ms, p95 {s['p95_ms']} ms, "
              f"max {s['max_ms']} ms, answered completely {s['complete']:.0%}")
    results["values"] = [*sorted(VALUES), "big", "text"]
    print(json.dumps(results))


if __name__ == "__main__":
    main()
