"""The REST API and live stream, through a real jupyter_server, as a script would use them."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path

import pytest
import yaml
from conftest import ROOT
from contract import follow_live
from test_store import start, step

from themisto_ext.events import LIVE_EVENT_SCHEMA_ID
from themisto_ext.journal import JournalWriter
from themisto_ext.server.api import routes


@pytest.fixture
def jp_server_config(themisto_config) -> dict:
    return themisto_config(max_body_bytes=1000)


async def seed(jp_serverapp, trajectories: dict[str, int], notebook: str = "nb.ipynb") -> None:
    """Trajectories written through kernel journals, then ingested as the server does."""
    app = jp_serverapp.web_app.settings["themisto"]
    for n, (tid, count) in enumerate(trajectories.items()):
        writer = JournalWriter(Path(app.journal_dir), f"k{n}", tid)
        record = start(tid, f"k{n}", f"2026-01-0{n + 1}T00:00:00+00:00")
        writer.append({**record, "notebook_path": notebook})
        for i in range(1, count + 1):
            writer.append(step(tid, i))
        writer.close()
    await app.ingest_now()


def predicted(trajectory_id: str, target_step: int) -> dict:
    """A stored prediction record, as live predictions save them."""
    return {"id": f"p-{trajectory_id}-{target_step}", "trajectory_id": trajectory_id,
            "kernel_id": "k0", "notebook_path": "nb.ipynb", "cell_id": None,
            "task": "output", "context": "full", "predictor": "baseline", "model": "baseline",
            "target_step": target_step, "created_at": "2026-01-01T00:00:00.000+00:00",
            "latency": 0.01, "prompt_tokens": None, "completion_tokens": None,
            "cached_tokens": None, "prefix_reused": None,
            "prompt": {"system": "s", "user": "u"}, "dropped_steps": 0, "raw": "1",
            "answer": "1", "error": None, "reference": None, "scores": None}


def body(response) -> dict:
    return json.loads(response.body)


async def test_list_filter_and_page(api, jp_serverapp):
    await seed(jp_serverapp, {"a1": 3, "b2": 1, "c3": 2})
    r = await api("trajectories")
    assert r.code == 200 and r.headers["X-Themisto-API-Version"] == "1"
    listing = body(r)
    assert [t["id"] for t in listing["trajectories"]] == ["a1", "b2", "c3"]
    assert listing["total"] == 3 and listing["trajectories"][0]["steps"] == 3
    page = body(await api("trajectories", query=[("limit", 1), ("offset", 1)]))
    assert [t["id"] for t in page["trajectories"]] == ["b2"] and page["total"] == 3
    assert [t["id"] for t in body(await api("trajectories", query=[("kernel", "k2")]))[
        "trajectories"]] == ["c3"]
    after = body(await api("trajectories", query=[("started_after", "2026-01-02T00:00:00")]))
    assert [t["id"] for t in after["trajectories"]] == ["b2", "c3"]


async def test_one_trajectory_steps_incremental_and_delete(api, jp_serverapp, store_path):
    await seed(jp_serverapp, {"t1": 250})
    meta = body(await api("trajectories/t1"))
    assert meta["steps"] == 250 and meta["kernel_id"] == "k0" and meta["events"] == []
    first = body(await api("trajectories/t1/steps", query=[("limit", 100)]))
    assert [s["step"] for s in first["steps"]] == list(range(1, 101))
    assert first["next_since_step"] == 100
    rest = body(await api("trajectories/t1/steps", query=[("since_step", 200), ("limit", 100)]))
    assert [s["step"] for s in rest["steps"]] == list(range(201, 251))
    assert rest["next_since_step"] is None
    assert rest["steps"][0]["code"] == "x = 1"

    r = await api("trajectories/t1", method="DELETE")
    assert r.code == 204
    assert (await api("trajectories/t1")).code == 404
    # deleted means gone: the journal of a trajectory whose kernel may still run is emptied
    # (the kernel goes on appending to it), the journal of an ended one removed
    assert all(j.stat().st_size == 0 for j in (store_path.parent / "journal").glob("*--t1.jsonl"))


async def test_export_streams_jsonl(api, jp_serverapp, tmp_path):
    await seed(jp_serverapp, {"e1": 2, "e2": 3})
    r = await api("export", query=[("trajectory", "e2"), ("trajectory", "e1"),
                                   ("filename", "mine.jsonl")])
    assert r.code == 200
    assert r.headers["Content-Disposition"] == 'attachment; filename="mine.jsonl"'
    lines = [json.loads(x) for x in r.body.decode().splitlines()]
    assert [(s["trajectory_id"], s["step"]) for s in lines] == [
        ("e2", 1), ("e2", 2), ("e2", 3), ("e1", 1), ("e1", 2)]
    out = tmp_path / "export.jsonl"
    out.write_bytes(r.body)
    from themisto_ext.trajectory import file_problems

    assert file_problems(out) == (5, [])
    everything = await api("export", query=[("all", "true")])
    assert everything.body.count(b"\n") == 5
    by_notebook = await api("export", query=[("notebook", "nb.ipynb")])
    assert by_notebook.body == everything.body
    # JupyterLab's ServerConnection appends a bare timestamp to every GET
    busted = await api("export", query=[("all", "true"), ("1796130440281", "")])
    assert busted.code == 200 and busted.body == everything.body


@pytest.mark.parametrize("path,query,field", [
    ("trajectories", [("limit", "lots")], "limit"),
    ("trajectories", [("limit", 0)], "limit"),
    ("trajectories", [("started_after", "yesterday")], "started_after"),
    ("trajectories/t1/steps", [("since_step", -1)], "since_step"),
    ("trajectories/t1/history", [("limit", 5000)], "limit"),
    ("trajectories/t1/predictions", [("until_step", "last")], "until_step"),
    ("trajectories/t1/predictions", [("slim", "null")], "slim"),
    ("export", [("all", "true"), ("filename", "../../etc/passwd.jsonl")], "filename"),
    ("export", [("all", "true"), ("filename", "x.txt")], "filename"),
    ("export", [], "trajectory"),
    ("export", [("all", "true"), ("trajectry", "t1")], "trajectry"),
])
async def test_malformed_parameters_are_400_naming_the_field(api, jp_serverapp, path, query,
                                                             field):
    await seed(jp_serverapp, {"t1": 1})
    r = await api(path, query=query)
    assert r.code == 400
    assert body(r)["message"].startswith(f"{field}: ")


async def test_unknown_ids_are_404(api, jp_serverapp):
    for path in ("trajectories/nope", "trajectories/nope/steps", "trajectories/nope/history"):
        r = await api(path)
        assert r.code == 404 and "nope" in body(r)["message"]
    assert (await api("trajectories/nope", method="DELETE")).code == 404
    assert (await api("export", query=[("trajectory", "nope")])).code == 404


async def test_bodies_over_the_limit_are_413(api, jp_serverapp):
    r = await api("kernels/k1", method="PUT", body=json.dumps({"recording": True,
                                                                "pad": "x" * 5000}))
    assert r.code == 413 and "limit" in body(r)["message"]


async def test_nothing_is_served_without_authentication(api, jp_serverapp):
    await seed(jp_serverapp, {"t1": 1})
    for path, method in (("", "GET"), ("trajectories", "GET"), ("trajectories/t1", "GET"),
                         ("trajectories/t1/steps", "GET"), ("export?all=true", "GET"),
                         ("kernels/k1", "GET"), ("kernels/k1", "PUT"),
                         ("trajectories/t1", "DELETE")):
        r = await api(path, method=method, auth=False,
                      body="{}" if method == "PUT" else None)
        assert r.code == 403, (path, method, r.code)
    assert (await api("trajectories/t1")).code == 200  # nothing was deleted


async def test_live_stream_pushes_steps_from_a_real_kernel(jp_fetch, jp_ws_fetch, jp_serverapp,
                                                           api_contract):
    from test_server import start_kernel

    kernel_id, client = await start_kernel(jp_fetch, jp_serverapp)
    stream = await follow_live(jp_ws_fetch, api_contract)
    events = stream.events
    try:
        await client.execute_interactive("a = 1", timeout=30)
        await client.execute_interactive("print(a)", timeout=30)
        for _ in range(200):
            if sum(1 for name, _ in events if name == "step") >= 2:
                break
            await asyncio.sleep(0.05)
        steps = [data["step"] for name, data in events if name == "step"]
        assert [s["code"] for s in steps] == ["a = 1", "print(a)"]
        assert steps[1]["output"] == "1\n" and steps[1]["kernel_id"] == kernel_id
    finally:
        client.stop_channels()
        stream.close()


async def test_live_events_cannot_be_posted_to_the_bus(jp_fetch, jp_ws_fetch, jp_serverapp,
                                                      api_contract):
    """Only the server emits themisto's events: a page is never shown a step or a
    prediction posted to jupyter_server's ``POST /api/events``."""
    from tornado.httpclient import HTTPClientError

    stream = await follow_live(jp_ws_fetch, api_contract, jp_serverapp)
    forged = {"type": "step", "seq": 99, "trajectory_id": "t", "kernel_id": "k",
              "notebook_path": None, "step": {}}
    try:
        with pytest.raises(HTTPClientError) as refused:
            await jp_fetch("api", "events", method="POST", body=json.dumps(
                {"schema_id": LIVE_EVENT_SCHEMA_ID, "version": "1",
                 "data": {"type": "step", "event": json.dumps(forged)}}))
        assert refused.value.code == 400
        assert b"emitted by its server only" in refused.value.response.body
        jp_serverapp.web_app.settings["themisto"].events.heartbeat(10.0)  # its own go out
        while len(stream.events) < 2:
            await asyncio.sleep(0.01)
        assert [name for name, _ in stream.events] == ["heartbeat", "heartbeat"]
    finally:
        stream.close()


def documented_routes() -> set[tuple[str, str]]:
    spec = yaml.safe_load((ROOT / "docs" / "openapi.yaml").read_text())
    return {(path, method.upper()) for path, item in spec["paths"].items()
            for method in item if method in ("get", "put", "post", "delete", "patch")}


def test_openapi_documents_every_route_and_only_those():
    served = set()
    for pattern, handler in routes():
        path = re.sub(r"\(\?P<(\w+)>[^)]*\)", r"{\1}", pattern).removesuffix("/?")
        if path.endswith("{rest}"):
            continue  # the JSON 404 of every other path
        for method in ("GET", "PUT", "POST", "DELETE", "PATCH"):
            if method.lower() in vars(handler):
                served.add((path, method))
    assert served == documented_routes()


async def test_every_documented_route_answers_as_documented(api, jp_serverapp):
    await seed(jp_serverapp, {"d1": 2, "p1": 1})
    prediction = predicted("p1", 2)  # of a trajectory the DELETE below leaves alone
    jp_serverapp.web_app.settings["themisto"].store.sync.save_prediction(prediction)
    spec = yaml.safe_load((ROOT / "docs" / "openapi.yaml").read_text())
    exercised = set()
    for path, item in spec["paths"].items():
        for method, operation in item.items():
            if method == "parameters":
                continue
            concrete = path.replace("{trajectory_id}", "d1").replace("{kernel_id}", "k0")
            concrete = concrete.replace("{prediction_id}", prediction["id"])
            expected = {"/themisto/api/predictions/{prediction_id}": 200}.get(path)
            concrete = concrete.removeprefix("/themisto/api").lstrip("/")
            query = [("all", "true")] if concrete == "export" else None
            payload = {"put": json.dumps({"recording": True}),
                       "post": json.dumps({"kernel_id": "k0", "task": "next-cell"})}.get(method)
            status = (await api(concrete, method=method.upper(), query=query,
                                body=payload)).code
            assert str(status) in operation["responses"], (path, method, status)
            assert expected in (None, status), (path, method, status)
            exercised.add((path, method.upper()))
            if method == "delete":
                await seed(jp_serverapp, {"d1": 2})
    assert exercised == documented_routes()




async def test_history_pages_steps_in_brief_with_their_predictions(api, jp_serverapp):
    await seed(jp_serverapp, {"h1": 30})
    store = jp_serverapp.web_app.settings["themisto"].store.sync
    scored = {**predicted("h1", 12), "reference": "1",
              "scores": {"exact_match": 1.0, "rouge_l": 1.0, "chrf": 1.0}}
    missed = {**predicted("h1", 12), "id": "missed-12", "task": "next-cell",
              "error": {"type": "PredictionSuperseded", "message": "the next cell started first"}}
    for record in (scored, missed, predicted("h1", 31)):
        store.save_prediction(record)
    first = body(await api("trajectories/h1/history", query=[("limit", 20)]))
    assert [s["step"] for s in first["steps"]] == list(range(1, 21))
    assert first["next_since_step"] == 20
    page = body(await api("trajectories/h1/history", query=[("since_step", 10),
                                                            ("limit", 20)]))
    assert [s["step"] for s in page["steps"]] == list(range(11, 31))
    last = body(await api("trajectories/h1/history", query=[("since_step", 30)]))
    assert last == {"trajectory_id": "h1", "steps": [], "next_since_step": None}
    twelve = page["steps"][1]
    assert twelve["step"] == 12 and twelve["error"] is None
    assert set(twelve) == {"step", "cell_id", "code_hash", "execution_time", "memory_bytes",
                           "error", "predictions"}
    assert twelve["predictions"] == [
        {"id": scored["id"], "task": "output", "predictor": "baseline", "model": "baseline",
         "context": "full", "scores": scored["scores"], "error": None, "abstained": False},
        {"id": "missed-12", "task": "next-cell", "predictor": "baseline",
         "model": missed["model"], "context": "full", "scores": None, "error": missed["error"],
         "abstained": False}]
    assert all(s["predictions"] == [] for s in page["steps"] if s["step"] != 12)
    # no prompt, no code, no output: a summary stays small
    assert "prompt" not in json.dumps(page) and "x = 1" not in json.dumps(page)


async def test_predictions_can_be_read_slim_and_by_window(api, jp_serverapp):
    await seed(jp_serverapp, {"w1": 5})
    store = jp_serverapp.web_app.settings["themisto"].store.sync
    for target in (2, 3, 4, 5):
        store.save_prediction(predicted("w1", target))
    whole = body(await api("trajectories/w1/predictions"))["predictions"]
    assert [p["target_step"] for p in whole] == [2, 3, 4, 5] and whole[0]["prompt"]
    window = body(await api("trajectories/w1/predictions",
                            query=[("since_step", 2), ("until_step", 4), ("slim", "true")]))
    assert [p["target_step"] for p in window["predictions"]] == [3, 4]
    assert all("prompt" not in p and "raw" not in p for p in window["predictions"])
    assert window["predictions"][0]["answer"] == "1"
