"""python -m ops.quarantine republish on a real broker: bronze's exact bytes arrive in the topic."""

import csv
import time
import uuid
from pathlib import Path

import pytest

from eo.runtime.kafka_admin import client_config
from ops.quarantine import main
from tests.helpers import event
from tests.unit.test_quarantine_cli import build_lake

pytestmark = pytest.mark.integration

SPEC = [
    (event("ok1", 0), None, None),  # valid: never re-sent
    (event("d1", 1, event_time="soon"), "bad_value:event_time", "d1"),
    (event("d1", 2, event_time="later"), "bad_value:event_time", "d1"),  # a differing copy: same partition
    (b'\xff\xfe{"event_id":"q3"} \x00', "malformed_json:syntax", None),  # not UTF-8: raw_value cannot hold it
    # A newline is fine on Kafka; the raw ESC makes it invalid JSON, so its key is quarantine's event_id.
    (b'{"event_id":"q4",\n"note":"\x1b[2J"}', "malformed_json:syntax", "q4"),
    (event("q5", 5, user=None), "missing_field:user_id", "q5"),
]


def consume(settings, expected: int, timeout: float = 30.0) -> list:
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    from eo.runtime.kafka_admin import topic_partitions

    consumer = Consumer(client_config(settings, **{"group.id": f"t-{uuid.uuid4().hex}", "enable.auto.commit": False}))
    consumer.assign([TopicPartition(settings.topic, p, OFFSET_BEGINNING) for p in topic_partitions(settings)])
    messages, deadline = [], time.monotonic() + timeout
    try:
        while len(messages) < expected and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None and message.error() is None:
                messages.append(message)
        extra = consumer.poll(1.0)  # nothing beyond what was re-sent
        assert extra is None or extra.error() is not None, "more messages than were re-sent"
    finally:
        consumer.close()
    return messages


def test_republished_bytes_arrive_unchanged(spark, pipeline, capsys):
    settings = pipeline
    bad = build_lake(spark, settings, SPEC)
    assert main(["republish", "--reason", "*"], settings=settings, spark=spark) == 0
    out = capsys.readouterr().out
    assert f"chosen {len(bad)}, sent {len(bad)}, acked {len(bad)}" in out

    received = consume(settings, len(bad))
    assert sorted(m.value() for m in received) == sorted(row[8] for row in bad)
    copies = [m for m in received if m.key() == b"d1"]
    assert len(copies) == 2 and copies[0].partition() == copies[1].partition()
    assert {m.key() for m in received} >= {b"d1", b"q4", b"q5"}  # by event_id: the payload's or quarantine's

    (ack_log,) = Path(settings.acks_root).glob("*-quarantine-republish.csv")
    with open(ack_log, newline="") as fh:
        acks = list(csv.DictReader(fh))
    assert {(a["topic"], int(a["partition"]), int(a["offset"])) for a in acks} == {
        (m.topic(), m.partition(), m.offset()) for m in received
    }
    assert {a["kind"] for a in acks} == {"republish"}
