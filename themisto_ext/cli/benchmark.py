"""``sample``, ``import-june``, ``stats``, ``bench`` and ``report``: the benchmark from data
to numbers."""

from __future__ import annotations

import argparse
import asyncio
import re
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from themisto_ext.cli.args import non_negative_int, positive_float, positive_int
from themisto_ext.cli.files import check_output
from themisto_ext.cli.models import MODEL_HELP
from themisto_ext.prediction.clients import PREDICTOR_FORMS
from themisto_ext.prediction.prompts import CONTEXTS, TASKS

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def register(sub: Any) -> None:
    # The benchmark commands' options, one after another as ``--help`` lists them: over
    # 80 lines, and clearer read straight through than split.
    p = sub.add_parser("sample", help="draw benchmark examples from trajectory files")
    p.add_argument("files", type=Path, nargs="+", metavar="TRAJECTORIES.jsonl")
    p.add_argument("--task", choices=TASKS, required=True)
    p.add_argument("--out", type=Path, required=True, metavar="BENCH.jsonl")
    p.add_argument("--n", type=positive_int, default=200, help="examples to draw (default 200)")
    p.add_argument("--seed", type=non_negative_int, default=0, help="random seed (default 0)")
    p.add_argument("--errors", choices=("drop", "keep", "drop-environment"), default="drop",
                   help="targets that raised: drop them all (default, as the Themisto paper "
                   "did), keep them all, or drop only those the environment caused (a "
                   "missing module or file, a changed library API, a failure cascading)")
    p.add_argument("--environment", choices=("keep", "drop"), default="keep",
                   help="output targets whose output depends on the environment (a timing, "
                   "an unseeded draw, a memory address...): keep them, each example flagged "
                   "environment_dependent (default), or drop them")
    p.add_argument("--source", choices=("any", "live", "record", "import"), default="any",
                   help="only trajectories recorded so (each step's source, written by "
                   "`themisto export` and import-june): live, a person's kernel in JupyterLab; "
                   "record, `themisto record`; import, import-june (default: any)")
    p.add_argument("--keep-errors", action="store_const", const="keep", dest="errors",
                   help=argparse.SUPPRESS)  # the option's old spelling
    p.add_argument("--force", action="store_true", help="replace an existing output file "
                   "of another kind (never an input)")
    p.set_defaults(run=sample_command)

    p = sub.add_parser("stats", help="how development-like and reproducible trajectories are")
    p.add_argument("files", type=Path, nargs="+", metavar="TRAJECTORIES.jsonl")
    p.add_argument("--json", type=Path, metavar="STATS.json", help="also write the counts")
    p.add_argument("--force", action="store_true", help="replace an existing output file "
                   "of another kind (never an input)")
    p.set_defaults(run=stats_command)

    p = sub.add_parser("import-june", help="convert a JuNE execution log (CSV) to trajectories")
    p.add_argument("file", type=Path, metavar="DATASET.csv")
    p.add_argument("--out", type=Path, required=True, metavar="TRAJ.jsonl")
    p.add_argument("--replay", action="store_true", help="re-execute every trajectory in a "
                   "fresh recording kernel for real outputs and runtime state")
    p.add_argument("--timeout", type=positive_float, default=600,
                   help="seconds per cell when replaying (default 600)")
    p.add_argument("--force", action="store_true", help="replace an existing output file "
                   "of another kind (never an input)")
    p.set_defaults(run=import_june_command)

    p = sub.add_parser("bench", help="run predictors over benchmark examples (resumable)")
    p.add_argument("file", type=Path, metavar="BENCH.jsonl")
    p.add_argument("--predictor", action="append", default=[], metavar="P",
                   help=f"{PREDICTOR_FORMS}; repeat for several")
    p.add_argument("--context", default=",".join(CONTEXTS),
                   help=f"comma list of {', '.join(CONTEXTS)} (default: all)")
    p.add_argument("--out", type=Path, metavar="RESULTS/", help="results directory")
    p.add_argument("--concurrency", type=positive_int, default=8,
                   help="calls in flight per predictor (default 8)")
    p.add_argument("--base-url", help="API base URL for openai:/anthropic: predictors")
    p.add_argument("--model", help=MODEL_HELP)
    p.add_argument("--timeout", type=positive_float, default=120,
                   help="seconds per call (default 120)")
    p.add_argument("--budget", type=positive_int, default=24_000,
                   help="prompt size limit in characters (default 24000); each model's "
                   "prompts are also fitted to its context window in its tokens")
    p.add_argument("--window", type=positive_int, metavar="TOKENS",
                   help="context window of the openai:/anthropic: models (default 16384); "
                   "the local model's is its own")
    p.add_argument("--tokenizer", type=Path, metavar="PATH.gguf",
                   help="count openai:/anthropic: tokens with this model file's tokenizer and "
                   "chat template (a server holding that file); default: an estimate")
    p.add_argument("--in-order", action="store_true", help="run each trajectory's examples in "
                   "step order, so that prefix caches are reused")
    p.add_argument("--dump-prompts", type=Path, metavar="DIR",
                   help="only write every prompt to DIR/<context>/<id>.txt; call no model")
    p.set_defaults(run=bench_command)

    p = sub.add_parser("report", help="tables with bootstrap intervals and paired tests")
    p.add_argument("results", type=Path, metavar="RESULTS/")
    p.add_argument("--out", type=Path, metavar="REPORT.md", help="default: standard output")
    p.add_argument("--figure", type=Path, metavar="FIG.png")
    p.add_argument("--resamples", type=positive_int, default=10_000,
                   help="bootstrap resamples (default 10000)")
    p.add_argument("--seed", type=non_negative_int, default=0, help="bootstrap seed (default 0)")
    p.add_argument("--json", type=Path, metavar="SUMMARY.json",
                   help="write every number of the report (means, intervals, comparisons)")
    p.add_argument("--unit", choices=("trajectory", "example"), default="trajectory",
                   help="what the bootstrap resamples (default: whole trajectories)")
    p.add_argument("--primary", metavar="A:B,...",
                   help="the comparisons Holm's correction covers, each PREDICTOR[@CONTEXT]:"
                   "PREDICTOR[@CONTEXT] (no context: under every context both have); the "
                   "others are exploratory. Default: every test that can reject")
    p.add_argument("--force", action="store_true", help="replace an existing output file "
                   "of another kind (never an input)")
    p.set_defaults(run=report_command)


def sample_command(args: argparse.Namespace) -> int:
    from themisto_ext.evaluation.sample import sample, write_examples

    check_output(args.out, "jsonl", inputs=args.files, force=args.force)
    result = sample(args.files, args.task, n=args.n, seed=args.seed, errors=args.errors,
                    environment=args.environment, source=args.source)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with args.out.open("w", encoding="utf-8") as fh:
        write_examples(result.examples, fh)
    for note in result.notes:
        print(f"note: {note}", file=sys.stderr)
    dropped = ", ".join(f"{v} {k}" for k, v in result.dropped.items())
    low, high = result.bounds
    strata = ", ".join(f"{s.name} {s.taken}/{s.available}" for s in result.strata)
    flagged = sum(1 for e in result.examples if e["environment_dependent"])
    print(f"{result.steps} steps: {result.candidates} candidate targets ({dropped}; targets "
          f"that raised: --errors {args.errors}; --environment {args.environment}; --source "
          f"{args.source}); quartiles "
          f"of target length {low:g} and {high:g}; drew {strata}; wrote "
          f"{len(result.examples)} examples to {args.out} ({flagged} of them "
          "environment_dependent)")
    return 0


def stats_command(args: argparse.Namespace) -> int:
    import json

    from themisto_ext.evaluation.realism import Realism, describe, measure_trajectory
    from themisto_ext.evaluation.sample import read_trajectories

    check_output(args.json, "json", inputs=args.files, force=args.force)
    total = Realism()
    rows = []
    for trajectory in read_trajectories(args.files):
        steps = [trajectory.step(i) for i in range(len(trajectory.lines))]
        realism = measure_trajectory(steps)
        total.add(realism)
        name = next((s.get("notebook_path") for s in steps if s.get("notebook_path")), None)
        rows.append({"trajectory_id": trajectory.trajectory_id, "notebook_path": name,
                     "file": str(trajectory.source), **realism.to_json()})
        print(f"{trajectory.trajectory_id[:12]}  {name or '(no notebook)'}: "
              f"{describe(realism.to_json())}")
    print(f"all: {describe(total.to_json())}")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"total": total.to_json(), "trajectories": rows},
                                        indent=2) + "\n", encoding="utf-8")
    return 0


def import_june_command(args: argparse.Namespace) -> int:
    from themisto_ext.evaluation.june import iter_summary, scan_june
    from themisto_ext.evaluation.june_replay import replay
    from themisto_ext.records import Step
    from themisto_ext.trajectory import write_steps

    # One step at a time from the file (one trajectory with --replay): a 1 GB log
    # never sits in memory.
    check_output(args.out, "jsonl", inputs=[args.file], force=args.force)
    log = scan_june(args.file)
    trajectories: Iterable[Iterable[Step]] = log
    if args.replay:
        def progress(done: int, total: int) -> None:
            print(f"replaying: {done}/{total} trajectories", file=sys.stderr, flush=True)

        trajectories = replay(log, len(log), log.result.notes, timeout=args.timeout,
                              progress=progress)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    count = steps = 0
    with args.out.open("w", encoding="utf-8") as fh:
        for trajectory in trajectories:
            written = write_steps(trajectory, fh)
            count, steps = count + (written > 0), steps + written
    log.result.written = (count, steps)
    lines = list(iter_summary(log.result))
    for line in lines[:-1]:
        print(line, file=sys.stderr)
    print(f"{lines[-1]}; wrote {args.out}")
    return 0


def bench_command(args: argparse.Namespace) -> int:
    from themisto_ext.evaluation.run import BenchConfig, parse_contexts, run_bench
    from themisto_ext.evaluation.sample import read_examples

    contexts = parse_contexts(args.context)
    examples = read_examples(args.file)
    if args.dump_prompts:
        count = dump_prompts(examples, contexts, args.dump_prompts, args.budget)
        print(f"wrote {count} prompts to {args.dump_prompts}")
        return 0
    if not args.predictor:
        raise ValueError("give at least one --predictor (or --dump-prompts DIR)")
    if args.out is None:
        raise ValueError("give the results directory with --out")
    if args.window is not None and args.window <= 0:
        raise ValueError("--window must be positive")
    if args.tokenizer is not None and not args.tokenizer.is_file():
        raise ValueError(f"--tokenizer {args.tokenizer}: no such file")
    config = BenchConfig(args.predictor, contexts, args.out, concurrency=args.concurrency,
                         base_url=args.base_url, local_model=args.model,
                         in_order=args.in_order,
                         timeout=args.timeout, budget_chars=args.budget,
                         window_tokens=args.window, tokenizer=args.tokenizer)
    outcome = asyncio.run(run_bench(examples, args.file, config))
    if outcome.unreadable:
        print(f"note: {outcome.unreadable} unreadable lines in the results (an interrupted "
              "write) were ignored", file=sys.stderr)
    print(f"{outcome.planned} pairs: {outcome.skipped} done before, {outcome.ran} run now, "
          f"{outcome.failed} failed; results in {args.out}")
    if outcome.failed:
        print(f"{outcome.failed} calls failed (recorded with their error); rerun the same "
              "command to retry them", file=sys.stderr)
        return 1
    return 0


def dump_prompts(examples: list[dict[str, Any]], contexts: list[Any], out: Path,
                 budget_chars: int) -> int:
    """Write every prompt as ``themisto prompt`` prints it, one file per example and context."""
    from themisto_ext.cli.predictions import prompt_text
    from themisto_ext.evaluation.run import history_plan
    from themisto_ext.prediction.prompts.build import build_prompt

    count = 0
    # every context of an example shows the same history, as `bench` sends it
    plans = {e["id"]: history_plan(e, contexts, budget_chars, None) for e in examples}
    for context in contexts:
        folder = out / context
        folder.mkdir(parents=True, exist_ok=True)
        for example in examples:
            code = example["target"]["code"] if example["task"] == "output" else None
            plan = plans[example["id"]]
            prompt = build_prompt(example["history"], example["task"], context,
                                  target_code=code, budget_chars=plan.budget_chars,
                                  min_dropped=plan.dropped)
            (folder / (_UNSAFE.sub("_", example["id"]) + ".txt")).write_text(
                prompt_text(prompt), "utf-8")
            count += 1
    return count


def report_command(args: argparse.Namespace) -> int:
    import json

    from themisto_ext.evaluation.render import render_figure, render_markdown
    from themisto_ext.evaluation.report import build_summary

    for out, kind in ((args.json, "json"), (args.out, "markdown"), (args.figure, "png")):
        check_output(out, kind, force=args.force)
    report = build_summary(args.results, resamples=args.resamples, seed=args.seed,
                           unit=args.unit, primary=args.primary)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n",
                             encoding="utf-8")
        print(f"wrote {args.json}", file=sys.stderr)
    text = render_markdown(report)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text, encoding="utf-8")
        print(f"wrote {args.out}", file=sys.stderr)
    else:
        sys.stdout.write(text)
    if args.figure:
        args.figure.parent.mkdir(parents=True, exist_ok=True)
        render_figure(report, args.figure)
        print(f"wrote {args.figure}", file=sys.stderr)
    return 0
