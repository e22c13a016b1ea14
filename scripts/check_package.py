"""The package as a user with JupyterLab gets it: build the wheel and sdist, install the
wheel with its `local` extra into a throw-away virtual environment where every C/C++
compiler fails, and check that JupyterLab and Jupyter Server list the extension enabled
and OK, that the embedded model installs, and that a started server records a cell and
predicts with the embedded model. Run by scripts/test.sh; prints one line per check and
'package: N passed, N failed' last.

    python scripts/check_package.py [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path
from typing import Any

import httpx
import websocket

ROOT = Path(__file__).resolve().parent.parent
COMPILERS = ("cc", "c++", "gcc", "g++", "clang", "clang++", "cmake", "ninja", "make")
results: list[tuple[str, bool, str]] = []


def check(name: str, ok: bool, detail: str = "") -> bool:
    results.append((name, ok, detail))
    print(f"{'ok  ' if ok else 'FAIL'} {name}" + (f": {detail}" if detail else ""), flush=True)
    return ok


def run(command: list[str], env: dict[str, str], timeout: float = 900) -> tuple[int, str, float]:
    began = time.monotonic()
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=timeout,
                          check=False)
    return done.returncode, done.stdout + done.stderr, time.monotonic() - began


def build(dist: Path) -> tuple[Path, Path]:
    code, out, seconds = run([sys.executable, "-m", "build", "--no-isolation", "--sdist",
                              "--wheel", "--outdir", str(dist), str(ROOT)], dict(os.environ))
    if not check("python -m build (wheel and sdist)", code == 0,
                 f"{seconds:.0f} s" if code == 0 else out[-1500:]):
        raise SystemExit(1)
    wheel, sdist = next(dist.glob("*.whl")), next(dist.glob("*.tar.gz"))
    names = zipfile.ZipFile(wheel).namelist()
    wanted = ["share/jupyter/labextensions/themisto-ext/package.json",
              "share/jupyter/labextensions/themisto-ext/install.json",
              "etc/jupyter/jupyter_server_config.d/themisto_ext.json"]
    missing = [w for w in wanted if not any(n.endswith(w) for n in names)]
    check("the wheel holds the prebuilt labextension and the server config", not missing,
          f"missing {missing}" if missing else wheel.name)
    return wheel, sdist


def no_compiler_env(work: Path, venv: Path) -> dict[str, str]:
    """PATH with every compiler replaced by one that fails and says so."""
    fake = work / "no-compilers"
    fake.mkdir()
    for name in COMPILERS:
        tool = fake / name
        tool.write_text(f"#!/bin/sh\necho 'check_package: {name} was run' >&2\nexit 1\n")
        tool.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("VIRTUAL_ENV", "PYTHON"))}
    env.update(PATH=f"{fake}:{venv / 'bin'}:/usr/bin:/bin", CC="false", CXX="false",
               JUPYTER_CONFIG_DIR=str(work / "config"), JUPYTER_DATA_DIR=str(work / "data"),
               JUPYTER_RUNTIME_DIR=str(work / "runtime"), PIP_DISABLE_PIP_VERSION_CHECK="1")
    return env


def install(wheel: Path, work: Path) -> tuple[Path, dict[str, str]]:
    """A fresh venv with JupyterLab (as a user has it), then the wheel with its `local`
    extra: two installs, so the second's time is the package's own (the target, <= 60 s
    with warm downloads). Neither may run a compiler."""
    venv = work / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    env = no_compiler_env(work, venv)
    pip = str(venv / "bin" / "pip")
    for what, packages in (("jupyterlab", ["jupyterlab>=4.2,<5"]),
                           ("<wheel>[local]", [f"{wheel}[local]"])):
        code, out, seconds = run([pip, "install", "-q", *packages], env)
        compiled = "was run" in out
        if not check(f"pip install {what}, no compiler", code == 0 and not compiled,
                     f"{seconds:.0f} s" if code == 0 else out[-1500:]):
            raise SystemExit(1)
    return venv, env


def listed(venv: Path, env: dict[str, str]) -> None:
    code, out, _ = run([str(venv / "bin" / "jupyter"), "labextension", "list"], env)
    line = next((x for x in out.splitlines() if "themisto-ext" in x), "")
    check("jupyter labextension list: enabled and OK",
          code == 0 and "enabled" in line and "OK" in line, line.strip() or out[-500:])
    code, out, _ = run([str(venv / "bin" / "jupyter"), "server", "extension", "list"], env)
    lines = out.splitlines()
    at = next((i for i, x in enumerate(lines) if "themisto_ext" in x and "enabled" in x), None)
    ok = at is not None and any("OK" in x for x in lines[at:at + 3])
    check("jupyter server extension list: enabled and OK", code == 0 and ok,
          lines[at].strip() if at is not None else out[-500:])


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait(condition: Any, timeout: float, what: str) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise TimeoutError(what)
        time.sleep(0.3)


def execute(base: str, token: str, kernel: str, code: str) -> None:
    ws = websocket.create_connection(
        f"ws{base[4:]}/api/kernels/{kernel}/channels?token={token}", timeout=120)
    try:
        msg_id = secrets.token_hex(8)
        ws.send(json.dumps({
            "header": {"msg_id": msg_id, "username": "check", "session": secrets.token_hex(8),
                       "msg_type": "execute_request", "version": "5.3"},
            "parent_header": {}, "metadata": {}, "channel": "shell",
            "content": {"code": code, "silent": False, "store_history": True,
                        "user_expressions": {}, "allow_stdin": False}}))
        while True:
            reply = json.loads(ws.recv())
            if reply.get("parent_header", {}).get("msg_id") == msg_id and \
                    reply.get("msg_type") == "execute_reply":
                return
    finally:
        ws.close()


def serve_and_predict(venv: Path, env: dict[str, str], work: Path) -> None:
    port, token = free_port(), secrets.token_hex(16)
    log = (work / "server.log").open("w")
    server = subprocess.Popen(
        [str(venv / "bin" / "jupyter"), "server", "--no-browser", f"--port={port}",
         "--ip=127.0.0.1", f"--IdentityProvider.token={token}", "--allow-root",
         f"--ServerApp.root_dir={work}", "--ThemistoExtension.predictors=local",
         f"--ThemistoExtension.store_path={work / 'store.sqlite3'}"],
        env=env, stdout=log, stderr=subprocess.STDOUT, cwd=work)
    base = f"http://127.0.0.1:{port}"
    client = httpx.Client(base_url=base, headers={"Authorization": f"token {token}"},
                          timeout=60)
    try:
        def up() -> bool:
            try:
                return client.get("/themisto/api/predictors").status_code == 200
            except httpx.TransportError:
                return server.poll() is not None
        wait(up, 120, "the server did not start")
        predictors = client.get("/themisto/api/predictors").json()
        check("the started server serves the extension's API", "local" in
              predictors.get("predictors", []), json.dumps(predictors)[:200])
        kernel = client.post("/api/kernels", json={"name": "python3"}).json()["id"]
        execute(base, token, kernel, "x = 21\nx * 2")
        state = wait(lambda: (lambda r: r if r.get("steps", 0) >= 1 else None)(
            client.get(f"/themisto/api/kernels/{kernel}").json()), 120,
            "the cell was not recorded")
        check("a cell run through the server is recorded", state["recording"],
              f"{state['steps']} step(s), trajectory {state['trajectory_id']}")
        route = f"/themisto/api/trajectories/{state['trajectory_id']}/predictions"

        asked = client.post("/themisto/api/predictions",
                            json={"kernel_id": kernel, "task": "output", "code": "x + 1"})
        check("POST /themisto/api/predictions is accepted", asked.status_code == 202,
              asked.text[:200])
        target = asked.json()["target_step"]

        def finished() -> dict[str, Any] | None:
            rows = client.get(route).json()["predictions"]
            return next((p for p in rows if p["predictor"] == "local" and p["task"] == "output"
                         and p["target_step"] == target
                         and (p["error"] is not None or p["answer"] is not None)), None)
        # A first prediction reads the prompts' fixed part: up to a minute on a busy machine.
        row = wait(finished, 600, "no prediction arrived")
        made = row if row["error"] is None else None
        check("the embedded model predicts through the started server",
              made is not None and made["model"].endswith(".gguf"),
              f"{made['model']} {made['task']}: {json.dumps(made['answer'])[:80]} in "
              f"{made['latency']:.1f} s" if made else json.dumps(client.get(route).json())[:800])
    except (TimeoutError, httpx.HTTPError, OSError, KeyError, ValueError) as exc:
        check("server, recording and prediction", False,
              f"{exc}; server log: {(work / 'server.log').read_text()[-1500:]}")
    finally:
        client.close()
        server.terminate()
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
        log.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--keep", type=Path, help="work in DIR and keep it")
    args = parser.parse_args()
    work = args.keep or Path(tempfile.mkdtemp(prefix="themisto-package-"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        wheel, _ = build(work / "dist")
        venv, env = install(wheel, work)
        listed(venv, env)
        code, out, seconds = run([str(venv / "bin" / "themisto"), "models", "install"], env)
        check("themisto models install (the embedded default)", code == 0,
              f"{seconds:.0f} s" if code == 0 else out[-800:])
        code, out, seconds = run([str(venv / "bin" / "themisto"), "--help"], env)
        check("themisto --help", code == 0, f"{seconds:.2f} s")
        serve_and_predict(venv, env, work)
    except SystemExit:
        pass
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)
    failed = sum(not ok for _, ok, _ in results)
    print(f"package: {len(results) - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
