"""``export --format sft``: training pairs from the store (``training/sft.py``).

The output is written to a temporary file beside it and moved into place when complete,
so a failed export leaves the old file as it was. It is never the store (nor its SQLite
side files), and it replaces an existing file only if that file is an SFT export already,
unless ``--force``: a trajectory export or a database given by mistake is not lost.
"""

from __future__ import annotations

import argparse
import json
import os
import stat
import sys
import tempfile
import time
from pathlib import Path
from typing import IO, Any

from themisto_ext.cli.args import non_negative_int, positive_int
from themisto_ext.prediction.prompts import CONTEXTS, TASKS
from themisto_ext.store import SQLITE, StoreURL, TrajectoryStore

# The rules of evaluation/sample.py and training/split.py, spelled out here (as `sample`'s
# options are) so that every command does not import numpy to build its parser.
ERROR_RULES = ("drop", "keep", "drop-environment")
ENVIRONMENT_RULES = ("keep", "drop")
SPLIT_BY = ("trajectory", "notebook")

_SFT_OPTIONS = ("context", "task", "split", "split_by", "seed", "errors", "environment",
                "budget", "window")
_SQLITE_SIDE_FILES = ("", "-wal", "-shm", "-journal")


def sft_options(p: argparse.ArgumentParser) -> None:
    """The options of ``--format sft``; unset (None) unless given, so that giving one
    without the format is an error rather than silently ignored."""
    p.add_argument("--context", help=f"sft: comma list of {', '.join(CONTEXTS)} (required)")
    p.add_argument("--task", help=f"sft: comma list of {', '.join(TASKS)} (default: both)")
    p.add_argument("--split", metavar="NAME=FRACTION,...", help="sft: split by whole groups, "
                   "e.g. train=0.8,test=0.2 (default: no split)")
    p.add_argument("--split-by", choices=SPLIT_BY, help="sft: the group a split keeps "
                   "whole (default trajectory)")
    p.add_argument("--seed", type=non_negative_int, help="sft: the split's seed (default 0)")
    p.add_argument("--errors", choices=ERROR_RULES, help="sft: targets that raised, as "
                   "`themisto sample --errors` (default drop)")
    p.add_argument("--environment", choices=ENVIRONMENT_RULES, help="sft: output targets that "
                   "depend on the environment: keep them flagged (default) or drop them")
    p.add_argument("--budget", type=positive_int, help="sft: prompt size limit in characters "
                   "(default 24000)")
    p.add_argument("--window", type=positive_int, metavar="TOKENS", help="sft: also fit every "
                   "prompt and its answer cap to a window of this many (estimated) tokens")


def refuse_sft_options(args: argparse.Namespace) -> None:
    given = [name for name in _SFT_OPTIONS if getattr(args, name) is not None]
    if given:
        option = "--" + given[0].replace("_", "-")
        raise ValueError(f"{option} goes with --format sft")


def _names(text: str | None, known: tuple[str, ...], option: str) -> list[Any]:
    names = [n.strip() for n in (text or ",".join(known)).split(",") if n.strip()]
    for name in names:
        if name not in known:
            raise ValueError(f"{option}: unknown {name!r}; use {', '.join(known)}")
    if not names or len(set(names)) < len(names):
        raise ValueError(f"{option}: give each of {', '.join(known)} at most once")
    return names


def _check_target(out: Path, url: StoreURL, force: bool) -> None:
    """Refuse to write over the store, a folder, or (without ``force``) a file of another
    kind than an SFT export."""
    if url.engine == SQLITE:
        for suffix in _SQLITE_SIDE_FILES:
            side = Path(str(url.path) + suffix)
            if out.resolve() == side.resolve() or (
                    out.exists() and side.exists() and os.path.samefile(out, side)):
                raise ValueError(f"--out {out} is the store {url.display}: choose another file")
    if out.is_dir():
        raise ValueError(f"--out {out} is a folder")
    if not out.exists() or force or out.stat().st_size == 0:
        return
    with out.open("rb") as fh:
        first = fh.readline(1 << 20)
    try:
        kind_ok = isinstance(json.loads(first), dict) and "messages" in json.loads(first)
    except ValueError:
        kind_ok = False
    if not kind_ok:
        raise ValueError(f"--out {out} exists and is not an SFT export; pass --force to "
                         "replace it")


def export_sft_command(args: argparse.Namespace, store: TrajectoryStore, url: StoreURL,
                       ids: list[str]) -> int:
    from themisto_ext.prediction.prompts.window import estimated_window
    from themisto_ext.training.sft import SFTConfig, export_sft
    from themisto_ext.training.split import parse_split

    if args.context is None:
        raise ValueError(f"--format sft needs --context (a comma list of {', '.join(CONTEXTS)})")
    if args.split is None and (args.split_by is not None or args.seed is not None):
        raise ValueError("--split-by and --seed go with --split")
    config = SFTConfig(
        contexts=_names(args.context, CONTEXTS, "--context"),
        tasks=_names(args.task, TASKS, "--task"),
        budget_chars=args.budget or 24_000,
        window=estimated_window(args.window) if args.window else None,
        errors=args.errors or "drop", environment=args.environment or "keep",
        split=parse_split(args.split) if args.split is not None else None,
        split_by=args.split_by or "trajectory", seed=args.seed or 0)
    started = time.monotonic()
    if args.out == "-":
        result = export_sft(store, ids, sys.stdout, config)
    else:
        out = Path(args.out)
        _check_target(out, url, bool(args.force))
        result = _write_replacing(out, lambda fh: export_sft(store, ids, fh, config))
    _report(result, config, args.out, len(ids), time.monotonic() - started)
    return 0


def _write_replacing(out: Path, write: Any) -> Any:
    out.parent.mkdir(parents=True, exist_ok=True)
    fd, temporary = tempfile.mkstemp(prefix=f".{out.name}.", suffix=".partial", dir=out.parent)
    try:
        # mkstemp makes the file private (0600); the export gets the mode a plain open()
        # would give it, or the mode of the file it replaces
        os.chmod(temporary, stat.S_IMODE(out.stat().st_mode) if out.exists() else _umasked())
        fh: IO[str]
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            result = write(fh)
        os.replace(temporary, out)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return result


def _umasked() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask


def _report(result: Any, config: Any, out: str, trajectories: int, seconds: float) -> None:
    total = sum(result.written.values())
    parts = []
    for task in config.tasks:
        for context in config.contexts:
            count = sum(n for (t, c, _), n in result.written.items() if t == task and c == context)
            parts.append(f"{task}/{context} {count}")
    by_split = ""
    if config.split:
        by_split = "; split by " + config.split_by + ": " + ", ".join(
            f"{name} {sum(n for (_, _, s), n in result.written.items() if s == name)} pairs of "
            f"{result.groups.get(name, 0)} {config.split_by}s" for name, _ in config.split)
    line = (f"wrote {total} pairs ({', '.join(parts)}{by_split}) from {result.steps} steps of "
            f"{trajectories} trajectories to {out} in {seconds:.1f} s; "
            f"{result.environment_dependent} environment_dependent")
    print(line, file=sys.stderr if out == "-" else sys.stdout)
    print(f"note: {result.duplicates} duplicate pairs dropped (identical prompt and answer; "
          "the first, in the first split named, kept)", file=sys.stderr)
    for task, dropped in result.excluded.items():
        reasons = ", ".join(f"{n} {why}" for why, n in dropped.items() if n)
        if reasons:
            print(f"note: {task} targets left out as the benchmark sampler leaves them out "
                  f"(--errors {config.errors}, --environment {config.environment}): {reasons}",
                  file=sys.stderr)
    if result.unreadable:
        print(f"note: {result.unreadable} pairs left out: their answer holds a code fence or "
              "prompt markup, which the protocol's answer reading would cut", file=sys.stderr)
    if config.split:
        empty = [name for name, _ in config.split if result.groups.get(name, 0) == 0]
        if empty:
            print(f"note: no {config.split_by} fell into {', '.join(empty)} (too few groups)",
                  file=sys.stderr)
