"""Model clients by name, the same in server settings and on the command line.

``baseline`` | ``copy-previous`` | ``hybrid`` | ``local`` | ``local:PATH.gguf`` |
``openai:MODEL`` | ``anthropic:MODEL`` | ``hybrid:`` followed by one of the three model
forms (``hybrid:openai:MODEL``: the rules, and that model where they leave a cell);
``local`` and ``hybrid`` forms may end in ``+ADAPTER.gguf``, a LoRA adapter applied over
the model (``themisto finetune``). A remote model is reached through a provider
(``openai.py``, ``anthropic.py`` over ``http.py``); the references (``baseline``,
``copy-previous``), ``hybrid`` (the rules where they apply, else the embedded model, or the
model it names) and ``local`` answer in this process. Every model's prompts are fitted to
its window in its own tokens: the local model's ``n_ctx`` counted by its tokenizer; a remote
model's configured ``window_tokens``, counted by an estimate or, given
``tokenizer=PATH.gguf``, by that model file's tokenizer and chat template.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

from themisto_ext.errors import PredictorSpecError
from themisto_ext.prediction.clients.base import (
    Completion,
    PredictionRequest,
    PredictionSuperseded,
    Predictor,
    ProviderAuthError,
    ProviderConnectionError,
    ProviderError,
    ProviderRateLimitError,
    ProviderRequestError,
    ProviderResponseError,
    ProviderServerError,
    ProviderTimeoutError,
)
from themisto_ext.prediction.clients.local.supervisor import Limits
from themisto_ext.prediction.prompts import Prompt
from themisto_ext.prediction.prompts.window import Window, estimated_window

PREDICTOR_FORMS = ("baseline, copy-previous, hybrid, local, local:PATH.gguf, openai:MODEL, "
                   "anthropic:MODEL or hybrid: followed by one of the last three (local and "
                   "hybrid forms may end in +ADAPTER.gguf)")
_MODEL_KINDS = ("local", "openai", "anthropic")
API_WINDOW_TOKENS = 16_384
"""A remote model's window unless configured: more than a 24,000-character prompt needs."""


class ChatProvider(Protocol):
    name: str
    max_tokens: int | None

    async def complete(self, prompt: Prompt,
                       on_text: Callable[[str], None] | None = None) -> Completion: ...

    async def aclose(self) -> None: ...


class ProviderPredictor:
    """A remote chat model behind a provider: the prompt is all it sees."""

    writes_cells = True
    """Its model may complete a cell being typed (``prediction/completion.py``)."""

    def __init__(self, provider: ChatProvider, window: Window | None = None) -> None:
        self._provider = provider
        self.name = provider.name
        self.window = window
        self.max_tokens = provider.max_tokens

    async def predict(self, request: PredictionRequest) -> Completion:
        return await self._provider.complete(request.prompt, request.on_text)

    async def aclose(self) -> None:
        await self._provider.aclose()


def local_model_available() -> bool:
    """Whether ``local`` can run here: llama.cpp (``xllamacpp``) and the default GGUF are
    installed. (Found, not imported: llama.cpp is loaded only by the model's own process.)"""
    try:
        if importlib.util.find_spec("xllamacpp") is None:
            return False
        from themisto_ext.prediction.clients.local.engine import default_model_path

        return default_model_path().is_file()
    except Exception:
        return False


def split_adapter(spec: str) -> tuple[str, Path | None]:
    """``hybrid+A.gguf`` -> (``hybrid``, ``A.gguf``); a spec without an adapter as it is."""
    head, plus, tail = spec.strip().rpartition("+")
    if plus and tail.endswith(".gguf") and head.partition(":")[0] in ("local", "hybrid"):
        return head, Path(tail)
    return spec.strip(), None


def check_predictor_name(spec: str) -> str:
    """``spec`` if it is one of the documented forms, else ``PredictorSpecError``."""
    head, adapter = split_adapter(spec)
    kind, colon, arg = head.partition(":")
    if (kind in ("baseline", "copy-previous", "hybrid") and not colon) or kind == "local" \
            or (kind in ("openai", "anthropic") and arg) \
            or (kind == "hybrid" and arg.partition(":")[0] in _MODEL_KINDS
                and _is_model_form(arg if adapter is None else f"{arg}+{adapter}")):
        return spec.strip()
    raise PredictorSpecError(f"unknown predictor {spec!r}: use {PREDICTOR_FORMS}")


def _is_model_form(spec: str) -> bool:
    try:
        return check_predictor_name(spec) == spec.strip()
    except PredictorSpecError:
        return False


def runs_local_model(spec: str) -> bool:
    """Whether the predictor named ``spec`` asks the embedded (or a local GGUF) model, whose
    prompts are kept short: ``local`` forms, ``hybrid`` and ``hybrid:local:...``."""
    kind, colon, arg = split_adapter(spec)[0].partition(":")
    return kind == "local" or (kind == "hybrid" and (not colon or arg.startswith("local")))


def make_predictor(spec: str, *, base_url: str | None = None, timeout: float = 60,
                   max_concurrency: int = 8, reuse_prefix: bool = True,
                   max_tokens: int | None = None, window_tokens: int | None = None,
                   tokenizer: Path | None = None,
                   local_limits: Limits | None = None,
                   local_threads: int | None = None,
                   models: dict[str, Predictor] | None = None,
                   local_adapter: Path | None = None,
                   local_model: str | None = None) -> Predictor:
    """The predictor named ``spec``. ``max_tokens`` caps answers below the protocol's;
    ``window_tokens`` and ``tokenizer`` set a remote model's window (see the module);
    ``local_limits`` the local model process's deadlines and restart policy,
    ``local_threads`` the threads it reads prompts on (None: ``runtime.prompt_threads``).
    Predictors made with the same ``models`` dict share one process per local model file
    (``local`` and ``hybrid`` in one server). ``local_adapter``: the LoRA adapter of ``local`` and
    ``hybrid`` forms that name none; ``local_model`` their model when they name none (a name
    of ``themisto models list`` or a GGUF path; default: the embedded default)."""
    bare, named = split_adapter(check_predictor_name(spec))
    adapter = named or local_adapter
    kind, _, arg = bare.partition(":")
    if kind == "baseline":
        from themisto_ext.prediction.clients.baseline import BaselinePredictor

        return BaselinePredictor()
    if kind == "copy-previous":
        from themisto_ext.prediction.clients.references import CopyPreviousPredictor

        return CopyPreviousPredictor()
    if kind == "hybrid" and arg:  # the rules over the model it names
        from themisto_ext.prediction.clients.hybrid import HYBRID, HybridPredictor

        # (local_adapter applies to a local model only: the inner call decides)
        model = make_predictor(arg if named is None else f"{arg}+{named}", base_url=base_url,
                               timeout=timeout, max_concurrency=max_concurrency,
                               reuse_prefix=reuse_prefix, max_tokens=max_tokens,
                               window_tokens=window_tokens, tokenizer=tokenizer,
                               local_limits=local_limits, local_threads=local_threads,
                               models=models, local_adapter=local_adapter,
                               local_model=local_model)
        return HybridPredictor(model, f"{HYBRID}:{model.name}", next_cells=True, outputs=True)
    if kind in ("local", "hybrid"):
        from themisto_ext.prediction.clients.local import LocalPredictor
        from themisto_ext.prediction.clients.local import models as known
        from themisto_ext.prediction.clients.local.wire import adapted

        if not arg and local_model:
            arg = str(known.resolve(local_model))
        key = f"{arg}+{adapter or ''}"  # one process per model file and adapter
        shared = None if models is None else models.get(key)
        local = LocalPredictor(Path(arg) if arg else None, reuse_prefix=reuse_prefix,
                               max_tokens=max_tokens, limits=local_limits,
                               n_threads=local_threads,
                               share=shared if isinstance(shared, LocalPredictor) else None,
                               adapter=adapter)
        if models is not None:
            models.setdefault(key, local)
        if kind == "local":
            return local
        from themisto_ext.prediction.clients.hybrid import HYBRID, HybridPredictor

        return HybridPredictor(local, adapted(HYBRID, adapter))
    from themisto_ext.prediction.clients.anthropic import AnthropicProvider
    from themisto_ext.prediction.clients.openai import OpenAIProvider

    cls: type[OpenAIProvider] | type[AnthropicProvider] = (
        OpenAIProvider if kind == "openai" else AnthropicProvider)
    tokens = window_tokens or API_WINDOW_TOKENS
    if tokenizer is None:
        window = estimated_window(tokens)
    else:
        from themisto_ext.prediction.clients.local import gguf_prompt_counter

        window = Window(tokens, gguf_prompt_counter(tokenizer))
    return ProviderPredictor(cls(arg, base_url=base_url, timeout=timeout,
                                 max_concurrency=max_concurrency, max_tokens=max_tokens),
                             window)


__all__ = [
    "PREDICTOR_FORMS",
    "Completion",
    "Limits",
    "PredictionRequest",
    "PredictionSuperseded",
    "Predictor",
    "PredictorSpecError",
    "ProviderAuthError",
    "ProviderConnectionError",
    "ProviderError",
    "ProviderPredictor",
    "ProviderRateLimitError",
    "ProviderRequestError",
    "ProviderResponseError",
    "ProviderServerError",
    "ProviderTimeoutError",
    "check_predictor_name",
    "local_model_available",
    "make_predictor",
    "runs_local_model",
]
