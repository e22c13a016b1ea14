"""A fake LLM server on 127.0.0.1 speaking OpenAI Chat Completions and Anthropic Messages.

It answers deterministically (a fixed ``answer``, else the last line of the last user
message) with realistic ``usage`` blocks, cuts the answer at the request's stop sequences
(``stop``, ``stop_sequences``) as real APIs do, continues an Anthropic reply the request
began (an answer starting with that prefill loses it), simulates prefix caching, records
every request and can be scripted to misbehave, one ``Reply`` per request. A request with
``stream: true`` is answered in the real streaming wire formats (Server-Sent Events:
OpenAI's ``chat.completion.chunk`` events and ``[DONE]``, the usage chunk when
``stream_options.include_usage`` asks for it; Anthropic's ``message_start`` ...
``message_stop``), a piece of about one token per event::

    with FakeLLM() as llm:
        llm.script(error(429, retry_after="1"), ok("fine"))
        ...  # point a provider at llm.openai_url or llm.anthropic_url
        assert len(llm.requests) == 2

Runs in a background thread, so sync and async tests can use it alike. For manual use:
``python tests/fake_llm.py --port 8011 [--answer TEXT]``.
"""

from __future__ import annotations

import argparse
import json
import math
import socketserver
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

OPENAI_PATHS = ("/v1/chat/completions", "/chat/completions")
ANTHROPIC_PATH = "/v1/messages"


@dataclass
class Reply:
    """How to answer one request; the defaults give a normal answer."""

    status: int = 200
    text: str | None = None
    """The answer's text (None: the server's ``answer`` or the user message's last line)."""
    message: str | None = None
    """For an error status: the message put in the wire format's error body."""
    body: bytes | None = None
    """Sent verbatim instead of a protocol body (malformed JSON, HTML, missing fields)."""
    content_type: str = "application/json"
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    """Seconds to wait before answering."""
    hang: bool = False
    """Never answer (until the server stops)."""
    trickle: float = 0.0
    """Send headers at once, then the body one byte every ``trickle`` seconds."""
    drop: bool = False
    """Close the connection without answering."""
    piece_delay: float = 0.0
    """Streamed: seconds between pieces of the answer."""


def ok(text: str | None = None, *, delay: float = 0.0, piece_delay: float = 0.0) -> Reply:
    return Reply(text=text, delay=delay, piece_delay=piece_delay)


def error(status: int, message: str = "scripted failure", *,
          retry_after: str | None = None) -> Reply:
    headers = {"Retry-After": retry_after} if retry_after is not None else {}
    return Reply(status=status, message=message, headers=headers)


def raw(body: str | bytes, content_type: str = "application/json", status: int = 200) -> Reply:
    data = body.encode() if isinstance(body, str) else body
    return Reply(status=status, body=data, content_type=content_type)


def hang() -> Reply:
    return Reply(hang=True)


@dataclass
class Recorded:
    path: str
    headers: dict[str, str]
    """Lower-cased names."""
    body: Any
    """Parsed JSON, or None when the body was not JSON."""
    at: float
    """``time.monotonic()`` when the request had been read."""


def tokens(text: str) -> int:
    # about four characters a token, like English text through a BPE tokenizer
    return math.ceil(len(text) / 4)


def common_prefix(a: str, b: str) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


def last_user(messages: Any) -> Any:
    users = [m for m in messages or [] if isinstance(m, dict) and m.get("role") == "user"]
    return users[-1].get("content") if users else None


def cut_at_stops(text: str, stops: Any) -> str:
    if isinstance(stops, str):
        stops = [stops]
    for stop in stops or []:
        if isinstance(stop, str) and stop and stop in text:
            text = text[:text.index(stop)]
    return text


def user_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(b.get("text", "") for b in content if isinstance(b, dict))
    return ""


class FakeLLM:
    def __init__(self, answer: str | None = None, port: int = 0) -> None:
        self.answer = answer
        self.requests: list[Recorded] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self._script: deque[Reply] = deque()
        self._openai_prompts: list[str] = []
        self._anthropic_prefixes: set[str] = set()
        self._lock = threading.Lock()
        self._stopped = threading.Event()
        self._server = _Server(("127.0.0.1", port), _Handler)
        self._server.fake = self
        self.port: int = self._server.server_address[1]
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def openai_url(self) -> str:
        return f"{self.url}/v1"

    @property
    def anthropic_url(self) -> str:
        return self.url

    def script(self, *replies: Reply) -> None:
        """Answer the next requests with ``replies``, in order, then normally again."""
        with self._lock:
            self._script.extend(replies)

    def start(self) -> FakeLLM:
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopped.set()  # releases hanging and slow handlers
        if self._thread is not None:
            self._server.shutdown()
            self._thread.join()
        self._server.server_close()

    def __enter__(self) -> FakeLLM:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()

    # -- called from handler threads ----------------------------------------------------

    def _begin(self, record: Recorded) -> Reply:
        with self._lock:
            self.requests.append(record)
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
            return self._script.popleft() if self._script else Reply()

    def _end(self) -> None:
        with self._lock:
            self.in_flight -= 1

    def _answer_for(self, reply: Reply, user: str) -> str:
        if reply.text is not None:
            return reply.text
        if self.answer is not None:
            return self.answer
        lines = [line for line in user.splitlines() if line.strip()]
        return lines[-1] if lines else ""

    def openai_answer(self, body: dict[str, Any], reply: Reply) -> dict[str, Any]:
        messages = body.get("messages") or []
        prompt = "".join(user_text(m.get("content")) for m in messages)
        user = user_text(last_user(messages))
        with self._lock:
            shared = max((common_prefix(prompt, p) for p in self._openai_prompts), default=0)
            self._openai_prompts.append(prompt)
        text = cut_at_stops(self._answer_for(reply, user), body.get("stop"))
        return {
            "id": f"chatcmpl-{len(self.requests)}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model"),
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": text}}],
            "usage": {
                "prompt_tokens": tokens(prompt),
                "completion_tokens": tokens(text),
                "total_tokens": tokens(prompt) + tokens(text),
                "prompt_tokens_details": {"cached_tokens": shared // 4},
            },
        }

    def anthropic_answer(self, body: dict[str, Any], reply: Reply) -> dict[str, Any]:
        system = user_text(body.get("system"))
        messages = body.get("messages") or []
        content = last_user(messages)
        blocks = content if isinstance(content, list) else [{"text": user_text(content)}]
        last = messages[-1] if messages and isinstance(messages[-1], dict) else {}
        began = user_text(last.get("content")) if last.get("role") == "assistant" else ""
        # As Anthropic does: text up to each cache_control breakpoint is cacheable; the
        # longest one already cached is read, the rest up to the last breakpoint written.
        marked = [i for i, b in enumerate(blocks) if isinstance(b, dict) and "cache_control" in b]
        candidates = [system + user_text(blocks[: i + 1]) for i in marked]
        with self._lock:
            read = max((c for c in candidates if c in self._anthropic_prefixes), key=len,
                       default="")
            self._anthropic_prefixes.update(candidates)
        total = tokens(system + user_text(blocks))
        written = tokens(candidates[-1]) - tokens(read) if candidates else 0
        text = self._answer_for(reply, user_text(blocks)).removeprefix(began)
        text = cut_at_stops(text, body.get("stop_sequences"))
        return {
            "id": f"msg_{len(self.requests)}",
            "type": "message",
            "role": "assistant",
            "model": body.get("model"),
            "content": [{"type": "text", "text": text}],
            "stop_reason": "end_turn",
            "usage": {
                "input_tokens": total - tokens(read) - written,
                "cache_creation_input_tokens": written,
                "cache_read_input_tokens": tokens(read),
                "output_tokens": tokens(text),
            },
        }


def error_body(path: str, status: int, message: str) -> dict[str, Any]:
    kinds = {400: "invalid_request_error", 401: "authentication_error",
             403: "permission_error", 404: "not_found_error", 429: "rate_limit_error",
             529: "overloaded_error"}
    kind = kinds.get(status, "api_error" if status >= 500 else "invalid_request_error")
    if path == ANTHROPIC_PATH:
        return {"type": "error", "error": {"type": kind, "message": message}}
    return {"error": {"message": message, "type": kind, "param": None, "code": None}}


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    fake: FakeLLM

    def server_bind(self) -> None:
        # HTTPServer.server_bind resolves the host's FQDN, which can stall for seconds
        socketserver.TCPServer.server_bind(self)
        self.server_name, self.server_port = self.server_address[:2]


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as real APIs and httpx's pool expect
    server: _Server
    timeout = 10  # lets idle keep-alive threads go
    disable_nagle_algorithm = True  # headers and body go out in two writes: no 40 ms stall

    def log_message(self, format: str, *args: Any) -> None:
        if __name__ == "__main__":
            super().log_message(format, *args)

    def do_POST(self) -> None:
        fake = self.server.fake
        data = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        try:
            body = json.loads(data)
        except ValueError:
            body = None
        headers = {k.lower(): v for k, v in self.headers.items()}
        reply = fake._begin(Recorded(self.path, headers, body, time.monotonic()))
        try:
            self._respond(fake, reply, body)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (timeout, cancellation): that is the point of the test
        finally:
            fake._end()

    def _respond(self, fake: FakeLLM, reply: Reply, body: Any) -> None:
        if reply.hang:
            fake._stopped.wait()
            return
        if reply.delay and fake._stopped.wait(reply.delay):
            return
        if reply.drop:
            self.close_connection = True
            return
        payload = reply.body
        if payload is None and isinstance(body, dict) and body.get("stream") is True:
            answer = self._payload(fake, reply, body)
            if reply.status < 300:
                self._stream(fake, reply, stream_events(self.path, body, answer))
                return
            payload = json.dumps(answer).encode()
        if payload is None:
            payload = json.dumps(self._payload(fake, reply, body)).encode()
        self.send_response(reply.status)
        self.send_header("Content-Type", reply.content_type)
        self.send_header("Content-Length", str(len(payload)))
        for name, value in reply.headers.items():
            self.send_header(name, value)
        self.end_headers()
        if not reply.trickle:
            self.wfile.write(payload)
            return
        for i in range(len(payload)):
            if fake._stopped.wait(reply.trickle):
                return
            self.wfile.write(payload[i : i + 1])
            self.wfile.flush()

    def _stream(self, fake: FakeLLM, reply: Reply, events: list[str]) -> None:
        self.send_response(reply.status)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        for name, value in reply.headers.items():
            self.send_header(name, value)
        self.end_headers()
        for i, event in enumerate(events):
            if i and reply.piece_delay and fake._stopped.wait(reply.piece_delay):
                return
            data = event.encode()
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
            self.wfile.flush()
        self.wfile.write(b"0\r\n\r\n")

    def _payload(self, fake: FakeLLM, reply: Reply, body: Any) -> dict[str, Any]:
        known = self.path in (*OPENAI_PATHS, ANTHROPIC_PATH)
        if reply.status >= 300 or not known or not isinstance(body, dict):
            if not known:
                reply.status, reply.message = 404, f"no route for {self.path}"
            elif not isinstance(body, dict):
                reply.status, reply.message = 400, "body is not a JSON object"
            return error_body(self.path, reply.status, reply.message or "error")
        if self.path == ANTHROPIC_PATH:
            return fake.anthropic_answer(body, reply)
        return fake.openai_answer(body, reply)


def pieces(text: str, size: int = 4) -> list[str]:
    """The answer cut as a tokenizer would about cut it (four characters a token)."""
    return [text[i:i + size] for i in range(0, len(text), size)]


def stream_events(path: str, body: dict[str, Any], answer: dict[str, Any]) -> list[str]:
    """The Server-Sent Events a real API streams for ``answer`` (the whole reply)."""
    if path == ANTHROPIC_PATH:
        return _anthropic_events(answer)
    chunk = {"id": answer["id"], "object": "chat.completion.chunk",
             "created": answer["created"], "model": answer["model"]}
    text = answer["choices"][0]["message"]["content"]
    deltas: list[dict[str, Any]] = [{"role": "assistant", "content": ""}]
    deltas += [{"content": piece} for piece in pieces(text)]
    events = [{**chunk, "choices": [{"index": 0, "delta": d, "finish_reason": None}]}
              for d in deltas]
    events.append({**chunk, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
    options = body.get("stream_options")
    if isinstance(options, dict) and options.get("include_usage"):
        events.append({**chunk, "choices": [], "usage": answer["usage"]})
    return [f"data: {json.dumps(e)}\n\n" for e in events] + ["data: [DONE]\n\n"]


def _anthropic_events(answer: dict[str, Any]) -> list[str]:
    usage = dict(answer["usage"])
    output_tokens = usage.pop("output_tokens")
    text = answer["content"][0]["text"]
    events: list[dict[str, Any]] = [
        {"type": "message_start", "message": {
            **{k: v for k, v in answer.items() if k not in ("content", "usage")},
            "content": [], "stop_reason": None, "usage": {**usage, "output_tokens": 1}}},
        {"type": "content_block_start", "index": 0,
         "content_block": {"type": "text", "text": ""}},
        {"type": "ping"},
    ]
    events += [{"type": "content_block_delta", "index": 0,
                "delta": {"type": "text_delta", "text": piece}} for piece in pieces(text)]
    events += [{"type": "content_block_stop", "index": 0},
               {"type": "message_delta", "delta": {"stop_reason": "end_turn",
                                                   "stop_sequence": None},
                "usage": {"output_tokens": output_tokens}},
               {"type": "message_stop"}]
    return [f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--answer", default=None, help="fixed answer (default: echo)")
    args = parser.parse_args()
    with FakeLLM(answer=args.answer, port=args.port) as llm:
        print(f"fake LLM on {llm.url}  (OpenAI: {llm.openai_url}, Anthropic: {llm.url})",
              flush=True)
        try:
            threading.Event().wait()
        except KeyboardInterrupt:
            pass


if __name__ == "__main__":
    main()
