"""Table creation is safe to race: two jobs creating the same table at once both end with it."""

import threading

import pytest
from pyspark.sql.types import StructType

from jobs.tables import CAMPAIGN_MINUTE_METRICS, ensure_table

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
