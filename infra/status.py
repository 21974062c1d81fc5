"""How the `status` actions of the local services answer: a table for people, JSON for scripts.

A stopped service is an answer, not an error: `status` exits 0 once it could tell, and with
`--check` exits 3 (not ready) when the service is not up, for scripts that wait on it.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass

NOT_READY = 3
EPILOG = "exit codes: 0 answered (with --check: the service is up), 2 bad arguments, 3 with --check: not up"


@dataclass(frozen=True)
class Status:
    """What a service's `status` found: `up` is what --check asks, `report` the JSON, `rows` the table."""

    up: bool
    report: dict
    rows: list[tuple[str, object]]


def server_status(
    service: str, name: str, process_up: bool, answers: Callable[[], bool], where: dict[str, object], to_start: str
) -> Status:
    """One server process: up once it answers; `where` (address, home) goes in the table and the JSON."""
    up = process_up and answers()
    state = "running" if up else ("started, not answering yet" if process_up else "stopped")
    report = {"service": service, "state": state, **{key: str(value) for key, value in where.items()}}
    rows = [(name, state), *where.items()]
    if not process_up:
        rows.append(("to start it", to_start))
    return Status(up, report, rows)


def seconds(value: float | None) -> str:
    """12.3 s, 16 min, 2.5 h: how long ago, readable."""
    if value is None:
        return "never"
    if value < 120:
        return f"{value:.1f} s"
    if value < 7200:
        return f"{value / 60:.0f} min"
    return f"{value / 3600:.1f} h"


def table(rows: list[tuple[str, object]]) -> str:
    width = max(len(name) for name, _ in rows)
    return "\n".join(f"{name.ljust(width)}  {value}" for name, value in rows)


def answer(status: Status, as_json: bool = False, check: bool = False) -> int:
    """Print the status (a table, or JSON) and return the exit code."""
    print(json.dumps(status.report, indent=2, default=str) if as_json else table(status.rows))
    return NOT_READY if check and not status.up else 0
