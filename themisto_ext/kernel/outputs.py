"""The output of a cell as the user saw it, taken from the messages the kernel publishes.

Every stream chunk, result, display and error reaches the frontend through the
kernel's ``Session.send``; observing that one call sees exactly what the user sees,
in order, including output printed by C code or threads and ``clear_output``.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from themisto_ext.kernel.private import untraced
from themisto_ext.trajectory.text import plain_text, strip_ansi

_KINDS = frozenset({"stream", "execute_result", "display_data", "update_display_data", "error",
                    "clear_output"})


class OutputCollector:
    """Collects one cell's outputs by observing ``session.send`` (installed per kernel)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._items: list[dict[str, Any]] = []
        self._display_index: dict[str, int] = {}
        self._clear_pending = False
        self._active = False
        self._session: Any = None
        self._original: Callable[..., Any] | None = None

    @property
    def installed(self) -> bool:
        return self._session is not None

    def install(self, session: Any, on_reply: Callable[[], None]) -> None:
        """Observe ``session.send``; call ``on_reply`` just before an ``execute_reply`` goes."""
        original = session.send

        def send(stream: Any, msg_or_type: Any, content: Any = None, *args: Any,
                 **kwargs: Any) -> Any:
            if self._active:
                try:
                    with untraced():
                        if self._observe(msg_or_type, content) == "execute_reply":
                            on_reply()
                except Exception:  # capture must never break the kernel's messaging
                    pass
            return original(stream, msg_or_type, content, *args, **kwargs)

        self._session, self._original = session, original
        session.send = send  # instance attribute: shadows the method for this session only

    def uninstall(self) -> None:
        if self._session is not None and "send" in vars(self._session):
            del self._session.send
        self._session = None

    def start(self) -> None:
        with self._lock:
            self._items, self._display_index, self._clear_pending = [], {}, False
            self._active = True

    def stop(self) -> list[dict[str, Any]]:
        with self._lock:
            self._active = False
            items, self._items = self._items, []
        for item in items:  # colours were rendered, not shown as escape codes
            if item["output_type"] == "stream":
                item["text"] = strip_ansi("".join(item.pop("parts")))
        return items

    def _observe(self, msg_or_type: Any, content: Any) -> str | None:
        """Record an output message; return the message type."""
        if isinstance(msg_or_type, dict):
            kind = msg_or_type.get("header", {}).get("msg_type")
            content = msg_or_type.get("content", content)
        else:
            kind = msg_or_type
        if kind not in _KINDS or not isinstance(content, dict):
            return kind if isinstance(kind, str) else None
        with self._lock:
            if kind == "clear_output":
                if content.get("wait"):
                    self._clear_pending = True
                else:
                    self._items, self._display_index = [], {}
            elif kind == "update_display_data":
                self._update_display(content)
            else:
                if self._clear_pending:
                    self._items, self._display_index, self._clear_pending = [], {}, False
                self._append(kind, content)
        return str(kind)

    def _append(self, kind: str, content: dict[str, Any]) -> None:
        if kind == "stream":
            name = str(content.get("name", "stdout"))
            text = str(content.get("text", ""))
            last = self._items[-1] if self._items else None
            # Pieces joined once, in stop(): "text += piece" copied the text so far for
            # every message (quadratic in a cell that flushes each of 10^5 prints).
            if last and last["output_type"] == "stream" and last["name"] == name:
                last["parts"].append(text)
            else:
                self._items.append({"output_type": "stream", "name": name,
                                    "mime_types": ["text/plain"], "text": "",
                                    "parts": [text]})
        elif kind == "error":
            traceback = "\n".join(strip_ansi(str(line)) for line in content.get("traceback", []))
            ename, evalue = str(content.get("ename", "")), str(content.get("evalue", ""))
            self._items.append({"output_type": "error", "mime_types": [], "ename": ename,
                                "evalue": evalue, "text": traceback or f"{ename}: {evalue}"})
        else:
            data = content.get("data", {})
            item = {"output_type": kind, "mime_types": sorted(data), "text": plain_text(data)}
            display_id = (content.get("transient") or {}).get("display_id")
            if display_id:
                self._display_index[str(display_id)] = len(self._items)
            self._items.append(item)

    def _update_display(self, content: dict[str, Any]) -> None:
        display_id = (content.get("transient") or {}).get("display_id")
        index = self._display_index.get(str(display_id))
        if index is not None and index < len(self._items):
            data = content.get("data", {})
            self._items[index].update(mime_types=sorted(data), text=plain_text(data))

