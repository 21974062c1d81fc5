"""VACUUM keeps what the retention lake_maintenance checked asks for, not the table's own."""

from pathlib import Path

import pytest

from batch.maintenance import vacuum_table

pytestmark = pytest.mark.unit


def data_files(path: Path) -> set[str]:
    return {f.name for f in path.glob("*.parquet")}


def test_vacuum_applies_its_retention_where_the_table_would_keep_less(spark, tmp_path):
    path = tmp_path / "table"
    spark.range(10).write.format("delta").save(str(path))
    spark.range(5).write.format("delta").mode("overwrite").save(str(path))  # the first files are removed
    spark.sql(
        f"ALTER TABLE delta.`{path}` SET TBLPROPERTIES ('delta.deletedFileRetentionDuration' = 'interval 0 hours')"
    )
    spark.conf.set("spark.databricks.delta.retentionDurationCheck.enabled", "false")  # restored by conftest
    everything = data_files(path)
    current = {Path(f).name for f in spark.read.format("delta").load(str(path)).inputFiles()}
    assert current < everything

    vacuum_table(spark, str(path), 1)  # removed seconds ago: within the hour asked for, kept
    assert data_files(path) == everything
    vacuum_table(spark, str(path), 0)
    assert data_files(path) == current
