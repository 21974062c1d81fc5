"""The Spark session builder shared by streaming, batch, verification and tests.

Jars come from `.cache/jars/spark` (resolved by Maven from infra/maven/spark/pom.xml), never
from Ivy, and `.cache/jars/reader` (the strict reading's UDF, built from jvm/reader). Under
spark-submit the master and jars come from the command line instead.
"""

from __future__ import annotations

import os
import sys

from eo.core.sources import SELECTED, SOURCE_VARIABLE
from eo.runtime import job_log
from eo.runtime.class_archive import java_options
from eo.runtime.config import REPO_ROOT, Settings, machine_java_options
from eo.runtime.environment import environment

LOG_CONFIG = REPO_ROOT / "infra" / "conf" / "spark-log4j2.properties"
DRIVER_JAVA_OPTIONS = f"-Dlog4j2.configurationFile=file:{LOG_CONFIG}"

# Small defaults for a 2-core machine; every one can be overridden per job.
BASE_CONF: dict[str, str] = {
    "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
    "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.shuffle.partitions": "4",
    "spark.default.parallelism": "4",
    "spark.databricks.delta.snapshotPartitions": "2",
    "spark.databricks.delta.schema.autoMerge.enabled": "false",
    # Delta 4 ignores VACUUM's RETAIN n HOURS (unless 0) for the table's deletedFileRetentionDuration
    # (delta-io/delta#5028): the retention lake_maintenance checked against the streams' lag
    # would not be the one applied.
    "spark.databricks.delta.vacuum.retentionWindowIgnore.enabled": "false",
    # VACUUM lists a table in this many tasks (Spark's default, 10,000, is five times slower for a
    # tiny table on 2 cores: docs/history/hot-path-journal.md), like the shuffles above.
    "spark.sql.sources.parallelPartitionDiscovery.parallelism": "4",
    # Merges write few, larger files instead of one per shuffle partition.
    "spark.databricks.delta.merge.repartitionBeforeWrite.enabled": "true",
    # Batches are persisted to be read twice, once: compressing the cache doubled the cost of
    # parsing a batch (make bench, 2M records: docs/history/hot-path-journal.md).
    "spark.sql.inMemoryColumnarStorage.compressed": "false",
    "spark.sql.streaming.stateStore.providerClass": (
        "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"
    ),
    "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled": "true",
    # An instance that takes over loads the newest uploaded snapshot and replays the changelogs
    # after it. A snapshot at every version (not every 10th), uploaded by the maintenance task
    # every 5 s (not 60). After a catch-up of 500k-record batches, replaying five changelogs took
    # most of a 6,000-record first batch (docs/history/hot-path-journal.md, "Recovery").
    "spark.sql.streaming.stateStore.minDeltasForSnapshot": "1",
    "spark.sql.streaming.stateStore.maintenanceInterval": "5s",
    # Counting the state's rows costs a lookup before every write; the dedup states do not need it.
    "spark.sql.streaming.stateStore.rocksdb.trackTotalNumberOfRows": "false",
    # An idle query asks Kafka for new records every 10 ms by default: it then often plans a burst
    # when only the first of its partitions has it in the log, and the rest waits for the next
    # micro-batch, a second batch's time. Asking every 100 ms delays an idle query's first batch a
    # little, and nothing under load (docs/history/hot-path-journal.md, "Bursts read as one batch").
    "spark.sql.streaming.pollingDelay": "100ms",
    "spark.ui.showConsoleProgress": "false",
    # Every server this project starts listens on loopback only.
    "spark.driver.host": "127.0.0.1",
    "spark.driver.bindAddress": "127.0.0.1",
    "spark.driver.memory": "4g",
    # With the class archive (eo/runtime/class_archive.py), once `make setup` has built it.
    "spark.driver.extraJavaOptions": f"{DRIVER_JAVA_OPTIONS} {java_options()}".strip(),
}


LOOPBACK = ("spark.driver.host", "spark.driver.bindAddress")
JAVA = "spark.driver.extraJavaOptions"


def with_machine_options(options: str) -> str:
    """A driver JVM's `options`, then this machine's own (EO_JVM_OPTIONS), for a JVM this project
    launches: a session's own, or spark-submit's (eo/runtime/submit.py)."""
    return " ".join(filter(None, (options, machine_java_options())))


EXECUTOR_JAVA = "spark.executor.extraJavaOptions"


def machine_executor_options() -> dict[str, str]:
    """This machine's JVM options (EO_JVM_OPTIONS) for the executors a job starts on a cluster
    (a standalone worker launches them; in local mode the driver's JVM runs the tasks): none
    when unset, and the deployed conf never carries them."""
    options = machine_java_options()
    return {EXECUTOR_JAVA: options} if options else {}


def under_spark_submit() -> bool:
    """spark-submit starts the JVM itself and hands Python the gateway port."""
    return "PYSPARK_GATEWAY_PORT" in os.environ


def session_conf(settings: Settings, conf: dict[str, str] | None = None, submitted: bool = False) -> dict[str, str]:
    """The session's settings. `submitted` (under spark-submit): the launcher chose the master,
    the jars and where the driver listens (this project's spark-submit: loopback, LAUNCH_KEYS in
    eo/runtime/submit.py); on EMR the executors on other hosts must reach the driver, so loopback
    is not imposed on it."""
    merged = {**BASE_CONF, "spark.ui.enabled": os.environ.get("EO_SPARK_UI", "false")}
    if submitted:
        merged = {k: v for k, v in merged.items() if k not in LOOPBACK}
    else:
        logged = job_log.java_options()  # a command at a terminal: Spark's log to its file
        first = f"{logged} {java_options()}".strip() if logged else merged[JAVA]
        merged[JAVA] = with_machine_options(first)  # the JVM this session starts
        merged["spark.master"] = settings.spark_master
        merged["spark.jars"] = ",".join(environment(settings).jars())
        merged.update(machine_executor_options())
    # The executors' Python serves the driver's source: their tasks import its table definitions.
    merged[f"spark.executorEnv.{SOURCE_VARIABLE}"] = SELECTED.name
    merged.update(settings.spark_conf)  # the environment's own (object store, log store)
    merged.update(conf or {})
    return merged


def build_session(app_name: str, settings: Settings, conf: dict[str, str] | None = None):
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.appName(app_name)
    submitted = under_spark_submit()
    if not submitted:
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")  # loopback, before the JVM starts
        # Python workers (applyInArrow) run this interpreter and import the project's packages.
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        paths = os.environ.get("PYTHONPATH", "").split(os.pathsep)
        if str(REPO_ROOT) not in paths:
            os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), *paths]))
    merged = session_conf(settings, conf, submitted)
    for key, value in merged.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel(os.environ.get("EO_SPARK_LOG_LEVEL", "WARN"))
    return spark


def close_state_stores() -> None:
    """Close this process's engine state (RocksDB) before it exits, or once its queries are over and
    their checkpoint is to move or go (ops/reset.py, a standby's rehearsal), if a session is up.

    At JVM exit Spark's shutdown hook deletes the state stores' local folders while they are still
    open; RocksDB's close then failed on its missing MANIFEST and once crashed the JVM (SIGSEGV,
    exit -6) after the job had committed everything (make bench, history phase)."""
    from pyspark.sql import SparkSession

    spark = SparkSession.getActiveSession()
    if spark is None:
        return
    # The Scala object itself: its package-private methods have no static forwarder.
    stores = getattr(getattr(spark._jvm.org.apache.spark.sql.execution.streaming.state, "StateStore$"), "MODULE$")
    # Maintenance first, without the stores' lock: `stop()` alone holds that lock while it waits
    # for maintenance threads that need it, until its shutdown timeout (minutes; seen in the bench).
    stores.stopMaintenanceTaskWithoutLock()
    stores.stop()
