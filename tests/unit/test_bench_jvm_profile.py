"""The bench's split of a JFR recording by kind of work (lab/bench/jvm_profile.py)."""

from __future__ import annotations

import pytest

from lab.bench.jvm_profile import GENERATED, samples, split, table

pytestmark = pytest.mark.unit

TASK = "Executor task launch worker for task 3.0 in stage 46.0 (TID 187)"


def _sample(at: str, thread: str, *frames: str) -> str:
    """One sample as `jfr print` writes it, innermost frame first."""
    stack = "\n".join(f"    {frame}(...)  line: 1" for frame in frames)
    head = f'jdk.ExecutionSample {{\n  startTime = {at}\n  sampledThread = "{thread}" (javaThreadId = 9)\n'
    return f"{head}  stackTrace = [\n{stack}\n  ]\n}}\n"


SORT = (
    "org.apache.spark.unsafe.types.ByteArray.compareBinary",
    "org.apache.spark.unsafe.types.UTF8String.binaryCompare",
    "org.apache.spark.sql.catalyst.expressions.GeneratedClass$SpecificOrdering.compare",
    "org.apache.spark.sql.execution.UnsafeExternalRowSorter$RowComparator.compare",
    "org.apache.spark.shuffle.sort.UnsafeShuffleWriter.write",
)
READING = (
    "java.lang.String.charAt",
    "io.effectivelyonce.reader.StrictJsonReader.read",
    "org.apache.spark.sql.catalyst.expressions.GeneratedClass$GeneratedIteratorForCodegenStage2.processNext",
)
PROJECTION = (
    "org.apache.spark.unsafe.types.UTF8String.fromAddress",
    "org.apache.spark.sql.catalyst.expressions.GeneratedClass$GeneratedIteratorForCodegenStage1.processNext",
    "org.apache.spark.sql.execution.python.ArrowPythonRunner.compute",  # an outer frame: not reached
)
STATE = (
    "org.rocksdb.RocksDB.get",
    "org.apache.spark.sql.execution.streaming.state.RocksDB.get",
    "org.apache.spark.sql.execution.streaming.FlatMapGroupsWithStateExec.processNewData",
)
CONVERSION = (
    "org.apache.spark.unsafe.types.UTF8String.fromString",
    "org.apache.spark.sql.catalyst.expressions.GeneratedClass$GeneratedIteratorForCodegenStage5.serializefromobject_doConsume_0$",
    "org.apache.spark.sql.catalyst.expressions.GeneratedClass$GeneratedIteratorForCodegenStage5.processNext",
)
OPERATOR = (
    "io.effectivelyonce.reader.Coordinates.earlier",  # the operators' own ordering, not the reading
    "io.effectivelyonce.reader.FirstCopy.call",
)
DEDUPLICATION = (  # Spark's own streaming deduplication, both states since 2026-11-28
    "java.util.HashMap.get",
    "org.apache.spark.sql.execution.streaming.operators.stateful.BaseStreamingDeduplicateExec.processNewData",
)
TEXT = "".join(
    [
        _sample("12:00:01.000", TASK, *SORT),
        _sample("12:00:02.000", TASK, *SORT),
        _sample("12:00:03.000", TASK, *READING),
        _sample("12:00:04.000", TASK, *PROJECTION),
        _sample("12:00:05.000", "main", *SORT),  # the driver's own thread: not a task's
        _sample("12:00:06.000", TASK, *STATE),
        _sample("12:00:07.000", TASK, "java.util.HashMap.get", "java.lang.Thread.run"),
        _sample("12:00:08.000", TASK, *CONVERSION),
        _sample("12:00:09.000", TASK, *OPERATOR),
        _sample("12:00:09.500", TASK, *DEDUPLICATION),
    ]
)


def test_each_task_sample_is_charged_to_its_innermost_known_work():
    kinds = split(samples(TEXT))
    assert kinds == {
        "sort before a state": 2,
        "strict reading (JSON)": 1,
        GENERATED: 1,
        "RocksDB (engine state)": 1,
        "other": 1,
        "rows to Java objects and back": 1,
        "the state operators' own code": 2,
    }


def test_samples_before_a_time_of_day_are_left_out():
    assert split(samples(TEXT, since="12:00:06")) == {
        "RocksDB (engine state)": 1,
        "other": 1,
        "rows to Java objects and back": 1,
        "the state operators' own code": 2,
    }


def test_the_table_gives_shares_of_all_task_samples():
    lines = table(split(samples(TEXT))).splitlines()
    assert lines[2] == "| sort before a state | 2 | 22.2% |"
    assert len(lines) == 2 + 7
