"""``/me`` (consent, delete my data) and ``/class`` on a real jupyter_server with real
kernels: opting out records nothing, deleting takes everything of the user's and nothing
of anyone else's, the roster follows the access rules."""

from __future__ import annotations

import asyncio
import json

import pytest
from test_server import start_kernel, wait_for_steps
from test_store import step
from tornado.httpclient import HTTPClientError

from themisto_ext.store import NewStep, NewTrajectory


def _split(path: str) -> tuple[list[str], dict[str, str] | None]:
    route, _, query = path.partition("?")
    params = dict(p.split("=", 1) for p in query.split("&")) if query else None
    return route.split("/"), params


async def api(jp_fetch, path: str, method: str = "GET", body: dict | None = None) -> dict:
    parts, params = _split(path)
    kwargs: dict = {"method": method, "params": params}
    if body is not None:
        kwargs["body"] = json.dumps(body)
    r = await jp_fetch("themisto", "api", *parts, **kwargs)
    return json.loads(r.body) if r.body else {}


async def status_code(jp_fetch, path: str, method: str = "GET") -> int:
    parts, params = _split(path)
    try:
        await jp_fetch("themisto", "api", *parts, method=method, params=params)
    except HTTPClientError as exc:
        return exc.code
    return 200


def bobs(store) -> None:
    """Another user's trajectory in the same store (as on a hub's shared database)."""
    s = step("bob-t", 1)
    s.pop("kind")
    store.apply([NewTrajectory("bob-t", "bob-k", "other.ipynb", s["started_at"], "kernel",
                               "bob"), NewStep(s)], None)


@pytest.fixture
def jp_server_config(themisto_config) -> dict:
    return themisto_config(user="alice", read_all_users=["alice"])


async def test_opting_out_records_nothing_until_consent_returns(jp_fetch, jp_serverapp):
    assert (await api(jp_fetch, "me")) == {"user": "alice", "consent": True,
                                           "capture_level": "code+outputs+state",
                                           "read_all": True}
    kernel_id, client = await start_kernel(jp_fetch, jp_serverapp)
    try:
        await client.execute_interactive("x = 1", timeout=30)
        assert (await wait_for_steps(jp_fetch, kernel_id, 1))["steps"] == 1
        me = await api(jp_fetch, "me", "PUT", {"consent": False})
        assert me["consent"] is False
        kernel = await api(jp_fetch, f"kernels/{kernel_id}")
        assert kernel["recording"] is False
        await client.execute_interactive("x = 2", timeout=30)
        # Even a kernel that switches itself back on is not stored while opted out.
        await client.execute_interactive("%themisto on", timeout=30)
        await client.execute_interactive("x = 3", timeout=30)
        await asyncio.sleep(0.5)
        assert (await wait_for_steps(jp_fetch, kernel_id, 99, timeout=1))["steps"] == 1
        # A kernel started now does not record.
        other_id, other = await start_kernel(jp_fetch, jp_serverapp)
        await other.execute_interactive("y = 1", timeout=30)
        assert (await api(jp_fetch, f"kernels/{other_id}"))["recording"] is False
        other.stop_channels()
        journals = jp_serverapp.web_app.settings["themisto"].journal_dir
        written = "".join(p.read_text() for p in journals.glob(f"{other_id}--*.jsonl"))
        assert '"kind":"step"' not in written.replace(" ", ""), written
        roster = await api(jp_fetch, "class")
        assert roster["opted_out"] == ["alice"] and roster["rows"] == []
        # Consent again: the running kernel records again, numbering on.
        assert (await api(jp_fetch, "me", "PUT", {"consent": True}))["consent"] is True
        await client.execute_interactive("x = 4", timeout=30)
        assert (await wait_for_steps(jp_fetch, kernel_id, 2))["steps"] == 2
        store = jp_serverapp.web_app.settings["themisto"].store.sync
        tid = (await api(jp_fetch, f"kernels/{kernel_id}"))["trajectory_id"]
        assert [s["code"] for s in store.iter_steps(tid)] == ["x = 1", "x = 4"]
        assert store.consents() == {"alice": True}
    finally:
        client.stop_channels()


async def test_delete_my_data_takes_all_of_mine_and_nothing_else(jp_fetch, jp_serverapp):
    themisto = jp_serverapp.web_app.settings["themisto"]
    bobs(themisto.store.sync)
    kernel_id, client = await start_kernel(jp_fetch, jp_serverapp)
    try:
        await client.execute_interactive("secret_plan = 'mine'", timeout=30)
        await wait_for_steps(jp_fetch, kernel_id, 1)
        done = await api(jp_fetch, "me", "DELETE")
        assert done["deleted_trajectories"] == 1 and done["deleted_journals"] >= 1
        mine = await api(jp_fetch, "trajectories")
        assert [t["user"] for t in mine["trajectories"]] == ["bob"]
        journals = "".join(p.read_text() for p in themisto.journal_dir.glob("*.jsonl"))
        assert "secret_plan" not in journals
        assert [s["step"] for s in themisto.store.sync.iter_steps("bob-t")] == [1]
        # The running kernel goes on recording (the user still consents).
        await client.execute_interactive("z = 1", timeout=30)
        # The trajectory's row can land a moment before its step does (two writes), so
        # wait for the step, not for the row.
        for _ in range(200):
            rows = (await api(jp_fetch, "class"))["rows"]
            if any(r["user"] == "alice" and r["cells"] for r in rows):
                break
            await asyncio.sleep(0.05)
        assert {r["user"]: r["cells"] for r in rows} == {"alice": 1, "bob": 1}
    finally:
        client.stop_channels()


async def test_the_roster_pages_sorts_filters_and_refuses_bad_requests(jp_fetch, jp_serverapp):
    store = jp_serverapp.web_app.settings["themisto"].store.sync
    bobs(store)
    for user, path, cells in (("carol", "a/lab1.ipynb", 3), ("carol", "a/lab2.ipynb", 1),
                              ("dave", "a/lab1.ipynb", 2)):
        tid = f"{user}-{path}"
        steps = []
        for n in range(1, cells + 1):
            s = step(tid, n)
            s.pop("kind")
            steps.append(NewStep(s))
        store.apply([NewTrajectory(tid, "k", path, "2026-01-01T00:00:00+00:00", "kernel",
                                   user), *steps], None)
    page = await api(jp_fetch, "class?sort=cells&order=desc&limit=2")
    assert [(r["user"], r["cells"]) for r in page["rows"]] == [("carol", 3), ("dave", 2)]
    assert page["total"] == 4 and page["users"] == 3
    assert [r["user"] for r in (await api(jp_fetch, "class?notebook=lab1"))["rows"]] == [
        "carol", "dave"]
    assert [r["user"] for r in (await api(jp_fetch, "class?user=dave"))["rows"]] == ["dave"]
    for bad in ("class?sort=nonsense", "class?order=sideways", "class?limit=0",
                "class?active_after=yesterday"):
        assert await status_code(jp_fetch, bad) == 400, bad


class TestWithoutReadAll:
    @pytest.fixture
    def jp_server_config(self, themisto_config) -> dict:
        return themisto_config(user="alice")

    async def test_a_user_sees_only_their_own_rows(self, jp_fetch, jp_serverapp):
        bobs(jp_serverapp.web_app.settings["themisto"].store.sync)
        assert (await api(jp_fetch, "class"))["rows"] == []
        assert await status_code(jp_fetch, "class?user=bob") == 403
        assert (await api(jp_fetch, "me"))["read_all"] is False
