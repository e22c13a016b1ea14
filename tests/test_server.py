"""The server extension with a real jupyter_server and real ipykernel kernels."""

from __future__ import annotations

import asyncio
import json

import pytest
from tornado.httpclient import HTTPClientError

from themisto_ext.ingest import JournalIngestor
from themisto_ext.store import SQLiteStore


@pytest.fixture
def jp_server_config(themisto_config) -> dict:
    return themisto_config()


async def start_kernel(jp_fetch, jp_serverapp):
    # pytest-jupyter never runs the server's post-start hook; a real server does.
    if jp_serverapp.web_app.settings["themisto"]._ingest_task is None:
        await jp_serverapp.extension_manager.start_all_extensions()
    r = await jp_fetch("api", "kernels", method="POST", body=json.dumps({"name": "python3"}))
    kernel_id = json.loads(r.body)["id"]
    client = jp_serverapp.kernel_manager.get_kernel(kernel_id).client()
    client.start_channels()
    await client.wait_for_ready(timeout=60)
    return kernel_id, client


async def kernel_status(jp_fetch, kernel_id: str) -> dict:
    r = await jp_fetch("themisto", "api", "kernels", kernel_id)
    return json.loads(r.body)


async def wait_for_steps(jp_fetch, kernel_id: str, n: int, timeout: float = 10) -> dict:
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        status = await kernel_status(jp_fetch, kernel_id)
        if status["steps"] >= n or asyncio.get_running_loop().time() > deadline:
            return status
        await asyncio.sleep(0.05)


async def test_kernels_launched_by_the_server_record(jp_fetch, jp_serverapp, store_path):
    kernel_id, client = await start_kernel(jp_fetch, jp_serverapp)
    try:
        await client.execute_interactive("x = 1", timeout=30)
        await client.execute_interactive("print(x + 1)", timeout=30)
        status = await wait_for_steps(jp_fetch, kernel_id, 2)
        assert status["steps"] == 2 and status["recording"] is True
        store = jp_serverapp.web_app.settings["themisto"].store.sync
        steps = list(store.iter_steps(status["trajectory_id"]))
        assert [s["code"] for s in steps] == ["x = 1", "print(x + 1)"]
        assert steps[1]["output"] == "2\n" and steps[1]["kernel_id"] == kernel_id
    finally:
        client.stop_channels()


async def test_kernels_never_inherit_the_servers_database_credentials(
        jp_fetch, jp_serverapp, monkeypatch):
    for name in ("PGPASSWORD", "PGPASSFILE", "THEMISTO_STORE_PASSWORD"):
        monkeypatch.setenv(name, f"secret-{name}")
    monkeypatch.setenv("THEMISTO_HARMLESS", "kept")
    kernel_id, client = await start_kernel(jp_fetch, jp_serverapp)
    try:
        reply = await client.execute_interactive(
            "import os; print(sorted(k for k in os.environ if k.startswith(('PG', "
            "'THEMISTO_STORE', 'THEMISTO_HARMLESS'))))", timeout=30)
        assert reply["content"]["status"] == "ok"
        status = await wait_for_steps(jp_fetch, kernel_id, 1)
        store = jp_serverapp.web_app.settings["themisto"].store.sync
        [step] = list(store.iter_steps(status["trajectory_id"]))
        assert step["output"] == "['THEMISTO_HARMLESS']\n"
    finally:
        client.stop_channels()


async def test_recording_switch_through_the_api(jp_fetch, jp_serverapp):
    kernel_id, client = await start_kernel(jp_fetch, jp_serverapp)
    try:
        r = await jp_fetch("themisto", "api", "kernels", kernel_id, method="PUT",
                           body=json.dumps({"recording": False}))
        assert json.loads(r.body)["recording"] is False
        await client.execute_interactive("hidden = 1", timeout=30)
        await jp_fetch("themisto", "api", "kernels", kernel_id, method="PUT",
                       body=json.dumps({"recording": True}))
        await client.execute_interactive("shown = 2", timeout=30)
        status = await wait_for_steps(jp_fetch, kernel_id, 1)
        await asyncio.sleep(0.3)
        status = await kernel_status(jp_fetch, kernel_id)
        assert status["steps"] == 1
    finally:
        client.stop_channels()


async def test_bad_requests(jp_fetch, jp_serverapp):
    with pytest.raises(HTTPClientError) as err:
        await jp_fetch("themisto", "api", "kernels", "k1", method="PUT", body="{not json")
    assert err.value.code == 400
    with pytest.raises(HTTPClientError) as err:
        await jp_fetch("themisto", "api", "kernels", "k1", method="PUT",
                       body=json.dumps({"recording": "yes"}))
    assert err.value.code == 400
    assert "recording" in json.loads(err.value.response.body)["message"]


async def test_unauthenticated_requests_are_refused(jp_fetch, jp_serverapp):
    with pytest.raises(HTTPClientError) as err:
        await jp_fetch("themisto", "api", "kernels", "k1", headers={"Authorization": ""})
    assert err.value.code == 403


async def test_steps_survive_a_server_that_stopped_before_ingesting(jp_fetch, jp_serverapp,
                                                                      store_path):
    app = jp_serverapp.web_app.settings["themisto"]
    kernel_id, client = await start_kernel(jp_fetch, jp_serverapp)
    try:
        await client.execute_interactive("a = 1", timeout=30)
        await wait_for_steps(jp_fetch, kernel_id, 1)
        app._ingest_task.cancel()  # the server "dies": nothing ingests any more
        await asyncio.sleep(0.1)
        await client.execute_interactive("b = 2", timeout=30)
        await client.execute_interactive("c = 3", timeout=30)
    finally:
        client.stop_channels()
    # a new server process opens the same store and catches up from the journals
    restarted = SQLiteStore(store_path)
    # (as the same user: what another user's server finds under the same id is refused)
    JournalIngestor(store_path.parent / "journal", restarted, user=app.user).poll()
    trajectory = restarted.latest_for_kernel(kernel_id)
    assert [s["code"] for s in restarted.iter_steps(trajectory.id)] == ["a = 1", "b = 2", "c = 3"]


async def test_two_kernels_never_mix(jp_fetch, jp_serverapp):
    (k1, c1), (k2, c2) = await start_kernel(jp_fetch, jp_serverapp), \
        await start_kernel(jp_fetch, jp_serverapp)
    try:
        for i in range(5):
            await asyncio.gather(c1.execute_interactive(f"one = {i}", timeout=30),
                                 c2.execute_interactive(f"two = {i}", timeout=30))
        s1, s2 = await wait_for_steps(jp_fetch, k1, 5), await wait_for_steps(jp_fetch, k2, 5)
        store = jp_serverapp.web_app.settings["themisto"].store.sync
        codes1 = [s["code"] for s in store.iter_steps(s1["trajectory_id"])]
        codes2 = [s["code"] for s in store.iter_steps(s2["trajectory_id"])]
        assert codes1 == [f"one = {i}" for i in range(5)]
        assert codes2 == [f"two = {i}" for i in range(5)]
    finally:
        c1.stop_channels()
        c2.stop_channels()


async def test_kernel_restart_starts_a_new_trajectory(jp_fetch, jp_serverapp):
    kernel_id, client = await start_kernel(jp_fetch, jp_serverapp)
    try:
        await client.execute_interactive("a = 1", timeout=30)
        first = await wait_for_steps(jp_fetch, kernel_id, 1)
        await jp_fetch("api", "kernels", kernel_id, "restart", method="POST", body="{}")
        await client.wait_for_ready(timeout=60)
        await client.execute_interactive("b = 2", timeout=30)
        deadline = asyncio.get_running_loop().time() + 10
        while True:
            second = await kernel_status(jp_fetch, kernel_id)
            if second["trajectory_id"] != first["trajectory_id"] and second["steps"] == 1:
                break
            assert asyncio.get_running_loop().time() < deadline, second
            await asyncio.sleep(0.05)
        store = jp_serverapp.web_app.settings["themisto"].store.sync
        old = store.get_trajectory(first["trajectory_id"])
        assert old.ended_at is not None
        assert store.get_trajectory(second["trajectory_id"]).restart_of == old.id
    finally:
        client.stop_channels()



class TestRecordingOffByConfig:
    @pytest.fixture
    def jp_server_config(self, themisto_config) -> dict:
        return themisto_config(recording=False)

    async def test_kernels_start_with_recording_off(self, jp_fetch, jp_serverapp):
        kernel_id, client = await start_kernel(jp_fetch, jp_serverapp)
        try:
            await client.execute_interactive("quiet = 1", timeout=30)
            await asyncio.sleep(0.3)
            status = await kernel_status(jp_fetch, kernel_id)
            assert status["recording"] is False and status["steps"] == 0
            await jp_fetch("themisto", "api", "kernels", kernel_id, method="PUT",
                           body=json.dumps({"recording": True}))
            await client.execute_interactive("loud = 2", timeout=30)
            status = await wait_for_steps(jp_fetch, kernel_id, 1)
            assert status["steps"] == 1
        finally:
            client.stop_channels()


async def test_notebook_path_is_relative_to_the_server_root(jp_fetch, jp_serverapp, jp_root_dir):
    if jp_serverapp.web_app.settings["themisto"]._ingest_task is None:
        await jp_serverapp.extension_manager.start_all_extensions()
    (jp_root_dir / "work").mkdir()
    r = await jp_fetch("api", "sessions", method="POST", body=json.dumps(
        {"path": "work/analysis.ipynb", "type": "notebook", "name": "analysis.ipynb",
         "kernel": {"name": "python3"}}))
    kernel_id = json.loads(r.body)["kernel"]["id"]
    client = jp_serverapp.kernel_manager.get_kernel(kernel_id).client()
    client.start_channels()
    try:
        await client.wait_for_ready(timeout=60)
        await client.execute_interactive("z = 1", timeout=30)
        status = await wait_for_steps(jp_fetch, kernel_id, 1)
        store = jp_serverapp.web_app.settings["themisto"].store.sync
        assert store.get_trajectory(status["trajectory_id"]).notebook_path == \
            "work/analysis.ipynb"
        r = await jp_fetch("themisto", "api", "trajectories",
                           params={"notebook": "work/analysis.ipynb"})
        assert [t["id"] for t in json.loads(r.body)["trajectories"]] == [status["trajectory_id"]]
    finally:
        client.stop_channels()


async def open_notebook(jp_fetch, jp_serverapp, path: str):
    """A session for the notebook at ``path``, as JupyterLab opens one: its kernel's id
    and a client of it."""
    r = await jp_fetch("api", "sessions", method="POST", body=json.dumps(
        {"path": path, "type": "notebook", "name": path.rsplit("/", 1)[-1],
         "kernel": {"name": "python3"}}))
    kernel_id = json.loads(r.body)["kernel"]["id"]
    client = jp_serverapp.kernel_manager.get_kernel(kernel_id).client()
    client.start_channels()
    await client.wait_for_ready(timeout=60)
    return kernel_id, client


async def rename(jp_fetch, old: str, new: str) -> None:
    """Rename as JupyterLab does: the file (or folder), then the sessions in it."""
    await jp_fetch("api", "contents", *old.split("/"), method="PATCH",
                   body=json.dumps({"path": new}))
    for session in json.loads((await jp_fetch("api", "sessions")).body):
        path = session["path"]
        if path == old or path.startswith(old + "/"):
            await jp_fetch("api", "sessions", session["id"], method="PATCH",
                           body=json.dumps({"path": new + path[len(old):]}))


async def notebook_trajectories(jp_fetch, path: str) -> list[dict]:
    r = await jp_fetch("themisto", "api", "trajectories", params={"notebook": path})
    return json.loads(r.body)["trajectories"]


async def test_a_renamed_notebook_keeps_its_history(jp_fetch, jp_serverapp, jp_root_dir):
    """Every new notebook is Untitled.ipynb until renamed; its kernel keeps saying the
    name it was launched with, after a restart too. Renamed through the contents API (as
    JupyterLab does), its history is found under the new name, and a new notebook taking
    the old name does not inherit it."""
    if jp_serverapp.web_app.settings["themisto"]._ingest_task is None:
        await jp_serverapp.extension_manager.start_all_extensions()
    (jp_root_dir / "work").mkdir()
    await jp_fetch("api", "contents", "work", method="POST", body=json.dumps({"type": "notebook"}))
    kernel_id, client = await open_notebook(jp_fetch, jp_serverapp, "work/Untitled.ipynb")
    others: list = []
    try:
        await client.execute_interactive("x = 1", timeout=30)
        first = (await wait_for_steps(jp_fetch, kernel_id, 1))["trajectory_id"]
        await rename(jp_fetch, "work/Untitled.ipynb", "work/analysis.ipynb")
        deadline = asyncio.get_running_loop().time() + 10
        while not await notebook_trajectories(jp_fetch, "work/analysis.ipynb"):
            assert asyncio.get_running_loop().time() < deadline, "the history stayed behind"
            await asyncio.sleep(0.05)

        # A restart: the kernel is launched again with the old name.
        await jp_fetch("api", "kernels", kernel_id, "restart", method="POST", body="{}")
        await client.wait_for_ready(timeout=60)
        await client.execute_interactive("y = 2", timeout=30)
        while (await kernel_status(jp_fetch, kernel_id))["trajectory_id"] == first:
            assert asyncio.get_running_loop().time() < deadline + 20
            await asyncio.sleep(0.05)
        await wait_for_steps(jp_fetch, kernel_id, 1)

        # The folder renamed: both trajectories go along.
        await rename(jp_fetch, "work", "done")
        while len(await notebook_trajectories(jp_fetch, "done/analysis.ipynb")) < 2:
            assert asyncio.get_running_loop().time() < deadline + 30, "the folder moved alone"
            await asyncio.sleep(0.05)
        assert await notebook_trajectories(jp_fetch, "work/Untitled.ipynb") == []
        assert await notebook_trajectories(jp_fetch, "work/analysis.ipynb") == []

        # A new notebook of the old name starts its own history.
        (jp_root_dir / "work").mkdir()
        await jp_fetch("api", "contents", "work", method="POST",
                       body=json.dumps({"type": "notebook"}))
        new_kernel, new_client = await open_notebook(jp_fetch, jp_serverapp,
                                                     "work/Untitled.ipynb")
        others.append(new_client)
        await new_client.execute_interactive("z = 3", timeout=30)
        fresh = (await wait_for_steps(jp_fetch, new_kernel, 1))["trajectory_id"]
        assert [t["id"] for t in await notebook_trajectories(
            jp_fetch, "work/Untitled.ipynb")] == [fresh]
        assert len(await notebook_trajectories(jp_fetch, "done/analysis.ipynb")) == 2
    finally:
        client.stop_channels()
        for other in others:
            other.stop_channels()
