"""The Spark side of Delta I/O: reads, whole-table or range overwrites, and path checks.

Spark reads and whole-range overwrites (replaceWhere) for the batch side: a re-run task leaves the
table as it was. The stream's transactional commits are in jobs/commits.py (delta-rs).
"""

from __future__ import annotations

from pyspark.sql import DataFrame, SparkSession

from jobs.config import Settings
from jobs.tables import TableDef


def read(spark: SparkSession, settings: Settings, table: TableDef, namespace: str = "main") -> DataFrame:
    return spark.read.format("delta").load(settings.table_path(table.name, namespace))


def overwrite(rows: DataFrame, path: str, replace_where: str | None = None, even_append_only: bool = False) -> None:
    """Overwrite the whole table, or only the rows matching `replace_where`, atomically.

    `even_append_only`: a table that only grows (silver) is rebuilt whole all the same: its
    append-only guard is lifted for this one commit and set again (a full rebuild, a reset)."""
    writer = rows.write.format("delta").mode("overwrite")
    if replace_where:
        writer = writer.option("replaceWhere", replace_where)
    if not even_append_only:
        writer.save(path)
        return
    spark = rows.sparkSession
    spark.sql(f"ALTER TABLE delta.`{path}` SET TBLPROPERTIES ('delta.appendOnly' = 'false')")
    try:
        writer.save(path)
    finally:
        spark.sql(f"ALTER TABLE delta.`{path}` SET TBLPROPERTIES ('delta.appendOnly' = 'true')")


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
