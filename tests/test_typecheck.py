"""mypy passes whichever optional extras are installed: here, in an environment that holds
everything the test venv holds except the `local` and `train` extras' packages (the test
command's own `mypy` run checks the environment with them)."""

from __future__ import annotations

import subprocess
import sys
import sysconfig
import venv
from pathlib import Path

from conftest import ROOT

OPTIONAL = ("torch", "transformers", "peft", "gguf", "xllamacpp")
"""Top-level packages only the optional extras bring."""


def without_extras(folder: Path) -> Path:
    """A venv whose site-packages links to this one's, less the optional packages (and
    the project itself, which mypy reads from the work tree); its python."""
    venv.EnvBuilder(with_pip=False).create(folder)
    python = folder / "bin" / "python"
    target = Path(subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True, capture_output=True, text=True).stdout.strip())
    source = Path(sysconfig.get_paths()["purelib"])
    for entry in source.iterdir():
        top = entry.name.split("-")[0].split(".")[0].lower()
        if top in OPTIONAL or top == "themisto_ext" or entry.name.startswith("__editable__"):
            continue
        (target / entry.name).symlink_to(entry)
    return python


def test_mypy_is_clean_without_the_optional_extras(tmp_path: Path):
    python = without_extras(tmp_path / "venv")
    hidden = subprocess.run([python, "-c", "import torch"], capture_output=True)
    assert hidden.returncode != 0  # the extras really are absent
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--python-executable", str(python),
         "--cache-dir", str(tmp_path / "cache")],
        cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
