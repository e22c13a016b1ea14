"""A class on a real JupyterHub whose servers hold no database login: they record through the
hub's Themisto service (``themisto_ext.hub.service``), which JupyterHub starts and which
alone connects to PostgreSQL. Each student (their own UNIX account) reaches, with anything
they hold, their own data only; the teacher's server token carries the read-all scope."""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.error import HTTPError
from urllib.request import Request, urlopen

import psutil
import pytest
from hub import Hub, run_cells
from test_jupyterhub import API, get_json, wait_for_steps
from test_trajectory_format import make_step

from themisto_ext.store import NewStep, NewTrajectory, open_store, parse_store_url
from themisto_ext.store.roles import StoreRoles
from themisto_ext.store.wire import encode

OWNER_PASSWORD = "only-the-service-holds-this-41b7"
QUOTA_STEPS = 40


@pytest.fixture(scope="module")
def hub(tmp_path_factory, pg_cluster) -> Iterator[Hub]:
    url = pg_cluster.create_owned_database(OWNER_PASSWORD)
    started = Hub(tmp_path_factory.mktemp("hub"), url, OWNER_PASSWORD,
                  ["alice", "bob", "teacher"], mode="service", quota_steps=QUOTA_STEPS)
    started.owner_url = url
    try:
        for user in ("alice", "bob", "teacher"):
            started.start_server(user)
        yield started
    finally:
        started.stop()


def owner_store(hub: Hub) -> Any:
    return open_store(parse_store_url(hub.owner_url).with_password(OWNER_PASSWORD))


def service(hub: Hub, path: str, token: str | None, body: Any = None) -> tuple[int, Any]:
    """A request straight to the service, as a student's kernel or terminal could make."""
    headers = {"Authorization": f"token {token}"} if token else {}
    data = None if body is None else json.dumps(body).encode()
    request = Request(f"http://127.0.0.1:{hub.service_port}/services/themisto/api/{path}",
                      data=data, headers=headers, method="GET" if data is None else "POST")
    try:
        with urlopen(request, timeout=60) as response:
            return response.status, json.loads(response.read())
    except HTTPError as exc:
        return exc.code, json.loads(exc.read() or b"null")


def call(hub: Hub, caller: str, method: str, /, **args: Any) -> tuple[int, Any]:
    return service(hub, f"store/{method}", hub.tokens[caller],
                   {"args": {name: encode(value) for name, value in args.items()}})


def processes_of(user: str) -> list[psutil.Process]:
    import pwd

    uid = pwd.getpwnam(user).pw_uid
    return [p for p in psutil.process_iter(["uids"]) if p.info["uids"].real == uid]


@pytest.mark.timeout(600)
def test_students_record_through_the_service_holding_no_database_login(hub):
    bob_kernel = run_cells(hub, "bob", ["grade = 'B+'", "grade", "len(grade)"])
    alice_kernel = run_cells(hub, "alice", ["x = 1", "x + 1"])
    b_tid = wait_for_steps(hub, "bob", bob_kernel, 3)
    a_tid = wait_for_steps(hub, "alice", alice_kernel, 2)
    store = owner_store(hub)
    try:
        assert [s["step"] for s in store.iter_steps(b_tid)] == [1, 2, 3]
        assert store.get_trajectory(b_tid).user == "bob"
        assert store.get_trajectory(a_tid).user == "alice"
    finally:
        store.close()
    # Nothing a student's processes hold (server, kernel: environment and command line)
    # names the database or its password.
    for user in ("alice", "bob"):
        seen = processes_of(user)
        assert seen
        for process in seen:
            text = "\0".join(process.cmdline()) + "\0".join(
                f"{k}={v}" for k, v in process.environ().items())
            assert "postgresql://" not in text and OWNER_PASSWORD not in text, process
            assert not {"PGPASSWORD", "THEMISTO_STORE_PASSWORD", "THEMISTO_DB_PASSWORD"} \
                & set(process.environ())
    # Each sees their own through their server; the teacher's class view, everyone's.
    assert {r["user"] for r in get_json(hub, f"user/bob/{API}/class", "bob")["rows"]} == \
        {"bob"}
    rows = get_json(hub, f"user/teacher/{API}/class", "teacher")["rows"]
    assert {r["user"] for r in rows} >= {"alice", "bob"}
    steps = get_json(hub, f"user/teacher/{API}/trajectories/{b_tid}/steps", "teacher")
    assert [s["code"] for s in steps["steps"]] == ["grade = 'B+'", "grade", "len(grade)"]
    assert hub.call(f"user/alice/{API}/trajectories/{b_tid}/steps", "alice")[0] == 404


@pytest.mark.timeout(600)
def test_a_students_token_reaches_only_their_own_data_at_the_service(hub):
    bob_kernel = run_cells(hub, "bob", ["y = 2"])
    b_tid = wait_for_steps(hub, "bob", bob_kernel, 1)
    store = owner_store(hub)
    before = [s["step"] for s in store.iter_steps(b_tid)]

    assert service(hub, "whoami", hub.tokens["alice"]) == \
        (200, {"result": {"user": "alice", "read_all": False}})
    assert service(hub, "whoami", hub.tokens["teacher"])[1]["result"]["read_all"] is True
    assert service(hub, "whoami", None)[0] == 401
    assert service(hub, "whoami", "not-a-token")[0] == 401

    # Reads: Bob's trajectory is unknown to Alice; asking for his list is refused.
    assert call(hub, "alice", "get_trajectory", trajectory_id=b_tid) == (200, {"result": None})
    assert call(hub, "alice", "iter_steps", trajectory_id=b_tid, since_step=0,
                limit=None) == (200, {"result": []})
    assert call(hub, "alice", "list_trajectories", where=_filter(user="bob"), limit=10,
                offset=0)[0] == 403
    listed = call(hub, "alice", "list_trajectories", where=None, limit=100, offset=0)[1]
    assert {t["user"] for t in listed["result"]} <= {"alice"}
    assert call(hub, "alice", "consents", users=["bob"])[0] == 403
    # Writes into Bob's trajectory are refused and reported, nothing stored.
    code, answer = call(hub, "alice", "apply",
                        writes=[NewStep(make_step(b_tid, 99, code="del grade"))], cursor=None)
    assert code == 200 and answer["result"]["refused"] == {b_tid: "k"}  # the step's kernel
    code, answer = call(hub, "alice", "apply", writes=[NewTrajectory(
        b_tid, "k", None, "2026-01-01T00:00:00+00:00", "kernel", user="bob")], cursor=None)
    assert code == 200 and b_tid in answer["result"]["refused"]
    assert call(hub, "alice", "set_consent", user="bob", consent=False,
                at="2026-01-01T00:00:00+00:00")[0] == 403
    assert call(hub, "alice", "delete_trajectory", trajectory_id=b_tid) == \
        (200, {"result": False})
    assert call(hub, "teacher", "delete_trajectory", trajectory_id=b_tid) == \
        (200, {"result": False})  # reading everyone's is not deleting theirs
    assert call(hub, "alice", "import_step_lines", trajectory_id=b_tid, lines=[])[0] == 403
    # A trajectory id Alice claimed first is refused to Bob, and said so, not dropped.
    claimed = "c1aimed" + "0" * 25
    call(hub, "alice", "apply", writes=[NewTrajectory(
        claimed, "k", None, "2026-01-01T00:00:00+00:00", "kernel")], cursor=None)
    code, answer = call(hub, "bob", "apply", writes=[
        NewTrajectory(claimed, "kb", None, "2026-01-01T00:00:00+00:00", "kernel"),
        NewStep(make_step(claimed, 1))], cursor=None)
    assert code == 200 and claimed in answer["result"]["refused"]
    assert answer["result"]["steps"] == []
    # The teacher reads Bob's; the store holds what it held.
    assert call(hub, "teacher", "get_trajectory", trajectory_id=b_tid)[1]["result"]["user"] \
        == "bob"
    try:
        assert [s["step"] for s in store.iter_steps(b_tid)] == before
        assert store.get_trajectory(b_tid).user == "bob"
        assert store.get_trajectory(claimed).user == "alice"
    finally:
        store.close()


@pytest.mark.timeout(300)
def test_malformed_calls_get_a_4xx_naming_no_database(hub):
    token = hub.tokens["alice"]
    for path, body in [("store/close", {"args": {}}), ("store/nope", {"args": {}}),
                       ("store/get_trajectory", {"args": {"trajectory_id": 5}}),
                       ("store/get_trajectory", {"args": {"x": "1"}}),
                       ("store/get_trajectory", []),
                       ("store/apply", {"args": {"writes": [{"$": "Evil"}], "cursor": None}}),
                       ("store/apply", {"args": {"writes": [{"$": "NewStep"}], "cursor": None}}),
                       ("store/list_trajectories", {"args": {"limit": -1}})]:
        code, answer = service(hub, path, token, body)
        assert code == 400, (path, body, code, answer)
        assert "postgresql" not in json.dumps(answer).lower()
    # A NUL in an id is an id like any other: unknown, not an error.
    assert call(hub, "alice", "get_trajectory", trajectory_id="a\x00b") == \
        (200, {"result": None})
    for route in ("trajectories/%00", "trajectories/%00/steps", "predictions/%00"):
        code, text = hub.call(f"user/alice/{API}/{route}", "alice")
        assert 400 <= code < 500 and b"postgresql" not in text.lower(), (route, code, text)


@pytest.mark.timeout(600)
def test_a_quota_reached_stops_that_student_with_a_clear_error_and_nobody_else(hub):
    tid = "q" * 32
    steps = [NewStep(make_step(tid, n)) for n in range(1, QUOTA_STEPS + 2)]
    code, answer = call(hub, "alice", "apply", writes=[
        NewTrajectory(tid, "kq", None, "2026-01-01T00:00:00+00:00", "kernel"), *steps],
        cursor=None)
    assert code == 507, (code, answer)
    assert "storage quota reached" in answer["message"], answer
    assert "postgresql://" not in answer["message"]
    other = "o" * 32  # at once, another student's write goes in
    assert call(hub, "bob", "apply", writes=[
        NewTrajectory(other, "ko", None, "2026-01-01T00:00:00+00:00", "kernel"),
        NewStep(make_step(other, 1))], cursor=None)[0] == 200
    store = owner_store(hub)
    try:
        assert store.get_trajectory(tid) is None  # the write failed whole
    finally:
        store.close()
    # Alice's own cells past her quota: her kernel's state says why they are not stored.
    alice_kernel = run_cells(hub, "alice", ["z = 3"])
    wait_for_steps(hub, "alice", alice_kernel, 1)
    filler = "f" * 32
    for n in range(1, QUOTA_STEPS + 1):  # one step at a time, up to her quota
        code, answer = call(hub, "alice", "apply", writes=[
            NewTrajectory(filler, "kf", None, "2026-01-01T00:00:00+00:00", "kernel"),
            NewStep(make_step(filler, n))], cursor=None)
        if code != 200:
            break
    assert "storage quota reached" in answer["message"], answer
    roles = StoreRoles(parse_store_url(hub.owner_url).with_password(OWNER_PASSWORD))
    assert roles.usage("alice")[1] == QUOTA_STEPS
    run_cells(hub, "alice", ["z + 1"], alice_kernel)
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        state = get_json(hub, f"user/alice/{API}/kernels/{alice_kernel}", "alice")
        if "quota" in (state.get("reason") or ""):
            break
        time.sleep(0.5)
    else:
        raise AssertionError(f"no quota reason in {state}")
    # Bob records on.
    bob_kernel = run_cells(hub, "bob", ["w = 1", "w * 2"])
    assert wait_for_steps(hub, "bob", bob_kernel, 2)


def _filter(**fields: Any) -> dict:
    from themisto_ext.store import TrajectoryFilter

    return encode(TrajectoryFilter(**fields))


def test_the_config_helpers_name_the_service_and_its_url():
    from themisto_ext.hub import SERVER_TOKEN_SCOPES, service_store_url, themisto_service

    entry = themisto_service("postgresql://themisto@db/themisto", password="pw",
                             url="http://10.0.0.5:10101")
    assert entry["environment"] == {"THEMISTO_DB_PASSWORD": "pw"}
    assert "pw" not in " ".join(entry["command"])
    assert service_store_url(entry) == "http://10.0.0.5:10101/services/themisto/"
    assert "custom:themisto:read-all" in SERVER_TOKEN_SCOPES
    assert Path(entry["command"][0]).exists()


# ---------------------------------------------------------------- the service on its own

@pytest.fixture
def standalone(tmp_path) -> Iterator[tuple[str, dict[str, str], psutil.Popen]]:
    """The service outside a hub (``--tokens-file``), on a SQLite store, two workers."""
    import sys

    from pg import free_port

    tokens = {"alice": "t-alice", "bob": "t-bob"}
    (tmp_path / "tokens.json").write_text(json.dumps({v: k for k, v in tokens.items()}))
    port = free_port()
    process = psutil.Popen(
        [sys.executable, "-m", "themisto_ext.hub.service", "--store-url",
         f"sqlite:///{tmp_path / 's.sqlite3'}", "--tokens-file", str(tmp_path / "tokens.json"),
         "--bind", f"http://127.0.0.1:{port}", "--processes", "2"],
        stderr=(tmp_path / "service.log").open("w"))
    base = f"http://127.0.0.1:{port}/services/themisto/"
    deadline = time.monotonic() + 60
    while not _answers(base, tokens["alice"]):
        assert process.poll() is None and time.monotonic() < deadline, \
            (tmp_path / "service.log").read_text()
        time.sleep(0.2)
    yield base, tokens, process
    with contextlib.suppress(psutil.Error):
        for child in process.children(recursive=True):
            child.kill()
        process.kill()
    process.wait(10)


def _answers(base: str, token: str) -> bool:
    try:
        with urlopen(Request(base + "api/whoami", headers={"Authorization": f"token {token}"}),
                     timeout=5) as response:
            return response.status == 200
    except OSError:
        return False


def test_a_server_stores_through_the_service_and_its_workers_die_with_it(standalone):
    from themisto_ext.store import TrajectoryFilter

    base, tokens, process = standalone
    alice = open_store(parse_store_url(base).with_password(tokens["alice"]))
    bob = open_store(parse_store_url(base).with_password(tokens["bob"]))
    try:
        assert alice.caller == {"user": "alice", "read_all": False}
        applied = alice.apply([NewTrajectory("ta", "k", "n.ipynb", "2026-01-01T00:00:00+00:00",
                                             "kernel", user="bob"),
                               *(NewStep(make_step("ta", n)) for n in range(1, 1201))],
                              ("journal", 10))
        assert len(applied.steps) == 1200 and applied.steps[0]["code"] == "x = 1"
        assert alice.journal_cursors() == {"journal": 10} and bob.journal_cursors() == {}
        assert alice.get_trajectory("ta").user == "alice"  # forced, whatever was sent
        assert [s["step"] for s in alice.iter_steps("ta", since_step=100, limit=700)] == \
            list(range(101, 801))  # paged: 500 a request
        assert len(list(alice.iter_step_lines("ta"))) == 1200
        assert bob.get_trajectory("ta") is None and list(bob.iter_steps("ta")) == []
        # "everything of mine" (deleting one's data, exporting) is read in pages
        bob.apply([NewTrajectory(f"b{i:04d}", "k", None, "2026-01-01T00:00:00+00:00",
                                 "kernel") for i in range(2100)], None)
        assert len(bob.list_trajectories(limit=10**9)) == 2100
        assert len(bob.list_trajectories(limit=3, offset=2098)) == 2
        assert bob.count_trajectories(TrajectoryFilter()) == 2100  # his own only
        # A worker killed: the supervisor starts another; calls go on.
        workers = process.children()
        assert len(workers) == 2
        workers[0].kill()
        deadline = time.monotonic() + 30
        while len(process.children()) < 2 or workers[0] in process.children():
            assert time.monotonic() < deadline
            time.sleep(0.2)
        for _ in range(10):
            assert alice.get_trajectory("ta").steps == 1200
    finally:
        alice.close()
        bob.close()
    # The supervisor killed: its workers end too (nothing left holding the port).
    workers = process.children()
    process.kill()
    process.wait(10)
    _gone, alive = psutil.wait_procs(workers, timeout=20)
    assert alive == []


def test_a_server_without_the_service_says_so_and_keeps_its_journals(tmp_path):
    from pg import free_port

    from themisto_ext.errors import StoreUnavailable

    url = parse_store_url(f"http://127.0.0.1:{free_port()}/services/themisto/")
    with pytest.raises(StoreUnavailable, match="cannot be reached"):
        open_store(url.with_password("t"))


def test_with_the_hub_down_the_service_answers_503_and_servers_wait(tmp_path):
    """A hub restarting cannot tell whose a token is: the service says so (503, which a
    server's store treats as unavailable: its journals keep the steps) instead of 500."""
    import subprocess
    import sys

    from pg import free_port

    from themisto_ext.errors import StoreUnavailable

    port = free_port()
    env = {**__import__("os").environ, "JUPYTERHUB_API_TOKEN": "service-token",
           "JUPYTERHUB_API_URL": f"http://127.0.0.1:{free_port()}/hub/api"}
    process = subprocess.Popen(
        [sys.executable, "-m", "themisto_ext.hub.service", "--store-url",
         f"sqlite:///{tmp_path / 's.sqlite3'}", "--bind", f"http://127.0.0.1:{port}",
         "--processes", "1"], env=env, stderr=(tmp_path / "service.log").open("w"))
    try:
        base = f"http://127.0.0.1:{port}/services/themisto/"
        deadline = time.monotonic() + 60
        while True:
            try:
                urlopen(Request(base + "api/whoami", headers={"Authorization": "token x"}),
                        timeout=5)
            except HTTPError as exc:
                assert exc.code == 503, exc.read()
                break
            except OSError:
                assert time.monotonic() < deadline and process.poll() is None, \
                    (tmp_path / "service.log").read_text()
                time.sleep(0.2)
        with pytest.raises(StoreUnavailable, match="cannot check tokens"):
            open_store(parse_store_url(base).with_password("a-token"))
    finally:
        process.kill()
        process.wait(10)


@pytest.mark.timeout(120)
def test_a_user_flooding_the_service_holds_a_bounded_share_of_it(tmp_path, pg_cluster):
    """Alice's kernel fires calls as fast as it can: past CALLS_PER_USER running at once
    she gets 429; the service's threads stay free for everyone else."""
    import subprocess
    import sys
    import threading

    import psycopg
    from pg import free_port

    from themisto_ext.hub.service import CALLS_PER_USER

    url = pg_cluster.create_database()
    (tmp_path / "tokens.json").write_text(json.dumps({"t-alice": "alice", "t-bob": "bob"}))
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "themisto_ext.hub.service", "--store-url", url,
         "--tokens-file", str(tmp_path / "tokens.json"), "--bind",
         f"http://127.0.0.1:{port}", "--processes", "1"],
        stderr=(tmp_path / "service.log").open("w"))
    base = f"http://127.0.0.1:{port}/services/themisto/"
    try:
        deadline = time.monotonic() + 60
        while not _answers(base, "t-alice"):
            assert process.poll() is None and time.monotonic() < deadline
            time.sleep(0.2)
        statuses: list[int] = []

        def one() -> None:
            request = Request(base + "api/store/get_trajectory", method="POST",
                              data=json.dumps({"args": {"trajectory_id": "x"}}).encode(),
                              headers={"Authorization": "token t-alice"})
            try:
                with urlopen(request, timeout=60) as response:
                    statuses.append(response.status)
            except HTTPError as exc:
                statuses.append(exc.code)

        flood = CALLS_PER_USER + 4
        with psycopg.connect(url) as conn:
            conn.execute("LOCK TABLE trajectories IN ACCESS EXCLUSIVE MODE")  # calls wait
            threads = [threading.Thread(target=one) for _ in range(flood)]
            for thread in threads:
                thread.start()
            while statuses.count(429) < flood - CALLS_PER_USER:
                assert time.monotonic() < deadline + 30, statuses
                time.sleep(0.05)
            assert statuses == [429] * (flood - CALLS_PER_USER)  # the rest still running
            # bob is not held back by her share of the service (his own call goes in as
            # soon as the database lets it: here, once the test's own lock is released)
            assert _answers(base, "t-bob")
        for thread in threads:
            thread.join(30)
        assert sorted(statuses) == [200] * CALLS_PER_USER + [429] * (flood - CALLS_PER_USER)
    finally:
        process.kill()
        process.wait(10)


@pytest.mark.parametrize("method,args", [
    ("apply", {"writes": [{"$": "NewStep", "step": {"step": 1}}], "cursor": None}),
    ("apply", {"writes": [{"$": "NewStep", "step": {"trajectory_id": "t", "step": "1"}}],
               "cursor": None}),
    ("apply", {"writes": [{"$": "NewStep", "step": {"trajectory_id": "t", "step": 1,
                                                   "execution_time": "slow"}}],
               "cursor": None}),
    ("apply", {"writes": [{"$": "NewTrajectory", "trajectory_id": 5, "kernel_id": "k",
                           "notebook_path": None, "started_at": "x", "source": "kernel"}],
               "cursor": None}),
    ("list_trajectories", {"where": {"$": "TrajectoryFilter", "user": [1]}}),
    ("notebook_rows", {"where": {"$": "ClassFilter", "users": "alice"}}),
    ("save_prediction", {"prediction": {"id": "p"}}),
])
def test_a_call_whose_values_the_store_cannot_take_is_a_format_error(method, args):
    """Checked before the store sees them: otherwise a KeyError or TypeError inside it,
    a 500 at the service."""
    from themisto_ext.errors import FormatError
    from themisto_ext.store.wire import decode_call

    with pytest.raises(FormatError):
        decode_call(method, {"args": args})
