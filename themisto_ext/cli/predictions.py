"""``prompt`` and ``predict``: what a model would receive for one step, and its answer."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from themisto_ext.cli.args import positive_float, positive_int
from themisto_ext.cli.models import MODEL_HELP
from themisto_ext.prediction.clients import PREDICTOR_FORMS
from themisto_ext.prediction.prompts import CONTEXTS, TASKS, Prompt
from themisto_ext.prediction.prompts.build import build_prompt
from themisto_ext.records import Prediction, Scope, Step
from themisto_ext.trajectory import (
    FormatProblem,
    TrajectoryFormatError,
    file_problems,
    iter_lines,
)

SYSTEM_MARK = "===== SYSTEM ====="
USER_MARK = "===== USER ====="
ASSISTANT_MARK = "===== ASSISTANT ====="
END_MARK = "===== END ====="


def prompt_text(prompt: Prompt) -> str:
    """Every message a model receives, in order, between marks (``themisto prompt``)."""
    parts = [SYSTEM_MARK, prompt.system]
    for exchange in prompt.demonstrations:
        parts += [USER_MARK, exchange.user, ASSISTANT_MARK, exchange.assistant]
    return "\n".join([*parts, USER_MARK, prompt.user, END_MARK]) + "\n"


def _target_parser(sub: Any, name: str, help: str) -> argparse.ArgumentParser:
    """The arguments naming one target step of a trajectory file, shared by both commands."""
    p: argparse.ArgumentParser = sub.add_parser(name, help=help)
    p.add_argument("file", type=Path, metavar="TRAJECTORY.jsonl")
    p.add_argument("--step", type=positive_int, required=True,
                   help="the target: the step whose output (or code) is to be predicted")
    p.add_argument("--task", choices=TASKS, required=True)
    p.add_argument("--context", choices=CONTEXTS, required=True)
    p.add_argument("--trajectory", help="trajectory id or unique prefix (when the file "
                   "holds several)")
    p.add_argument("--budget", type=positive_int, default=24_000,
                   help="prompt size limit in characters (default 24000)")
    return p


def register(sub: Any) -> None:
    p = _target_parser(sub, "prompt", "print the prompt a model would get for one step")
    p.set_defaults(run=prompt)

    p = _target_parser(sub, "predict", "predict one step's output or code with a predictor")
    p.add_argument("--predictor", required=True, help=PREDICTOR_FORMS)
    p.add_argument("--base-url", help="API base URL (default: OPENAI_BASE_URL or "
                   "ANTHROPIC_BASE_URL, else the vendor's)")
    p.add_argument("--timeout", type=positive_float, default=120, help="seconds (default 120)")
    p.add_argument("--model", help=MODEL_HELP)
    p.add_argument("--json", action="store_true", help="print the whole prediction record")
    p.set_defaults(run=predict_command)


def _steps(path: Path) -> Iterator[Step]:
    for _, item in iter_lines(path):
        if not isinstance(item, FormatProblem):
            yield item


def _trajectory(path: Path, wanted: str | None, until: int) -> tuple[list[Step], str]:
    """The chosen trajectory's steps up to step ``until``, and its range for messages.

    The file is streamed (validated, then its ids read, then the steps kept): a prompt
    needs only the history before its target, so a file of any size is read in the memory
    of that history."""
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such file")
    _, problems = file_problems(path)  # a file that is not UTF-8 is one of them
    if problems:
        raise ValueError(f"{path}: not a valid trajectory file: "
                         f"{TrajectoryFormatError(problems)}") from None
    ids = list(dict.fromkeys(step["trajectory_id"] for step in _steps(path)))
    if not ids:
        raise ValueError(f"{path}: no steps")
    if wanted is None:
        if len(ids) > 1:
            raise ValueError(f"{path} holds {len(ids)} trajectories; choose one with "
                             f"--trajectory ({', '.join(ids)})")
        chosen = ids[0]
    else:
        matches = [tid for tid in ids if tid.startswith(wanted)]
        if len(matches) != 1:
            raise ValueError(f"no trajectory {wanted!r} in {path}" if not matches else
                             f"{wanted!r} matches {len(matches)} trajectories in {path}; "
                             "give more of it")
        chosen = matches[0]
    kept: list[Step] = []
    first = last = None
    for step in _steps(path):
        if step["trajectory_id"] == chosen:
            first = step["step"] if first is None else first
            last = step["step"]
            if step["step"] <= until:
                kept.append(step)
    return kept, f"steps {first}-{last}"


def _target(args: argparse.Namespace) -> tuple[list[Step], int]:
    steps, span = _trajectory(args.file, args.trajectory, args.step)
    index = next((i for i, s in enumerate(steps) if s["step"] == args.step), None)
    if index is None:
        tid = args.trajectory if not steps else steps[0]["trajectory_id"]
        raise ValueError(f"no step {args.step} in trajectory {tid} ({span})")
    return steps, index


def predict_command(args: argparse.Namespace) -> int:
    from themisto_ext.prediction.clients import make_predictor
    from themisto_ext.prediction.run import Superseded, predict
    from themisto_ext.prediction.scoring import scored

    steps, index = _target(args)
    target = steps[index]

    async def run() -> Prediction:
        predictor = make_predictor(args.predictor, base_url=args.base_url, timeout=args.timeout,
                                   local_model=args.model)
        try:
            outcome = await predict(
                predictor, steps[:index], args.task, args.context,
                scope=Scope(target["trajectory_id"]), target_step=target["step"],
                target_code=target["code"] if args.task == "output" else None,
                budget_chars=args.budget)
        finally:
            await predictor.aclose()
        if isinstance(outcome, Superseded):  # nothing else asks this session: cannot happen
            raise RuntimeError(f"{args.predictor}: {outcome.reason}")
        return scored(outcome, target)

    record = asyncio.run(run())
    if record["error"]:
        raise RuntimeError(f"{args.predictor}: {record['error']['message']}")
    if args.json:
        print(json.dumps(record, ensure_ascii=False, indent=2))
    else:
        print(record["answer"])
        scores = record["scores"]
        shown = ", ".join(f"{k} {v:.3f}" for k, v in scores.items()) if scores else ""
        print(f"{record['predictor']} ({record['model']}), {record['latency'] or 0:.2f} s; "
              f"against the real {'output' if args.task == 'output' else 'cell'}: {shown}",
              file=sys.stderr)
    return 0


def prompt(args: argparse.Namespace) -> int:
    steps, index = _target(args)
    # Only the steps before the target are context; the next-cell target is what is predicted.
    target_code = steps[index]["code"] if args.task == "output" else None
    built = build_prompt(steps[:index], args.task, args.context, target_code=target_code,
                         budget_chars=args.budget)
    sys.stdout.write(prompt_text(built))
    print(f"{len(built.system) + len(built.user)} characters: system {len(built.system)}, "
          f"cached prefix {len(built.prefix)}, suffix {len(built.suffix)}; "
          f"{built.dropped_steps} earlier cells omitted; the answer is expected after "
          f"{built.answer_open.strip()!r}, stops at {', '.join(map(repr, built.stop))} and "
          f"is capped at {built.max_tokens} tokens", file=sys.stderr)
    return 0
