"""Saved KV states of the sessions not currently in llama.cpp's one context.

A session (a trajectory x context) grows by appending; keeping its KV state when another
session takes the context lets it resume with its prefix already evaluated.
"""

from __future__ import annotations

import ctypes
from collections import OrderedDict
from typing import TYPE_CHECKING

from themisto_ext.errors import ProviderError

if TYPE_CHECKING:
    from llama_cpp import Llama, LlamaState


class SessionStates:
    """Saved KV states of sessions not currently in the context, least recently used first."""

    def __init__(self, capacity: int, max_bytes: int) -> None:
        self.capacity = capacity
        self.max_bytes = max_bytes
        self._states: OrderedDict[str, tuple[LlamaState, int]] = OrderedDict()
        self.nbytes = 0

    def put(self, session: str, state: LlamaState) -> None:
        self.pop(session)
        size = len(state.llama_state) + state.scores.nbytes + state.input_ids.nbytes
        if self.capacity <= 0 or size > self.max_bytes:
            return
        self._states[session] = (state, size)
        self.nbytes += size
        while len(self._states) > self.capacity or self.nbytes > self.max_bytes:
            _, (_, evicted) = self._states.popitem(last=False)
            self.nbytes -= evicted

    def pop(self, session: str) -> LlamaState | None:
        item = self._states.pop(session, None)
        if item is None:
            return None
        self.nbytes -= item[1]
        return item[0]

    def sessions(self) -> list[str]:
        return list(self._states)

    def clear(self) -> None:
        self._states.clear()
        self.nbytes = 0


def save_state(llm: Llama) -> LlamaState:
    """``Llama.save_state`` without its copies: about 3x faster, 140 MB less per switch.

    The library copies the KV bytes three times and keeps n_batch x n_vocab logits (~100 MB)
    that are never read without ``logits_all``: after ``load_state`` llama.cpp re-decodes at
    least one token before sampling. One row of zeros keeps ``load_state``'s broadcast valid.
    """
    import numpy as np
    from llama_cpp import LlamaState, llama_cpp

    size = llama_cpp.llama_state_get_size(llm.ctx)
    buffer = (ctypes.c_uint8 * size)()
    written = llama_cpp.llama_state_get_data(llm.ctx, buffer, size)
    if written > size:
        raise ProviderError("llama.cpp wrote more state than it announced")
    return LlamaState(
        input_ids=llm.input_ids.copy(),
        scores=np.zeros((1, llm.n_vocab()), dtype=np.single),
        n_tokens=llm.n_tokens,
        llama_state=buffer,  # load_state only needs a buffer
        llama_state_size=written,
        seed=0,  # the sampler is greedy: the seed is never used
    )
