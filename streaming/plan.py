"""The streaming query's plan: Kafka records in, the rows one foreachBatch finishes out.

From one read of Kafka, the engine's state keeps rows of three kinds (`_kind`):

- B: every record as it came (bronze: the full log, duplicates and bad records included);
- Q: a record the strict reading refused (quarantine, with its reason);
- E: a valid event seen for the first time (silver; gold's metrics and sessions add it).

The tasks' writers then run in the plan itself (streaming/task_writes.py `plan_writer`): each
writes its rows' files and returns their add actions and its share of gold (its metric sums and
its sessions as intervals), which the batch's job finishes (`finish_in_tasks`: the sessions'
owners merge them and count the users new to each minute against the stored sessions).

The engine keeps one state (RocksDB, checkpointed with the batch, exactly-once), Spark's own
streaming deduplication, each partition sorted into arrival order in front of it: every event id
ever accepted. A copy of an event already seen is dropped whatever its time or however late it
is, and of the copies of a new event within one micro-batch the lowest (partition, offset) wins,
wherever producers put them. Bronze records each record's micro-batch, and the batch rebuild
keeps the same copy: the lowest (ingest batch, topic, partition, offset)
(eo/core/transforms/dedup.py). A refused record is keyed by its own coordinates.

After a reset (`python -m ops.reset`), the state is rebuilt from the seed table (the rebuilt
silver's ids, ops/reset.py): seed rows enter the state and are then dropped, so nothing is
written twice. While the seed is being read, records from Kafka whose event id the seed holds
are set aside first (`history`): the state keeps whichever row reaches it first, and a live copy
must never win over its original.
"""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming import DataStreamWriter, StreamingQuery

from eo.core.tables import EVENT_ID, EVENT_TIME, QUARANTINE, READ_ID, RECORD_COLUMNS, SEED, SILVER
from eo.core.transforms.dedup import check_streaming_plan, first_copy_state
from eo.core.transforms.metrics import window_start_column
from eo.core.transforms.parse import Catalogue
from eo.runtime.config import Settings
from eo.runtime.environment import environment
from eo.runtime.kafka_admin import spark_kafka_options
from eo.runtime.reading import catalogue, classify_records
from streaming import poison, task_writes
from streaming.parts import OUT_DDL

# The Kafka consumer of every read of the topic, stream and batch alike.
CONSUMER_OPTIONS = {
    # A task's consumer seeks to its batch's offsets while a fetch of the previous task may still
    # wait at the broker for new data (500 ms by default): each Kafka task of a small batch waited
    # it out, most of the job for 1,000 records (docs/history/hot-path-journal.md). The job never
    # waits for data inside a task.
    "kafka.fetch.max.wait.ms": "10",
    # A task reads its whole range in one go: at Kafka's defaults (500 records a poll, 1 MB a
    # partition's fetch) each poll handed over a few hundred records, and reading 1M records
    # alone took about a third longer than with these (docs/history/hot-path-journal.md,
    # "The Kafka read").
    "kafka.max.poll.records": "10000",
    "kafka.max.partition.fetch.bytes": str(8 << 20),
}


@dataclass(frozen=True)
class PlanInputs:
    """What the live query's plan reads from the lake when it is built, beyond its sources (the
    seed's history too while seeding, never planned ahead): a plan built earlier (a standby's,
    streaming/query.py `Planned`) is only used while these are unchanged."""

    poison: tuple[tuple, ...]  # streaming/poison.py `recorded`
    catalogue: Catalogue  # eo/runtime/reading.py `catalogue`

    @classmethod
    def now(cls, settings: Settings) -> PlanInputs:
        return cls(tuple(poison.recorded(settings)), catalogue(settings))


def _valid() -> Column:
    return F.col("reason").isNull()


@dataclass(frozen=True)
class Source:
    """How the query reads Kafka: where a new checkpoint starts, and how much a batch takes."""

    starting_offsets: str | None = None  # JSON of offsets, for a new checkpoint only
    max_offsets_per_trigger: int | None = None
    # False only while a run reads past gaps a person accepted, until its committed offsets are
    # past them (streaming/query.py `cross_accepted_gaps`); every batch is then checked before it
    # commits (streaming/source_loss.py `BatchGuard`).
    fail_on_data_loss: bool = True


def kafka_records(spark: SparkSession, settings: Settings, source: Source) -> DataFrame:
    reader = spark.readStream.format("kafka").options(**spark_kafka_options(settings))
    reader = reader.option("subscribe", settings.topic).options(**CONSUMER_OPTIONS)
    # Loud, not silent, if Kafka's retention deleted records before bronze got them.
    reader = reader.option("failOnDataLoss", "true" if source.fail_on_data_loss else "false")
    if source.starting_offsets:
        reader = reader.option("startingOffsets", source.starting_offsets)
    if source.max_offsets_per_trigger:
        reader = reader.option("maxOffsetsPerTrigger", str(source.max_offsets_per_trigger))
    return as_records(reader.load())


def kafka_records_between(spark: SparkSession, settings: Settings, start: str, end: str) -> DataFrame:
    """The records between two offsets (JSON, as a checkpoint holds them), read again from Kafka."""
    reader = spark.read.format("kafka").options(**spark_kafka_options(settings), **CONSUMER_OPTIONS)
    reader = reader.option("subscribe", settings.topic)
    return as_records(reader.option("startingOffsets", start).option("endingOffsets", end).load())


def as_records(kafka: DataFrame) -> DataFrame:
    """Kafka's rows in bronze's shape."""
    return kafka.select(
        F.col("key").cast("string").alias("key"),
        "value",
        F.col("topic").alias("kafka_topic"),
        F.col("partition").alias("kafka_partition"),
        F.col("offset").alias("kafka_offset"),
        F.col("timestamp").alias("kafka_timestamp"),
    )


def seed_records(spark: SparkSession, settings: Settings, whole: bool) -> DataFrame:
    """The seed table as a stream: empty, except right after a reset. `whole`: from its first
    version, as the run that reads a seed into the state does (streaming/run.py `_seeding`); else
    only what is added from now on. The option counts on a new checkpoint alone (one that has
    offsets keeps its own): there the seed has nothing to read, and taking its snapshot first
    cost the pipeline phase four small Spark jobs before its first batch
    (docs/history/hot-path-journal.md)."""
    reader = spark.readStream.format("delta")
    if not whole:
        reader = reader.option("startingVersion", "latest")
    return reader.load(settings.table_path(SEED.name))


def _coordinates() -> Column:
    return F.format_string("%s/%d/%d", "kafka_topic", "kafka_partition", "kafka_offset")


def first_key() -> Column:
    """State 1's key: the event id of a valid record; the coordinates (unique) of a refused one."""
    return F.when(_valid(), F.concat(F.lit("E|"), F.col(READ_ID))).otherwise(F.concat(F.lit("Q|"), _coordinates()))


def _as_reading(seed: DataFrame, read: DataFrame) -> DataFrame:
    """Seed rows in the shape of valid readings (no coordinates, no reason), flagged."""
    present = {c: F.col(c) for c in seed.columns}
    present.setdefault(READ_ID, F.col(EVENT_ID))  # the state's key, where the source names it otherwise
    columns = [
        present[c].alias(c) if c in present else F.lit(None).cast(t).alias(c) for c, t in read.dtypes if c != "_seed"
    ]
    return seed.select(*columns, F.lit(True).alias("_seed"))


# The columns each kind of row needs downstream; the others are nulled before the first state
# (a refused record carries no event's fields, an event not its raw text): each state shuffles its
# rows, and a slim row ships fewer bytes (docs/history/hot-path-journal.md: 8 MB less a 500k
# batch, no time saved).
KIND_COLUMNS = {
    "Q": QUARANTINE.columns,
    "E": [*SILVER.columns, "window_start"],
}
INTERNAL = ("_kind", "_first", "_seed")


def _slim(rows: DataFrame) -> DataFrame:
    def kept(column: str) -> Column:
        kinds = [kind for kind, needed in KIND_COLUMNS.items() if column in needed]
        return F.when(F.col("_kind").isin(*kinds), F.col(column)).alias(column)

    return rows.select(*(F.col(c) if c in INTERNAL else kept(c) for c in rows.columns))


def first_copies(
    records: DataFrame, read: DataFrame, seed: DataFrame | None = None, history: DataFrame | None = None
) -> DataFrame:
    """The B rows of `records` and the Q and E rows of their reading `read` that state 1 keeps (see
    the module), in OUTPUT's shape, with `_seed`: a seed row, which the writers do not write.

    `history` (a static frame of the seed, only while the seed is being read): what the seed
    holds is not new, whichever row the state meets first."""
    readings = read.withColumn("_seed", F.lit(False))
    if history is not None:
        readings = readings.join(history.select(EVENT_ID).distinct(), on=EVENT_ID, how="left_anti")
    if seed is not None:
        readings = readings.unionByName(_as_reading(seed, readings))
    readings = readings.withColumn("_kind", F.when(_valid(), F.lit("E")).otherwise(F.lit("Q")))
    first = first_copy_state(_slim(readings.withColumn("_first", first_key())), "_first", "_seed")
    # What derives from a row's own fields is added after the first state, not carried through it.
    first = first.withColumn("window_start", F.when(F.col("_kind") == "E", window_start_column()))
    first = first.withColumn("event_date", F.to_date(EVENT_TIME))
    # Bronze's ingest batch is known only when the batch runs (streaming/task_writes.py MARK).
    bronze = records.select(F.lit("B").alias("_kind"), *RECORD_COLUMNS)
    return aligned(bronze).withColumn("_seed", F.lit(False)).unionByName(aligned(first, "_seed"))


UNSUPPORTED_OPERATION_CHECK = "spark.sql.streaming.unsupportedOperationCheck"


def start_checked(writer: DataStreamWriter, plan: DataFrame) -> StreamingQuery:
    """Start `writer`, a query of `plan`. Spark's own checks refuse the sort into arrival order
    that the first-copy state needs (eo/core/transforms/dedup.py); they run here on the rest of
    the plan, and the query starts with them off."""
    spark = plan.sparkSession
    check_streaming_plan(plan)
    before = spark.conf.get(UNSUPPORTED_OPERATION_CHECK)
    spark.conf.set(UNSUPPORTED_OPERATION_CHECK, "false")
    try:
        return writer.start()
    finally:
        spark.conf.set(UNSUPPORTED_OPERATION_CHECK, before)


# Every kind in one schema; the columns a kind does not have are null. The event's columns are
# silver's, which its source declares.
OUTPUT = (
    ("_kind", "string"),
    ("key", "string"),
    ("value", "binary"),
    ("kafka_topic", "string"),
    ("kafka_partition", "int"),
    ("kafka_offset", "bigint"),
    ("kafka_timestamp", "timestamp"),
    ("ingest_batch", "bigint"),
    ("raw_value", "string"),
    ("reason", "string"),
    *((name, kind) for name, kind in SILVER.column_types if name not in RECORD_COLUMNS),
    *(((READ_ID, "string"),) if READ_ID not in SILVER.columns else ()),  # quarantine's, the state's key
    ("window_start", "timestamp"),
)


def aligned(frame: DataFrame, *extra: str) -> DataFrame:
    present = set(frame.columns)
    columns = [F.col(c) if c in present else F.lit(None).cast(t).alias(c) for c, t in OUTPUT]
    return frame.select(*columns, *extra)


def events_plan(
    spark: SparkSession,
    settings: Settings,
    records: DataFrame,
    seeding: bool = False,
    rehearsal_files: str | None = None,
    inputs: PlanInputs | None = None,
) -> DataFrame:
    """The whole query: records (from Kafka) and the seed -> the rows one foreachBatch finishes
    (streaming/task_writes.py `finish_in_tasks`): each writing task's file actions and gold parts.

    Records isolated as poison so far are quarantined unread (streaming/poison.py).
    `seeding`: the seed is being read (the first run after a reset): read it whole, and set aside
    what it holds; otherwise the seed's stream starts at its latest version (`seed_records`).
    `rehearsal_files`: a dry run of the plan (streaming/standby.py rehearse): it reads none of the
    seed, and its tasks write their files under this folder, with no batch mark.
    `inputs`: the poison list and the catalogue the plan rests on (read now when not given)."""
    inputs = inputs or PlanInputs.now(settings)
    read = classify_records(spark, settings, records, inputs.poison, inputs.catalogue)
    history = spark.read.format("delta").load(settings.table_path(SEED.name)) if seeding else None
    seed = seed_records(spark, settings, whole=seeding)
    accepted = first_copies(records, read, seed, history)
    schemas = {t.name: environment(settings).table(t.name).schema() for t in task_writes.KIND_TABLES.values()}
    goals = task_writes.targets(settings, schemas, root=rehearsal_files)
    # As many sessions' owners as the job's shuffle partitions (task_writes.finish_in_tasks).
    owners = int(spark.conf.get("spark.sql.shuffle.partitions"))
    writer = task_writes.plan_writer(settings, goals, owners, rehearsal=rehearsal_files is not None)
    return accepted.mapInArrow(writer, OUT_DDL)
