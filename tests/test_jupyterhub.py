"""Two users on a real JupyterHub, their servers recording into one PostgreSQL: each sees
only their own trajectories, through every route and the live stream; an admin with the
``custom:themisto:read-all`` scope sees everyone's (tests/hub.py starts it all)."""

from __future__ import annotations

import json
import queue
import threading
import time

import pytest
from hub import Hub, run_cells

from themisto_ext.events import LIVE_EVENT_SCHEMA_ID, live_event
from themisto_ext.store import open_store

API = "themisto/api"


def get_json(hub: Hub, path: str, user: str) -> dict:
    code, text = hub.call(path, user)
    assert code == 200, f"{path} as {user}: {code} {text[:200]!r}"
    return json.loads(text)


def wait_for_steps(hub: Hub, user: str, kernel_id: str, steps: int) -> str:
    """The kernel's trajectory id once the API shows ``steps`` steps in it."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        listing = get_json(hub, f"user/{user}/{API}/trajectories?kernel={kernel_id}", user)
        rows = listing["trajectories"]
        if rows and rows[-1]["steps"] >= steps:
            return str(rows[-1]["id"])
        time.sleep(0.2)
    raise AssertionError(f"{user}'s kernel never showed {steps} steps:\n{hub.tail()}")


def open_stream(hub: Hub, server: str, user: str) -> tuple[int, queue.Queue]:
    """Subscribe to ``server``'s event bus with ``user``'s token, as JupyterLab's
    EventManager does (``/api/events/subscribe``); themisto's events arrive on the queue."""
    import asyncio

    from tornado.httpclient import HTTPClientError, HTTPRequest
    from tornado.websocket import websocket_connect

    events: queue.Queue = queue.Queue()
    opened: queue.Queue = queue.Queue()

    async def read() -> None:
        url = f"ws://127.0.0.1:{hub.port}/user/{server}/api/events/subscribe"
        try:
            socket = await websocket_connect(HTTPRequest(
                url, headers={"Authorization": f"token {hub.tokens[user]}"}))
        except HTTPClientError as exc:
            opened.put(exc.code)
            return
        except OSError:
            opened.put(0)
            return
        opened.put(101)
        while (message := await socket.read_message()) is not None:
            data = json.loads(message)
            if data.pop("schema_id", None) == LIVE_EVENT_SCHEMA_ID:
                event = live_event(data)
                events.put((event["type"], event))

    threading.Thread(target=lambda: asyncio.run(read()), daemon=True).start()
    return opened.get(timeout=60), events


def next_event(events: queue.Queue, kind: str, seconds: float = 30) -> dict:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            got, data = events.get(timeout=max(0.1, deadline - time.monotonic()))
        except queue.Empty:
            break
        if got == kind:
            return data
    raise AssertionError(f"no {kind} event within {seconds} s")


@pytest.mark.timeout(420)
def test_two_hub_users_see_only_their_own_and_an_admin_sees_all(tmp_path, pg_cluster):
    url = pg_cluster.create_database()
    hub = Hub(tmp_path, url, ["alice", "bob", "admin"])
    try:
        for user in ("alice", "bob", "admin"):
            hub.start_server(user)
        alice_kernel = run_cells(hub, "alice", ["x = 1", "x + 1"])
        bob_kernel = run_cells(hub, "bob", ["secret = 'bob only'", "print(secret)"])
        a_tid = wait_for_steps(hub, "alice", alice_kernel, 2)
        b_tid = wait_for_steps(hub, "bob", bob_kernel, 2)

        # Both servers recorded into the one database, each trajectory owned by its hub user.
        store = open_store(url)
        assert (store.get_trajectory(a_tid).user, store.get_trajectory(b_tid).user) == (
            "alice", "bob")
        store.close()

        # Alice, on her own server: her trajectories only; Bob's are unknown ids.
        mine = get_json(hub, f"user/alice/{API}/trajectories", "alice")
        assert [t["id"] for t in mine["trajectories"]] == [a_tid] and mine["total"] == 1
        for path in (f"trajectories/{b_tid}", f"trajectories/{b_tid}/steps",
                     f"trajectories/{b_tid}/predictions", f"export?trajectory={b_tid}"):
            assert hub.call(f"user/alice/{API}/{path}", "alice")[0] == 404, path
        assert hub.call(f"user/alice/{API}/trajectories?user=bob", "alice")[0] == 403
        code, exported = hub.call(f"user/alice/{API}/export?all=true", "alice")
        assert code == 200 and b"bob only" not in exported
        assert {json.loads(line)["trajectory_id"] for line in exported.splitlines()} == {a_tid}

        # Alice's token on Bob's server: the hub refuses every route, the stream included.
        for path in ("trajectories", f"trajectories/{b_tid}", f"trajectories/{b_tid}/steps",
                     "export?all=true"):
            assert hub.call(f"user/bob/{API}/{path}", "alice")[0] == 403, path
        assert open_stream(hub, "bob", "alice")[0] == 403

        # Alice's own server's bus carries her new step.
        code, alice_events = open_stream(hub, "alice", "alice")
        assert code == 101 and next_event(alice_events, "heartbeat")["every"] > 0
        run_cells(hub, "alice", ["x * 10"], alice_kernel)
        step = next_event(alice_events, "step")
        assert step["trajectory_id"] == a_tid and step["step"]["code"] == "x * 10"

        # The admin (custom:themisto:read-all) reads and exports everyone's from their own
        # server, and may follow Bob's live stream on his.
        every = get_json(hub, f"user/admin/{API}/trajectories", "admin")
        assert {t["id"]: t["user"] for t in every["trajectories"]} == {a_tid: "alice",
                                                                       b_tid: "bob"}
        only_bob = get_json(hub, f"user/admin/{API}/trajectories?user=bob", "admin")
        assert [t["id"] for t in only_bob["trajectories"]] == [b_tid]
        steps = get_json(hub, f"user/admin/{API}/trajectories/{b_tid}/steps", "admin")["steps"]
        assert [s["step"] for s in steps] == [1, 2]
        code, exported = hub.call(f"user/admin/{API}/export?all=true", "admin")
        assert code == 200 and len(exported.splitlines()) == 5
        code, events = open_stream(hub, "bob", "admin")
        assert code == 101
        run_cells(hub, "bob", ["len(secret)"], bob_kernel)
        assert next_event(events, "step")["trajectory_id"] == b_tid
        # ... which never reached Alice's page, listening on her server all along.
        time.sleep(1)
        heard = []
        while not alice_events.empty():
            heard.append(alice_events.get())
        assert all(data.get("trajectory_id") in (None, a_tid) for _, data in heard), heard
        assert not any("secret" in json.dumps(data) for _, data in heard)
    finally:
        hub.stop()
