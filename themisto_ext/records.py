"""The records themisto exchanges, as Python types, and validators for them.

Each record has one source of truth, a JSON Schema in ``themisto_ext/schemas/``: the step
(a line of a trajectory file), the trajectory summary, the prediction, a step's summary
for a notebook's history, and each event of the live stream. ``docs/openapi.yaml``
references those schemas; their types are generated from them, the TypedDicts in
``record_types/`` (a module per schema, re-exported here) and the TypeScript in
``src/api/records.ts`` (``jlpm gen:records``; the test command fails when either is stale).

Importing this module is cheap (the kernel hook does); jsonschema loads only when a
validator is first asked for.
"""

import json
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import TYPE_CHECKING, Any

from themisto_ext.record_types import *  # noqa: F403  (the generated types, re-exported)
from themisto_ext.record_types import Trajectory

if TYPE_CHECKING:
    from jsonschema.protocols import Validator

SCHEMA_NAMES = ("step", "trajectory", "prediction", "summary", "roster", "live-event",
                "live-bus", "api")


@dataclass(frozen=True, slots=True)
class Scope:
    """What a record is about: the trajectory, and the kernel and notebook it was recorded
    in. A prediction keeps it as three of its fields, a live event as the fields a stream
    filters on; built from a trajectory's summary (or just its id)."""

    trajectory_id: str
    kernel_id: "str | None" = None
    notebook_path: "str | None" = None

    @classmethod
    def of(cls, trajectory: "Trajectory | None", trajectory_id: str) -> "Scope":
        if trajectory is None:
            return cls(trajectory_id)
        return cls(trajectory["id"], trajectory["kernel_id"], trajectory["notebook_path"])


def code_hash(code: str) -> str:
    """A step summary's ``code_hash``: 32-bit FNV-1a of the code's UTF-8 bytes, as 8 hex
    digits. The front end hashes a cell's source the same way (src/live/cellmatch.ts) to
    find its steps when the ids it ran under are gone: a notebook of nbformat < 4.5 has
    no cell ids on disk, and JupyterLab gives its cells new ones at every load."""
    h = 0x811C9DC5
    for byte in code.encode("utf-8", "surrogatepass"):
        h = ((h ^ byte) * 0x01000193) & 0xFFFFFFFF
    return f"{h:08x}"


# ---------------------------------------------------------------- schemas


@cache
def schema(name: str) -> dict[str, Any]:
    """The JSON Schema of a record: ``step``, ``trajectory``, ``prediction``, ``summary``,
    ``roster``, ``live-event``, ``live-bus``; or ``api``, whose ``$defs`` are the REST
    API's other replies."""
    if name not in SCHEMA_NAMES:
        raise KeyError(f"no schema {name!r}: use one of {', '.join(SCHEMA_NAMES)}")
    path = resources.files("themisto_ext").joinpath(f"schemas/{name}.schema.json")
    loaded: dict[str, Any] = json.loads(path.read_text("utf-8"))
    return loaded


@cache
def validator(name: str) -> "Validator":
    """A validator of one record's schema, resolving references between the schemas."""
    # Imported here: the kernel hook imports this module, and jsonschema takes ~0.8 s.
    from jsonschema import Draft202012Validator
    from referencing import Registry, Resource

    registry: Registry[Any] = Registry().with_resources(
        (schema(n)["$id"], Resource.from_contents(schema(n))) for n in SCHEMA_NAMES)
    return Draft202012Validator(schema(name), registry=registry,
                                format_checker=Draft202012Validator.FORMAT_CHECKER)
