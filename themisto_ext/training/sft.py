"""Training pairs from stored trajectories: ``themisto export --format sft``.

Every step is a target of both tasks (its output; its code, as the next cell), kept or
left out by the benchmark sampler's own rules (``evaluation/sample.py``: at least five
steps before it, not empty, not over the 0.99 length quantile, not raised unless
``errors`` says so; output targets that depend on the environment kept and flagged unless
``environment="drop"``). Each pair is the protocol's prompt (``build_prompt``, fitted by
``fit_prompt`` as a prediction is) and the answer as the demonstrations give it
(``tagged_answer``), written as one chat-format JSON line (docs/format.md, "Training data
(SFT export)").

Streamed: a first pass reads each trajectory for the few numbers the filters need (the
0.99 quantile is over every candidate), a second reads it again, holding one trajectory's
history, and writes its pairs. Groups are written split by split in the order named, so
when a pair occurs in two splits the copy kept (the first) is in the first split named
(train): no test pair is one trained on.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import IO, Any

from themisto_ext.evaluation.sample import observe_trajectory, select_targets
from themisto_ext.prediction.prompts import TASKS, PredictionContext, PredictionTask, Prompt
from themisto_ext.prediction.prompts.build import build_prompt, tagged_answer
from themisto_ext.prediction.prompts.postprocess import postprocess
from themisto_ext.prediction.prompts.window import Window, fit_prompt
from themisto_ext.redaction import Redactor
from themisto_ext.store import TrajectoryStore
from themisto_ext.store.base import Trajectory as StoredTrajectory
from themisto_ext.training.split import assign_splits

_UNREAD = ("outputs", "hash_index")
"""Step fields no prompt reads: a history held without them is a fraction of the size."""
UNREADABLE = "answer the protocol cannot read back"
"""Why a pair is left out when ``postprocess`` of its answer is not its target (a code
fence or a tag of the prompts' markup inside): a model taught it would be misread."""


@dataclass(frozen=True)
class SFTConfig:
    contexts: Sequence[PredictionContext]
    tasks: Sequence[PredictionTask] = TASKS
    budget_chars: int = 24_000
    window: Window | None = None
    errors: str = "drop"
    environment: str = "keep"
    split: Sequence[tuple[str, float]] | None = None
    split_by: str = "trajectory"
    seed: int = 0


@dataclass
class SFTResult:
    written: Counter[tuple[str, str, str | None]] = field(default_factory=Counter)
    """Pairs written by (task, context, split)."""
    duplicates: int = 0
    excluded: dict[str, dict[str, int]] = field(default_factory=dict)
    """By task, how many steps each of the sampler's filters left out."""
    unreadable: int = 0
    groups: Counter[str | None] = field(default_factory=Counter)
    """Groups (trajectories or notebooks) per split."""
    environment_dependent: int = 0
    steps: int = 0


def mask_step(step: dict[str, Any], redactor: Redactor) -> dict[str, Any]:
    """The step with the server's redaction applied to every text a prompt or an answer
    reads. Stored steps were masked by the kernel; this pass is for a store recorded with
    redaction off, or rules since widened: a training file is made to be shared."""
    masked = {k: v for k, v in step.items() if k not in _UNREAD}
    masked["code"] = redactor.mask_code(step["code"])
    masked["output"] = redactor.mask(step["output"])
    if step.get("error"):
        masked["error"] = {k: redactor.mask(v) if isinstance(v, str) else v
                           for k, v in step["error"].items()}
    masked["runtime_variables"] = {
        name: {**var, "repr": redactor.mask(str(var.get("repr", "")))}
        for name, var in step["runtime_variables"].items()}
    return masked


def _group(info: StoredTrajectory, split_by: str) -> str:
    """The unit of a split; a trajectory of no notebook is a group of its own."""
    if split_by == "notebook":
        return info.notebook_path or f"trajectory:{info.id}"
    return info.id


def messages(prompt: Prompt, answer: str) -> list[dict[str, Any]]:
    """The prompt's messages and the answer, as chat fine-tuning reads them. The
    demonstrations' fixed answers carry ``weight`` 0 (the OpenAI API then trains on the
    last answer only); the answer ``weight`` 1."""
    chat: list[dict[str, Any]] = [dict(m) for m in prompt.messages()]
    for message in chat[:-1]:
        if message["role"] == "assistant":
            message["weight"] = 0
    return [*chat, {"role": "assistant", "content": tagged_answer(prompt.task, answer),
                    "weight": 1}]


def _fitted(history: Sequence[Any], task: PredictionTask, context: PredictionContext,
            target_code: str | None, config: SFTConfig) -> Prompt:
    """The prompt a prediction of this target gets (``prediction/run.py``): built at the
    budget, then down the ladder until it fits the window."""

    def build(budget: int) -> Prompt:
        return build_prompt(history, task, context, target_code=target_code,
                            budget_chars=budget)

    return fit_prompt(build, config.budget_chars, config.window)


def export_sft(store: TrajectoryStore, ids: Sequence[str], out: IO[str], config: SFTConfig,
               progress: Callable[[int, int], None] | None = None) -> SFTResult:
    """Write the pairs of the trajectories ``ids`` to ``out``; return the counts."""
    result = SFTResult()
    infos = {tid: info for tid in ids if (info := store.get_trajectory(tid)) is not None}
    observed = [observe_trajectory(tid, store.iter_steps(tid), f"trajectory {tid}, step",
                                   infos[tid].source) for tid in infos]
    result.steps = sum(len(t.facts) for t in observed)
    targets: dict[str, dict[int, dict[PredictionTask, list[str]]]] = {}
    for task in config.tasks:
        found, dropped = select_targets(observed, task, config.errors, config.environment)
        result.excluded[task] = dropped
        for candidate in found:
            reasons = sorted(candidate.trajectory.environment(candidate.position)) \
                if task == "output" else []
            targets.setdefault(candidate.trajectory.trajectory_id, {}) \
                .setdefault(candidate.position, {})[task] = reasons
    groups = {tid: _group(info, config.split_by) for tid, info in infos.items()}
    splits: dict[str, str | None] = dict.fromkeys(groups.values(), None)
    if config.split:
        splits.update(assign_splits(groups.values(), config.split, config.seed))
    order = [None] if not config.split else [name for name, _ in config.split]
    result.groups = Counter(splits.values())
    seen: set[bytes] = set()
    done = 0
    for split in order:
        for tid in sorted((t for t in infos if splits[groups[t]] == split),
                          key=lambda t: (groups[t], t)):
            for record, key in _pairs(store, infos[tid], groups[tid], split,
                                      targets.get(tid, {}), config, result):
                if key in seen:
                    result.duplicates += 1
                    continue
                seen.add(key)
                out.write(json.dumps(record, ensure_ascii=False) + "\n")
                result.written[(record["task"], record["context"], split)] += 1
                result.environment_dependent += record["environment_dependent"]
            done += 1
            if progress is not None:
                progress(done, len(infos))
    return result


def _pairs(store: TrajectoryStore, info: StoredTrajectory, group: str, split: str | None,
           targets: dict[int, dict[PredictionTask, list[str]]], config: SFTConfig,
           result: SFTResult) -> Iterator[tuple[dict[str, Any], bytes]]:
    """Each pair of one trajectory as its JSON object and its deduplication key."""
    redactor = Redactor()  # known secrets are a kernel's: one redactor per trajectory
    history: list[Any] = []
    for position, stored in enumerate(store.iter_steps(info.id)):
        step = mask_step(dict(stored), redactor)
        for task, reasons in targets.get(position, {}).items():
            reference = step["output"] if task == "output" else step["code"]
            for context in config.contexts:
                prompt = _fitted(history, task, context,
                                 step["code"] if task == "output" else None, config)
                chat = messages(prompt, reference.rstrip())
                if postprocess(chat[-1]["content"], task) != reference.strip():
                    result.unreadable += 1
                    continue
                key = hashlib.blake2b(json.dumps(chat, ensure_ascii=False).encode(),
                                      digest_size=16).digest()
                record = {"messages": chat, "id": f"{task}-{context}-{info.id}-{step['step']}",
                          "task": task, "context": context, "split": split, "group": group,
                          "trajectory_id": info.id, "step": step["step"],
                          "notebook_path": info.notebook_path, "source": info.source,
                          "environment_dependent": bool(reasons),
                          "environment_reasons": reasons,
                          "dropped_steps": prompt.dropped_steps}
                yield record, key
        history.append(step)
