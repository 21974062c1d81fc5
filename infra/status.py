"""How the `status` actions of the local services answer: a table for people, JSON for scripts.

A stopped service is an answer, not an error: `status` exits 0 once it could tell, and with
`--check` exits 3 (not ready) when the service is not up, for scripts that wait on it.
"""

from __future__ import annotations

import argparse
import json

NOT_READY = 3
EPILOG = "exit codes: 0 answered (with --check: the service is up), 2 bad arguments, 3 with --check: not up"


def add_status_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="status: print JSON instead of a table")
    parser.add_argument("--check", action="store_true", help=f"status: exit {NOT_READY} when the service is not up")


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


def answer(report: dict, rows: list[tuple[str, object]], up: bool, args: argparse.Namespace) -> int:
    """Print the report (a table, or JSON with --json) and return the exit code."""
    print(json.dumps(report, indent=2, default=str) if args.json else table(rows))
    return NOT_READY if args.check and not up else 0
