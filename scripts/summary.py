"""Print one closing line over every suite: 'summary: N passed, N failed[, N skipped]',
after the UI tests that failed or passed only on their retry, by name: the list reporter's
lines scroll far above the end of a CI log, which is all a CI page shows."""

from __future__ import annotations

import json
import sys
import xml.etree.ElementTree as ET
from pathlib import Path


def counts(reports: Path) -> tuple[int, int, int]:
    passed = failed = skipped = 0
    junit = reports / "pytest.xml"
    if junit.exists():
        for suite in ET.parse(junit).getroot().iter("testsuite"):
            total, skip = int(suite.get("tests", 0)), int(suite.get("skipped", 0))
            bad = int(suite.get("failures", 0)) + int(suite.get("errors", 0))
            passed, failed, skipped = passed + total - skip - bad, failed + bad, skipped + skip
    jest = reports / "jest.json"
    if jest.exists():
        data = json.loads(jest.read_text())
        passed += data["numPassedTests"]
        failed += data["numFailedTests"]
        skipped += data["numPendingTests"]
    ui = reports / "galata.json"
    if ui.exists():
        stats = json.loads(ui.read_text()).get("stats", {})
        passed += stats.get("expected", 0) + stats.get("flaky", 0)
        failed += stats.get("unexpected", 0)
        skipped += stats.get("skipped", 0)
    return passed, failed, skipped


def ui_outcomes(reports: Path) -> list[str]:
    """'flaky: title' / 'failed: title: first line of the error' for each UI test not
    simply passed."""
    ui = reports / "galata.json"
    if not ui.exists():
        return []
    lines: list[str] = []

    def walk(suite: dict) -> None:
        for spec in suite.get("specs", []):
            for test in spec.get("tests", []):
                status = test.get("status")
                if status not in ("flaky", "unexpected"):
                    continue
                where = f"{spec.get('file', '?')}: {spec.get('title', '?')}"
                errors = [r.get("error", {}).get("message", "") for r in test.get("results", [])
                          if r.get("status") != "passed"]
                first = errors[0].strip().splitlines()[0] if errors and errors[0].strip() else ""
                word = "flaky (passed on retry)" if status == "flaky" else "failed"
                lines.append(f"UI test {word}: {where}" + (f": {first[:200]}" if first else ""))
        for child in suite.get("suites", []):
            walk(child)

    for suite in json.loads(ui.read_text()).get("suites", []):
        walk(suite)
    return lines


def main() -> int:
    reports, failed_suites = Path(sys.argv[1]), sys.argv[2:]
    for line in ui_outcomes(reports):
        print(line)
    passed, failed, skipped = counts(reports)
    if failed_suites:
        print(f"failed suites: {', '.join(failed_suites)}")
        failed = max(failed, len(failed_suites))
    print(f"summary: {passed} passed, {failed} failed, {skipped} skipped")
    return 1 if failed_suites or failed else 0


if __name__ == "__main__":
    sys.exit(main())
