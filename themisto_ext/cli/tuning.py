"""``themisto synth`` (a synthetic corpus, recorded in real kernels) and ``themisto finetune``
(a LoRA adapter for the embedded model): ``training/synthetic.py``, ``training/finetune.py``.
"""

from __future__ import annotations

import argparse
import shlex
import signal
import sys
from pathlib import Path
from typing import Any

from themisto_ext.cli.args import non_negative_int, positive_float, positive_int


def register(sub: Any) -> None:
    p = sub.add_parser("synth", help="write (and record) a synthetic corpus of notebooks")
    p.add_argument("--out", type=Path, required=True, help="folder for the notebooks")
    p.add_argument("--notebooks", type=positive_int, default=100, help="how many (default 100)")
    p.add_argument("--cells", type=positive_int, default=14,
                   help="about this many code cells each (default 14)")
    p.add_argument("--seed", type=non_negative_int, default=0, help="default 0")
    p.add_argument("--record", action="store_true", help="also run each in a fresh kernel "
                   "through the recorder, into --store")
    p.add_argument("--store", default=argparse.SUPPRESS, help="trajectory store for --record")
    p.set_defaults(run=synth)

    p = sub.add_parser("finetune", help="train a LoRA adapter for the local model on an SFT "
                       "export (needs the [train] extra)")
    p.add_argument("data", type=Path, help="an SFT export (themisto export --format sft)")
    p.add_argument("--out", type=Path, required=True, help="the adapter GGUF to write")
    p.add_argument("--model", type=Path, help="base GGUF (default: the embedded model)")
    p.add_argument("--split", default="train", help="train on this split; '' for every line "
                   "(default train)")
    p.add_argument("--rank", type=positive_int, default=8)
    p.add_argument("--alpha", type=positive_int, default=16)
    p.add_argument("--layers", type=positive_int, default=12,
                   help="adapt the top N decoder layers (default 12)")
    p.add_argument("--lr", type=positive_float, default=2e-4, help="learning rate")
    p.add_argument("--epochs", type=positive_float, default=1.0)
    p.add_argument("--accumulate", type=positive_int, default=4,
                   help="pairs per optimizer step (default 4)")
    p.add_argument("--max-tokens", type=positive_int, default=2048,
                   help="skip pairs longer than this (default 2048)")
    p.add_argument("--max-minutes", type=positive_float, help="stop training after this long "
                   "(checkpointed: --resume continues)")
    p.add_argument("--seed", type=non_negative_int, default=0)
    p.add_argument("--threads", type=positive_int, help="torch threads (default: torch's)")
    p.add_argument("--resume", action="store_true", help="continue OUT.ckpt")
    p.set_defaults(run=finetune)


def synth(args: argparse.Namespace) -> int:
    from themisto_ext.training.synthetic import write_corpus

    paths = write_corpus(args.out, seed=args.seed, notebooks=args.notebooks, cells=args.cells)
    print(f"wrote {len(paths)} notebooks to {args.out} (seed {args.seed}; "
          f"{args.out / 'manifest.json'})")
    if not args.record:
        return 0
    from themisto_ext.cli.trajectories import open_store_of, record_into_store

    store, url = open_store_of(args, readonly=False)
    steps = raised = 0
    for number, path in enumerate(paths, 1):
        result = record_into_store(store, url, path)
        steps, raised = steps + result.steps, raised + result.errors
        print(f"\r{number}/{len(paths)} notebooks recorded, {steps} steps", end="",
              file=sys.stderr, flush=True)
    print(file=sys.stderr)
    print(f"recorded {steps} steps ({raised} raised) from {len(paths)} notebooks")
    return 0


def finetune(args: argparse.Namespace) -> int:
    try:
        import peft  # noqa: F401
        import torch  # noqa: F401
        import transformers  # noqa: F401
    except ImportError as exc:
        raise ValueError(f"{exc.name} is not installed: pip install 'themisto-ext[train]'") \
            from None
    from tqdm import tqdm

    from themisto_ext.prediction.clients.local.engine import default_model_path
    from themisto_ext.training.finetune import FinetuneConfig
    from themisto_ext.training.finetune import finetune as train

    if args.out.suffix != ".gguf":
        raise ValueError(f"--out {args.out}: an adapter is a .gguf file")
    config = FinetuneConfig(
        data=args.data, out=args.out, model=args.model or default_model_path(),
        split=args.split or None, rank=args.rank, alpha=args.alpha, layers=args.layers,
        learning_rate=args.lr, epochs=args.epochs, accumulate=args.accumulate,
        max_tokens=args.max_tokens, max_minutes=args.max_minutes, seed=args.seed,
        threads=args.threads)
    bar: Any = None

    def progress(done: int, total: int, loss: float | None) -> None:
        nonlocal bar
        if bar is None:
            bar = tqdm(total=total, initial=done - 1, unit="pair", file=sys.stderr,
                       dynamic_ncols=True)
        bar.update(done - bar.n)
        if loss is not None:
            bar.set_postfix(loss=f"{loss:.3f}", refresh=False)

    command = "themisto " + " ".join(shlex.quote(a) for a in sys.argv[1:])

    def stop(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    # SIGTERM (a job killed, a machine going down) saves the checkpoint as Ctrl-C does; a
    # job started in the background has SIGINT ignored, so it is the way to stop one
    signal.signal(signal.SIGTERM, stop)
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, stop)
    try:
        recipe = train(config, resume=args.resume, command=command, progress=progress)
    except KeyboardInterrupt:
        print(f"\nthemisto finetune: interrupted; continue with --resume "
              f"({args.out}.ckpt)", file=sys.stderr)
        return 130
    finally:
        if bar is not None:
            bar.close()
    print(f"wrote {args.out}: {recipe['pairs_trained']} pairs ({recipe['tokens_trained']} "
          f"tokens, {recipe['optimizer_steps']} steps) in {recipe['minutes']} min, "
          f"{recipe['stopped']}; loss {recipe['loss_first']} -> {recipe['loss_last_10']}; "
          f"{recipe['pairs_too_long']} pairs over --max-tokens skipped")
    return 0
