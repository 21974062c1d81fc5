"""OPTIMIZE and VACUUM the platform's Delta tables.

    python -m batch.maintenance --optimize
    python -m batch.maintenance --vacuum --retention-hours 168

VACUUM refuses a retention shorter than the streams may need (see eo/runtime/maintenance.py) and
exits 2 with the reason.

Both commit with delta-rs on the environment's tables (Environment.table), as the stream does: they
run while the stream writes the same tables, and every writer of a live table commits with one
protocol (on object storage, S3's conditional put; docs/cloud.md, "One commit protocol"). Spark's
log store cannot take part in it: its S3 log stores write a commit with an unconditional PUT or
copy, which can overwrite a commit delta-rs has just made.
"""

from __future__ import annotations

import argparse
import math
import sys
import time

from eo.core.tables import ALL
from eo.runtime.cli import EXIT_CODES, USAGE, guarded
from eo.runtime.commits import Table
from eo.runtime.config import Settings, load_settings
from eo.runtime.environment import environment
from eo.runtime.maintenance import UnsafeRetention, check_retention


def optimize_table(table: Table, zorder: tuple[str, ...] | list[str] = ()) -> dict:
    """Compact the table's small files (clustered by `zorder`, when given) in one commit; its metrics."""
    current = table.refresh()
    return current.optimize.z_order(zorder) if zorder else current.optimize.compact()


def optimize(settings: Settings) -> None:
    env = environment(settings)
    for name, table in ALL.items():
        started = time.monotonic()
        metrics = optimize_table(env.table(name), table.zorder)
        print(
            f"[optimize] {name}: {metrics['numFilesRemoved']} files -> {metrics['numFilesAdded']} "
            f"({time.monotonic() - started:.1f} s)",
            flush=True,
        )


def vacuum_table(table: Table, retention_hours: float) -> None:
    """Delete the files no version of the last `retention_hours` (rounded up) needs: that retention,
    not the table's own deletedFileRetentionDuration (lake_maintenance checked this one). `full`:
    also files no version ever referenced, such as a speculative task attempt's orphans
    (docs/design/executor-writes.md), as Spark's VACUUM did."""
    table.refresh().vacuum(math.ceil(retention_hours), dry_run=False, enforce_retention_duration=False, full=True)


def vacuum(settings: Settings, retention_hours: float) -> None:
    env = environment(settings)
    for name in ALL:
        started = time.monotonic()
        vacuum_table(env.table(name), retention_hours)
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
    if args.optimize:
        optimize(settings)
    if args.vacuum:
        vacuum(settings, args.retention_hours)
    return 0


if __name__ == "__main__":
    raise SystemExit(guarded(main))
