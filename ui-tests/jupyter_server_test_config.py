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
