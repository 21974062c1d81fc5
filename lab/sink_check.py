"""Compare what each PostgreSQL sink holds with the batch recomputation from bronze."""

from __future__ import annotations

from decimal import Decimal

from pyspark.sql import functions as F

from eo.core.gold import counting_table
from eo.core.tables import SILVER
from eo.runtime import lake
from eo.runtime.config import Settings
from eo.runtime.sinks.postgres import read_metrics


def expected_metrics(spark, settings: Settings) -> dict[tuple, tuple[int, Decimal]]:
    """(campaign, type, minute) -> (events, revenue), from the rebuilt gold table."""
    gold = lake.read(spark, settings, counting_table().table, "rebuild")  # what the sinks receive
    return {
        (r.campaign_id, r.event_type, r.window_start): (r.events, r.revenue)
        for r in gold.select("campaign_id", "event_type", "window_start", "events", "revenue").collect()
    }


def compare(expected: dict[tuple, tuple[int, Decimal]], rows: list[tuple]) -> dict:
    """Events the sink is missing (lost) or holds too often (duplicated), and rows that differ."""
    actual = {(c, t, w.replace(tzinfo=None)): (e, r) for c, t, w, e, r in rows}
    lost = duplicated = mismatched = 0
    for key in expected.keys() | actual.keys():
        want_events, want_revenue = expected.get(key, (0, Decimal(0)))
        have_events, have_revenue = actual.get(key, (0, Decimal(0)))
        lost += max(0, want_events - have_events)
        duplicated += max(0, have_events - want_events)
        mismatched += (want_events, want_revenue) != (have_events, have_revenue)
    return {"postgres_lost": lost, "postgres_duplicated": duplicated, "postgres_mismatched_rows": mismatched}


def check_sinks(spark, settings: Settings, dsn: str, guarantees: list[str]) -> dict[str, dict]:
    expected = expected_metrics(spark, settings)
    return {g: compare(expected, read_metrics(dsn, g)) for g in guarantees}


def silver_duplicates(spark, settings: Settings) -> tuple[int, int]:
    """(rows, rows beyond one per event id) in the streamed silver table."""
    silver = lake.read(spark, settings, SILVER)
    row = silver.agg(F.count(F.lit(1)).alias("rows"), F.count_distinct(*SILVER.key).alias("ids")).first()
    return row.rows, row.rows - row.ids


def delta_commits_by_epoch(settings: Settings, job: str, epoch: int, after: float) -> int:
    """Delta commits made with `job`'s fencing transaction id for `epoch` after time `after`.

    Each commit file holds a `txn` action (appId `<job>-<checkpoint id>`, version = epoch << 40 |
    position) and commitInfo.
    """
    import json
    from pathlib import Path

    from eo.core.tables import ALL

    count = 0
    for table in ALL:
        for log in Path(settings.table_path(table), "_delta_log").glob("*.json"):
            actions = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
            txns = [a["txn"] for a in actions if "txn" in a and a["txn"]["appId"].split("-")[0] == job]
            stamps = [a["commitInfo"]["timestamp"] / 1000 for a in actions if "commitInfo" in a]
            if any(t["version"] >> 40 == epoch for t in txns) and stamps and stamps[0] > after:
                count += 1
    return count
