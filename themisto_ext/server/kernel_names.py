"""The names a running kernel's own completer lists at a cursor (Jupyter's
``complete_request``, what Tab in JupyterLab asks): the live state an inline completion's
attribute or key is checked against (``prediction/names.py``).

Asked on a channel of this request's own, of a kernel that is up (idle, or busy with
another such question: its status lags), and never waited for longer than ``timeout``.
Whether the user's cell is running is the trajectory's to say (``live.py`` does not ask
then): a question that still meets a running cell waits behind it, is given up after
``timeout`` and answered, unread, once the cell ends. What it sends is the cell's text before
the cursor, to the kernel that will run it; nothing of the answer is kept or logged.
"""

from __future__ import annotations

import logging
from typing import Any

log = logging.getLogger(__name__)


async def kernel_names(kernel_manager: Any, kernel_id: str, code: str,
                       timeout: float) -> list[str] | None:
    """The names the kernel would complete at the end of ``code`` (the text each match
    puts after the cursor); None: no kernel up, no answer in ``timeout`` seconds, or an
    error."""
    if kernel_id not in kernel_manager.list_kernel_ids():
        return None  # (get_kernel would answer a 404 of its own)
    kernel = kernel_manager.get_kernel(kernel_id)
    if getattr(kernel, "execution_state", "idle") not in ("idle", "busy"):
        return None  # starting, restarting, dead
    client = None
    try:
        client = kernel.client()
        client.start_channels(shell=True, iopub=False, stdin=False, hb=False, control=False)
        reply = await client.complete(code, len(code), reply=True, timeout=timeout)
    except Exception as exc:  # (TimeoutError; a kernel gone, restarting or remote)
        log.debug("no names from kernel %s: %r", kernel_id, exc)
        return None
    finally:
        if client is not None:
            client.stop_channels()
    content = reply.get("content") or {}
    if content.get("status") != "ok":
        return None
    start = content.get("cursor_start")
    if not isinstance(start, int) or not 0 <= start <= len(code):
        return None
    typed = code[start:]  # (IPython without jedi: matches repeat ``np.``)
    return [match[len(typed):] for match in content.get("matches") or []
            if isinstance(match, str) and match.startswith(typed)]
