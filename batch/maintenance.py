"""OPTIMIZE and VACUUM the platform's Delta tables, beside the live stream.

    python -m eo.runtime.submit jobs/maintenance.py --optimize
    python -m eo.runtime.submit jobs/maintenance.py --vacuum --retention-hours 168

VACUUM refuses a retention shorter than the streams may need (see eo/runtime/maintenance.py) and
exits 2 with the reason.

Both commit with delta-rs on the environment's tables (Environment.table), as the stream does: they
run while the stream writes the same tables, and every writer of a live table commits with one
protocol (on object storage, S3's conditional put; docs/cloud.md, "One commit protocol"). Spark's
log store cannot take part in it: its S3 log stores write a commit with an unconditional PUT or
copy, which can overwrite a commit delta-rs has just made.

Beside the stream: OPTIMIZE compacts one partition per commit, only the partitions holding
several files, and a compaction refused because the stream rewrote a file it read is tried again
on the new version; a partition the stream kept rewriting is left for the next run, said so. The
stream, for its part, plans its commit again on what a compaction left (eo/runtime/commits.py
`beside_maintenance`). No table's trouble skips another table, or VACUUM: the run ends with a
line per table, and exits 1 only for a failure that is not the stream's commits.

VACUUM deletes a file no version within the retention names only once it is older than the
retention (delta-rs's `full` mode compares its modification time): a batch's files that its
tasks wrote and its commit does not name yet are minutes old, never that old.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from dataclasses import dataclass, field

import pyarrow as pa

from eo.core.tables import ALL, TableDef
from eo.runtime.cli import EXIT_CODES, USAGE, guarded
from eo.runtime.commits import Table
from eo.runtime.config import Settings, load_settings
from eo.runtime.environment import environment
from eo.runtime.maintenance import UnsafeRetention, check_retention

ATTEMPTS = 5  # compactions of one partition refused by the stream's commits before it is left
BACKOFF_SECONDS = 0.5


@dataclass
class Done:
    """What maintenance did to one table."""

    files_removed: int = 0
    files_added: int = 0
    compacted: int = 0  # partitions (or the whole unpartitioned table)
    left: list[str] = field(default_factory=list)  # partitions left for the next run
    vacuumed: int | None = None  # files deleted; None: not vacuumed
    failed: list[str] = field(default_factory=list)

    def line(self, name: str) -> str:
        said = [f"compacted {self.compacted} partition(s): {self.files_removed} files -> {self.files_added}"]
        if self.left:
            said.append(f"{len(self.left)} left for the next run (the stream rewrote them {ATTEMPTS} times while "
                        f"compacting: {', '.join(self.left[:3])})")  # fmt: skip
        if self.vacuumed is not None:
            said.append(f"vacuumed: {self.vacuumed} files deleted")
        said += [f"FAILED: {failure}" for failure in self.failed]
        return f"[maintenance] {name}: {'; '.join(said)}"


def _crowded(table: Table, definition: TableDef) -> list[dict[str, str] | None]:
    """The partitions holding several files, as filters (None: the unpartitioned table)."""
    files = pa.table(table.refresh().get_add_actions(flatten=True))
    if not definition.partition_by:
        return [None] if files.num_rows > 1 else []
    columns = [f"partition.{c}" for c in definition.partition_by]
    counts = files.group_by(columns).aggregate([([], "count_all")]).to_pylist()
    crowded = [row for row in counts if row["count_all"] > 1]
    return [{c: str(row[f"partition.{c}"]) for c in definition.partition_by} for row in crowded]


def _compact(table: Table, definition: TableDef, partition: dict[str, str] | None) -> dict:
    filters = [(column, "=", value) for column, value in partition.items()] if partition else None
    current = table.refresh()
    if definition.zorder:
        return current.optimize.z_order(definition.zorder, partition_filters=filters)
    return current.optimize.compact(partition_filters=filters)


def optimize_table(table: Table, definition: TableDef, done: Done | None = None) -> Done:
    """Compact each crowded partition in a commit of its own (clustered by the table's z-order
    columns), tried again on a conflict with the stream's commits; a partition still refused
    after ATTEMPTS is left (`Done.left`)."""
    from deltalake.exceptions import CommitFailedError

    done = done or Done()
    for partition in _crowded(table, definition):
        for attempt in range(ATTEMPTS):
            try:
                metrics = _compact(table, definition, partition)
            except CommitFailedError:
                time.sleep(BACKOFF_SECONDS * (attempt + 1))
                continue
            done.files_removed += metrics["numFilesRemoved"]
            done.files_added += metrics["numFilesAdded"]
            done.compacted += 1
            break
        else:
            done.left.append(",".join(f"{k}={v}" for k, v in (partition or {"table": "whole"}).items()))
    return done


def vacuum_table(table: Table, retention_hours: float) -> int:
    """Delete the files no version of the last `retention_hours` (rounded up) needs and that are
    older than that: that retention, not the table's own deletedFileRetentionDuration
    (lake_maintenance checked this one). `full`: also files no version ever referenced, such as a
    speculative task attempt's orphans (docs/design/executor-writes.md), as Spark's VACUUM did.
    Tried again on a conflict with the stream's commits. Returns the files deleted."""
    from deltalake.exceptions import CommitFailedError

    for attempt in range(ATTEMPTS):
        try:
            return len(
                table.refresh().vacuum(
                    math.ceil(retention_hours), dry_run=False, enforce_retention_duration=False, full=True
                )
            )
        except CommitFailedError:
            if attempt == ATTEMPTS - 1:
                raise
            time.sleep(BACKOFF_SECONDS * (attempt + 1))
    raise AssertionError("unreachable")


def maintain(settings: Settings, optimize: bool, retention_hours: float | None) -> dict[str, Done]:
    """Every table in turn: compacted, then vacuumed (`retention_hours`: None, not vacuumed); a
    failure of one step is recorded and the next steps and tables go on."""
    from eo.runtime.live_tables import QUERY, is_stream, restore_properties

    env, report = environment(settings), {}
    held = env.lease().held(QUERY)
    if held is None or is_stream(held):  # no rebuild has a guard lifted right now
        restore_properties(settings, [t for t in ALL.values() if t.properties and _exists(settings, t)])
    for name, definition in ALL.items():
        done = report[name] = Done()
        if not _exists(settings, definition):
            continue
        table = env.table(name)
        started = time.monotonic()
        if optimize:
            try:
                optimize_table(table, definition, done)
            except Exception as error:  # noqa: BLE001 (said in the table's line; VACUUM and the others go on)
                done.failed.append(f"optimize: {type(error).__name__}: {error}".splitlines()[0])
        if retention_hours is not None:
            try:
                done.vacuumed = vacuum_table(table, retention_hours)
            except Exception as error:  # noqa: BLE001
                done.failed.append(f"vacuum: {type(error).__name__}: {error}".splitlines()[0])
        print(f"{done.line(name)} ({time.monotonic() - started:.1f} s)", flush=True)
    return report


def _exists(settings: Settings, definition: TableDef) -> bool:
    from eo.runtime.lake import table_exists

    return table_exists(settings, settings.table_path(definition.name))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="jobs/maintenance.py", description=__doc__.split("\n")[0], epilog=EXIT_CODES)
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
    report = maintain(settings, args.optimize, args.retention_hours if args.vacuum else None)
    failed = [name for name, done in report.items() if done.failed]
    if failed:
        print(f"maintenance failed for {', '.join(failed)} (see their lines); the other tables are done", flush=True)
        return 1
    return 0


def cli(argv: list[str] | None = None) -> int:
    """The process's entry point (`python -m batch.maintenance`, `spark-submit jobs/maintenance.py`)."""
    return guarded(main, argv)


if __name__ == "__main__":
    sys.exit(cli())
