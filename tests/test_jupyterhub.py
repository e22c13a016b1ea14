"""Users on a real JupyterHub, their servers (each as its own UNIX account) recording into
one PostgreSQL through a database role each: each sees only their own trajectories,
through every route, the live stream and any SQL their kernel can muster; a teacher with
the ``custom:themisto:read-all`` scope sees everyone's (tests/hub.py starts it all)."""

from __future__ import annotations

import json
import queue
import threading
import time
from collections.abc import Iterator

import pytest
from hub import Hub, run_cells

from themisto_ext.events import LIVE_EVENT_SCHEMA_ID, live_event
from themisto_ext.store import open_store, parse_store_url

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


OWNER_PASSWORD = "only-the-hub-holds-this-9f2c"


@pytest.fixture
def hub(request, tmp_path, pg_cluster) -> Iterator[Hub]:
    """Per-user database roles, or (``indirect`` param "service") the hub's service."""
    url = pg_cluster.create_owned_database(OWNER_PASSWORD)
    started = Hub(tmp_path, url, OWNER_PASSWORD, ["alice", "bob", "teacher"],
                  mode=getattr(request, "param", "roles"))
    started.owner_url = url
    try:
        yield started
    finally:
        started.stop()


@pytest.mark.timeout(420)
def test_two_hub_users_see_only_their_own_and_a_teacher_sees_all(hub):
    url = parse_store_url(hub.owner_url).with_password(OWNER_PASSWORD)
    for user in ("alice", "bob", "teacher"):
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

    # The teacher (custom:themisto:read-all) reads and exports everyone's from their own
    # server, and may follow Bob's live stream on his.
    every = get_json(hub, f"user/teacher/{API}/trajectories", "teacher")
    assert {t["id"]: t["user"] for t in every["trajectories"]} == {a_tid: "alice",
                                                                   b_tid: "bob"}
    only_bob = get_json(hub, f"user/teacher/{API}/trajectories?user=bob", "teacher")
    assert [t["id"] for t in only_bob["trajectories"]] == [b_tid]
    steps = get_json(hub, f"user/teacher/{API}/trajectories/{b_tid}/steps", "teacher")["steps"]
    assert [s["step"] for s in steps] == [1, 2]
    code, exported = hub.call(f"user/teacher/{API}/export?all=true", "teacher")
    assert code == 200 and len(exported.splitlines()) == 5
    code, events = open_stream(hub, "bob", "teacher")
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


PROBE = r'''
import json, os, re
seen = []  # every text this kernel's account can read that might hold credentials
seen.append("\n".join(f"{k}={v}" for k, v in os.environ.items()))
for pid in os.listdir("/proc"):
    for part in ("environ", "cmdline"):
        try:
            with open(f"/proc/{pid}/{part}", "rb") as f:
                seen.append(f.read().replace(b"\0", b"\n").decode("utf-8", "replace"))
        except OSError:
            pass
for root in (os.path.expanduser("~"), "/etc/jupyter", "/usr/local/etc/jupyter",
             os.path.join(os.sys.prefix, "etc", "jupyter")):
    for folder, _, files in os.walk(root):
        for name in files:
            path = os.path.join(folder, name)
            try:
                if os.path.getsize(path) < 2_000_000:
                    seen.append(open(path, encoding="utf-8", errors="replace").read())
            except OSError:
                pass
text = "\n".join(seen)
urls = set(re.findall(r"postgresql://([\w-]+)@([\d.]+):(\d+)/(\w+)", text))
passwords = set(re.findall(r"(?:PASSWORD|PGPASS\w*)=([^\s]+)", text))
passwords |= {line.rsplit(":", 1)[-1] for line in text.splitlines()
              if line.count(":") >= 4 and " " not in line}  # ~/.pgpass lines
import psycopg
reached = []
for role, host, port, db in urls:
    for candidate in {role, "postgres", *[u[0] for u in urls]}:
        for password in passwords:
            try:
                with psycopg.connect(host=host, port=port, dbname=db, user=candidate,
                                     password=password, connect_timeout=3) as conn:
                    users = conn.execute(
                        "SELECT DISTINCT user_name FROM trajectories").fetchall()
                    steps = conn.execute("SELECT count(*) FROM steps").fetchone()[0]
                    reached.append([candidate, sorted(u[0] for u in users), steps])
            except psycopg.Error:
                pass
kernel_env = sorted(k for k in os.environ if k.startswith(("PG", "THEMISTO_STORE",
                                                           "THEMISTO_DB")))
report = {"urls": len(urls), "candidates": len(passwords), "reached": reached,
          "kernel_env": kernel_env, "owner_password_seen": OWNER in text}
print("PROBE " + json.dumps(report))
'''


@pytest.mark.timeout(420)
def test_a_students_kernel_holds_no_database_keys_and_reaches_only_their_own_rows(hub):
    for user in ("alice", "bob"):
        hub.start_server(user)
    bob_kernel = run_cells(hub, "bob", ["grade = 'bob: B+'", "grade"])
    b_tid = wait_for_steps(hub, "bob", bob_kernel, 2)
    alice_kernel = run_cells(hub, "alice", ["x = 1"])
    a_tid = wait_for_steps(hub, "alice", alice_kernel, 1)
    # (written backwards: the cell's code is in the journal the probe reads)
    run_cells(hub, "alice", [f"OWNER = {OWNER_PASSWORD[::-1]!r}[::-1]\n" + PROBE],
              alice_kernel)
    wait_for_steps(hub, "alice", alice_kernel, 2)
    steps = get_json(hub, f"user/alice/{API}/trajectories/{a_tid}/steps", "alice")["steps"]
    assert "PROBE " in steps[-1]["output"], steps[-1]
    report = json.loads(steps[-1]["output"].split("PROBE ", 1)[1])
    # Nothing the kernel can read holds the owner's password, nor are credentials in its
    # environment ...
    assert report["owner_password_seen"] is False and report["kernel_env"] == []
    # ... what it finds (its own server's role, in that server's start-up environment)
    # opens Alice's rows and nobody else's, under any role name it tries.
    assert report["urls"] >= 1 and report["reached"], report
    assert all(users == ["alice"] for _, users, _ in report["reached"]), report
    owner = open_store(parse_store_url(hub.owner_url).with_password(OWNER_PASSWORD))
    try:
        assert [s["step"] for s in owner.iter_steps(b_tid)] == [1, 2]  # Bob's, untouched
        assert {r[2] for r in report["reached"]} == {owner.get_trajectory(a_tid).steps - 1}
    finally:
        owner.close()


@pytest.mark.timeout(420)
@pytest.mark.parametrize("hub", ["roles", "service"], indirect=True)
def test_the_teacher_sees_the_class_and_each_student_decides(hub):
    for user in ("alice", "bob", "teacher"):
        hub.start_server(user)
    alice_kernel = run_cells(hub, "alice", ["a = 1", "a + 1"])
    bob_kernel = run_cells(hub, "bob", ["b = 1"])
    a_tid = wait_for_steps(hub, "alice", alice_kernel, 2)
    b_tid = wait_for_steps(hub, "bob", bob_kernel, 1)

    # The teacher's class view: both students' notebooks; a student's own view: theirs.
    rows = get_json(hub, f"user/teacher/{API}/class", "teacher")["rows"]
    assert {(r["user"], r["cells"]) for r in rows} == {("alice", 2), ("bob", 1)}
    assert {r["user"] for r in get_json(hub, f"user/bob/{API}/class", "bob")["rows"]} == {"bob"}
    assert hub.call(f"user/bob/{API}/class?user=alice", "bob")[0] == 403

    # Bob opts out: his kernel records nothing more, the teacher sees him as opted out.
    code, text = hub.call(f"user/bob/{API}/me", "bob", "PUT", {"consent": False})
    assert code == 200 and json.loads(text)["consent"] is False
    assert hub.call(f"user/bob/{API}/me", "alice", "PUT", {"consent": True})[0] == 403
    run_cells(hub, "bob", ["b = 2", "b = 3"], bob_kernel)
    time.sleep(2)
    owner = open_store(parse_store_url(hub.owner_url).with_password(OWNER_PASSWORD))
    try:
        assert owner.get_trajectory(b_tid).steps == 1
        roster = get_json(hub, f"user/teacher/{API}/class", "teacher")
        assert roster["opted_out"] == ["bob"]
        assert [r["user"] for r in roster["rows"]] == ["alice"]

        # Alice deletes her data: all of hers goes, nothing of Bob's.
        code, text = hub.call(f"user/alice/{API}/me", "alice", "DELETE")
        assert code == 200 and json.loads(text)["deleted_trajectories"] == 1
        assert owner.get_trajectory(a_tid) is None
        assert list(owner.iter_steps(a_tid)) == []
        assert [s["step"] for s in owner.iter_steps(b_tid)] == [1]
        assert hub.call(f"user/teacher/{API}/me", "teacher", "DELETE")[0] == 200
        assert owner.get_trajectory(b_tid) is not None  # the teacher's delete: their own
    finally:
        owner.close()
