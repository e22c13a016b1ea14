"""The records themisto exchanges, as Python types, and validators for them.

Each record has one source of truth, a JSON Schema in ``themisto_ext/schemas/``: the step
(a line of a trajectory file), the trajectory summary, the prediction, a step's summary
for a notebook's history, and each event of the live stream. ``docs/openapi.yaml``
references those schemas, the TypeScript types in ``src/api/records.ts`` are generated
from them, and the TypedDicts below are checked against them field by field
(``tests/test_records.py``), so none can drift.

Importing this module is cheap (the kernel hook does); jsonschema loads only when a
validator is first asked for.
"""

# No ``from __future__ import annotations``: TypedDict reads NotRequired off evaluated
# annotations.
import json
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import TYPE_CHECKING, Any, Literal

from typing_extensions import NotRequired, TypedDict

if TYPE_CHECKING:
    from jsonschema.protocols import Validator

SCHEMA_NAMES = ("step", "trajectory", "prediction", "summary", "roster", "live-event",
                "live-bus")

Task = Literal["output", "next-cell"]
ErrorCode = Literal["superseded", "prompt-too-long", "local-model", "provider"]
Context = Literal["none", "full", "curated"]


@dataclass(frozen=True, slots=True)
class Scope:
    """What a record is about: the trajectory, and the kernel and notebook it was recorded
    in. A prediction keeps it as three of its fields, a live event as the fields a stream
    filters on; built from a trajectory's summary (or just its id)."""

    trajectory_id: str
    kernel_id: "str | None" = None
    notebook_path: "str | None" = None

    @classmethod
    def of(cls, trajectory: "TrajectoryInfo | None", trajectory_id: str) -> "Scope":
        if trajectory is None:
            return cls(trajectory_id)
        return cls(trajectory["id"], trajectory["kernel_id"], trajectory["notebook_path"])


# ---------------------------------------------------------------- step (step.schema.json)


class StepOutput(TypedDict):
    output_type: str
    mime_types: list[str]
    text: str
    name: NotRequired[str]
    ename: NotRequired[str]
    evalue: NotRequired[str]


class ValueIndex(TypedDict):
    range: NotRequired[list[int]]
    dtype: NotRequired[Any]
    values: NotRequired[list[Any]]
    name: NotRequired[Any]


class ValueData(TypedDict):
    """A small array, Series or DataFrame kept as data (``kernel/values.py``)."""

    kind: Literal["ndarray", "Series", "DataFrame"]
    values: list[Any]
    dtype: NotRequired[Any]
    dtypes: NotRequired[list[Any]]
    shape: NotRequired[list[int]]
    index: NotRequired[ValueIndex]
    columns: NotRequired[ValueIndex]
    name: NotRequired[Any]


class RuntimeVariable(TypedDict):
    type: str
    size: int | None
    repr: str
    size_exact: NotRequired[bool]
    shape: NotRequired[list[int] | None]
    length: NotRequired[int | None]
    data: NotRequired[ValueData]


class StepError(TypedDict):
    ename: str
    evalue: str
    traceback: NotRequired[str]


class StepTruncated(TypedDict):
    """Counts of what a step's limits cut; only the non-zero ones are present."""

    code: NotRequired[int]
    output: NotRequired[int]
    outputs: NotRequired[int]
    outputs_dropped: NotRequired[int]
    evalue: NotRequired[int]
    traceback: NotRequired[int]
    runtime_variables: NotRequired[int]
    reprs: NotRequired[int]


class TraceEvent(TypedDict):
    line: int
    changed: dict[str, str]
    function: NotRequired[str]
    more: NotRequired[int]


class StepTrace(TypedDict):
    """A traced cell's lines (``kernel/tracer.py``); keys of the counts are line numbers."""

    events: list[TraceEvent]
    hits: dict[str, int]
    omitted: NotRequired[dict[str, int]]
    truncated: NotRequired[str]


class Step(TypedDict):
    format_version: int
    trajectory_id: str
    kernel_id: str
    step: int
    started_at: str
    ended_at: str
    code: str
    output: str
    outputs: list[StepOutput]
    execution_time: float
    memory_bytes: int | None
    runtime_variables: dict[str, RuntimeVariable]
    hash_index: str
    error: StepError | None
    cell_id: NotRequired[str | None]
    notebook_path: NotRequired[str | None]
    source: NotRequired[str]
    """How the trajectory was recorded (kernel, record, import): written by exports."""
    user: NotRequired[str]
    """The user whose trajectory it is (a shared store's): written by exports."""
    truncated: NotRequired[StepTruncated]
    trace: NotRequired[StepTrace]


# ---------------------------------------------------------------- trajectory


class TrajectoryInfo(TypedDict):
    id: str
    kernel_id: str
    notebook_path: str | None
    started_at: str
    ended_at: str | None
    end_reason: str | None
    restart_of: str | None
    steps: int
    source: str
    user: str


# ---------------------------------------------------------------- prediction


class PromptText(TypedDict):
    system: str
    user: str


class PredictionError(TypedDict):
    type: str
    message: str
    code: NotRequired[ErrorCode]


class Scores(TypedDict):
    exact_match: float
    rouge_l: float
    chrf: float


class Prediction(TypedDict):
    id: str
    trajectory_id: str
    kernel_id: str | None
    notebook_path: str | None
    cell_id: str | None
    task: Task
    context: Context
    predictor: str
    model: str | None
    target_step: int
    created_at: str
    latency: float | None
    prompt_tokens: int | None
    completion_tokens: int | None
    cached_tokens: int | None
    prefix_reused: bool | None
    dropped_steps: int
    answer: str
    error: PredictionError | None
    reference: str | None
    scores: Scores | None
    prompt: NotRequired[PromptText]
    raw: NotRequired[str]
    queue_seconds: NotRequired[float | None]
    speculative: NotRequired[bool]
    ready_before_start: NotRequired[float | None]
    abstained: NotRequired[bool]


# ---------------------------------------------------------------- step summary (history)


class PredictionSummary(TypedDict):
    id: str
    task: Task
    predictor: str
    model: str | None
    context: Context
    scores: Scores | None
    error: PredictionError | None
    abstained: bool


def code_hash(code: str) -> str:
    """A step summary's ``code_hash``: 32-bit FNV-1a of the code's UTF-8 bytes, as 8 hex
    digits. The front end hashes a cell's source the same way (src/live/cellmatch.ts) to
    find its steps when the ids it ran under are gone: a notebook of nbformat < 4.5 has
    no cell ids on disk, and JupyterLab gives its cells new ones at every load."""
    h = 0x811C9DC5
    for byte in code.encode("utf-8", "surrogatepass"):
        h = ((h ^ byte) * 0x01000193) & 0xFFFFFFFF
    return f"{h:08x}"


class StepSummary(TypedDict):
    step: int
    cell_id: str | None
    code_hash: str
    execution_time: float
    memory_bytes: int | None
    error: str | None
    predictions: list[PredictionSummary]


class ScoreTotal(TypedDict):
    predictor: str
    context: str
    task: Task
    n: int
    exact_match: float
    chrf: float


class NotebookRowInfo(TypedDict):
    """A row of the class view (``roster.schema.json``)."""

    user: str
    notebook_path: str | None
    trajectories: int
    cells: int
    errors: int
    active_seconds: float
    first_at: str
    last_at: str
    scores: list[ScoreTotal]


# ---------------------------------------------------------------- live events


class EventEnvelope(TypedDict):
    seq: int


class ScopedEvent(EventEnvelope):
    """An event about one trajectory (the schema's ``EventScope``)."""

    trajectory_id: str
    kernel_id: str | None
    notebook_path: str | None


class PredictorEvent(ScopedEvent):
    """An event about one predictor's job for a step: started, writing."""

    task: Task
    context: Context
    predictor: str
    target_step: int
    cell_id: str | None


class HeartbeatEvent(EventEnvelope):
    type: Literal["heartbeat"]
    every: float


class TrajectoryEvent(ScopedEvent):
    type: Literal["trajectory"]
    trajectory: TrajectoryInfo


class LiveStep(TypedDict):
    trajectory_id: str
    kernel_id: str
    notebook_path: str | None
    step: int
    cell_id: str | None
    code: str
    output: str
    execution_time: float
    memory_bytes: int | None
    runtime_variables: dict[str, RuntimeVariable]
    error: StepError | None


class StepEvent(ScopedEvent):
    type: Literal["step"]
    step: LiveStep


class RecordingEvent(EventEnvelope):
    type: Literal["recording"]
    trajectory_id: str | None
    kernel_id: str
    notebook_path: str | None
    recording: bool
    reason: str | None


class PredictingEvent(PredictorEvent):
    type: Literal["predicting"]


class WritingEvent(PredictorEvent):
    type: Literal["writing"]
    text: str


class PredictionEvent(ScopedEvent):
    type: Literal["prediction"]
    prediction: Prediction


class ScoredEvent(ScopedEvent):
    type: Literal["scored"]
    prediction_id: str
    task: Task
    target_step: int
    reference: str
    scores: Scores | None


class SpeculatedEvent(ScopedEvent):
    """The output predicted for a cell not run yet, shown before the run."""

    type: Literal["speculated"]
    code_hash: str
    prediction: Prediction


LiveEvent = (HeartbeatEvent | TrajectoryEvent | StepEvent | RecordingEvent | PredictingEvent
             | WritingEvent | PredictionEvent | ScoredEvent | SpeculatedEvent)


class LiveBusMessage(TypedDict):
    """A live event as it is emitted on jupyter_server's event bus (``live-bus``)."""

    type: str
    event: str


# ---------------------------------------------------------------- schemas


@cache
def schema(name: str) -> dict[str, Any]:
    """The JSON Schema of a record: ``step``, ``trajectory``, ``prediction``, ``summary``,
    ``live-event``, ``live-bus``."""
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
