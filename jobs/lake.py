"""The thin I/O layer: every read and write of a Delta table goes through here.

Each write is idempotent by construction, so a replayed micro-batch or a re-run task leaves the
table as it was: insert-if-missing MERGE on the natural key, recompute-and-upsert MERGE, or an
overwrite of a whole range with replaceWhere.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from pyspark.sql import DataFrame, SparkSession

from jobs.config import Settings
from jobs.fencing import Fenced
from jobs.tables import TableDef

# A Delta write's transaction id: (app id, version). Delta skips a write whose version is not
# above the last one recorded for that app id on the table; jobs/fencing.py builds on that.
Txn = tuple[str, int]
TXN_APP = "spark.databricks.delta.write.txnAppId"
TXN_VERSION = "spark.databricks.delta.write.txnVersion"


def read(spark: SparkSession, settings: Settings, table: TableDef, namespace: str = "main") -> DataFrame:
    return spark.read.format("delta").load(settings.table_path(table.name, namespace))


def _on(key: Sequence[str], extra: str | None = None) -> str:
    cond = " AND ".join(f"t.`{k}` = s.`{k}`" for k in key)
    return f"({cond}) AND ({extra})" if extra else cond


def _delta(spark: SparkSession, path: str):
    from delta.tables import DeltaTable

    return DeltaTable.forPath(spark, path)


@contextmanager
def _transaction_id(spark: SparkSession, txn: Txn | None) -> Iterator[None]:
    """MERGE takes its transaction id from the session (one session per streaming query)."""
    if txn is None:
        yield
        return
    spark.conf.set(TXN_APP, txn[0])
    spark.conf.set(TXN_VERSION, str(txn[1]))
    try:
        yield
    finally:
        spark.conf.unset(TXN_APP)
        spark.conf.unset(TXN_VERSION)


def _merge(spark: SparkSession, path: str, build, txn: Txn | None, skip_means_fenced: bool = True) -> dict:
    with _transaction_id(spark, txn):
        metrics = _metrics(build(_delta(spark, path).alias("t")).execute())
    if txn and not metrics and skip_means_fenced:
        # Delta returns no metrics when it skipped the write: a newer epoch claimed the table.
        raise Fenced(f"Delta skipped a write to {path} with version {txn[1]}: a newer instance claimed it")
    return metrics


def insert_missing(
    spark: SparkSession,
    path: str,
    rows: DataFrame,
    key: Sequence[str],
    target_filter: str | None = None,
    txn: Txn | None = None,
) -> dict:
    """Insert rows whose key is not in the table yet; rows already there are left alone.

    `rows` must hold each key once. `target_filter` is a predicate on the target alone (`t.`)
    that lets Delta skip files that cannot hold these keys.
    """
    return _merge(
        spark, path, lambda t: t.merge(rows.alias("s"), _on(key, target_filter)).whenNotMatchedInsertAll(), txn
    )


def upsert(
    spark: SparkSession,
    path: str,
    rows: DataFrame,
    key: Sequence[str],
    target_filter: str | None = None,
    txn: Txn | None = None,
) -> dict:
    """Replace the rows of these keys by the given values (a recomputation), insert new ones."""
    return _merge(
        spark,
        path,
        lambda t: t.merge(rows.alias("s"), _on(key, target_filter)).whenMatchedUpdateAll().whenNotMatchedInsertAll(),
        txn,
    )


def apply_changes(
    spark: SparkSession,
    path: str,
    changes: DataFrame,
    key: Sequence[str],
    target_filter: str | None = None,
    txn: Txn | None = None,
) -> dict:
    """Upsert rows with `_delete` false and delete those with `_delete` true, in one commit."""
    return _merge(
        spark,
        path,
        lambda t: (
            t.merge(changes.alias("s"), _on(key, target_filter))
            .whenMatchedDelete(condition="s._delete")
            .whenMatchedUpdateAll(condition="NOT s._delete")
            .whenNotMatchedInsertAll(condition="NOT s._delete")
        ),
        txn,
    )


def accumulate(
    spark: SparkSession, path: str, rows: DataFrame, key: Sequence[str], values: Sequence[str], txn: Txn
) -> dict:
    """Add the rows' `values` to the stored ones, inserting new keys.

    Adding is not idempotent by itself: the transaction id is what makes it exactly-once, since
    Delta skips a replayed batch's version instead of adding it twice. Hence `txn` is required,
    with an app id that stays the same across restarts. Returns {} for a skipped replay.
    """
    added = {c: f"t.`{c}` + s.`{c}`" for c in values}
    return _merge(
        spark,
        path,
        lambda t: t.merge(rows.alias("s"), _on(key)).whenMatchedUpdate(set=added).whenNotMatchedInsertAll(),
        txn,
        skip_means_fenced=False,
    )


def claim(spark: SparkSession, table: TableDef, path: str, txn: Txn) -> None:
    """An empty commit that records `txn` on the table: writes with lower versions are skipped."""
    empty = spark.createDataFrame([], table.ddl)
    empty.write.format("delta").mode("append").option("txnAppId", txn[0]).option("txnVersion", txn[1]).save(path)


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
