"""llama.cpp runtimes side by side: prompt and generation tokens/s of the same GGUF, the
same prompts and the same threads, in one run.

    python benchmarks/runtime_speed.py [--model PATH] [--old-python PATH] [--repeats 5]
                                       [--tokens 1000] [--generate 64] [--prompt-threads N]

``new`` is the runtime the product uses (xllamacpp, the prebuilt wheel, in this Python);
``--old-python`` names a Python that has llama-cpp-python (the runtime the project built
from source before), to measure both in turns: A B A B ..., a fresh process each, so a
drift of the machine's speed touches both alike. Each run reads a prompt it has never read
(no cache) on ``--prompt-threads`` threads (default: the product's own choice for this
machine, ``runtime.prompt_threads()``) and writes ``--generate`` tokens greedily with 1, as
the embedded model is configured (the new runtime with the product's own server
settings). Prints each runtime's median and range, and the ratios new/old per pair; the
last line is JSON.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

NEW = r'''
import json, sys, xllamacpp as xlc
from pathlib import Path
from themisto_ext.prediction.clients.local.runtime import server_params
path, prompt, generate, threads = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
s = xlc.Server(server_params(Path(path), n_ctx=4096, n_threads=threads, n_threads_decode=1,
                             cache_bytes=0, slot_dir=None, safe=False, adapter=None))
s.handle_completions({"prompt": "warm up", "n_predict": 2, "cache_prompt": False})
r = s.handle_completions({"prompt": prompt, "n_predict": generate, "cache_prompt": False,
                          "temperature": 0.0, "ignore_eos": True})
t = r["timings"]
print(json.dumps({"prompt_tokens": t["prompt_n"], "prompt_s": t["prompt_ms"] / 1000,
                  "generated": t["predicted_n"], "generate_s": t["predicted_ms"] / 1000}))
'''

OLD = r'''
import json, sys, time
from llama_cpp import Llama
path, prompt, generate, threads = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
llm = Llama(model_path=path, n_ctx=4096, n_batch=512, n_threads=1, n_threads_batch=threads,
            verbose=False, seed=0)
llm.create_completion("warm up", max_tokens=2)
llm.reset()
tokens = llm.tokenize(prompt.encode(), add_bos=True)
began = time.perf_counter(); llm.eval(tokens); prompt_s = time.perf_counter() - began
began = time.perf_counter(); n = 0
for _ in range(generate):
    token = llm.sample(top_k=1, temp=0.0)
    llm.eval([token]); n += 1
print(json.dumps({"prompt_tokens": len(tokens), "prompt_s": prompt_s, "generated": n,
                  "generate_s": time.perf_counter() - began}))
'''


def prompt_text(seed: int, tokens: int) -> str:
    """A notebook-like text of about ``tokens`` tokens, different for every seed."""
    lines, n = [], 0
    while n < tokens:
        lines.append(f"# In[{n}]\nvalue_{seed}_{n} = compute({seed}, {n} * 37)\n"
                     f"print(value_{seed}_{n})\n# Out[{n}]\n{(seed * 31 + n * 17) % 997}\n")
        n += 30
    return "".join(lines)


def run(python: str, code: str, model: Path, prompt: str, generate: int,
        threads: int) -> dict[str, float]:
    done = subprocess.run([python, "-c", code, str(model), prompt, str(generate), str(threads)],
                          capture_output=True, text=True, check=True, timeout=600)
    result: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def rates(r: dict[str, float]) -> tuple[float, float]:
    return r["prompt_tokens"] / r["prompt_s"], r["generated"] / r["generate_s"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--model", type=Path)
    parser.add_argument("--old-python", help="a Python with llama-cpp-python")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--tokens", type=int, default=1000)
    parser.add_argument("--generate", type=int, default=64)
    parser.add_argument("--prompt-threads", type=int, default=0,
                        help="threads reading the prompt (0: the product's choice)")
    args = parser.parse_args()
    if args.prompt_threads < 1:
        from themisto_ext.prediction.clients.local.runtime import prompt_threads

        args.prompt_threads = prompt_threads()
    if args.model is None:
        from themisto_ext.prediction.clients.local.engine import default_model_path

        args.model = default_model_path()
    got: dict[str, list[tuple[float, float]]] = {"new": [], "old": []}
    for i in range(args.repeats):
        prompt = prompt_text(i, args.tokens)
        got["new"].append(rates(run(sys.executable, NEW, args.model, prompt, args.generate,
                                    args.prompt_threads)))
        if args.old_python:
            got["old"].append(rates(run(args.old_python, OLD, args.model, prompt,
                                        args.generate, args.prompt_threads)))
    summary: dict[str, object] = {"model": args.model.name, "repeats": args.repeats,
                                  "prompt_threads": args.prompt_threads}
    for name, values in got.items():
        if not values:
            continue
        for i, what in enumerate(("prompt", "generate")):
            column = [v[i] for v in values]
            summary[f"{name}_{what}_tok_s"] = statistics.median(column)
            print(f"{name:>3} {what:<8} tokens/s: median {statistics.median(column):7.1f} "
                  f"(min {min(column):7.1f}, max {max(column):7.1f})")
    if got["old"]:
        for i, what in enumerate(("prompt", "generate")):
            ratios = [n[i] / o[i] for n, o in zip(got["new"], got["old"], strict=True)]
            summary[f"ratio_{what}"] = statistics.median(ratios)
            print(f"new/old {what:<8}: median {statistics.median(ratios):.3f} "
                  f"(min {min(ratios):.3f}, max {max(ratios):.3f}), {len(ratios)} pairs")
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
