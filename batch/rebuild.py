"""Rebuild derived tables from bronze alone, with the same transformations the stream uses.

    python -m batch.rebuild [--start TS --end TS | --interval START/END|all] [--target rebuild|main]

Without a range: everything, by overwrite. With a range [start, end): only the rows of each
declared gold table (eo/core/gold/) whose range column falls in it, by replaceWhere, so re-running or
backfilling the same interval leaves the same table. `--target rebuild` (default) writes the
separate `_rebuild/` namespace that verification compares with; `main` replaces live gold.
"""

from __future__ import annotations

import argparse
import datetime as dt
from collections.abc import Iterator
from contextlib import contextmanager

from pyspark.sql import DataFrame

from batch.interval_args import add_interval_args, intervals_from
from eo.core.declaration import reach
from eo.core.gold import DECLARED
from eo.core.intervals import Interval
from eo.core.tables import ALL, BRONZE, GOLD, QUARANTINE, SILVER, TableDef
from eo.core.transforms import rules
from eo.core.transforms.dedup import first_copies
from eo.core.transforms.parse import quarantine_rows, valid_events
from eo.runtime import lake, live_tables
from eo.runtime.cli import EXIT_CODES, NotReady, Progress, guarded
from eo.runtime.config import Settings, load_settings
from eo.runtime.coverage import record_rebuilt
from eo.runtime.fencing import Fence, Fenced
from eo.runtime.lake import ensure_reference, ensure_tables
from eo.runtime.live_tables import REBUILD, holding_live_tables
from eo.runtime.reading import classify_records, recorded_poison
from eo.runtime.spark import build_session


def classify_log(spark, settings: Settings) -> DataFrame:
    """Every bronze record, parsed and classified exactly as the stream classifies it, the
    records the stream isolated as poison included (quarantined unread, as the stream did)."""
    bronze = lake.read(spark, settings, BRONZE)
    return classify_records(spark, settings, bronze, recorded_poison(spark, settings))


def gold_tables(silver: DataFrame, interval: Interval | None) -> dict[str, DataFrame]:
    """Every declared gold table's rows (eo/core/gold/), by its declaration's transform. For an
    interval, only rows whose range column falls in it, from the events that can make them (a
    window's; a session starting in it has no event in the gap before it, so events from
    start - gap on decide it exactly)."""
    if interval is None:
        return {name: rules.rows_of(table, silver) for name, table in DECLARED.items()}
    return {name: rules.rows_in(table, silver, interval, *reach(table)) for name, table in DECLARED.items()}


@contextmanager
def still_ours(fence: Fence | None) -> Iterator[None]:
    """Around each write into live tables: a stream started since they were claimed took a newer
    epoch (seen on the lease before, or on the table at the commit), and the rebuild must not
    write beside it."""
    try:
        if fence is not None:
            fence.check()
        yield
    except Fenced as exc:
        raise NotReady(
            f"the stream started during the rebuild ({exc}): stop it (make stream-stop), then run again"
        ) from exc


def writer(settings: Settings, target: str, fence: Fence | None, owner):
    """How the rebuild replaces a table's rows: with Spark in the `_rebuild/` namespace, which no
    other writer touches; in the live tables (`main`), by the stream's own commit protocol, as
    the epoch `fence` took on the lease and `owner` (commits.Txn) on the tables, the lease checked
    again right before each commit (eo/runtime/lake.py `overwrite_live`)."""
    check = fence.check if fence is not None else None

    def write(rows: DataFrame, table: TableDef, interval: Interval | None) -> None:
        with still_ours(fence):
            if target == "main":
                where = interval.iso_predicate(table.range_column) if interval else None
                lake.overwrite_live(rows, settings, table, owner, where, check)
            else:
                where = interval.predicate(table.range_column) if interval else None
                path = settings.table_path(table.name, target)
                lake.overwrite(rows, path, where, even_append_only=table is SILVER)

    return write


def rebuild(
    spark,
    settings: Settings,
    interval: Interval | None = None,
    target: str = "rebuild",
    fence: Fence | None = None,
    owner=None,
) -> dict:
    """`fence`: for live tables (target main), the epoch `claim_while_stopped` took for this rebuild;
    `owner`: the app id it claimed the tables under with it and the position it leaves them at
    (live_tables.owner, taken before a reset moves the checkpoint away), by default the current
    checkpoint's. A whole rebuild leaves every live table at bronze's position, whatever batch a
    crash left partial; a range is refused while one is (NotReady)."""
    if target == "main" and fence is not None and owner is None:
        owner = live_tables.owner(settings, fence, whole=interval is None)
    started = dt.datetime.now(dt.UTC)  # no event the log gets later is in this rebuild
    progress = Progress("rebuild", len(GOLD) + (2 if interval is None else 0))  # gold, + silver, quarantine
    ensure_reference(spark, settings)
    ensure_tables(spark, settings, target, names=[SILVER.name, QUARANTINE.name, *(t.name for t in GOLD)])
    # Read twice (quarantine, silver) and not cached: the strict reading costs less than caching
    # every record (a rebuild of 10M records spilled its cache to disk).
    classified = classify_log(spark, settings)
    silver, quarantine = first_copies(valid_events(classified)), quarantine_rows(classified)
    stats: dict[str, object] = {"target": target, "interval": None}
    write = writer(settings, target, fence, owner)
    if interval is None:
        # Materialise silver once: both gold tables read it, and verification compares it.
        progress.step(QUARANTINE.name)
        write(quarantine, QUARANTINE, None)
        progress.step(SILVER.name)
        write(silver, SILVER, None)
        silver = lake.read(spark, settings, SILVER, target)
    else:
        silver = silver.persist()
    if interval is not None:
        stats["interval"] = [interval.start.isoformat(), interval.end.isoformat()]
    for name, rows in gold_tables(silver, interval).items():
        where = interval.predicate(ALL[name].range_column) if interval else None
        progress.step(name)
        write(rows, ALL[name], interval)
        stats[f"{name}_rows"] = lake.read(spark, settings, ALL[name], target).where(where or "true").count()
    if target == "rebuild":  # what verification may compare (eo/runtime/coverage.py)
        record_rebuilt(settings, None if interval is None else [interval], started)
    bronze_rows = lake.read(spark, settings, BRONZE).count()  # from the log's statistics
    stats.update(bronze_rows=bronze_rows, seconds=round(progress.elapsed(), 2))
    stats["events_per_s"] = round(bronze_rows / stats["seconds"]) if stats["seconds"] else None
    return stats


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m batch.rebuild", description=__doc__.split("\n")[0], epilog=EXIT_CODES
    )
    add_interval_args(parser)
    parser.add_argument("--target", choices=["rebuild", "main"], default="rebuild")
    args = parser.parse_args(argv)
    interval = (intervals_from(args) or [None])[0]
    settings = load_settings()
    if args.target == "main":  # live tables: refused while another writer holds them, else claimed and held
        with holding_live_tables(settings, REBUILD) as fence:
            stats = rebuild(build_session("eo-rebuild", settings), settings, interval, args.target, fence)
    else:
        stats = rebuild(build_session("eo-rebuild", settings), settings, interval, args.target)
    print("[rebuild] done:", flush=True)
    for key, value in stats.items():  # a line each: Airflow's log panel cuts long lines
        print(f"[rebuild]   {key} = {value}", flush=True)
    return 0


def cli(argv: list[str] | None = None) -> int:
    """The process's entry point (`python -m batch.rebuild`, `spark-submit jobs/rebuild.py`)."""
    return guarded(main, argv)


if __name__ == "__main__":
    raise SystemExit(cli())
