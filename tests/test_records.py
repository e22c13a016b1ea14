"""The Python record types follow the JSON Schemas, field by field (names, requiredness, types)."""

from __future__ import annotations

import types
import typing
from typing import Any, Literal, get_args, get_origin

import pytest
from typing_extensions import NotRequired, is_typeddict

from themisto_ext import records
from themisto_ext.records import schema, validator

JSON_TYPES = {str: "string", int: "integer", float: "number", bool: "boolean",
              type(None): "null", list: "array", dict: "object"}

PAIRS = [
    (records.Step, "step", ""),
    (records.StepOutput, "step", "/$defs/output"),
    (records.RuntimeVariable, "step", "/$defs/runtime_variable"),
    (records.StepError, "step", "/$defs/error"),
    (records.StepTruncated, "step", "/$defs/truncated"),
    (records.StepTrace, "step", "/$defs/trace"),
    (records.TraceEvent, "step", "/$defs/trace_event"),
    (records.TrajectoryInfo, "trajectory", ""),
    (records.Prediction, "prediction", ""),
    (records.PromptText, "prediction", "/$defs/prompt"),
    (records.PredictionError, "prediction", "/$defs/error"),
    (records.Scores, "prediction", "/$defs/scores"),
    (records.StepSummary, "summary", ""),
    (records.PredictionSummary, "summary", "/$defs/prediction"),
    (records.NotebookRowInfo, "roster", ""),
    (records.ScoreTotal, "roster", "/$defs/score"),
    (records.EventEnvelope, "live-event", "/$defs/envelope"),
    (records.HeartbeatEvent, "live-event", "/$defs/heartbeat"),
    (records.TrajectoryEvent, "live-event", "/$defs/trajectory"),
    (records.LiveStep, "live-event", "/$defs/live_step"),
    (records.StepEvent, "live-event", "/$defs/step"),
    (records.RecordingEvent, "live-event", "/$defs/recording"),
    (records.PredictingEvent, "live-event", "/$defs/predicting"),
    (records.WritingEvent, "live-event", "/$defs/writing"),
    (records.PredictionEvent, "live-event", "/$defs/prediction"),
    (records.ScoredEvent, "live-event", "/$defs/scored"),
    (records.LiveBusMessage, "live-bus", ""),
]


def resolve(name: str, node: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """Follow a ``$ref`` (within or across the schema files) to the schema it names."""
    ref = node["$ref"]
    target, _, pointer = ref.partition("#")
    if target:
        name = target.removesuffix(".schema.json")
    found: Any = schema(name)
    for part in pointer.strip("/").split("/") if pointer.strip("/") else []:
        found = found[part]
    return name, found


def flattened(name: str, node: dict[str, Any]) -> tuple[dict[str, Any], set[str]]:
    """Properties and required names of an object schema, its ``$ref``'d parts merged in."""
    properties: dict[str, Any] = {}
    required: set[str] = set()
    if "$ref" in node:
        ref_name, target = resolve(name, node)
        if target.get("type") == "object" or "properties" in target:
            inner, inner_required = flattened(ref_name, target)
            properties.update(inner)
            required |= inner_required
    properties.update({k: (name, v) for k, v in node.get("properties", {}).items()})
    required |= set(node.get("required", []))
    return properties, required


def json_types(name: str, node: dict[str, Any]) -> set[str]:
    if "$ref" in node and "type" not in node:
        return json_types(*resolve(name, node))
    if "const" in node:
        return {JSON_TYPES[type(node["const"])]}
    if "enum" in node:
        return {JSON_TYPES[type(v)] for v in node["enum"]}
    if "oneOf" in node:
        return set().union(*(json_types(name, part) for part in node["oneOf"]))
    kind = node.get("type")
    return set(kind) if isinstance(kind, list) else {kind}


def python_types(annotation: Any) -> set[str]:
    origin = get_origin(annotation)
    if origin is NotRequired:
        return python_types(get_args(annotation)[0])
    if origin in (typing.Union, types.UnionType):
        return set().union(*(python_types(a) for a in get_args(annotation)))
    if origin is Literal:
        return {JSON_TYPES[type(v)] for v in get_args(annotation)}
    if is_typeddict(annotation):
        return {"object"}
    found = JSON_TYPES.get(origin or annotation)
    assert found, f"no JSON type for {annotation!r}"
    if found == "number":
        return {"number", "integer"}  # an int is a valid float here
    return {found}


@pytest.mark.parametrize("typed,name,pointer", PAIRS,
                         ids=[typed.__name__ for typed, _, _ in PAIRS])
def test_typeddict_follows_its_schema(typed, name, pointer):
    node: Any = schema(name)
    for part in pointer.strip("/").split("/") if pointer else []:
        node = node[part]
    properties, required = flattened(name, node)
    hints = typing.get_type_hints(typed, include_extras=True)
    assert set(hints) == set(properties), f"{typed.__name__}: fields differ from the schema"
    assert typed.__required_keys__ == required, f"{typed.__name__}: required keys differ"
    for field, (owner, prop) in properties.items():
        allowed = json_types(owner, prop)
        declared = python_types(hints[field])
        assert declared - {"integer"} <= allowed | ({"integer"} if "number" in allowed
                                                     else set()), (typed.__name__, field)
        assert allowed <= declared, (typed.__name__, field, allowed, declared)


def test_every_record_schema_is_valid_and_every_event_type_has_a_type():
    from jsonschema import Draft202012Validator

    for name in records.SCHEMA_NAMES:
        Draft202012Validator.check_schema(schema(name))
    event_types = {get_args(typing.get_type_hints(t)["type"])[0]
                   for t in get_args(records.LiveEvent)}
    documented = {d["properties"]["type"]["const"] for key, d in schema("live-event")["$defs"]
                  .items() if "type" in d.get("properties", {})}
    assert event_types == documented


def test_the_live_prediction_refuses_the_prompt():
    prediction = {
        "id": "p", "trajectory_id": "t", "kernel_id": "k", "notebook_path": None,
        "cell_id": None, "task": "output", "context": "full", "predictor": "baseline",
        "model": None, "target_step": 1, "created_at": "x", "latency": None,
        "prompt_tokens": None, "completion_tokens": None, "cached_tokens": None,
        "prefix_reused": None, "dropped_steps": 0, "answer": "", "error": None,
        "reference": None, "scores": None}
    event = {"type": "prediction", "seq": 7, "trajectory_id": "t", "kernel_id": "k",
             "notebook_path": None, "prediction": prediction}
    assert validator("live-event").is_valid(event)
    assert validator("prediction").is_valid({**prediction, "prompt": {"system": "", "user": ""}})
    assert not validator("live-event").is_valid(
        {**event, "prediction": {**prediction, "prompt": {"system": "", "user": ""}}})
    assert not validator("live-event").is_valid({**event, "extra": 1})
    assert not validator("live-event").is_valid({**event, "seq": 0})  # numbered from 1
