"""VACUUM keeps what the retention lake_maintenance checked asks for, not the table's own."""

from pathlib import Path

import pytest

from batch.maintenance import vacuum_table
from eo.runtime.commits import Table

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

    vacuum_table(Table(str(path)), 1)  # removed seconds ago: within the hour asked for, kept
    assert data_files(path) == everything
    vacuum_table(Table(str(path)), 0)
    assert data_files(path) == current


def test_vacuum_deletes_files_no_version_referenced(spark, tmp_path):
    """A speculative task attempt's orphan (docs/design/executor-writes.md) goes too, as with Spark's VACUUM."""
    path = tmp_path / "table"
    spark.range(3).write.format("delta").save(str(path))
    committed = data_files(path)
    (path / "part-orphan-of-a-speculative-attempt.parquet").write_bytes(b"PAR1")
    vacuum_table(Table(str(path)), 1)  # written seconds ago: kept
    assert "part-orphan-of-a-speculative-attempt.parquet" in data_files(path)
    vacuum_table(Table(str(path)), 0)
    assert data_files(path) == committed
