"""OPTIMIZE and VACUUM the platform's Delta tables.

    python -m batch.maintenance --optimize
    python -m batch.maintenance --vacuum --retention-hours 168

VACUUM refuses a retention shorter than the streams may need (see eo/runtime/maintenance.py) and
exits 2 with the reason.
"""

from __future__ import annotations

import argparse
import sys
import time

from eo.core.tables import ALL
from eo.runtime.cli import EXIT_CODES, USAGE, guarded
from eo.runtime.config import Settings, load_settings
from eo.runtime.maintenance import UnsafeRetention, check_retention
from eo.runtime.spark import build_session


def optimize(spark, settings: Settings) -> None:
    for name, table in ALL.items():
        started = time.monotonic()
        path = settings.table_path(name)
        zorder = f" ZORDER BY ({', '.join(table.zorder)})" if table.zorder else ""
        metrics = spark.sql(f"OPTIMIZE delta.`{path}`{zorder}").first().metrics
        print(
            f"[optimize] {name}: {metrics.numFilesRemoved} files -> {metrics.numFilesAdded} "
            f"({time.monotonic() - started:.1f} s)",
            flush=True,
        )


def vacuum_table(spark, path: str, retention_hours: float) -> None:
    """Delete the files no version of the last `retention_hours` needs: the session must honour
    RETAIN (eo/runtime/spark.py sets Delta's retentionWindowIgnore off)."""
    spark.sql(f"VACUUM delta.`{path}` RETAIN {retention_hours} HOURS")


def vacuum(spark, settings: Settings, retention_hours: float) -> None:
    for name in ALL:
        started = time.monotonic()
        vacuum_table(spark, settings.table_path(name), retention_hours)
        print(f"[vacuum] {name}: done ({time.monotonic() - started:.1f} s)", flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m batch.maintenance", description=__doc__.split("\n")[0], epilog=EXIT_CODES
    )
    parser.add_argument("--optimize", action="store_true")
    parser.add_argument("--vacuum", action="store_true")
    parser.add_argument("--retention-hours", type=float, default=168.0)
    args = parser.parse_args(argv)
    if not (args.optimize or args.vacuum):
        parser.error("say --optimize, --vacuum or both")
    settings = load_settings()
    if args.vacuum:
        try:
            policy = check_retention(settings, args.retention_hours)
        except UnsafeRetention as exc:
            print(exc.detail, file=sys.stderr)
            print(exc, file=sys.stderr)
            return USAGE
        print(f"[vacuum] retention {args.retention_hours:g} h >= required {policy.required_hours:.0f} h")
    spark = build_session("eo-maintenance", settings)
    if args.optimize:
        optimize(spark, settings)
    if args.vacuum:
        vacuum(spark, settings, args.retention_hours)
    return 0


if __name__ == "__main__":
    raise SystemExit(guarded(main))
