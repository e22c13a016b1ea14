"""Print one closing line over every suite: 'summary: N passed, N failed[, N skipped]'."""

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


def main() -> int:
    reports, failed_suites = Path(sys.argv[1]), sys.argv[2:]
    passed, failed, skipped = counts(reports)
    if failed_suites:
        print(f"failed suites: {', '.join(failed_suites)}")
        failed = max(failed, len(failed_suites))
    print(f"summary: {passed} passed, {failed} failed, {skipped} skipped")
    return 1 if failed_suites or failed else 0


if __name__ == "__main__":
    sys.exit(main())
