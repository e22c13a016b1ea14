"""Serve a GGUF over llama.cpp's OpenAI-compatible HTTP API, on loopback only: the same
runtime and settings the embedded model uses, for an ``openai:`` predictor (or any
OpenAI client) against the same model.

    python -m themisto_ext.prediction.clients.local.serve --model PATH [--port N]

Prints the address once listening; stops on SIGINT or SIGTERM.
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from pathlib import Path

from themisto_ext.prediction.clients.local.runtime import (
    missing_runtime,
    prompt_threads,
    server_params,
)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="themisto-serve-model", description=__doc__)
    parser.add_argument("--model", type=Path, help="a GGUF file (default: the embedded one)")
    parser.add_argument("--port", type=int, default=0, help="default: any free port")
    parser.add_argument("--n-ctx", type=int, default=4096)
    parser.add_argument("--threads", type=int, default=prompt_threads(),
                        help="threads reading prompts (default: the embedded model's)")
    parser.add_argument("--decode-threads", type=int, default=1,
                        help="threads writing tokens (the embedded model's default)")
    parser.add_argument("--api-key", help="require this bearer token")
    args = parser.parse_args(argv)
    problem = missing_runtime()
    if problem is not None:
        print(f"error: {problem}", file=sys.stderr)
        return 1
    import xllamacpp as xlc

    from themisto_ext.prediction.clients.local.engine import default_model_path

    path = args.model or default_model_path()
    params = server_params(path, n_ctx=args.n_ctx, n_threads=args.threads,
                           n_threads_decode=args.decode_threads, cache_bytes=0, slot_dir=None,
                           safe=False, adapter=None)
    params.port = args.port
    params.n_threads_http = 2
    if args.api_key:
        params.api_keys = [args.api_key]
    server = xlc.Server(params)
    print(server.listening_address, flush=True)
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    stop.wait()
    del server
    return 0


if __name__ == "__main__":
    sys.exit(main())
