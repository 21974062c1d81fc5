"""The Spark side of Delta I/O: reads, whole-table or range overwrites, and path checks.

Spark reads and whole-range overwrites (replaceWhere) for the batch side, where no other writer
goes (the `_rebuild/` namespace, the seed): a re-run task leaves the table as it was. The live
tables are created, altered and replaced by delta-rs alone (`ensure_table`, `add_new_columns`,
`overwrite_live`: files from the tasks, commits with delta-rs, eo/runtime/commits.py).
"""

from __future__ import annotations

import datetime as dt
import json
import time

from pyspark.sql import DataFrame, SparkSession

from eo.core.evolution import SchemaRefused, delta_type, new_columns
from eo.core.reference import ad_rows, campaign_rows
from eo.core.tables import ADS, ALL, CAMPAIGNS, REFERENCE, REQUIRED_PROPERTY, TableDef
from eo.runtime.cli import Refused
from eo.runtime.config import Settings
from eo.runtime.environment import environment


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


def overwrite_live(
    rows: DataFrame, settings: Settings, table: TableDef, owner, replace_where: str | None = None, check=None
) -> None:
    """Replace a live table's rows (the stream's tables: `rebuild --target main`, a reset) by the
    stream's commit protocol, delta-rs's, never Spark's: its S3 log stores can overwrite a commit
    delta-rs made (docs/cloud.md). The whole table: the tasks write the files and the driver
    commits them as one overwrite. A range (gold for an interval: O(keys)): its rows through
    delta-rs. `owner` (commits.Txn or None): the epoch that claimed the table; a newer one refuses
    it. `check`: the lease's fence check, run right before each commit."""
    import uuid

    from eo.runtime import commits
    from eo.runtime.data_files import add_actions
    from eo.runtime.task_files import written_by_tasks

    target = environment(settings).table(table.name)
    if replace_where is not None:
        commits.replace_range(target, rows.toArrow(), replace_where, owner, check)
        return
    target.refresh()
    uri, schema = settings.table_path(table.name), target.schema()
    name = f"rebuild-{uuid.uuid4().hex[:8]}"
    actions = written_by_tasks(rows, settings, uri, schema, list(table.partition_by), name)
    append_only = table.properties.get("delta.appendOnly") == "true"
    commits.replace_files(target, add_actions(actions), owner, append_only=append_only, check=check)


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


def move_aside(spark: SparkSession, path: str, why: str) -> str | None:
    """`path` (a checkpoint) moved to `<path>.<why>-<UTC time>`, kept for a post-mortem or to go
    back; returns where, or None when nothing was there."""
    if not exists(spark, path):
        return None
    aside = f"{path}.{why}-{dt.datetime.now(dt.UTC):%Y%m%dT%H%M%SZ}"
    rename(spark, path, aside)
    return aside


def table_exists(settings: Settings, path: str) -> bool:
    """A Delta table is at `path`: its log holds its first commit or a checkpoint (once old commits
    are cleaned up). Two file checks, where Spark would load the table's state
    (docs/history/hot-path-journal.md)."""
    files = environment(settings).lake_files
    log = f"{path}/_delta_log"
    return files.exists(f"{log}/{0:020d}.json") or files.exists(f"{log}/_last_checkpoint")


def ensure_table(spark, settings: Settings, table: TableDef, namespace: str = "main") -> str:
    """Create the Delta table at its configured path if it is not there; return the path."""
    from delta.tables import DeltaTable

    path = settings.table_path(table.name, namespace)
    if table_exists(settings, path):  # the usual case on a restart: no Spark job
        add_new_columns(spark, settings, table, namespace)
        return path
    if _delta_rs_owns(table, namespace):
        _create_live(spark, settings, table)
        return path
    # Two jobs may create the same table at once (a backfill next to a scheduled run): the loser
    # sees a half-made location or loses the race for version 0. It waits and finds the table made.
    for attempt in range(CREATE_ATTEMPTS):
        if DeltaTable.isDeltaTable(spark, path):  # the usual case on a restart: nothing to load
            return path
        try:
            _create(spark, table, path, namespace)
            return path
        except Exception as error:  # py4j wraps Delta's exceptions: match by name
            if attempt == CREATE_ATTEMPTS - 1 or not any(mark in str(error) for mark in CREATE_RACE_MARKS):
                raise
            time.sleep(1 + attempt)
    return path


def _delta_rs_owns(table: TableDef, namespace: str) -> bool:
    """A live table of the live lake: delta-rs alone creates, alters and writes it."""
    return table.live and namespace == "main"


def add_new_columns(spark, settings: Settings, table: TableDef, namespace: str = "main") -> list[str]:
    """Columns the definition has and the stored table lacks (a lake made by an older release, such
    as bronze before INGEST_BATCH, or a field its source's declaration added) are added, nullable:
    older rows read them as null. Returns them. A declared table's change its stored rows cannot
    follow (eo/core/evolution.py) is Refused, in one line, before anything is changed."""
    from pyspark.sql.types import StructType

    stored = environment(settings).table(table.name, namespace)
    fields = json.loads(stored.current.schema().to_json())["fields"]
    names = {f["name"] for f in fields}
    if table.declared_required is not None and namespace == "main":
        before = stored.refresh().metadata().configuration.get(REQUIRED_PROPERTY)
        try:
            new_columns(
                table.name,
                table.column_types,
                [(f["name"], delta_type(f["type"])) for f in fields],
                table.declared_required,
                None if before is None else [n for n in before.split(",") if n],
            )
        except SchemaRefused as refused:
            raise Refused(str(refused)) from None
    new = [field for field in StructType.fromDDL(table.ddl).fields if field.name not in names]
    if new:
        columns = ", ".join(f"{field.name} {field.dataType.simpleString()}" for field in new)
        if _delta_rs_owns(table, namespace):
            from deltalake import Field

            nullable = [Field.from_json(json.dumps({**field.jsonValue(), "nullable": True})) for field in new]
            stored.refresh().alter.add_columns(nullable)
        else:
            spark.sql(f"ALTER TABLE delta.`{settings.table_path(table.name, namespace)}` ADD COLUMNS ({columns})")
        print(f"[lake] {table.name}: added {columns} (older rows read them as null)", flush=True)
    return [field.name for field in new]


CREATE_ATTEMPTS = 5
CREATE_RACE_MARKS = (
    "DELTA_CREATE_TABLE_WITH_NON_EMPTY_LOCATION",
    "ProtocolChanged",
    "ConcurrentWrite",
    "FileAlreadyExists",
)


def _create_live(spark, settings: Settings, table: TableDef) -> None:
    """A live table made by delta-rs, the engine that writes it, with its properties: no Spark
    commit is ever in its log. Two jobs may create it at once: the loser finds it made."""
    from deltalake import DeltaTable, Schema
    from pyspark.sql.types import StructType

    # Spark's JSON of a schema is Delta's: the same types whichever engine reads the DDL.
    schema = Schema.from_json(json.dumps(StructType.fromDDL(table.ddl).jsonValue()))
    target = environment(settings).table(table.name)
    for attempt in range(CREATE_ATTEMPTS):
        try:
            DeltaTable.create(
                target.uri,
                schema,
                mode="ignore",
                partition_by=list(table.partition_by) or None,
                configuration=dict(table.properties),
                storage_options=target.storage_options,
                # Delta's own keys checked; a platform key (eo.*) is not Delta's to know.
                raise_if_key_not_exists=all(key.startswith("delta.") for key in table.properties),
            )
            return
        except Exception:  # another job's version 0 landed first, or a half-made location
            if table_exists(settings, settings.table_path(table.name)):
                return
            if attempt == CREATE_ATTEMPTS - 1:
                raise
            time.sleep(1 + attempt)


def _create(spark, table: TableDef, path: str, namespace: str) -> None:
    from delta.tables import DeltaTable
    from pyspark.sql.types import StructType

    builder = DeltaTable.createIfNotExists(spark).location(path)
    builder = builder.addColumns(StructType.fromDDL(table.ddl))
    if table.partition_by:
        builder = builder.partitionedBy(*table.partition_by)
    # The rebuild namespace is scratch space, rewritten whole: no append-only guard there.
    for key, value in (table.properties if namespace == "main" else {}).items():
        builder = builder.property(key, value)
    builder.execute()


def ensure_tables(spark, settings: Settings, namespace: str = "main", names=None) -> None:
    for name in names or ALL:
        ensure_table(spark, settings, ALL[name], namespace)


def write_reference(spark, settings, namespace: str = "main") -> None:
    """(Re)write both reference tables; the same rows every time, so re-running is harmless."""

    for table, rows in ((CAMPAIGNS, campaign_rows()), (ADS, ad_rows())):
        path = ensure_table(spark, settings, table, namespace)
        overwrite(spark.createDataFrame(rows, table.ddl), path)


def ensure_reference(spark, settings) -> None:
    """Write the reference tables when either is missing or empty (a lake made before ads existed)."""

    for table in REFERENCE:
        ensure_table(spark, settings, table)
    if any(not environment(settings).table(table.name).refresh().file_uris() for table in REFERENCE):
        write_reference(spark, settings)
