"""``record``, ``list``, ``export`` and ``validate``."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import IO, Any, Literal, cast

from themisto_ext.cli.args import positive_float
from themisto_ext.cli.files import check_output
from themisto_ext.cli.training import export_sft_command, refuse_sft_options, sft_options
from themisto_ext.contract import (
    CaptureSettings,
    default_store_path,
    default_user,
    journal_dir_for,
)
from themisto_ext.errors import ReplayError
from themisto_ext.records import Step
from themisto_ext.store import (
    SQLITE,
    StoreURL,
    TrajectoryFilter,
    TrajectoryStore,
    open_store,
    parse_store_url,
)
from themisto_ext.trajectory import file_problems, write_steps
from themisto_ext.trajectory.trace import trace_records

STORE_HELP = ("trajectory store: a SQLite file, sqlite:///PATH or postgresql://USER@HOST:PORT/DB "
              "(password from PGPASSWORD or ~/.pgpass); default: the SQLite file the Jupyter "
              "server extension uses by default")


def _store_option(p: argparse.ArgumentParser) -> None:
    """``--store`` after the command name too (``themisto record nb.ipynb --store X``); left
    unset here unless given, so that one given before the command name stands."""
    p.add_argument("--store", default=argparse.SUPPRESS, help=STORE_HELP)


def register(sub: Any) -> None:
    p = sub.add_parser("record", help="execute a notebook headlessly and record its trajectory")
    _store_option(p)
    p.add_argument("notebook", type=Path)
    p.add_argument("--out", type=Path, help="also write the trajectory as JSONL here")
    p.add_argument("--timeout", type=positive_float, default=600,
                   help="seconds per cell (default 600)")
    p.add_argument("--stop-on-error", action="store_true",
                   help="stop at the first cell that raises (default: continue)")
    p.add_argument("--kernel", default="python3", help="kernel name (default python3)")
    p.add_argument("--trace", action="store_true", help="trace every cell line by line "
                   "(each step gets a 'trace', docs/format.md)")
    p.add_argument("--ignore-metadata", action="store_true",
                   help="record even if the notebook's metadata turns recording off")
    p.add_argument("--user", default=None, help="record as this user (default: "
                   "JUPYTERHUB_USER, else the login name)")
    p.add_argument("--force", action="store_true", help="let --out replace a file that is "
                   "not a trajectory (never the notebook or the store)")
    p.set_defaults(run=record)

    p = sub.add_parser("list", help="list stored trajectories")
    _store_option(p)
    p.add_argument("--json", action="store_true", help="one JSON object per line")
    p.add_argument("--notebook", help="only trajectories of this notebook path")
    p.add_argument("--user", help="only trajectories this user recorded")
    p.set_defaults(run=list_)

    p = sub.add_parser("export", help="export trajectories as benchmark-format JSONL, or "
                       "as training pairs (--format sft)")
    _store_option(p)
    p.add_argument("ids", nargs="*", help="trajectory ids (or unique prefixes)")
    p.add_argument("--all", action="store_true", help="export every stored trajectory")
    p.add_argument("--user", help="with --all: only trajectories this user recorded")
    p.add_argument("--out", required=True, help="output file, or - for standard output")
    p.add_argument("--force", action="store_true", help="let --out replace a file that is "
                   "not of the format written (never the store)")
    p.add_argument("--format", choices=("steps", "sft", "trace"), default="steps",
                   help="steps: the trajectories as benchmark-format JSONL (default); sft: "
                   "(prompt, answer) training pairs in chat form; trace: the traced steps' "
                   "execution traces, with an E.T.-style text (docs/format.md)")
    sft_options(p)
    p.set_defaults(run=export)

    p = sub.add_parser("validate", help="check a trajectory JSONL file against the schema")
    p.add_argument("file", type=Path)
    p.set_defaults(run=validate)


def open_store_of(args: argparse.Namespace, readonly: bool) -> tuple[TrajectoryStore, StoreURL]:
    """``--store``: a SQLite file, ``sqlite:///PATH`` or ``postgresql://...``. A command that
    only reads opens it read-only, so that it never creates a store (nor its folder) and
    never writes to a file that is not one."""
    url = _store_url(args)
    return open_store(url, readonly=readonly), url


def _store_url(args: argparse.Namespace) -> StoreURL:
    return parse_store_url(args.store if args.store else default_store_path())


def record(args: argparse.Namespace) -> int:
    nb_path: Path = args.notebook
    # Checked before the notebook runs: a refusal after minutes of execution loses them.
    check_output(args.out, "jsonl", inputs=[nb_path], store=_store_url(args), force=args.force)
    # nbformat and nbclient cost about a second to import: only commands that run one pay
    from themisto_ext.replay import metadata_disables_recording, read_notebook

    if not args.ignore_metadata and metadata_disables_recording(read_notebook(nb_path)):
        raise ReplayError(f"{nb_path}: recording is off in the notebook's metadata "
                          "(themisto.recording = false); pass --ignore-metadata to record")
    store, url = open_store_of(args, readonly=False)
    result = record_into_store(store, url, nb_path, timeout=args.timeout,
                               stop_on_error=args.stop_on_error, kernel=args.kernel,
                               user=args.user, trace=args.trace)
    ids = result.trajectory_ids
    print(f"recorded {result.steps} steps from {result.code_cells} code cells of {nb_path} "
          f"({result.errors} raised) into trajectory {', '.join(ids)} in {url.display}")
    if result.stopped_early:
        print(f"note: {result.stopped_early}", file=sys.stderr)
    if args.out:
        count = _export(store, ids, str(args.out))
        print(f"wrote {count} steps to {args.out}")
    if result.missing:
        print(f"themisto record: error: {result.missing}", file=sys.stderr)
    return 0 if result.stopped_early is None and not result.missing else 1


def record_into_store(store: TrajectoryStore, url: StoreURL, nb_path: Path, *,
                      timeout: float = 600, stop_on_error: bool = False,
                      kernel: str = "python3", user: str | None = None,
                      trace: bool = False) -> Any:
    """Run ``nb_path`` in a fresh kernel with the hook into ``store`` (``record``'s options;
    ``synth --record`` takes their defaults)."""
    # Journals beside a SQLite store; for a database, in this machine's themisto directory.
    journals = journal_dir_for(url.path if url.engine == SQLITE else default_store_path())
    from themisto_ext.replay import record_notebook

    return record_notebook(nb_path, store, journals, timeout=timeout,
                           stop_on_error=stop_on_error, kernel_name=kernel,
                           user=user or default_user(),
                           settings=CaptureSettings(trace=True) if trace else None)


def list_(args: argparse.Namespace) -> int:
    store, _ = open_store_of(args, readonly=True)
    rows = store.list_trajectories(TrajectoryFilter(notebook_path=args.notebook,
                                                    user=args.user), limit=10**9)
    if args.json:
        for t in rows:
            print(json.dumps(t.to_json()))
        return 0
    header = ("ID", "USER", "KERNEL", "NOTEBOOK", "STEPS", "STARTED", "ENDED")
    table = [header] + [(t.id, t.user or "-", t.kernel_id, t.notebook_path or "-",
                         str(t.steps), t.started_at[:19], (t.ended_at or "-")[:19])
                        for t in rows]
    widths = [max(len(r[i]) for r in table) for i in range(len(header))]
    for r in table:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip())
    if not rows:
        print("(no trajectories)", file=sys.stderr)
    return 0


def _resolve(store: TrajectoryStore, wanted: list[str]) -> list[str]:
    known = [t.id for t in store.list_trajectories(limit=10**9)]
    ids = []
    for w in wanted:
        matches = [k for k in known if k.startswith(w)]
        if len(matches) != 1:
            raise ValueError(f"no trajectory {w!r}" if not matches
                             else f"{w!r} matches {len(matches)} trajectories; give more of it")
        ids.append(matches[0])
    return ids


def _export(store: TrajectoryStore, ids: list[str], out: str, traces: bool = False) -> int:
    target: AbstractContextManager[IO[str]] = (
        nullcontext(sys.stdout) if out == "-" else open(out, "w", encoding="utf-8"))  # noqa: SIM115
    with target as fh:
        if traces:
            return sum(write_steps(trace_records(_with_source(store, tid)), fh) for tid in ids)
        return sum(write_steps(_with_source(store, tid), fh) for tid in ids)


def _with_source(store: TrajectoryStore, trajectory_id: str) -> Iterator[Step]:
    """The trajectory's steps, each saying how it was recorded (``kernel``: live, in a
    person's session; ``record``: a notebook run top to bottom), so that a benchmark can
    keep the live ones (``themisto sample --source live``), and whose it is (``user``)."""
    info = store.get_trajectory(trajectory_id)
    for step in store.iter_steps(trajectory_id):
        if info is not None and "source" not in step:
            # the store writes only the schema's sources (kernel, record, import)
            step["source"] = cast("Literal['kernel', 'record', 'import']", info.source)
        step.pop("user", None)  # the store's owner says whose, not a field a kernel wrote
        if info is not None and info.user:
            step["user"] = info.user
        yield step


def export(args: argparse.Namespace) -> int:
    if bool(args.ids) == bool(args.all):
        raise ValueError("give trajectory ids or --all (not both)")
    if args.user is not None and not args.all:
        raise ValueError("--user goes with --all")
    if args.format != "sft":
        refuse_sft_options(args)
        check_output(args.out, "jsonl", store=_store_url(args), force=args.force)
    store, url = open_store_of(args, readonly=True)
    ids = [t.id for t in store.list_trajectories(TrajectoryFilter(user=args.user),
                                                 limit=10**9)] if args.all \
        else _resolve(store, args.ids)
    if args.format == "sft":
        return export_sft_command(args, store, url, ids)
    count = _export(store, ids, args.out, traces=args.format == "trace")
    if args.out != "-":
        what = "traced steps" if args.format == "trace" else "steps"
        print(f"wrote {count} {what} of {len(ids)} trajectories to {args.out}")
    return 0


def validate(args: argparse.Namespace) -> int:
    path: Path = args.file
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such file")
    count, problems = file_problems(path)
    for problem in problems:
        print(f"{path}: {problem}")
    if problems:
        return 1
    if count == 0:
        print(f"{path}: no steps")
        return 1
    print(f"{path}: {count} steps, valid")
    return 0
