"""What the commands say on stderr: one line per failure or warning, prefixed `quarantine:`, and
long lists of coordinates cut short."""

from __future__ import annotations

import sys


def fail(code: int, line: str) -> int:
    """A failure a person can fix, in one line; returns its exit code (eo/runtime/cli.py) for the command to return."""
    print(f"quarantine: {line}", file=sys.stderr)
    return code


def warn(line: str) -> None:
    print(f"quarantine: warning: {line}", file=sys.stderr)


def some(coordinates: list[str], at_most: int = 20) -> str:
    more = f" (first {at_most} of {len(coordinates)})" if len(coordinates) > at_most else ""
    return ",".join(coordinates[:at_most]) + more


def warn_missing(missing: list[str]) -> None:
    if missing:
        warn(f"{len(missing)} records have no bronze row, skipped: {some(missing)}")
