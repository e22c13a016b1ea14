"""llama.cpp as the prebuilt ``xllamacpp`` wheel ships it: its native server, in the model's
own process.

Why this runtime (measured in docs/install.md, "The runtime"): it installs from a
wheel with nothing to compile, for a fixed x86-64-v3 baseline (AVX2, FMA, F16C, BMI2; no
AVX-512, no AMX: the build that runs on VMs that advertise AMX and fault on it), and its
server keeps what the predictor needs: prompt caching per slot (a session's next prompt
reads only its new tail), a host-memory cache of other prompts' KV states (interleaved
sessions keep their prefix), slot files (the fixed prompt part saved across processes),
streaming with cancellation at the next token, and LoRA adapters.

Generation goes through ``Server.handle_*`` calls; tokenizing, chat templates and slot
files through the same server's HTTP routes, which listen on 127.0.0.1 only and require a
key that never leaves this process, so another user on the machine cannot use them.
"""

from __future__ import annotations

import json
import os
import platform
import secrets
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from themisto_ext.errors import ModelServerError
from themisto_ext.prediction.clients.local.wire import LocalModelError

MiB = 1024 * 1024
PACKAGE = "xllamacpp"

BATCH = 512
"""Prompt tokens decoded at a time: between two batches a prompt can be paused or
abandoned, and the supervisor hears of progress. It also bounds what ``/infill`` reads
before the cursor where text follows it: llama.cpp keeps the last ``3 * BATCH / 4`` tokens
of ``input_prefix`` (384), so a smaller batch, which would pause sooner, would cut a
completion's notebook (with nothing after the cursor it is all read: ``Engine.infill``)."""


def missing_runtime() -> str | None:
    """Why the runtime cannot run on this machine, or None. A CPU without AVX2 would die
    of an illegal instruction at the first batch: said before anything is loaded."""
    machine = platform.machine().lower()
    if machine in ("x86_64", "amd64"):
        try:
            flags = Path("/proc/cpuinfo").read_text(errors="replace").split()
        except OSError:
            flags = []
        lacking = [f for f in ("avx", "avx2", "fma", "f16c") if flags and f not in flags]
        if lacking:
            return (f"this CPU lacks {', '.join(lacking)}, which the prebuilt llama.cpp wheel "
                    f"needs: build xllamacpp from source for this CPU (`pip install "
                    f"--no-binary xllamacpp xllamacpp`), or use an `openai:` or "
                    f"`anthropic:` predictor")
    try:
        import xllamacpp  # noqa: F401
    except ImportError:
        return "llama.cpp is not installed: `pip install 'themisto_ext[local]'`"
    except OSError as exc:  # a wheel for another libc or CPU
        return f"llama.cpp could not be loaded here: {exc}"
    return None


def usable_cpus(cgroup: Path = Path("/sys/fs/cgroup"),
                own: Path = Path("/proc/self/cgroup")) -> int:
    """The CPUs this process may use: those it is allowed to run on, fewer where a CPU
    quota on its control group or one above it (cgroup v2 ``cpu.max``, v1
    ``cpu.cfs_quota_us``) allows less, as a pod on a large node or a hub user's slice is
    given two CPUs' time."""
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") \
        else os.cpu_count() or 1
    for quota, period in _quotas(cgroup, own):
        if quota > 0 and period > 0:
            cpus = min(cpus, max(1, quota // period))
    return max(1, cpus)


def _quotas(cgroup: Path, own: Path) -> Iterator[tuple[int, int]]:
    """(quota, period) of every CPU limit on this process's groups, v2 and v1."""
    try:
        lines = own.read_text().splitlines()
    except OSError:
        lines = []
    paths = {"": "/", "cpu": "/"}  # a namespaced container sees its own group as the root
    for line in lines:
        _, controllers, path = [*line.split(":", 2), "", ""][:3]
        for name in controllers.split(",") if controllers else [""]:
            if name in paths:
                paths[name] = path or "/"
    places = ((cgroup, paths[""], "cpu.max", None),
              (cgroup / "cpu", paths["cpu"], "cpu.cfs_quota_us", "cpu.cfs_period_us"))
    for root, path, quota_file, period_file in places:
        group = root / path.strip("/")
        for folder in (group, *group.parents):
            try:
                words = (folder / quota_file).read_text().split()
                if period_file is not None:
                    words.append((folder / period_file).read_text().strip())
                yield int(words[0]), int(words[1])
            except (OSError, ValueError, IndexError):  # none here, or "max": no quota
                pass
            if folder == root:
                break


def prompt_threads(cpus: int | None = None) -> int:
    """Threads reading prompts by default: half the usable CPUs (one on a 2-core machine),
    at most four. llama.cpp's threads meet at a spinning barrier after every operation, so
    a thread the kernel's computation keeps off a core stalls its partners: measured on 2
    cores, a 490-token prompt for Qwen2.5-Coder-0.5B took 5.1 s on 2 threads and 8.5 s on
    1 when the machine was quiet, but 15.1 s on 2 and 8.2 s on 1 beside one busy core,
    and beside two a 100-token prompt took 7.5 s on 2 threads against 0.1 s on 1. Half
    leaves the rest to the user's kernel, which then does not slow the model either."""
    return max(1, min(4, (cpus or usable_cpus()) // 2))


def system_info() -> str:
    import xllamacpp

    return str(xllamacpp.get_system_info()).strip()


def version() -> str:
    import xllamacpp

    return str(xllamacpp.__version__)


class Runtime:
    """One llama.cpp server with one slot: the model, its context and its prompt cache."""

    def __init__(self, path: Path, *, n_ctx: int, n_threads: int, n_threads_decode: int,
                 cache_bytes: int, slot_dir: Path | None, safe: bool,
                 adapter: Path | None) -> None:
        problem = missing_runtime()
        if problem is not None:
            raise LocalModelError(f"The local model cannot run: {problem}")
        import xllamacpp as xlc

        self._key = secrets.token_urlsafe(24)
        params = server_params(path, n_ctx=n_ctx, n_threads=n_threads,
                               n_threads_decode=n_threads_decode, cache_bytes=cache_bytes,
                               slot_dir=slot_dir, safe=safe, adapter=adapter)
        params.api_keys = [self._key]
        try:
            self._server: Any = xlc.Server(params)
        except Exception as exc:  # the library raises for a file it cannot load
            what = path if adapter is None else f"{path} with {adapter}"
            raise LocalModelError(f"llama.cpp could not load {what}: {exc}") from None
        self._address = str(self._server.listening_address)

    def close(self) -> None:
        self._server = None

    # -- generation ------------------------------------------------------------------

    def stream(self, route: str, body: dict[str, Any],
               on_chunk: Callable[[dict[str, Any]], bool]) -> None:
        """Run a completion (``route`` "chat" or "text") streamed: ``on_chunk`` sees every
        chunk (prompt progress per batch, then a token at a time) and returns True to
        stop the request there. An error the server reports is raised."""
        errors: list[dict[str, Any]] = []

        def callback(chunk: Any) -> bool:
            if isinstance(chunk, dict) and "error" in chunk:
                errors.append(chunk["error"])
                return True
            return bool(on_chunk(chunk))

        call = self._server.handle_chat_completions if route == "chat" \
            else self._server.handle_completions
        result = call({**body, "stream": True, "return_progress": True,
                       "stream_options": {"include_usage": True}}, callback)
        if isinstance(result, dict) and "error" in result:
            errors.append(result["error"])
        if errors:
            raise server_error(errors[0])

    def infill(self, body: dict[str, Any], on_chunk: Callable[[dict[str, Any]], bool]) -> None:
        """Fill in the middle (the server's ``/infill``: the model's own FIM tokens), streamed
        as ``stream`` streams; stopping closes the connection, which ends the request in
        the server at its next token."""
        # (progress per prompt batch: the supervisor hears that a long prompt is being
        # read, and the caller may stop it between batches)
        request = self._request("/infill", {**body, "stream": True, "return_progress": True})
        try:
            with urllib.request.urlopen(request, timeout=120) as response:
                for raw in response:
                    line = raw.decode("utf-8", "replace").strip()
                    if not line.startswith("data: "):
                        continue
                    chunk = json.loads(line[len("data: "):])
                    if "error" in chunk:
                        raise server_error(chunk["error"])
                    if on_chunk(chunk) or chunk.get("stop"):
                        return
        except urllib.error.HTTPError as exc:
            raise server_error(_error_of(exc)) from None
        except (OSError, ValueError) as exc:
            raise LocalModelError(f"llama.cpp's server did not answer /infill: {exc}") from None

    def complete(self, body: dict[str, Any]) -> dict[str, Any]:
        """A plain text completion, not streamed."""
        result: dict[str, Any] = self._server.handle_completions(body)
        if "error" in result:
            raise server_error(result["error"])
        return result

    # -- the server's HTTP routes --------------------------------------------------------

    def tokenize(self, text: str, *, special: bool) -> list[int]:
        """Tokens of ``text``; with ``special``, as a chat is read: BOS if the model wants
        one, and the template's special tokens as tokens."""
        answer = self._post("/tokenize", {"content": text, "add_special": special,
                                          "parse_special": special})
        return list(answer["tokens"])

    def chat_text(self, messages: list[dict[str, str]], *, add_generation_prompt: bool = True
                  ) -> str:
        """The chat as the GGUF's own template renders it, as the server reads it."""
        answer = self._post("/apply-template", {
            "messages": messages, "add_generation_prompt": add_generation_prompt})
        return str(answer["prompt"])

    def save_slot(self, filename: str) -> None:
        self._post("/slots/0?action=save", {"filename": filename})

    def restore_slot(self, filename: str) -> int:
        """Replace the slot's KV cache with a saved one; the tokens it holds."""
        return int(self._post("/slots/0?action=restore", {"filename": filename})["n_restored"])

    def _request(self, route: str, body: dict[str, Any]) -> urllib.request.Request:
        return urllib.request.Request(
            self._address + route, data=json.dumps(body).encode(), method="POST",
            headers={"Authorization": f"Bearer {self._key}",
                     "Content-Type": "application/json"})

    def _post(self, route: str, body: dict[str, Any]) -> dict[str, Any]:
        try:
            with urllib.request.urlopen(self._request(route, body), timeout=120) as response:
                answer: dict[str, Any] = json.loads(response.read())
        except urllib.error.HTTPError as exc:
            raise server_error(_error_of(exc)) from None
        except (OSError, ValueError) as exc:
            raise LocalModelError(f"llama.cpp's server did not answer {route}: {exc}") from None
        return answer


def _error_of(exc: urllib.error.HTTPError) -> dict[str, Any]:
    try:
        error: dict[str, Any] = json.loads(exc.read()).get("error", {})
    except (ValueError, AttributeError):
        error = {"message": f"HTTP {exc.code}"}
    return error


def server_error(error: dict[str, Any]) -> ModelServerError:
    """The error llama.cpp's server reported for a request, as raised here."""
    return ModelServerError(str(error.get("message", error)), str(error.get("type", "")))


def server_params(path: Path, *, n_ctx: int, n_threads: int, n_threads_decode: int,
                  cache_bytes: int, slot_dir: Path | None, safe: bool,
                  adapter: Path | None) -> Any:
    """The server's settings: one slot, greedy decoding, no warm-up (the self-test does
    that), the prompt cache in at most ``cache_bytes`` of memory."""
    import xllamacpp as xlc

    params = xlc.CommonParams()
    params.model.path = str(path)
    params.n_ctx = n_ctx
    params.n_parallel = 1
    params.n_batch = BATCH
    params.n_ubatch = BATCH
    params.n_gpu_layers = 0
    # Flash attention (llama.cpp's "auto" turns it on for the CPU) halves the rate at which
    # tokens are written once the context holds a notebook's thousand tokens (10.7 against
    # 20.9 tokens/s for SmolLM2-135M, measured); it reads prompts only ~15 % faster.
    params.flash_attn_type = xlc.llama_flash_attn_type.LLAMA_FLASH_ATTN_TYPE_DISABLED
    params.cpuparams.n_threads = n_threads_decode
    params.cpuparams_batch.n_threads = n_threads
    # Threads wait for each other by sleeping, not spinning: beside a busy core (a kernel
    # computing) a spinning thread takes the CPU its partner needs (a 500-token prompt at
    # 57 tokens/s against 47 beside a CPU hog; the same or better on a quiet machine).
    params.cpuparams.poll = 0
    params.cpuparams_batch.poll = 0
    params.sampling.temp = 0.0
    params.sampling.top_k = 1
    params.sampling.seed = 0
    params.warmup = False
    params.verbosity = 0  # errors only: the server's per-request lines would flood the log
    params.cache_prompt = True
    params.cache_ram_mib = max(0, cache_bytes // MiB)
    params.hostnames = ["127.0.0.1"]
    params.port = 0  # any free port
    params.n_threads_http = 2  # a token count is answered while an infill streams
    params.endpoint_slots = slot_dir is not None
    if slot_dir is not None:
        params.slot_save_path = str(slot_dir) + os.sep
    # In safe mode, no extra buffer types (AMX tiles, repacked weights): slower, but runs
    # where the CPU advertises instructions the VM refuses.
    params.no_extra_bufts = safe
    if adapter is not None:
        params.lora_adapters = [xlc.CommonAdapterLoraInfo(str(adapter), 1.0)]
    return params
