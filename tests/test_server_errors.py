"""Malformed requests get a JSON 4xx, never a 500; a server whose store path cannot be
used starts, answers 503 with the reason, and stops on SIGTERM."""

from __future__ import annotations

import json
import signal
import sys
import time
from pathlib import Path
from urllib.parse import quote

import httpx
import pytest
from conftest import ROOT
from test_api import seed
from unwritable import unwritable

sys.path.insert(0, str(ROOT / "benchmarks"))
from server_api import Server  # the benchmarks' real server process

DEEP = "[" * 100_000 + "]" * 100_000


@pytest.fixture
def jp_server_config(themisto_config) -> dict:
    return themisto_config(max_body_bytes=1_000_000)


def message(response) -> str:
    return json.loads(response.body)["message"]


@pytest.mark.parametrize("path,method,body", [
    ("kernels/k1", "PUT", '{"recording": ' + DEEP + "}"),
    ("kernels/k1", "PUT", DEEP),
    ("predictions", "POST", '{"kernel_id": "k", "task": ' + DEEP + "}"),
    ("predictions", "POST", '{"a":' * 20_000 + "1" + "}" * 20_000),
])
async def test_deeply_nested_bodies_are_400(api, jp_serverapp, path, method, body):
    r = await api(path, method=method, body=body)
    assert r.code == 400 and message(r).startswith("body: ")


@pytest.mark.parametrize("kernel_id", [
    "k" * 3000, "..", ".", "...", "con", "a b", "ü-kernel", "a%2Fb", "%2E%2E", "*", "k?[x]",
    "-" * 300,
])
async def test_kernel_ids_that_cannot_be_file_names_are_answered(api, jp_serverapp, kernel_id):
    journals = jp_serverapp.web_app.settings["themisto"].journal_dir
    for method, body in (("PUT", json.dumps({"recording": False})), ("GET", None),
                         ("PUT", json.dumps({"recording": True}))):
        r = await api(f"kernels/{quote(kernel_id, safe='%')}", method=method, body=body)
        if method == "PUT":  # no such kernel runs here: nothing to switch
            assert r.code == 404 and "no kernel" in message(r), (r.code, r.body[:200])
            continue
        assert r.code == 200, (method, r.code, r.body[:200])
        assert json.loads(r.body)["recording"] is False
    assert not list((journals / "control").glob("*"))  # no switch left for a kernel


async def test_switching_a_kernel_that_does_not_run_is_404(api, jp_serverapp):
    r = await api("kernels/nope", method="PUT", body=json.dumps({"recording": False}))
    assert r.code == 404 and message(r) == "no kernel nope is running on this server"
    got = await api("kernels/nope")  # reading its state still says why it is not recorded
    assert got.code == 200 and json.loads(got.body)["reason"] == message(r)


@pytest.mark.parametrize("trajectory_id", ["*", "..", "a%2Fb", "x" * 3000, "[t1]", "t?"])
async def test_odd_trajectory_ids_are_json_404s(api, jp_serverapp, trajectory_id):
    await seed(jp_serverapp, {"t1": 1})
    trajectory_id = quote(trajectory_id, safe="%")
    for path, method in ((f"trajectories/{trajectory_id}", "GET"),
                         (f"trajectories/{trajectory_id}", "DELETE"),
                         (f"trajectories/{trajectory_id}/steps", "GET"),
                         (f"trajectories/{trajectory_id}/predictions", "GET"),
                         (f"predictions/{trajectory_id}", "GET")):
        r = await api(path, method=method)
        assert r.code == 404 and message(r), (path, method, r.code)
    assert (await api("trajectories/t1")).code == 200  # a glob id deleted nothing


async def test_ids_with_control_characters_are_json_404s(api, jp_serverapp):
    # PostgreSQL refuses NUL in text: such an id answered 500 with the database's words;
    # nothing stored has one, so every route says so before any lookup.
    await seed(jp_serverapp, {"t1": 1})
    for bad in ("%00", "t1%00", "a%01b", "%7F"):
        for path, method, body in ((f"trajectories/{bad}", "GET", None),
                                   (f"trajectories/{bad}", "DELETE", None),
                                   (f"trajectories/{bad}/steps", "GET", None),
                                   (f"trajectories/{bad}/history", "GET", None),
                                   (f"trajectories/{bad}/predictions", "GET", None),
                                   (f"predictions/{bad}", "GET", None),
                                   (f"kernels/{bad}", "GET", None),
                                   (f"kernels/{bad}", "PUT", '{"recording": false}')):
            r = await api(path, method=method, body=body)
            assert r.code == 404 and "control character" in message(r), (path, r.code)
        r = await api(f"trajectories?notebook={bad}")  # a filter matching nothing
        assert r.code == 200 and json.loads(r.body)["total"] == 0, r.code
    assert (await api("trajectories/t1")).code == 200  # nothing deleted


async def test_unknown_api_paths_are_json_404s(api, jp_serverapp):
    for path in ("nope", "trajectories/a/b/c", "kernels/", "kernels/a/b", "export/x"):
        r = await api(path)
        assert r.code == 404 and r.headers["Content-Type"].startswith("application/json")
        assert "no such API path" in message(r)
    assert (await api("nope", auth=False)).code == 403


def test_unwritable_store_path_starts_answers_503_and_stops_on_sigterm(tmp_path: Path):
    home = tmp_path / "home"
    locked = home / "data"  # the store's folder, data/themisto, cannot be created in it
    locked.mkdir(parents=True)
    with unwritable(locked):
        server = Server(home, extra=["--ThemistoExtension.predictors=baseline"])
        try:
            r = httpx.get(f"{server.url}/themisto/api/trajectories", headers=server.headers)
            assert r.status_code == 503 and "cannot open the trajectory store" in \
                r.json()["message"]
            r = httpx.get(f"{server.url}/themisto/api/kernels/k", headers=server.headers)
            assert r.status_code == 200 and r.json()["recording"] is False
            server.proc.send_signal(signal.SIGTERM)
            began = time.monotonic()
            code = server.proc.wait(timeout=30)
            assert code == 0 and time.monotonic() - began < 15
        finally:
            if server.proc.poll() is None:
                server.proc.kill()
        log = (home / "server.log").read_text()
        assert "Traceback" not in log and "cannot open the trajectory store" in log
