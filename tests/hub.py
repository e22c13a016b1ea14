"""A real JupyterHub for the tests, deployed as docs/deploying.md says:
dummy authenticator, the local-process spawner starting each user's server as that user's
own UNIX account (created here; the tests run as root in CI), the npm
configurable-http-proxy (installed by scripts/test.sh under .test-tools/), and one
PostgreSQL whose owner's password only the hub holds, reached either through the hub's
Themisto service (``mode="service"``: servers hold no database login) or by
``themisto_ext.hub.StoreRolesHook`` giving each server a database role of its own
(``mode="roles"``); everything on 127.0.0.1, stopped at the end."""

from __future__ import annotations

import contextlib
import json
import os
import pwd
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any
from urllib.error import HTTPError
from urllib.request import Request, urlopen

from pg import free_port

ROOT = Path(__file__).resolve().parent.parent
CHP = ROOT / ".test-tools" / "node_modules" / ".bin" / "configurable-http-proxy"
READ_ALL_SCOPE = "custom:themisto:read-all"

CONFIG = """
c = get_config()  # noqa
c.JupyterHub.ip = "127.0.0.1"
c.JupyterHub.port = {port}
c.JupyterHub.hub_ip = "127.0.0.1"
c.JupyterHub.hub_port = {hub_port}
c.ConfigurableHTTPProxy.command = [{chp!r}]
c.ConfigurableHTTPProxy.api_url = "http://127.0.0.1:{proxy_api_port}"
c.ConfigurableHTTPProxy.auth_token = {proxy_token!r}
c.JupyterHub.db_url = "sqlite:///{dir}/jupyterhub.sqlite"
c.JupyterHub.cookie_secret_file = "{dir}/cookie_secret"
c.JupyterHub.pid_file = "{dir}/jupyterhub.pid"
c.JupyterHub.authenticator_class = "dummy"
c.Authenticator.allowed_users = {users!r}
c.JupyterHub.api_tokens = {tokens!r}
c.JupyterHub.spawner_class = "localprocess"  # each user's server as their own account
c.Spawner.cmd = [{singleuser!r}]
c.Spawner.start_timeout = 120
c.Spawner.http_timeout = 120
c.Spawner.default_url = "/lab"
{store}
c.JupyterHub.custom_scopes = {{
    "{scope}": {{"description": "Read and export every user's themisto trajectories."}},
}}
c.JupyterHub.load_roles = [
    {{"name": "user", "scopes": ["self"]}},
    {{"name": "themisto-reader", "users": ["teacher"],
      "scopes": ["{scope}", "access:servers", "read:users"]}},
]
# browser sessions carry the scope too
c.Spawner.oauth_client_allowed_scopes = ["{scope}"]
"""

ROLES = """
# docs/deploying.md, per-user roles: the owner's password stays in the
# hub's environment (THEMISTO_DB_PASSWORD); each server gets a role with a fresh password.
from themisto_ext.hub import StoreRolesHook
c.Spawner.pre_spawn_hook = StoreRolesHook({owner_url!r})
c.Spawner.args = ["--ThemistoExtension.predictors=baseline"]
"""

SERVICE = """
# docs/deploying.md: the hub's Themisto service holds the database's
# login (THEMISTO_DB_PASSWORD, in the hub's environment); servers hold none.
from themisto_ext.hub import SERVER_TOKEN_SCOPES, service_store_url, themisto_service
service = themisto_service({owner_url!r}, url="http://127.0.0.1:{service_port}",
                           quota_bytes={quota_bytes!r}, quota_steps={quota_steps!r})
c.JupyterHub.services = [service]
c.Spawner.server_token_scopes = SERVER_TOKEN_SCOPES
c.Spawner.args = ["--ThemistoExtension.predictors=baseline",
                  f"--ThemistoExtension.store_url={{service_store_url(service)}}"]
"""


def end_processes(name: str, timeout: float = 15.0) -> None:
    """Every process of UNIX account ``name`` killed, and gone: a kernel outlives its
    server by a moment, and ``usermod`` refuses an account with a process (exit 8)."""
    import psutil

    uid = pwd.getpwnam(name).pw_uid
    deadline = time.monotonic() + timeout
    while left := [p for p in psutil.process_iter(["uids", "status"])
                   if p.info["uids"].real == uid and p.info["status"] != psutil.STATUS_ZOMBIE]:
        if time.monotonic() > deadline:
            raise RuntimeError(f"processes of {name} survive SIGKILL for {timeout:g} s")
        for process in left:
            with contextlib.suppress(psutil.Error):
                process.kill()
        time.sleep(0.2)


def system_user(name: str, home: Path) -> None:
    """A UNIX account ``name`` with a private home ``home`` (made or moved here)."""
    try:
        pwd.getpwnam(name)
        end_processes(name)  # an earlier test's, still ending
        for _ in range(20):  # 8: a process of the account (a zombie not yet reaped)
            code = subprocess.run(["usermod", "--home", str(home), name], check=False)
            if code.returncode != 8:
                code.check_returncode()
                break
            time.sleep(0.5)
        else:
            code.check_returncode()
    except KeyError:
        subprocess.run(["useradd", "--home-dir", str(home), "--shell", "/bin/sh",
                        "--no-create-home", "--user-group", name], check=True)
    account = pwd.getpwnam(name)
    home.mkdir(parents=True, exist_ok=True)
    os.chown(home, account.pw_uid, account.pw_gid)
    home.chmod(0o700)


def reachable(paths: list[Path]) -> list[tuple[Path, int]]:
    """Lets other accounts traverse to ``paths`` (the interpreter, the environment) by
    adding o+x where a parent lacks it (``/root``, where CI's Python lives); returns what
    to put back."""
    changed = []
    for path in paths:
        for parent in [path, *path.parents]:
            mode = parent.stat().st_mode
            if parent.is_dir() and not mode & stat.S_IXOTH:
                changed.append((parent, mode))
                parent.chmod(mode | stat.S_IXOTH)
    return changed


class Hub:
    def __init__(self, directory: Path, owner_url: str, owner_password: str,
                 users: list[str], mode: str = "roles", quota_bytes: int | None = None,
                 quota_steps: int | None = None) -> None:
        if not CHP.exists():
            raise RuntimeError(f"{CHP} missing: scripts/test.sh installs configurable-http-proxy")
        if os.geteuid() != 0:
            raise RuntimeError("the hub tests start each user's server as their own UNIX "
                               "account: run them as root (CI does)")
        self.dir = directory
        self.users = list(users)
        self.homes = Path(tempfile.mkdtemp(prefix="themisto-homes-"))
        self.homes.chmod(0o755)
        for name in users:
            system_user(name, self.homes / name)
        self._restore = reachable([Path(sys.prefix), Path(os.path.realpath(sys.executable)),
                                   ROOT])
        self.port = free_port()
        self.service_port = free_port()
        self.tokens = {name: uuid.uuid4().hex for name in users}
        store = (SERVICE if mode == "service" else ROLES).format(
            owner_url=owner_url, service_port=self.service_port, quota_bytes=quota_bytes,
            quota_steps=quota_steps)
        self.process: subprocess.Popen | None = None
        config = CONFIG.format(
            port=self.port, hub_port=free_port(), chp=str(CHP), proxy_api_port=free_port(),
            proxy_token=uuid.uuid4().hex, dir=directory, users=set(users),
            tokens={token: name for name, token in self.tokens.items()},
            singleuser=str(Path(sys.executable).parent / "jupyterhub-singleuser"),
            store=store, scope=READ_ALL_SCOPE)
        (directory / "jupyterhub_config.py").write_text(config)
        self.log = (directory / "hub.log").open("w")
        try:
            self._start(owner_password)
        except BaseException:
            self.stop()
            raise

    def _start(self, owner_password: str) -> None:
        directory = self.dir
        env = {k: v for k, v in os.environ.items() if k not in ("PGPASSWORD", "PGPASSFILE")}
        env["THEMISTO_DB_PASSWORD"] = owner_password
        self.process = subprocess.Popen(
            [sys.executable, "-m", "jupyterhub", "-f", str(directory / "jupyterhub_config.py")],
            cwd=directory, stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True,
            env=env)
        self._wait(lambda: self.call("hub/api/", None)[0] == 200, 90, "the hub to start")

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/"

    def call(self, path: str, user: str | None, method: str = "GET",
             body: Any = None, timeout: float = 30) -> tuple[int, bytes]:
        headers = {"Authorization": f"token {self.tokens[user]}"} if user else {}
        data = json.dumps(body).encode() if body is not None else None
        if data is not None:
            headers["Content-Type"] = "application/json"
        request = Request(self.url + path, data=data, method=method, headers=headers)
        try:
            with urlopen(request, timeout=timeout) as response:
                return response.status, response.read()
        except HTTPError as exc:
            return exc.code, exc.read()
        except OSError:
            return 0, b""

    def start_server(self, user: str) -> None:
        code, text = self.call(f"hub/api/users/{user}/server", user, "POST", {})
        if code not in (201, 202):
            raise RuntimeError(f"spawn {user}: {code} {text[:300]!r}")

        def ready() -> bool:
            code, text = self.call(f"hub/api/users/{user}", user)
            return code == 200 and bool(json.loads(text)["servers"].get("", {}).get("ready"))

        self._wait(ready, 120, f"{user}'s server")

    def _wait(self, done: Any, seconds: float, what: str) -> None:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                break
            try:
                if done():
                    return
            except (OSError, ValueError):
                pass
            time.sleep(0.3)
        raise RuntimeError(f"timed out waiting for {what}; hub log:\n{self.tail()}")

    def tail(self, lines: int = 60) -> str:
        self.log.flush()
        return "\n".join((self.dir / "hub.log").read_text().splitlines()[-lines:])

    def stop(self) -> None:
        if getattr(self, "process", None) is not None and self.process.poll() is None:
            # SIGTERM: the hub stops its proxy and, with cleanup_servers, the users' servers
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(10)
        self.log.close()
        for name in self.users:  # kernels in their own process groups outlive the hub
            end_processes(name)
        for path, mode in reversed(self._restore):
            path.chmod(mode)
        shutil.rmtree(self.homes, ignore_errors=True)


def run_cells(hub: Hub, user: str, cells: list[str], kernel_id: str | None = None) -> str:
    """Execute cells in a kernel of ``user``'s server over the kernel websocket, as
    JupyterLab does; returns the kernel id."""
    import asyncio

    from tornado.httpclient import HTTPRequest
    from tornado.websocket import websocket_connect

    if kernel_id is None:
        code, text = hub.call(f"user/{user}/api/kernels", user, "POST", {"name": "python3"})
        if code != 201:
            raise RuntimeError(f"kernel for {user}: {code} {text[:300]!r}")
        kernel_id = json.loads(text)["id"]

    async def run() -> None:
        url = f"ws://127.0.0.1:{hub.port}/user/{user}/api/kernels/{kernel_id}/channels"
        ws = await websocket_connect(HTTPRequest(
            url, headers={"Authorization": f"token {hub.tokens[user]}"}))
        session = uuid.uuid4().hex
        for code in cells:
            msg_id = uuid.uuid4().hex
            ws.write_message(json.dumps({
                "header": {"msg_id": msg_id, "session": session, "username": user,
                           "msg_type": "execute_request", "version": "5.3"},
                "parent_header": {}, "metadata": {}, "channel": "shell", "buffers": [],
                "content": {"code": code, "silent": False, "store_history": True,
                            "user_expressions": {}, "allow_stdin": False}}))
            while True:
                raw = await asyncio.wait_for(ws.read_message(), 60)
                if raw is None:
                    raise RuntimeError("kernel websocket closed")
                msg = json.loads(raw)
                if msg.get("msg_type") == "execute_reply" and \
                        msg["parent_header"].get("msg_id") == msg_id:
                    break
        ws.close()

    asyncio.run(run())
    return kernel_id
