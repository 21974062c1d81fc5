"""Where the suite's time goes, for the 30-minute budget (docs/testing.md): each test's seconds
(setup, call and teardown) summed per test, per xdist worker and per test file, printed after the run
and written to reports/tests/durations.json. Read, not asserted: a budget, not a timed test."""

from __future__ import annotations

import json
from collections import defaultdict

from eo.runtime.config import REPO_ROOT

OUT = REPO_ROOT / "reports" / "tests" / "durations.json"
SHOWN = 10


class SuiteTime:
    def __init__(self) -> None:
        self.by_worker: dict[str, float] = defaultdict(float)
        self.by_file: dict[str, float] = defaultdict(float)
        self.worker_of_file: dict[str, str] = {}
        self.by_test: dict[str, float] = defaultdict(float)

    def pytest_runtest_logreport(self, report) -> None:
        node = getattr(report, "node", None)  # xdist's controller sets it on a worker's report
        worker = node.gateway.id if node is not None else "main"
        path = report.nodeid.split("::", 1)[0]
        self.by_worker[worker] += report.duration
        self.by_file[path] += report.duration
        self.by_test[report.nodeid] += report.duration
        self.worker_of_file[path] = worker

    def pytest_terminal_summary(self, terminalreporter) -> None:
        if not self.by_file:
            return
        files = sorted(self.by_file.items(), key=lambda item: -item[1])
        OUT.parent.mkdir(parents=True, exist_ok=True)
        OUT.write_text(
            json.dumps(
                {
                    "workers": {w: round(s, 1) for w, s in sorted(self.by_worker.items())},
                    "files": [{"file": f, "seconds": round(s, 1), "worker": self.worker_of_file[f]} for f, s in files],
                    "tests": {t: round(s, 1) for t, s in sorted(self.by_test.items(), key=lambda item: -item[1])},
                },
                indent=1,
            )
            + "\n"
        )
        write = terminalreporter.write_line
        terminalreporter.section("where the time went (docs/testing.md, the budget)")
        write("busy seconds per worker: " + ", ".join(f"{w} {s:,.0f}" for w, s in sorted(self.by_worker.items())))
        for path, seconds in files[:SHOWN]:
            write(f"{seconds:8.1f}s  {path}  ({self.worker_of_file[path]})")
        write(f"every file: {OUT.relative_to(REPO_ROOT)}")


def register(config) -> None:
    """From conftest's pytest_configure."""
    if not hasattr(config, "workerinput"):  # the controller (or a run without xdist) only
        config.pluginmanager.register(SuiteTime(), "eo-suite-time")
