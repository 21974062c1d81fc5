"""The adversarial corpus (tests/corpus/) through the real path: published between valid events
into a running stream (Kafka, the streaming query under spark-submit), then the batch rebuild and
verification. The stream must keep running, every case must get its expected outcome, every
valid event must land, and verification must pass with nothing lost (docs/design.md invariant 5).
"""

import csv
import signal
import time
from pathlib import Path

import pytest
from pyspark.sql import functions as F

from batch.rebuild import rebuild
from batch.verify import verify
from eo.core.tables import QUARANTINE, SILVER
from eo.runtime import hooks, lake
from lab.bench.pipeline import caught_up
from lab.faults import FaultHooks
from lab.instances import Instance, committed_batches
from producer.generator import ClickstreamGenerator, Message, Rates
from producer.publish import publish
from tests.conftest import settings_env
from tests.corpus import POISON_MARKER, load_corpus

pytestmark = [pytest.mark.integration, pytest.mark.slow]

ARGS = ["run", "--trigger-seconds", "1", "--max-offsets-per-trigger", "1500"]
EVENTS_PER_WAVE = 1500


def interleaved(cases, seed: int):
    """Valid clickstream events with one corpus record after every few of them."""
    events = ClickstreamGenerator(seed=seed, rates=Rates(malformed=0.0), span_hours=4, total_events=EVENTS_PER_WAVE)
    every = max(1, EVENTS_PER_WAVE // max(1, len(cases)))
    pending = list(cases)
    for i, message in enumerate(events.messages()):
        yield message
        if pending and i % every == every - 1:
            case = pending.pop(0)
            yield Message(f"corpus-{case.name}".encode(), case.value, f"corpus:{case.name}")
    for case in pending:
        yield Message(f"corpus-{case.name}".encode(), case.value, f"corpus:{case.name}")


def send(settings, messages, label: str) -> Path:
    ack_log = Path(settings.acks_root) / f"{label}.csv"
    stats = publish(messages, settings, ack_log, log=lambda *_: None)
    assert stats.acked == stats.sent, stats.errors
    return ack_log


def corpus_coordinates(ack_logs: list[Path]) -> dict[tuple, str]:
    """(topic, partition, offset) -> corpus case name, from the producer's ack logs."""
    found = {}
    for path in ack_logs:
        with open(path) as fh:
            for row in csv.DictReader(fh):
                if row["kind"].startswith("corpus:"):
                    found[(row["topic"], int(row["partition"]), int(row["offset"]))] = row["kind"][7:]
    return found


def wait_until(check, timeout: float, what: str, instance: Instance) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert instance.alive, f"the stream stopped (exit {instance.proc.returncode}); see {instance.log}"
        assert time.monotonic() < deadline, f"timed out waiting for {what}; see {instance.log}"
        time.sleep(1)


def test_hostile_records_leave_the_stream_running_and_all_land_where_they_should(
    spark, pipeline, tmp_path, monkeypatch
):
    monkeypatch.setattr(hooks, "_installed", FaultHooks(poison=POISON_MARKER))  # the corpus's poison records fail
    cases = load_corpus()
    half = len(cases) // 2
    env = {**settings_env(pipeline), "EO_FAULT_POISON": POISON_MARKER}
    logs = [send(pipeline, interleaved(cases[:half], seed=11), "wave-1")]
    stream = Instance(1, pipeline, env, tmp_path / "stream.log", ARGS).start()
    try:
        wait_until(lambda: committed_batches(pipeline) >= 1, 300, "a first micro-batch", stream)
        logs.append(send(pipeline, interleaved(cases[half:], seed=12), "wave-2"))  # into the running stream
        wait_until(lambda: caught_up(pipeline), 600, "the stream to catch up", stream)
        assert stream.alive, f"the stream stopped; see {stream.log}"
    finally:
        stream.signal(signal.SIGTERM)
        if stream.wait(60) is None:
            stream.kill()
    log = stream.log.read_text(errors="replace")
    assert "poison record(s)" in log, "the poison records were not isolated by the stream"

    by_coordinates = corpus_coordinates(logs)
    assert len(by_coordinates) == len(cases)
    expected = {case.name: case.expect for case in cases}
    outcomes = {}
    key = ["kafka_topic", "kafka_partition", "kafka_offset"]
    for row in lake.read(spark, pipeline, QUARANTINE).select(*key, "reason").collect():
        name = by_coordinates.get((row.kafka_topic, row.kafka_partition, row.kafka_offset))
        if name:
            outcomes[name] = row.reason
    silver = lake.read(spark, pipeline, SILVER).select(*key, F.lit("valid").alias("reason")).collect()
    for row in silver:
        name = by_coordinates.get((row.kafka_topic, row.kafka_partition, row.kafka_offset))
        if name:
            outcomes[name] = "valid"
    wrong = {name: (want, outcomes.get(name)) for name, want in expected.items() if outcomes.get(name) != want}
    assert not wrong, f"{len(wrong)} cases with another outcome (expected, got): {wrong}"

    rebuild(spark, pipeline)
    verdict = verify(spark, pipeline)
    failed = [e for e in verdict["expectations"] if not e["success"]]
    assert verdict["passed"], failed
    r = verdict["reconciliation"]
    assert r["lost"] == 0 and r["acked"] == 2 * EVENTS_PER_WAVE + len(cases)
    assert r["quarantine"] == sum(1 for case in cases if case.expect != "valid")
