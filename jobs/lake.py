"""The thin I/O layer: every read and write of a Delta table goes through here.

Each write is idempotent by construction, so a replayed micro-batch or a re-run task leaves the
table as it was: insert-if-missing MERGE on the natural key, recompute-and-upsert MERGE, or an
overwrite of a whole range with replaceWhere.
"""

from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql import DataFrame, SparkSession

from jobs.config import Settings
from jobs.tables import TableDef


def read(spark: SparkSession, settings: Settings, table: TableDef, namespace: str = "main") -> DataFrame:
    return spark.read.format("delta").load(settings.table_path(table.name, namespace))


def _on(key: Sequence[str], extra: str | None = None) -> str:
    cond = " AND ".join(f"t.`{k}` = s.`{k}`" for k in key)
    return f"({cond}) AND ({extra})" if extra else cond


def _delta(spark: SparkSession, path: str):
    from delta.tables import DeltaTable

    return DeltaTable.forPath(spark, path)


def insert_missing(spark: SparkSession, path: str, rows: DataFrame, key: Sequence[str]) -> dict:
    """Insert rows whose key is not in the table yet; rows already there are left alone.

    `rows` must hold each key once.
    """
    result = _delta(spark, path).alias("t").merge(rows.alias("s"), _on(key)).whenNotMatchedInsertAll().execute()
    return _metrics(result)


def upsert(
    spark: SparkSession, path: str, rows: DataFrame, key: Sequence[str], target_filter: str | None = None
) -> dict:
    """Replace the rows of these keys by the given values (a recomputation), insert new ones.

    `target_filter` is a predicate on the target alone (`t.`), for partition pruning.
    """
    result = (
        _delta(spark, path)
        .alias("t")
        .merge(rows.alias("s"), _on(key, target_filter))
        .whenMatchedUpdateAll()
        .whenNotMatchedInsertAll()
        .execute()
    )
    return _metrics(result)


def apply_changes(
    spark: SparkSession, path: str, changes: DataFrame, key: Sequence[str], target_filter: str | None = None
) -> dict:
    """Upsert rows with `_delete` false and delete those with `_delete` true, in one commit."""
    result = (
        _delta(spark, path)
        .alias("t")
        .merge(changes.alias("s"), _on(key, target_filter))
        .whenMatchedDelete(condition="s._delete")
        .whenMatchedUpdateAll(condition="NOT s._delete")
        .whenNotMatchedInsertAll(condition="NOT s._delete")
        .execute()
    )
    return _metrics(result)


def overwrite(rows: DataFrame, path: str, replace_where: str | None = None) -> None:
    """Overwrite the whole table, or only the rows matching `replace_where`, atomically."""
    writer = rows.write.format("delta").mode("overwrite")
    if replace_where:
        writer = writer.option("replaceWhere", replace_where)
    writer.save(path)


def _metrics(result: DataFrame | None) -> dict:
    """Delta returns one row of affected/updated/deleted/inserted counts per MERGE."""
    if result is None:
        return {}
    row = result.first()
    return row.asDict() if row else {}


def _hadoop_path(spark: SparkSession, path: str):
    jvm = spark.sparkContext._jvm
    hadoop_path = jvm.org.apache.hadoop.fs.Path(path)
    return hadoop_path, hadoop_path.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration())


def exists(spark: SparkSession, path: str) -> bool:
    """Works for local paths and object stores alike (through Hadoop's FileSystem)."""
    hadoop_path, fs = _hadoop_path(spark, path)
    return bool(fs.exists(hadoop_path))


def rename(spark: SparkSession, source: str, target: str) -> None:
    src, fs = _hadoop_path(spark, source)
    dst, _ = _hadoop_path(spark, target)
    if not fs.rename(src, dst):
        raise OSError(f"could not move {source} to {target}")
