"""Each installed embedded model's footprint: the time its process takes to load it (the
process started, the GGUF's hash checked, llama.cpp loaded and self-tested) and the model
process's resident memory once loaded, then (a code model) after one completion of a
~1,000-token notebook prompt (its KV cache filled).

    python benchmarks/model_footprint.py [NAME ...]      (default: every installed model)

Each model gets a fresh process, one after another; the last line is JSON.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from typing import cast

import psutil

from themisto_ext.prediction.clients.local import LocalPredictor, models
from themisto_ext.prediction.prompts.code import build_infill
from themisto_ext.records import Step

MiB = 1 << 20


def notebook(cells: int = 40) -> list[Step]:
    rows = [{"step": i, "code": f"value_{i} = compute({i}, scale={i * 37})\nprint(value_{i})",
             "output": str(i * 17 % 997), "runtime_variables": {}, "execution_time": 0.01}
            for i in range(1, cells + 1)]
    return cast(list[Step], rows)  # the fields a prompt reads


async def measure(name: str) -> dict[str, float | None]:
    predictor = LocalPredictor(models.resolve(name))
    try:
        began = time.perf_counter()
        await predictor.load()
        loaded = time.perf_counter() - began
        process = psutil.Process(predictor.pid)
        rss = process.memory_info().rss / MiB
        used = None
        if models.MODELS[name].fills_code:  # (SmolLM2 has no fill-in-the-middle tokens)
            await predictor.infill(build_infill(notebook(), "print(value_", "", "full"), "s")
            used = round(process.memory_info().rss / MiB)
    finally:
        await predictor.aclose()
    return {"load_s": round(loaded, 2), "rss_mib": round(rss), "rss_after_prompt_mib": used,
            "file_mib": round(models.MODELS[name].size / MiB)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("names", nargs="*")
    args = parser.parse_args()
    names = args.names or [m for m in models.MODELS if models.installed_path(m)]
    got = {}
    for name in names:
        got[name] = asyncio.run(measure(name))
        f = got[name]
        print(f"{name:<20} file {f['file_mib']:5.0f} MiB  load {f['load_s']:5.2f} s  "
              f"RSS {f['rss_mib']:5.0f} MiB loaded, {f['rss_after_prompt_mib'] or '-'} MiB "
              f"after a ~1,000-token prompt")
    print(json.dumps(got))


if __name__ == "__main__":
    main()
