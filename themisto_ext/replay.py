"""Headless recording: execute a notebook cell by cell in a fresh kernel with the hook.

This is the Themisto paper's re-execution step, on any notebook: the kernel records
its trajectory into a journal exactly as it would under JupyterLab, and the journal is
then ingested into the store.
"""

from __future__ import annotations

import os
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import ijson
import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError, DeadKernelError

from themisto_ext.contract import AUTOLOAD_ARG, CaptureSettings, launch_env
from themisto_ext.errors import ReplayError as ReplayError  # re-exported: raised here
from themisto_ext.ingest import JournalIngestor
from themisto_ext.journal import SUFFIX
from themisto_ext.store import TrajectoryStore


@dataclass
class ReplayResult:
    trajectory_ids: list[str]
    steps: int
    code_cells: int
    errors: int
    stopped_early: str | None = None
    bad_journal_lines: int = 0
    notebook: nbformat.NotebookNode | None = field(default=None, repr=False)
    """The executed notebook, with the outputs Jupyter itself produced."""
    missing: str | None = None
    """Why fewer steps were kept than cells ran, when they were (a failure to report)."""


def recording_env(
    journal_dir: Path, kernel_id: str, notebook_path: str | None = None,
    settings: CaptureSettings | None = None,
) -> dict[str, str]:
    """This process's environment plus what a kernel started with AUTOLOAD_ARG needs."""
    return launch_env(os.environ, journal_dir, kernel_id, notebook_path,
                      settings or CaptureSettings())


_DROPPED = ("outputs", "attachments")
"""Cell keys whose contents recording never needs (the cells are run again): skipped while
reading, so a notebook of any size is read in little memory."""


def _without_outputs(fh: IO[bytes]) -> dict[str, Any]:
    """The notebook's JSON with every cell's outputs and attachments emptied, streamed."""
    builder = ijson.ObjectBuilder()
    skipping: str | None = None
    for prefix, event, value in ijson.parse(fh, use_float=True):
        if skipping is not None:
            if prefix == skipping and event in ("end_array", "end_map"):
                builder.event(event, value)
                skipping = None
            continue
        builder.event(event, value)
        if event in ("start_array", "start_map") and prefix.endswith(
                tuple(f"cells.item.{key}" for key in _DROPPED)):
            skipping = prefix
    notebook: dict[str, Any] = builder.value
    return notebook


def read_notebook(path: Path) -> nbformat.NotebookNode:
    """The notebook at ``path`` as nbformat 4, without its saved outputs."""
    try:
        with path.open("rb") as fh:
            data = _without_outputs(fh)
        major, minor = nbformat.reader.get_version(data)
        if major not in nbformat.versions:
            raise ValueError(f"unsupported nbformat version {major}")
        nb: nbformat.NotebookNode = nbformat.convert(
            nbformat.versions[major].to_notebook_json(data, minor=minor), 4)
        nbformat.validate(nb)
    except FileNotFoundError as exc:
        raise ReplayError(f"{path}: no such file") from exc
    except IsADirectoryError as exc:
        raise ReplayError(f"{path}: is a directory, not a notebook") from exc
    except (ValueError, UnicodeDecodeError, ijson.JSONError, AttributeError, KeyError,
            TypeError, nbformat.ValidationError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ReplayError(f"{path}: not a valid notebook ({first})") from exc
    except OSError as exc:
        raise ReplayError(f"{path}: cannot read ({exc.strerror})") from exc
    return nb


def metadata_disables_recording(nb: nbformat.NotebookNode) -> bool:
    return nb.metadata.get("themisto", {}).get("recording") is False


def record_notebook(
    path: Path,
    store: TrajectoryStore,
    journal_dir: Path,
    *,
    timeout: float = 600,
    stop_on_error: bool = False,
    kernel_name: str = "python3",
    settings: CaptureSettings | None = None,
    user: str = "",
) -> ReplayResult:
    nb = read_notebook(path)
    kernel_id = f"record-{uuid.uuid4().hex[:12]}"
    env = recording_env(journal_dir, kernel_id, str(path.resolve()), settings)
    client = NotebookClient(
        nb, timeout=timeout, allow_errors=not stop_on_error, interrupt_on_timeout=True,
        kernel_name=kernel_name, extra_arguments=[AUTOLOAD_ARG],
        resources={"metadata": {"path": str(path.parent.resolve())}},
    )
    stopped: str | None = None
    try:
        client.execute(env=env)
    except CellExecutionError as exc:
        stopped = f"stopped at the first error: {str(exc).strip().splitlines()[-1]}"
    except DeadKernelError as exc:
        stopped = f"the kernel died: {exc}"
    except TimeoutError as exc:
        stopped = f"timed out: {exc}"

    ingestor = JournalIngestor(journal_dir, store, source="record", user=user)
    steps, trajectories, switched_off = 0, [], 0
    for journal in sorted(journal_dir.glob(f"{kernel_id}--*{SUFFIX}")):
        result = ingestor.poll(only=journal)
        steps += len(result.steps)
        trajectories += result.new_trajectories
        switched_off += sum(1 for s in result.switches if not s.on)
    if not trajectories:
        raise ReplayError(
            "the kernel recorded nothing: is themisto_ext installed in the kernel's Python "
            f"environment (kernel {kernel_name!r})?")
    code = [c for c in nb.cells if c.cell_type == "code" and c.source.strip()]
    ran = sum(1 for c in code if c.get("execution_count") is not None)
    errors = sum(1 for c in code if any(o.get("output_type") == "error"
                                        for o in c.get("outputs", [])))
    missing = None
    if steps < ran:
        why = [f"{ingestor.bad_lines} journal record(s) could not be read"] \
            if ingestor.bad_lines else []
        why += ["recording was switched off in the notebook"] if switched_off else []
        missing = (f"kept {steps} steps of the {ran} cells that ran: "
                   + ("; ".join(why) or "the recorder wrote no step for "
                      f"{ran - steps} of them (see the kernel's log)"))
    return ReplayResult(trajectories, steps, len(code), errors, stopped, ingestor.bad_lines, nb,
                        missing)
