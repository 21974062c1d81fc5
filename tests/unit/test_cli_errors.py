"""Known failures of every command line end in one line that says what to do, and an exit code."""

from __future__ import annotations

import pytest
from confluent_kafka import KafkaError, KafkaException

from eo.runtime import cli
from eo.runtime.jars import MissingJarsError

pytestmark = pytest.mark.unit


def test_a_broker_that_is_down_says_how_to_start_it():
    code, line = cli.explain(KafkaException(KafkaError(KafkaError._TRANSPORT)))
    assert code == cli.NOT_READY and "Kafka is not reachable at" in line and "make kafka-start" in line


def test_missing_jars_say_make_jars():
    assert cli.explain(MissingJarsError("no jars in .cache/jars/spark")) == (
        cli.NOT_READY,
        "no jars in .cache/jars/spark (run `make jars`)",
    )


def test_a_missing_table_is_named_whichever_engine_noticed(spark, tmp_path):
    from deltalake import DeltaTable
    from pyspark.errors import AnalysisException

    advice = {
        "silver": "a table is missing at {}: run the stream or `make demo` first",
        "_rebuild/silver": "no rebuild at {} yet: run `python -m batch.rebuild` (or the rebuild_derived DAG) first",
    }
    for name, line in advice.items():
        missing = str(tmp_path / name)
        with pytest.raises(AnalysisException) as spark_error:
            spark.read.format("delta").load(missing).count()
        with pytest.raises(Exception) as rust_error:
            DeltaTable(missing)
        for error in (spark_error.value, rust_error.value):
            assert cli.explain(error) == (cli.NOT_READY, line.format(missing)), error


def test_a_bug_keeps_its_traceback_and_a_known_failure_is_one_line(capsys):
    def buggy(argv):
        raise ValueError("a bug")

    def not_ready(argv):
        raise cli.NotReady("the stream is running: stop it first (make stream-stop)")

    with pytest.raises(ValueError):
        cli.guarded(buggy, [])
    assert cli.guarded(not_ready, []) == cli.NOT_READY
    assert capsys.readouterr().err == "error: the stream is running: stop it first (make stream-stop)\n"


def no_spark(*args, **kwargs):
    raise AssertionError("the refusal comes before any Spark session")


def test_rebuilding_live_tables_or_a_reset_waits_for_the_stream_to_stop(monkeypatch, tmp_path, capsys):
    from batch import rebuild
    from eo.runtime.config import load_settings
    from eo.runtime.environment import environment
    from eo.runtime.fencing import Fence
    from ops import reset

    monkeypatch.setenv("EO_CHECKPOINT_ROOT", str(tmp_path))
    monkeypatch.setattr(rebuild, "build_session", no_spark)
    monkeypatch.setattr(reset, "build_session", no_spark)
    settings = load_settings()
    running = "the stream on elsewhere pid 7 since 2026-12-02 06:00:00 UTC"  # on another machine: never known gone
    stream = Fence.start(environment(settings).lease(), "events", running, 60)  # the running stream's hold
    assert cli.guarded(rebuild.main, ["--target", "main"]) == cli.NOT_READY
    assert "live tables: stop it (make stream-stop) before rebuilding --target main" in capsys.readouterr().err
    assert reset.reset(settings) == cli.NOT_READY
    refusal = capsys.readouterr().err
    assert "live tables: stop it (make stream-stop) before a reset" in refusal
    assert f"{running}, epoch {stream.epoch}, renewed until" in refusal
    assert environment(settings).lease().current("events") == stream.epoch  # refused: no epoch taken


def _hashed_key(rows):
    from pyspark.sql import functions as F

    return rows.withColumn("_key", F.unhex(F.md5("_key"))).dropDuplicates(["_key"])


def _another_operator(rows):
    from pyspark.sql import functions as F

    timed = rows.withColumn("_at", F.current_timestamp()).withWatermark("_at", "1 minute")
    return timed.dropDuplicatesWithinWatermark(["_key"])


@pytest.mark.parametrize("changed", [_hashed_key, _another_operator], ids=["hashed key", "another operator"])
def test_a_checkpoint_whose_state_another_release_wrote_says_to_reset(spark, tmp_path, changed):
    """A release that changes a state (its key as a 16-byte hash, tried in docs/hot-path.md; its
    operator replaced, as the Java operators FirstCopy and NewTuple were) cannot resume the old
    checkpoint: the job says what to do instead of Spark's trace (docs/operations.md, upgrading)."""
    from pyspark.sql import functions as F

    source, checkpoint = str(tmp_path / "source"), str(tmp_path / "checkpoint")
    spark.createDataFrame([("a",), ("b",)], "event_id string").write.format("delta").save(source)

    def run(state):
        rows = spark.readStream.format("delta").load(source).withColumn("_key", F.concat(F.lit("E|"), "event_id"))
        query = state(rows).writeStream.format("noop").option("checkpointLocation", checkpoint)
        query.trigger(availableNow=True).start().awaitTermination(120)

    run(lambda rows: rows.dropDuplicates(["_key"]))  # the state as the release before wrote it
    spark.createDataFrame([("c",)], "event_id string").write.format("delta").mode("append").save(source)
    with pytest.raises(Exception) as refused:
        run(changed)
    code, line = cli.explain(refused.value)
    assert code == cli.NOT_READY and "python -m ops.reset" in line, line
