"""A step within documented limits, whatever the cell printed: the whole step, not each
part, and what was cut is said in the step's ``truncated`` field.

Limits (``CaptureSettings``): ``code`` at most ``code_length`` characters; ``output`` at
most ``output_length``; the texts of ``outputs`` together at most ``output_length``
(shared out so that short outputs stay whole and the longest are cut most); at most
``output_items`` outputs (the first two thirds and the last third of longer lists);
an error's ``evalue`` and ``traceback`` at most ``output_length`` each; each repr at most
``repr_length``. Whatever the text, the step's journal line is at most ``step_bytes``: if
the limits above would give a longer line (many variables, text that JSON escapes to six
bytes a character), they are all halved until it fits.

Long texts are masked in windows around the part that is kept (``MARGIN`` characters
beyond each cut, more than any secret form spans), so masking a 24 MB output costs what
masking its kept 200 KB costs, and a secret that straddles a cut is still masked whole.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, cast

from themisto_ext.contract import CaptureSettings, StepRecord, encode_record
from themisto_ext.journal import encode
from themisto_ext.trajectory.text import clip, flatten, omitted_marker

if TYPE_CHECKING:
    from themisto_ext.records import Step

MARGIN = 10_000      # > the longest secret form (a PEM key is masked up to 8 KiB)
NAME_LENGTH = 200    # variable names and type names kept in a step
MIME_TYPES = 20      # MIME types listed per output

Mask = Callable[[str], str]


Spans = Callable[[str], list[tuple[int, int]]]


def mask_across(items: list[dict[str, Any]], spans: Spans,
                apply: Callable[[str, list[tuple[int, int]]], str]) -> None:
    """Mask, in place, secrets that straddle consecutive outputs: a key printed half to
    stdout and half to stderr left each half in ``outputs`` (masked one by one, neither
    half is a key). Each boundary is searched in a window of ``MARGIN`` characters either
    side, so the cost does not grow with the outputs' length."""
    local: dict[int, list[tuple[int, int]]] = {}
    for boundary in range(1, min(len(items), 2 * MARGIN)):
        pieces: list[tuple[int, int, str]] = []  # (item, offset in it, text)
        need, j = MARGIN, boundary - 1
        while j >= 0 and need > 0:
            text = items[j]["text"]
            piece = text[max(0, len(text) - need):]
            pieces.insert(0, (j, len(text) - len(piece), piece))
            need, j = need - len(piece), j - 1
        cut = sum(len(piece) for _, _, piece in pieces)
        need, j = MARGIN, boundary
        while j < len(items) and need > 0:
            piece = items[j]["text"][:need]
            pieces.append((j, 0, piece))
            need, j = need - len(piece), j + 1
        window = "".join(piece for _, _, piece in pieces)
        for start, end in spans(window):
            if not start < cut < end:
                continue  # within one output: masked with it
            at = 0
            for item, offset, piece in pieces:
                lo, hi = max(start, at), min(end, at + len(piece))
                if lo < hi:
                    local.setdefault(item, []).append((offset + lo - at, offset + hi - at))
                at += len(piece)
    for item, found in local.items():
        items[item]["text"] = apply(items[item]["text"], found)


def clip_masked(text: str, limit: int, mask: Mask) -> tuple[str, int]:
    """``clip(mask(text), limit)`` and the number of characters left out, masking only
    the windows that are kept."""
    limit = max(limit, 0)
    if len(text) <= limit + 2 * MARGIN:
        masked = mask(text)
        kept = clip(masked, limit)
        return kept, 0 if kept is masked else len(masked) - _kept_characters(len(masked), limit)
    keep = _kept_characters(len(text), limit)
    tail = keep // 3
    head = keep - tail
    head_text = mask(text[: head + MARGIN])[:head]
    tail_text = mask(text[len(text) - tail - MARGIN:])[-tail:] if tail else ""
    omitted = len(text) - keep
    return head_text + omitted_marker(omitted) + tail_text, omitted


def _kept_characters(length: int, limit: int) -> int:
    """Characters ``clip`` keeps of a text of ``length`` (the rest goes into its marker)."""
    return max(0, limit - len(omitted_marker(length)))


def share(lengths: list[int], budget: int) -> list[int]:
    """Per-item limits that sum to at most ``budget``: items under the common cap keep
    all their length, the longest are cut to the cap (water-filling)."""
    if sum(lengths) <= budget:
        return list(lengths)
    order = sorted(range(len(lengths)), key=lengths.__getitem__)
    caps = list(lengths)
    left, remaining = budget, len(lengths)
    for i in order:
        fair = left // remaining
        if lengths[i] <= fair:
            left -= lengths[i]
        else:
            caps[i] = fair
            left -= fair
        remaining -= 1
    return caps


def fit_step(step: dict[str, Any], code: str, items: list[dict[str, Any]],
             settings: CaptureSettings, mask: Mask, mask_code: Mask) -> bytes:
    """The step's journal line: its texts bounded (see the module docstring), masked,
    and ``truncated`` set when anything was cut."""
    line = b""
    for scale in (1, 2, 4, 8, 16, 32, 64):
        bounded = _bounded(step, code, items, settings, mask, mask_code, scale)
        line = _line(bounded)
        if len(line) <= settings.step_bytes:
            return line
    bounded["outputs"], bounded["runtime_variables"] = [], {}
    bounded["truncated"]["outputs_dropped"] = len(items)
    bounded["truncated"]["runtime_variables"] = len(step["runtime_variables"])
    return _line(bounded)


def _line(step: dict[str, Any]) -> bytes:
    return encode(encode_record(StepRecord(cast("Step", step))))


def _bounded(step: dict[str, Any], code: str, items: list[dict[str, Any]],
             settings: CaptureSettings, mask: Mask, mask_code: Mask,
             scale: int) -> dict[str, Any]:
    text_limit = settings.output_length // scale
    cut: dict[str, int] = {}
    result = dict(step)
    result["code"], cut["code"] = clip_masked(code, settings.code_length // scale, mask_code)
    result["outputs"], cut["outputs"], cut["outputs_dropped"] = _outputs(
        items, text_limit, settings.output_items, mask)
    result["output"], cut["output"] = clip_masked(flatten(items), text_limit, mask)
    error = step.get("error")
    if error is not None:
        error = result["error"] = dict(error)
        error["evalue"], cut["evalue"] = clip_masked(error["evalue"], text_limit, mask)
        shown = next((i for i in reversed(items) if i["output_type"] == "error"), None)
        if shown is not None:
            error["traceback"], cut["traceback"] = clip_masked(shown["text"], text_limit, mask)
    result["runtime_variables"], cut["runtime_variables"], cut["reprs"] = _variables(
        step["runtime_variables"], settings.repr_length // scale, keep_data=scale == 1)
    result["truncated"] = {k: v for k, v in cut.items() if v}
    if not result["truncated"]:
        del result["truncated"]
    return result


def _outputs(items: list[dict[str, Any]], limit: int, max_items: int,
             mask: Mask) -> tuple[list[dict[str, Any]], int, int]:
    dropped = max(0, len(items) - max_items)
    kept = items
    omitted = 0
    if dropped:
        head = max_items * 2 // 3
        kept = items[:head] + items[len(items) - (max_items - head):]
        omitted = sum(len(i["text"]) for i in items[head:len(items) - (max_items - head)])
    caps = share([len(i["text"]) for i in kept], limit)
    bounded = []
    for item, cap in zip(kept, caps, strict=True):
        new = dict(item)
        new["text"], cut = clip_masked(item["text"], cap, mask)
        omitted += cut
        new["mime_types"] = [t[:NAME_LENGTH] for t in item["mime_types"][:MIME_TYPES]]
        if "evalue" in new:
            new["evalue"], _ = clip_masked(new["evalue"], limit, mask)
        bounded.append(new)
    return bounded, omitted, dropped


def _variables(variables: dict[str, dict[str, Any]], repr_limit: int,
               keep_data: bool) -> tuple[dict[str, dict[str, Any]], int, int]:
    """The variables within the step's limits; values captured as data (``values.py``)
    lose their data first when the step must shrink (their reprs stay)."""
    kept: dict[str, dict[str, Any]] = {}
    shortened = 0
    for name, info in variables.items():
        if len(name) > NAME_LENGTH:
            continue
        if not keep_data and "data" in info:
            info = {k: v for k, v in info.items() if k != "data"}
        if len(info["repr"]) > repr_limit:
            info = dict(info, repr=clip(info["repr"], repr_limit))
            shortened += 1
        kept[name] = info
    return kept, len(variables) - len(kept), shortened
