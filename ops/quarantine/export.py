"""The `export` command: the chosen records' exact bronze bytes, one per line, for a person to fix
and `python -m producer replay` to send again."""

from __future__ import annotations

import argparse
import os
from collections.abc import Iterable
from pathlib import Path

from pyspark.sql import SparkSession

from eo.core.tables import BRONZE
from eo.runtime.cli import OK
from eo.runtime.config import Settings
from ops.quarantine.selection import describe, open_table, records, selection, with_bronze
from ops.quarantine.stderr import some, warn, warn_missing


def export_problem(value: bytes | None) -> str | None:
    """Why these bytes cannot be one line that `producer replay` reads back unchanged (None: they can)."""
    if value is None:
        return "has no value"
    if b"\n" in value:
        return "contains a newline"
    if value.endswith(b"\r"):  # replay strips it
        return "ends with a carriage return"
    if not value.strip():  # replay skips it
        return "is blank"
    return None


def write_lines(values: Iterable[tuple[str, bytes | None]], out: Path) -> tuple[int, dict[str, list[str]]]:
    """Each record's exact bytes as one line; the ones that cannot be a line are left out, by problem.

    Written aside and renamed, so a failed export never leaves half a file where a user edits one.
    """
    written, skipped = 0, {}
    out.parent.mkdir(parents=True, exist_ok=True)
    part = out.with_name(out.name + ".part")
    try:
        with open(part, "wb") as fh:
            for where, value in values:
                problem = export_problem(value)
                if problem:
                    skipped.setdefault(problem, []).append(where)
                    continue
                fh.write(value + b"\n")
                written += 1
        if written:
            os.replace(part, out)
    finally:
        part.unlink(missing_ok=True)
    return written, skipped


def export_command(spark: SparkSession, settings: Settings, args: argparse.Namespace) -> int:
    rows = with_bronze(open_table(spark, settings, BRONZE), selection(spark, settings, args), args)
    missing: list[str] = []
    written, skipped = write_lines(((where, value) for where, _, value in records(rows, missing)), args.out)
    warn_missing(missing)
    if skipped:
        why = ", ".join(f"{len(c)} {problem}" for problem, c in skipped.items())
        every = [c for coordinates in skipped.values() for c in coordinates]
        warn(
            f"skipped {len(every)} records that cannot be one line ({why}); re-send them "
            f"unchanged with: python -m ops.quarantine republish --coordinates {some(every)}"
        )
    if not written:
        print(f"nothing written: no quarantined records {'could be' if skipped else 'match'} ({describe(args)})")
        return OK
    print(f"[quarantine] wrote {written} records to {args.out}, one per line, exactly as they were sent")
    print(f"[quarantine] after fixing them: python -m producer replay --file {args.out}")
    return OK
