"""Server configuration for integration tests.

!! Never use this configuration in production because it
opens the server to the world and provide access to JupyterLab
JavaScript objects through the global window variable.
"""

import os
from tempfile import mkdtemp

from jupyterlab.galata import configure_jupyter_server

configure_jupyter_server(c)  # noqa: F821
c.ServerApp.port = int(os.environ.get("THEMISTO_UI_PORT", "8888"))  # noqa: F821

# configure_jupyter_server sets c.ServerApp.root_dir to a new temporary folder
# (or to $JUPYTERLAB_GALATA_ROOT_DIR when set): notebooks created by the tests go there.

# The sessions and CI of this project run as root.
c.ServerApp.allow_root = True  # noqa: F821

# Themisto server extension under test.
c.ServerApp.jpserver_extensions.update({"themisto_ext": True})  # noqa: F821

# Themisto data (trajectory store) for the UI tests: THEMISTO_UI_TEST_DATA_DIR
# when set, else a throw-away folder. Server-side options of the Themisto
# extension (e.g. its store path) are set from THEMISTO_DATA_DIR below.
THEMISTO_DATA_DIR = os.environ.get("THEMISTO_UI_TEST_DATA_DIR") or mkdtemp(
    prefix="themisto-ui-data-"
)
c.ThemistoExtension.store_path = os.path.join(THEMISTO_DATA_DIR, "trajectories.sqlite3")  # noqa: F821

# Uncomment to set server log level to debug level
# c.ServerApp.log_level = "DEBUG"

# Live predictions in the UI tests: the deterministic baseline predictor (no
# model, no network), with two kinds of context so the panel shows two columns.
c.ThemistoExtension.predictors = ["baseline"]  # noqa: F821
c.ThemistoExtension.contexts = ["none", "full"]  # noqa: F821

# A class for the class view's test (ui-tests/tests/class.spec.ts): two other users'
# notebooks in the store, as a hub's shared database holds them; this server's user
# may read everyone's (as a teacher with custom:themisto:read-all would).
c.ThemistoExtension.read_all_users = [os.environ.get("JUPYTERHUB_USER") or __import__(  # noqa: F821
    "getpass").getuser()]


def _seed_class(store_path: str) -> None:
    from themisto_ext.store import NewStep, NewTrajectory, SQLiteStore

    store = SQLiteStore(store_path)
    try:
        if store.get_trajectory("class-alice-1") is not None:
            return
        # alice ran lab1 twice (two kernels, two days): the drill-down asks which
        for user, session, day, notebook, codes in (
            ("alice", 0, "01", "class/lab1.ipynb", ["x = 10", "x + 1"]),
            ("alice", 1, "02", "class/lab1.ipynb", ["x = 20", "x * 2", "print(x + 1)"]),
            ("bob", 1, "02", "class/lab2.ipynb", ["import math", "math.sqrt(16)"]),
        ):
            tid, kernel = f"class-{user}-{session}", f"k-{user}-{session}"
            writes: list = [NewTrajectory(tid, kernel, notebook,
                                          f"2026-03-{day}T09:00:00+00:00", "kernel", user)]
            for n, code in enumerate(codes, 1):
                writes.append(NewStep({
                    "format_version": 1, "trajectory_id": tid, "kernel_id": kernel,
                    "step": n, "cell_id": f"{user}-c{n}", "notebook_path": notebook,
                    "started_at": f"2026-03-{day}T09:0{n}:00+00:00",
                    "ended_at": f"2026-03-{day}T09:0{n}:01+00:00", "code": code,
                    "output": "" if n == 1 else f"{user} output {n}", "outputs": [],
                    "execution_time": 0.5, "memory_bytes": 1000,
                    "runtime_variables": {"x": {"type": "int", "size": 28,
                                                "size_exact": True, "repr": "20"}},
                    "hash_index": "0123456789abcdef", "error": None}))
            store.apply(writes, None)
    finally:
        store.close()


_seed_class(c.ThemistoExtension.store_path)  # noqa: F821
