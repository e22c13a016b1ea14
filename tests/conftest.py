from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import pytest
from contract import ApiContract, check_response
from jupyter_client.manager import KernelManager
from pg import PASSWORD, Cluster
from tornado.httpclient import AsyncHTTPClient, HTTPClientError, HTTPRequest

from themisto_ext.contract import (
    AUTOLOAD_ARG,
    CAPTURE_ENV,
    JOURNAL_DIR_ENV,
    CaptureSettings,
    switch_path,
)
from themisto_ext.replay import recording_env

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = (ROOT.parent / "shared" / "data" / "notebooks").resolve()
"""The team's real notebooks (read, never copied); absent in a clone outside the team."""
OWN_NOTEBOOKS = ROOT / "tests" / "notebooks"
"""Notebooks written for this project (its licence): what the tests rely on everywhere."""

pytest_plugins = ["pytest_jupyter.jupyter_server"]


def own_notebook(stem: str) -> Path:
    """One of the project's own notebooks (``tests/notebooks/``), by its name."""
    path = OWN_NOTEBOOKS / f"{stem}.ipynb"
    assert path.is_file(), path
    return path


def real_notebooks() -> list[Path]:
    """The project's own notebooks, and the shared ones where they are present: a clone
    without ``../shared`` runs the same tests on fewer notebooks."""
    return sorted(OWN_NOTEBOOKS.glob("*.ipynb")) + sorted(NOTEBOOKS.glob("*.ipynb"))


def read_journal(directory: Path) -> list[dict[str, Any]]:
    records = []
    for path in sorted(directory.glob("*.jsonl")):
        records += [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return records


class RecordingKernel:
    """A real ipykernel with the capture hook, as the server's provisioner launches it."""

    def __init__(self, journal_dir: Path, kernel_id: str, settings: CaptureSettings) -> None:
        self.journal_dir = journal_dir
        self.kernel_id = kernel_id
        env = recording_env(journal_dir, kernel_id, settings=settings)
        env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
        self.km = KernelManager(kernel_name="python3")
        self.km.start_kernel(extra_arguments=[AUTOLOAD_ARG], env=env)
        self.kc = self.km.client()
        self.kc.start_channels()
        self.kc.wait_for_ready(timeout=60)

    def run(self, code: str, timeout: float = 60) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        shown: list[dict[str, Any]] = []
        reply = self.kc.execute_interactive(
            code, timeout=timeout,
            output_hook=lambda msg: shown.append(msg))
        return reply, shown

    def steps(self) -> list[dict[str, Any]]:
        steps = [r for r in read_journal(self.journal_dir) if r["kind"] == "step"]
        return sorted(steps, key=lambda s: s["started_at"])

    def switch(self, on: bool) -> None:
        """Switch recording as the server does (the kernel's switch file), seen by the
        hook at the next cell: its mtime is moved on, so two switches in one clock tick
        are both seen."""
        path = switch_path(self.journal_dir, self.kernel_id)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"recording": on}))
        time.sleep(0.01)
        path.touch()

    def restart(self) -> None:
        self.km.restart_kernel(now=False)  # graceful, as JupyterLab's Restart does
        self.kc.wait_for_ready(timeout=60)

    def stop(self) -> None:
        self.kc.stop_channels()
        self.km.shutdown_kernel(now=False)


@pytest.fixture(scope="session")
def recorded_notebooks(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Trajectories of the project's two notebooks of NumPy and pandas work, recorded once
    per test session (one file)."""
    from themisto_ext.replay import record_notebook
    from themisto_ext.store import SQLiteStore
    from themisto_ext.trajectory import write_steps

    work = tmp_path_factory.mktemp("recorded")
    store = SQLiteStore(work / "s.sqlite3")
    trajectories = work / "trajectories.jsonl"
    with trajectories.open("w", encoding="utf-8") as fh:
        for name in ("numpy-arrays", "pandas-objects"):
            result = record_notebook(own_notebook(name), store, work / "journal", timeout=120)
            write_steps(store.iter_steps(result.trajectory_ids[0]), fh)
    store.close()
    return trajectories


@pytest.fixture
def recording_kernel(tmp_path: Path) -> Iterator[RecordingKernel]:
    kernel = RecordingKernel(tmp_path / "journal", "test-kernel", CaptureSettings())
    yield kernel
    kernel.stop()


@pytest.fixture(scope="session")
def pg_cluster() -> Iterator[Cluster]:
    """One throw-away PostgreSQL for the whole run (see tests/pg.py); each test that needs
    a database creates its own in it."""
    cluster = Cluster().start()
    previous = os.environ.get("PGPASSWORD")
    os.environ["PGPASSWORD"] = PASSWORD  # how deployments pass it: never in the URL
    try:
        yield cluster
    finally:
        if previous is None:
            os.environ.pop("PGPASSWORD", None)
        else:
            os.environ["PGPASSWORD"] = previous
        cluster.stop()


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A fresh empty store of each engine: the same tests pass on both."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'store.sqlite3'}"
    cluster: Cluster = request.getfixturevalue("pg_cluster")
    return cluster.create_database()


@pytest.fixture
def store_path(tmp_path: Path) -> Path:
    return tmp_path / "themisto" / "trajectories.sqlite3"


@pytest.fixture
def themisto_config(store_path: Path, monkeypatch: pytest.MonkeyPatch):
    """Server config with the extension on a temporary store; ``**settings`` add traits."""
    # The extension exports these to the kernels it launches: undo that after each test.
    monkeypatch.setenv(JOURNAL_DIR_ENV, "")
    monkeypatch.setenv(CAPTURE_ENV, "")

    def config(**settings: object) -> dict:
        # baseline unless a test says otherwise: deterministic, and no model to load
        return {"ServerApp": {"jpserver_extensions": {"themisto_ext": True}},
                "ThemistoExtension": {"store_path": str(store_path), "ingest_interval": 0.05,
                                      "predictors": ["baseline"], **settings}}

    return config


@pytest.fixture
def api_contract() -> ApiContract:
    return ApiContract()


@pytest.fixture
def jp_fetch(jp_fetch, api_contract: ApiContract):
    """pytest-jupyter's ``jp_fetch``, with every themisto response checked against
    docs/openapi.yaml and the record schemas."""

    async def fetch(*parts: str, **kwargs: Any) -> Any:
        try:
            response = await jp_fetch(*parts, **kwargs)
        except HTTPClientError as exc:
            if exc.response is not None:
                check_response(api_contract, exc.response)
            raise
        check_response(api_contract, response)
        return response

    return fetch


@pytest.fixture
def api(jp_serverapp, http_server_client, jp_base_url, jp_auth_header, api_contract):
    """Plain HTTP against the running server, with the test token; every answer is checked
    against docs/openapi.yaml."""
    base = http_server_client.get_url(f"{jp_base_url}themisto/api")

    async def call(path: str = "", method: str = "GET", query: list | None = None,
                   body: str | None = None, auth: bool = True, **kwargs):
        url = base + (f"/{path}" if path else "") + (f"?{urlencode(query)}" if query else "")
        headers = dict(jp_auth_header) if auth else {}
        request = HTTPRequest(url, method=method, body=body, headers=headers,
                              allow_nonstandard_methods=True, **kwargs)
        response = await AsyncHTTPClient().fetch(request, raise_error=False)
        if response.code != 599:  # 599: the test itself cancelled a stream
            check_response(api_contract, response)
        return response

    return call
