"""LoRA weights (PEFT's names) as a llama.cpp LoRA adapter GGUF, and back.

llama.cpp applies an adapter over a quantised base: ``W x + scale * alpha / r * B A x``,
reading ``<tensor>.lora_a`` (A, r x in, PEFT's ``lora_A.weight`` as it is) and
``<tensor>.lora_b`` (B, out x r) for each adapted base tensor, under the base model's
architecture, with ``general.type = adapter``, ``adapter.type = lora`` and
``adapter.lora.alpha`` (llama.cpp's ``llama-adapter.cpp``; the format
``convert_lora_to_gguf.py`` writes). PEFT's scaling is ``alpha / r`` too, so the adapter
llama.cpp applies is the one trained.

Only the projections whose GGUF layout equals the Hugging Face one are written: llama.cpp
stores ``q_proj`` and ``k_proj`` with their rows permuted for its rotary embedding, so
their B would need the same permutation; ``TARGETS`` leaves them out instead.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

TARGETS = {
    "self_attn.v_proj": "attn_v",
    "self_attn.o_proj": "attn_output",
    "mlp.gate_proj": "ffn_gate",
    "mlp.up_proj": "ffn_up",
    "mlp.down_proj": "ffn_down",
}
"""PEFT module (within a decoder layer) -> llama.cpp tensor name (within ``blk.N``)."""

_PEFT_NAME = re.compile(r"(?:.*\.)?layers\.(\d+)\.(\w+\.\w+)\.lora_([AB])(?:\.default)?\.weight$")


def gguf_name(peft_name: str) -> str:
    """``...layers.3.mlp.up_proj.lora_A.weight`` -> ``blk.3.ffn_up.weight.lora_a``."""
    match = _PEFT_NAME.match(peft_name)
    if not match or match.group(2) not in TARGETS:
        raise ValueError(f"not a LoRA weight this adapter format holds: {peft_name}")
    layer, module, which = match.groups()
    return f"blk.{layer}.{TARGETS[module]}.weight.lora_{which.lower()}"


def write_adapter(path: Path, weights: Mapping[str, Any], *, alpha: float,
                  architecture: str = "llama", name: str = "themisto-lora") -> None:
    """Write ``weights`` (PEFT name -> 2-D float array) as a LoRA adapter GGUF at ``path``
    (through a temporary file: a failed write leaves no half adapter)."""
    import gguf
    import numpy as np

    temporary = path.with_name(f".{path.name}.partial")
    writer = gguf.GGUFWriter(str(temporary), architecture)
    try:
        writer.add_type(gguf.GGUFType.ADAPTER)
        writer.add_name(name)
        writer.add_string(gguf.Keys.Adapter.TYPE, "lora")
        writer.add_float32(gguf.Keys.Adapter.LORA_ALPHA, float(alpha))
        for peft_name in sorted(weights):
            array = np.ascontiguousarray(np.asarray(weights[peft_name], dtype=np.float32))
            if array.ndim != 2:
                raise ValueError(f"{peft_name}: a LoRA weight is a matrix, not {array.shape}")
            writer.add_tensor(gguf_name(peft_name), array)
        writer.write_header_to_file()
        writer.write_kv_data_to_file()
        writer.write_tensors_to_file()
    finally:
        writer.close()
    temporary.replace(path)


def read_adapter(path: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """The adapter's metadata (architecture, type, alpha) and tensors (GGUF name -> array in
    PEFT's orientation), as ``write_adapter`` wrote them; ``ValueError`` if it is none."""
    import gguf
    import numpy as np

    reader = gguf.GGUFReader(str(path))

    def field(key: str) -> Any:
        found = reader.get_field(key)
        return None if found is None else found.contents()

    meta = {"architecture": field("general.architecture"), "type": field("general.type"),
            "adapter_type": field(gguf.Keys.Adapter.TYPE),
            "alpha": field(gguf.Keys.Adapter.LORA_ALPHA)}
    if meta["type"] != "adapter" or meta["adapter_type"] != "lora":
        raise ValueError(f"{path} is not a LoRA adapter GGUF")
    # GGUF lists dimensions fastest first; numpy's shape is the reverse
    tensors = {t.name: np.asarray(t.data).reshape(tuple(reversed(t.shape.tolist())))
               for t in reader.tensors}
    return meta, tensors
