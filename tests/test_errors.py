"""One exception tree with one root, in one module (``errors.py``); the HTTP statuses it
maps to; and the closed error codes a prediction record carries."""

from __future__ import annotations

import ast
import importlib
import inspect
from pathlib import Path

import pytest

from themisto_ext import errors
from themisto_ext.errors import (
    LocalModelError,
    ModelProcessDied,
    PredictionSuperseded,
    PromptTooLong,
    ProviderTimeoutError,
    ThemistoError,
)
from themisto_ext.prediction.run import missed_record, prediction_error
from themisto_ext.records import PredictionErrorCode, Scope, schema, validator

PACKAGE = Path(errors.__file__).parent
SIGNALS = {
    # Not errors: control flow that never leaves its module, or must not be an Exception.
    ("themisto_ext/kernel/deadline.py", "DeadlineExceeded"),  # BaseException on purpose
    ("themisto_ext/prediction/clients/local/engine.py", "Abandoned"),
    ("themisto_ext/rules/flow.py", "Undetermined"),
    ("themisto_ext/rules/flow.py", "Jump"),
    ("themisto_ext/rules/operators.py", "Refused"),  # a ValueError on purpose
    ("themisto_ext/rules/figures.py", "_Undetermined"),
    ("themisto_ext/rules/display_options.py", "_Unreadable"),
    ("themisto_ext/kernel/values.py", "_NotData"),
    # A FormatError that carries the problems its module found.
    ("themisto_ext/trajectory/__init__.py", "TrajectoryFormatError"),
}


def _exception_classes() -> list[tuple[str, str]]:
    """Classes defined outside errors.py whose bases name an exception."""
    found = []
    for path in PACKAGE.rglob("*.py"):
        if "labextension" in path.parts or path.name == "errors.py":
            continue
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            if isinstance(node, ast.ClassDef) and any(
                    (isinstance(b, ast.Name) and b.id.endswith(("Error", "Exception")))
                    or (isinstance(b, ast.Name) and b.id in dir(errors)) for b in node.bases):
                found.append((str(path.relative_to(PACKAGE.parent)), node.name))
    return found


def test_every_exception_is_defined_in_the_one_tree():
    assert sorted(set(_exception_classes()) - SIGNALS) == []


def test_the_tree_has_one_root():
    classes = [c for _, c in inspect.getmembers(errors, inspect.isclass)
               if issubclass(c, BaseException)]
    assert len(classes) >= 24
    assert all(issubclass(c, ThemistoError) for c in classes)


@pytest.mark.parametrize("module,name", [
    ("themisto_ext.replay", "ReplayError"),
    ("themisto_ext.evaluation.sample", "SampleInputError"),
    ("themisto_ext.prediction.clients", "PredictorSpecError"),
    ("themisto_ext.prediction.clients.base", "PredictionSuperseded"),
    ("themisto_ext.prediction.clients.base", "ProviderRateLimitError"),
    ("themisto_ext.prediction.clients.local.wire", "ModelProcessHung"),
    ("themisto_ext.prediction.prompts.window", "PromptTooLong"),
    ("themisto_ext.training.split", "SplitSpecError"),
    ("themisto_ext.cli.files", "OutputRefused"),
])
def test_old_homes_still_name_the_same_classes(module: str, name: str):
    assert getattr(importlib.import_module(module), name) is getattr(errors, name)


@pytest.mark.parametrize("name,base", [
    ("ReplayError", RuntimeError), ("SampleInputError", ValueError),
    ("PredictorSpecError", ValueError), ("SplitSpecError", ValueError),
    ("OutputRefused", ValueError), ("PromptTooLong", ValueError),
])
def test_errors_that_joined_the_tree_are_still_caught_as_before(name: str, base: type):
    assert issubclass(getattr(errors, name), base)


def test_http_statuses_are_those_of_before():
    from themisto_ext.server.api.base import _status_of

    statuses = {name: _status_of(cls("x")) for name, cls
                in inspect.getmembers(errors, inspect.isclass) if issubclass(cls, ThemistoError)}
    assert {n for n, s in statuses.items() if s == 400} == {"FormatError"}
    assert {n for n, s in statuses.items() if s == 404} == {"NotFound"}
    assert {n for n, s in statuses.items() if s == 503} == {"StoreUnavailable",
                                                             "JournalUnavailable"}
    # the hub's service: another user's data, and a user's quota reached
    assert {n for n, s in statuses.items() if s == 403} == {"StoreForbidden"}
    assert {n for n, s in statuses.items() if s == 507} == {"QuotaReached"}
    assert all(s == 500 for n, s in statuses.items()
               if n not in ("FormatError", "NotFound", "StoreUnavailable",
                            "JournalUnavailable", "StoreForbidden", "QuotaReached"))


@pytest.mark.parametrize("error,code", [
    (PredictionSuperseded("the next cell started first"), "superseded"),
    (PromptTooLong("too long"), "prompt-too-long"),
    (ModelProcessDied("signal 11"), "local-model"),
    (LocalModelError("no model file"), "local-model"),
    (ProviderTimeoutError("no answer in 60 s"), "provider"),
])
def test_a_prediction_error_carries_its_closed_code(error: ThemistoError, code: str):
    made = prediction_error(error)
    assert made == {"type": type(error).__name__, "message": str(error), "code": code}
    validator("prediction").validate({**missed_record("p", "output", "none", "m",
                                                      scope=Scope("t"), target_step=1),
                                      "error": made})


def test_the_codes_are_the_schemas():
    enum = schema("prediction")["$defs"]["error_code"]["enum"]
    assert sorted(enum) == sorted(PredictionErrorCode.__args__)  # type: ignore[attr-defined]


def test_a_record_stored_before_codes_existed_is_still_valid():
    old = missed_record("p", "output", "none", "m", scope=Scope("t"), target_step=1)
    old["error"] = {"type": "PredictionSuperseded", "message": "m"}
    validator("prediction").validate(old)
