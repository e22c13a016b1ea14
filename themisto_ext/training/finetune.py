"""LoRA fine-tuning of the embedded model on CPU: ``themisto finetune``.

The base weights are read from the GGUF file ``local`` runs (``transformers`` loads GGUF,
dequantised to float32), LoRA matrices (``peft``) are trained on the answers of an SFT
export (``training/sft.py``: the loss is on the last assistant message only, as its
``weight`` says), and the result is written as a llama.cpp LoRA GGUF (``lora_gguf.py``)
that ``local`` applies over the quantised base (``local_adapter``).

A prompt is tokenised by the GGUF's own chat template, as the live path formats it, so the
model learns the protocol it is asked in. Pairs longer than ``max_tokens`` are skipped (and
counted), never cut: a cut prompt would teach answers to questions nobody asks.

Resumable: every ``save_every`` optimizer steps, at the ``max_minutes`` budget and on Ctrl-C
the LoRA weights, the optimizer and the position in the (seeded) order are saved to
``<out>.ckpt``; ``resume`` continues from there if the data and the recipe are the same.
What is written at the end: the adapter and ``<out>.json``, its recipe (command, seed, the
data's SHA-256, the base model's, pairs and tokens trained on, minutes, losses).
"""

from __future__ import annotations

import json
import math
import os
import platform
import random
import sys
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from themisto_ext.training.lora_gguf import TARGETS, write_adapter
from themisto_ext.trajectory.jsonl import file_sha256

CHECKPOINT_SUFFIX = ".ckpt"
RECIPE_SUFFIX = ".json"


@dataclass(frozen=True)
class FinetuneConfig:
    data: Path
    out: Path
    model: Path
    split: str | None = "train"
    rank: int = 8
    alpha: int = 16
    layers: int = 12
    """LoRA in the top ``layers`` decoder layers only: the backward pass stops there, which
    roughly halves a step's time on CPU for this model (30 layers)."""
    learning_rate: float = 2e-4
    epochs: float = 1.0
    accumulate: int = 4
    max_tokens: int = 2048
    max_minutes: float | None = None
    seed: int = 0
    save_every: int = 20
    threads: int | None = None


@dataclass
class Example:
    ids: list[int]
    answer_start: int


@dataclass
class Progress:
    """What a checkpoint holds besides the weights and the optimizer."""

    position: int = 0
    """Examples consumed so far, across epochs, in the seeded order."""
    optimizer_steps: int = 0
    seconds: float = 0.0
    tokens: int = 0
    losses: list[float] = field(default_factory=list)
    """Mean loss of each optimizer step."""


def read_pairs(path: Path, split: str | None) -> list[list[dict[str, str]]]:
    """The conversations of an SFT export (in file order), of ``split`` if given."""
    conversations = []
    splits_seen: set[str | None] = set()
    with path.open(encoding="utf-8") as fh:
        for number, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
                messages = record["messages"]
            except (ValueError, KeyError, TypeError):
                raise ValueError(f"{path}:{number}: not an SFT export line (no messages)") \
                    from None
            splits_seen.add(record.get("split"))
            if split is not None and record.get("split") != split:
                continue
            if not messages or messages[-1].get("role") != "assistant":
                raise ValueError(f"{path}:{number}: the last message is not the answer")
            conversations.append([{"role": m["role"], "content": m["content"]}
                                  for m in messages])
    if not conversations:
        named = ", ".join(sorted(str(s) for s in splits_seen)) or "none"
        raise ValueError(f"{path}: no pairs" + (f" in split {split!r} (splits: {named})"
                                                if split is not None else ""))
    return conversations


def tokenize(tokenizer: Any, conversations: Sequence[list[dict[str, str]]],
             max_tokens: int) -> tuple[list[Example], int]:
    """Token ids of each pair (the prompt by the chat template, then the answer and the
    end-of-turn token) and where its answer starts; also how many were too long."""
    examples, too_long = [], 0
    end = tokenizer.eos_token_id
    for messages in conversations:
        prompt = tokenizer.apply_chat_template(messages[:-1], add_generation_prompt=True,
                                               tokenize=True)
        if not isinstance(prompt, list):  # transformers 5 returns an encoding
            prompt = list(prompt["input_ids"])
        answer = [*tokenizer.encode(messages[-1]["content"], add_special_tokens=False), end]
        if len(prompt) + len(answer) > max_tokens:
            too_long += 1
            continue
        examples.append(Example(prompt + answer, len(prompt)))
    return examples, too_long


def order(count: int, seed: int, epochs: float) -> list[int]:
    """The examples' order over all epochs: a new shuffle each epoch, from ``seed``."""
    rng = random.Random(seed)
    total = max(1, math.ceil(count * epochs))
    sequence: list[int] = []
    while len(sequence) < total:
        epoch = list(range(count))
        rng.shuffle(epoch)
        sequence.extend(epoch)
    return sequence[:total]


def load_base(model: Path, threads: int | None) -> tuple[Any, Any]:
    """The GGUF's tokenizer and its weights as a float32 ``transformers`` model."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from transformers.utils import logging as hf_logging

    if threads:
        torch.set_num_threads(threads)
    hf_logging.disable_progress_bar()
    tokenizer = AutoTokenizer.from_pretrained(str(model.parent), gguf_file=model.name)
    base = AutoModelForCausalLM.from_pretrained(str(model.parent), gguf_file=model.name,
                                                dtype=torch.float32)
    return tokenizer, base


def _recipe_key(config: FinetuneConfig, data_sha: str, model_sha: str) -> dict[str, Any]:
    """What must be equal for a checkpoint to be continued."""
    return {"data_sha256": data_sha, "model_sha256": model_sha, "split": config.split,
            "rank": config.rank, "alpha": config.alpha, "layers": config.layers,
            "learning_rate": config.learning_rate, "epochs": config.epochs,
            "accumulate": config.accumulate, "max_tokens": config.max_tokens,
            "seed": config.seed}


def finetune(config: FinetuneConfig, *, resume: bool = False, command: str = "",
             progress: Callable[[int, int, float | None], None] | None = None) -> dict[str, Any]:
    """Train, checkpoint and write the adapter; returns the recipe written beside it.
    ``progress(done, total, loss)`` is called after each example."""
    import peft
    import torch

    checkpoint = config.out.with_name(config.out.name + CHECKPOINT_SUFFIX)
    key = _recipe_key(config, file_sha256(config.data), file_sha256(config.model))
    state = _resumed(checkpoint, key, resume)

    conversations = read_pairs(config.data, config.split)
    tokenizer, base = load_base(config.model, config.threads)
    examples, too_long = tokenize(tokenizer, conversations, config.max_tokens)
    if not examples:
        raise ValueError(f"every pair is longer than --max-tokens {config.max_tokens}")
    model, optimizer, done = _adapted(config, base, state)
    sequence = order(len(examples), config.seed, config.epochs)
    model.train()
    started = time.monotonic() - done.seconds
    budget = None if config.max_minutes is None else config.max_minutes * 60
    since_step: list[float] = []
    stopped = "finished"

    def save() -> None:
        done.seconds = time.monotonic() - started
        temporary = checkpoint.with_name(checkpoint.name + ".partial")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            lora_state = peft.get_peft_model_state_dict(model)
        torch.save({"key": key, "weights": lora_state,
                    "optimizer": optimizer.state_dict(), "progress": asdict(done)}, temporary)
        os.replace(temporary, checkpoint)

    try:
        while done.position < len(sequence):
            if budget is not None and time.monotonic() - started >= budget:
                stopped = f"budget of {config.max_minutes:g} minutes"
                break
            example = examples[sequence[done.position]]
            ids = torch.tensor([example.ids])
            labels = ids.clone()
            labels[0, :example.answer_start] = -100
            loss = model(input_ids=ids, labels=labels).loss
            (loss / config.accumulate).backward()
            since_step.append(float(loss))
            done.position += 1
            done.tokens += len(example.ids)
            if len(since_step) == config.accumulate or done.position == len(sequence):
                _step(optimizer, since_step, done)
                since_step = []
                if done.optimizer_steps % config.save_every == 0:
                    save()
            if progress is not None:
                progress(done.position, len(sequence), done.losses[-1] if done.losses else None)
    except KeyboardInterrupt:
        save()
        raise
    if since_step:  # a budget stop inside an accumulation: keep what was computed
        _step(optimizer, since_step, done)
    done.seconds = time.monotonic() - started
    if stopped == "finished":
        checkpoint.unlink(missing_ok=True)  # nothing left to resume
    else:
        save()

    with warnings.catch_warnings():  # "no config file beside the GGUF": none is needed
        warnings.simplefilter("ignore")
        state_dict = peft.get_peft_model_state_dict(model)
    config.out.parent.mkdir(parents=True, exist_ok=True)
    write_adapter(config.out, {name: tensor.detach().cpu().numpy()
                               for name, tensor in state_dict.items()},
                  alpha=config.alpha, name=f"themisto-lora-{config.model.stem}")
    recipe = _recipe(config, key, command, pairs=len(conversations), too_long=too_long,
                     done=done, distinct=len(set(sequence[:done.position])), stopped=stopped)
    config.out.with_name(config.out.stem + RECIPE_SUFFIX).write_text(
        json.dumps(recipe, indent=1) + "\n", encoding="utf-8")
    return recipe


def _resumed(checkpoint: Path, key: dict[str, Any], resume: bool) -> dict[str, Any] | None:
    """The checkpoint's state to go on from (``--resume``), None to start anew; refuses a
    checkpoint of another recipe, and one left over without ``--resume``."""
    import torch

    if resume and checkpoint.is_file():
        state: dict[str, Any] = torch.load(checkpoint, weights_only=False)
        if state["key"] != key:
            changed = sorted(k for k in key if state["key"].get(k) != key[k])
            raise ValueError(f"{checkpoint} was made with other {', '.join(changed)}: "
                             "start anew without --resume")
        return state
    if checkpoint.exists() and not resume:
        raise ValueError(f"{checkpoint} exists: pass --resume to continue it, or remove it")
    return None


def _adapted(config: FinetuneConfig, base: Any,
             state: dict[str, Any] | None) -> tuple[Any, Any, Progress]:
    """The base model with LoRA on its last ``config.layers`` layers, its optimizer and
    progress: fresh (seeded), or as the checkpoint's ``state`` left them."""
    import peft
    import torch

    layers = base.config.num_hidden_layers
    lora = peft.LoraConfig(r=config.rank, lora_alpha=config.alpha, lora_dropout=0.0,
                           target_modules=[m.split(".")[-1] for m in TARGETS],
                           layers_to_transform=list(range(max(0, layers - config.layers),
                                                          layers)))
    torch.manual_seed(config.seed)
    model = peft.get_peft_model(base, lora)
    trained = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(trained, lr=config.learning_rate, weight_decay=0.0)
    if state is None:
        return model, optimizer, Progress()
    peft.set_peft_model_state_dict(model, state["weights"])
    optimizer.load_state_dict(state["optimizer"])
    return model, optimizer, Progress(**state["progress"])


def _step(optimizer: Any, losses: list[float], done: Progress) -> None:
    """One optimizer step over the accumulated examples, their mean loss recorded."""
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    done.losses.append(sum(losses) / len(losses))
    done.optimizer_steps += 1


def _recipe(config: FinetuneConfig, key: dict[str, Any], command: str, *, pairs: int,
            too_long: int, done: Progress, distinct: int, stopped: str) -> dict[str, Any]:
    """What ``ADAPTER.json`` says of a run: its inputs, what it trained, the software."""
    import peft
    import torch
    import transformers

    return {
        "adapter": config.out.name, "adapter_sha256": file_sha256(config.out),
        "command": command, "base_model": config.model.name, **key,
        "pairs": pairs, "pairs_too_long": too_long,
        "pairs_trained": done.position, "distinct_pairs_trained": distinct,
        "tokens_trained": done.tokens, "optimizer_steps": done.optimizer_steps,
        "minutes": round(done.seconds / 60, 2), "stopped": stopped,
        "loss_first": round(done.losses[0], 4) if done.losses else None,
        "loss_last_10": round(sum(done.losses[-10:]) / len(done.losses[-10:]), 4)
            if done.losses else None,
        "threads": torch.get_num_threads(), "machine": f"{platform.machine()}, "
            f"{os.cpu_count()} cores", "python": sys.version.split()[0],
        "torch": torch.__version__, "transformers": transformers.__version__,
        "peft": peft.__version__,
    }
