"""The interval options the rebuild and verify share: --start/--end, or --interval START/END
(verify: several, comma-separated), or --interval all (what Airflow passes)."""

from __future__ import annotations

import argparse
import datetime as dt
import sys

from eo.core.intervals import Interval, in_the_future, requested
from eo.runtime.cli import USAGE


def add_interval_args(parser: argparse.ArgumentParser, many: bool = False) -> None:
    parser.add_argument("--start", help="interval start (ISO 8601, UTC), with --end")
    parser.add_argument("--end", help="interval end, exclusive")
    several = ", or several: START/END,START/END" if many else ""
    parser.add_argument(
        "--interval", help=f"a day (2026-11-21) or START/END in one argument{several}, or 'all' (what Airflow passes)"
    )


def intervals_from(args: argparse.Namespace, many: bool = False) -> list[Interval] | None:
    """The requested intervals (None: all); exits with status 2 and the reason when malformed or
    in the future."""
    try:
        intervals = requested(args.start, args.end, args.interval, many)
    except ValueError as exc:
        print(f"bad interval: {exc}", file=sys.stderr)
        raise SystemExit(USAGE) from exc
    if refusal := in_the_future(intervals, dt.datetime.now(dt.UTC)):
        print(f"bad interval: {refusal}", file=sys.stderr)
        raise SystemExit(USAGE)
    return intervals
