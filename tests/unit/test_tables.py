"""Table definitions: creation is safe to race, and the columns a table names are its own."""

import threading

import pytest
from pyspark.sql.types import StructType

from eo.core.tables import CAMPAIGN_MINUTE_METRICS
from eo.runtime.lake import ensure_table

pytestmark = pytest.mark.unit


def test_concurrent_creates_of_one_table_both_succeed(spark, lake):
    errors: list[BaseException] = []
    gate = threading.Barrier(3)

    def create() -> None:
        gate.wait()
        try:
            ensure_table(spark, lake, CAMPAIGN_MINUTE_METRICS, "rebuild")
        except Exception as error:  # noqa: BLE001 - collected and asserted on below
            errors.append(error)

    threads = [threading.Thread(target=create, daemon=True) for _ in range(3)]  # a hung one must not hold up the exit
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not any(t.is_alive() for t in threads), "a create hung (still running after 120 s)"
    assert errors == []
    path = lake.table_path(CAMPAIGN_MINUTE_METRICS.name, "rebuild")
    created = spark.read.format("delta").load(path)
    assert created.schema == StructType.fromDDL(CAMPAIGN_MINUTE_METRICS.ddl) and created.count() == 0


def test_each_tables_range_and_compaction_columns_are_its_own():
    from eo.core.tables import ALL, GOLD

    assert all(t.range_column for t in GOLD), "an interval rebuild replaces gold by its range column"
    for table in ALL.values():
        named = ([table.range_column] if table.range_column else []) + list(table.zorder)
        assert set(named) <= set(table.columns), table.name


def test_optimize_compacts_every_table_by_its_own_columns(spark, lake, capsys):
    from batch.maintenance import maintain
    from eo.core.tables import ALL
    from eo.runtime.lake import ensure_tables

    ensure_tables(spark, lake)
    report = maintain(lake, optimize=True, retention_hours=None)
    printed = capsys.readouterr().out
    assert all(f"[maintenance] {name}: compacted " in printed for name in ALL), printed
    assert not any(done.failed for done in report.values()), report
