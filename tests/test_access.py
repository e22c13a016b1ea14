"""Ownership through a real jupyter_server: a user's API serves their own trajectories only;
read-all users read everyone's; a server on PostgreSQL records into the shared database.

The two-user JupyterHub deployment is tests/test_jupyterhub.py."""

from __future__ import annotations

import asyncio
import json
import threading
from types import SimpleNamespace

import pytest
from jupyter_server.auth.authorizer import Authorizer
from jupyter_server.auth.identity import IdentityProvider, User
from test_api import body, predicted, seed
from test_store import interpret_lines, start, step
from tornado.httpclient import HTTPClientError

from themisto_ext.server.access import AccessPolicy


def add_foreign(jp_serverapp, owner: str = "bob", tid: str = "bob1") -> None:
    """A trajectory another user's server recorded into the same store."""
    store = jp_serverapp.web_app.settings["themisto"].store.sync
    store.apply(interpret_lines([start(tid, "kb", "2026-03-01T00:00:00+00:00"), step(tid, 1),
                           step(tid, 2)], "kernel", user=owner), None)
    store.save_prediction(predicted(tid, 2))


class TestOwnUser:
    @pytest.fixture
    def jp_server_config(self, themisto_config) -> dict:
        return themisto_config(user="alice")

    async def test_api_serves_only_the_viewers_trajectories(self, api, jp_serverapp):
        await seed(jp_serverapp, {"a1": 2})
        add_foreign(jp_serverapp)
        listing = body(await api("trajectories"))
        assert [t["id"] for t in listing["trajectories"]] == ["a1"] and listing["total"] == 1
        assert listing["trajectories"][0]["user"] == "alice"
        for path in ("trajectories/bob1", "trajectories/bob1/steps",
                     "trajectories/bob1/predictions", "predictions/p-bob1-2"):
            assert (await api(path)).code == 404, path
        assert (await api("trajectories/bob1", method="DELETE")).code == 404
        assert (await api("trajectories", query=[("user", "bob")])).code == 403
        assert (await api("export", query=[("trajectory", "bob1")])).code == 404
        exported = (await api("export", query=[("all", "true")])).body.decode().splitlines()
        assert {json.loads(line)["trajectory_id"] for line in exported} == {"a1"}
        assert {json.loads(line)["user"] for line in exported} == {"alice"}  # whose it is


class TestReadAll:
    @pytest.fixture
    def jp_server_config(self, themisto_config) -> dict:
        return themisto_config(user="alice", read_all_users=["alice"])

    async def test_read_all_users_read_and_export_everyones(self, api, jp_serverapp):
        await seed(jp_serverapp, {"a1": 2})
        add_foreign(jp_serverapp)
        listing = body(await api("trajectories"))
        assert {t["id"]: t["user"] for t in listing["trajectories"]} == {"a1": "alice",
                                                                         "bob1": "bob"}
        only_bob = body(await api("trajectories", query=[("user", "bob")]))
        assert [t["id"] for t in only_bob["trajectories"]] == ["bob1"]
        assert len(body(await api("trajectories/bob1/steps"))["steps"]) == 2
        assert (await api("predictions/p-bob1-2")).code == 200
        exported = (await api("export", query=[("all", "true"), ("user", "bob")])).body
        assert len(exported.decode().splitlines()) == 2
        everything = (await api("export", query=[("all", "true")])).body.decode().splitlines()
        assert len(everything) == 4
        # every line names its user, so that an export read apart from the store says whose
        assert sorted((json.loads(line)["trajectory_id"], json.loads(line)["user"])
                      for line in everything) == [("a1", "alice")] * 2 + [("bob1", "bob")] * 2
        picked = (await api("export", query=[("trajectory", "bob1")])).body.decode()
        assert {json.loads(line)["user"] for line in picked.splitlines()} == {"bob"}
        # reading everyone's is reading: deleting stays the owner's
        assert (await api("trajectories/bob1", method="DELETE")).code == 403


def hub_request(name: str, scopes: list[str]) -> SimpleNamespace:
    from jupyterhub.singleuser.extension import JupyterHubUser

    return SimpleNamespace(current_user=JupyterHubUser({"name": name, "scopes": scopes}))


def test_hub_users_are_viewers_and_the_scope_grants_read_all():
    policy = AccessPolicy("alice", frozenset({"carol"}))
    alice = policy.for_request(hub_request("alice", ["access:servers!user=alice"]))
    assert (alice.viewer, alice.read_all) == ("alice", False)
    admin = policy.for_request(hub_request("admin", ["custom:themisto:read-all"]))
    assert (admin.viewer, admin.read_all) == ("admin", True)
    assert policy.for_request(hub_request("carol", [])).read_all
    scoped = policy.for_request(hub_request("dave", ["custom:themisto:read-all!user=x"]))
    assert not scoped.read_all  # a filtered grant is not everyone's
    assert not AccessPolicy("alice", read_all_scope="").for_request(
        hub_request("admin", ["custom:themisto:read-all"])).read_all


class TestOnPostgres:
    @pytest.fixture
    def jp_server_config(self, themisto_config, pg_cluster) -> dict:
        return themisto_config(user="alice", store_url=pg_cluster.create_database())

    async def test_a_server_records_into_postgresql(self, api, jp_serverapp):
        await seed(jp_serverapp, {"pg1": 3})
        add_foreign(jp_serverapp)
        listing = body(await api("trajectories"))
        assert [(t["id"], t["steps"], t["user"]) for t in listing["trajectories"]] == [
            ("pg1", 3, "alice")]
        steps = body(await api("trajectories/pg1/steps"))["steps"]
        assert [s["step"] for s in steps] == [1, 2, 3]

    async def test_a_request_waiting_for_the_database_holds_up_no_other_request(
            self, api, jp_serverapp, jp_server_config):
        import psycopg

        await seed(jp_serverapp, {"pg1": 3})
        url = jp_server_config["ThemistoExtension"]["store_url"]
        with psycopg.connect(url) as conn:
            # Another server's long transaction holds the table: reads of it wait.
            conn.execute("LOCK TABLE trajectories IN ACCESS EXCLUSIVE MODE")
            # Released from a thread: a server that waited on its event loop would hold
            # this test's coroutine too, and only the release could end the wait.
            release = threading.Timer(10, conn.rollback)
            release.start()
            try:
                waiting = asyncio.ensure_future(api("trajectories/pg1"))
                await asyncio.sleep(0.5)
                assert body(await api(""))["api_version"]
                assert not waiting.done()  # answered while the other still waits
            finally:
                release.cancel()
                conn.rollback()
        assert body(await waiting)["steps"] == 3


class NamedIdentityProvider(IdentityProvider):
    """An identity provider that names its users, as JupyterHub's does: whoever holds the
    token is "mallory", who may reach this server but is not its user."""

    def generate_anonymous_user(self, handler):
        return User(username="mallory")


class OwnerOnlyEvents(Authorizer):
    """An authorizer that lets visitors use the server but not hear its events, as a
    deployment that shares a server without its live stream configures it."""

    def is_authorized(self, handler, user, action, resource) -> bool:
        return resource != "events" or user.username == "alice"


class TestAnotherUsersServer:
    @pytest.fixture
    def jp_server_config(self, themisto_config) -> dict:
        config = themisto_config(user="alice")
        config["ServerApp"]["identity_provider_class"] = NamedIdentityProvider
        config["ServerApp"]["authorizer_class"] = OwnerOnlyEvents
        return config

    async def test_a_named_visitor_sees_nothing_of_the_servers_user(self, api, jp_serverapp,
                                                                    jp_ws_fetch):
        await seed(jp_serverapp, {"a1": 2})
        listing = body(await api("trajectories"))
        assert listing["trajectories"] == [] and listing["total"] == 0
        assert (await api("trajectories/a1")).code == 404
        assert (await api("trajectories", query=[("user", "alice")])).code == 403
        exported = (await api("export", query=[("all", "true")])).body
        assert exported == b""
        # Alice's live events ride jupyter_server's event bus, whose subscription the
        # server's authorizer decides (a visitor it lets execute code could read the
        # kernels anyway): one it does not let hear events gets none.
        with pytest.raises(HTTPClientError) as refused:
            await jp_ws_fetch("api", "events", "subscribe")
        assert refused.value.code == 403


def test_a_sqlite_stores_unowned_trajectories_are_its_users():
    """A SQLite file is one user's: what it holds from before owners (adoption failed, e.g.
    on a read-only file) is read by the server's user, and by no named visitor."""
    policy = AccessPolicy("alice", single_user_store=True)
    alice = policy.for_request(SimpleNamespace(current_user=None, identity_provider=None))
    assert alice.may_read("") and alice.owns("") and alice.owner_filter(None) == ("alice", "")
    visitor = policy.for_request(hub_request("mallory", []))
    assert not visitor.may_read("") and visitor.owner_filter(None) == "mallory"
    shared = AccessPolicy("alice").for_request(SimpleNamespace(current_user=None,
                                                                identity_provider=None))
    assert not shared.may_read("") and shared.owner_filter(None) == "alice"
