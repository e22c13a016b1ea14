"""The test command's closing lines name the UI tests that failed or needed their retry
(a CI page shows only the end of the log)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "summary.py"


def _spec(title: str, status: str, results: list[dict]) -> dict:
    return {"file": "panel.spec.ts", "title": title,
            "tests": [{"status": status, "results": results}]}


def test_failed_and_flaky_ui_tests_are_named_and_counted(tmp_path: Path):
    (tmp_path / "galata.json").write_text(json.dumps({
        "stats": {"expected": 1, "flaky": 1, "unexpected": 1},
        "suites": [{"suites": [{"specs": [
            _spec("slow badge", "flaky", [
                {"status": "failed", "error": {"message": "Error: Timed out 5000ms\nmore"}},
                {"status": "passed"}]),
            _spec("broken footer", "unexpected", [
                {"status": "timedOut", "error": {"message": "expected 2, got 3"}}]),
            _spec("fine", "expected", [{"status": "passed"}]),
        ]}]}],
    }))
    done = subprocess.run([sys.executable, str(SCRIPT), str(tmp_path)],
                          capture_output=True, text=True, check=False)
    assert done.returncode == 1
    assert done.stdout.splitlines() == [
        "UI test flaky (passed on retry): panel.spec.ts: slow badge: Error: Timed out 5000ms",
        "UI test failed: panel.spec.ts: broken footer: expected 2, got 3",
        "summary: 2 passed, 1 failed, 0 skipped",
    ]
