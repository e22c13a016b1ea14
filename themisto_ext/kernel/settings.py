"""Capture settings: what the kernel hook records and within which budgets.

The server owns the configuration (traitlets) and hands it to kernels it launches as
one JSON environment variable, so a kernel needs no access to the server's config.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field, fields
from typing import Any

from themisto_ext.kernel.redaction import DEFAULT_NAME_PATTERNS, DEFAULT_VALUE_PATTERNS

SETTINGS_ENV = "THEMISTO_CAPTURE"


@dataclass
class CaptureSettings:
    recording: bool = True
    repr_length: int = 1000
    cell_budget: float = 0.1
    """Seconds the runtime snapshot may take per cell; the rest is deferred to later cells."""
    value_budget: float = 0.05
    """Seconds one value's repr/size may take before it gets a placeholder."""
    max_variables: int = 5000
    output_length: int = 200_000
    """Characters of output kept per step; the middle of longer output is elided."""
    redact: bool = True
    name_patterns: list[str] = field(default_factory=lambda: list(DEFAULT_NAME_PATTERNS))
    value_patterns: list[str] = field(default_factory=lambda: list(DEFAULT_VALUE_PATTERNS))

    def to_env(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_env(cls, environ: dict[str, str] | None = None) -> CaptureSettings:
        raw = (environ if environ is not None else os.environ).get(SETTINGS_ENV)
        if not raw:
            return cls()
        try:
            data: dict[str, Any] = json.loads(raw)
        except ValueError:
            return cls()
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})
