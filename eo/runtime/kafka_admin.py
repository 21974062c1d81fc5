"""Small Kafka admin helpers (topic creation, partitions, end offsets) on confluent-kafka, and the
client settings every Kafka client of the platform gets from the environment (address, authentication)."""

from __future__ import annotations

import logging
import os
import time

from eo.runtime.config import Settings
from eo.runtime.environment import environment

# librdkafka logs every refused connection to stderr; while a broker restarts (the fault lab)
# that is hundreds of lines a second. Route its log through Python logging, quiet by default.
CLIENT_LOG = logging.getLogger("eo.kafka.client")
CLIENT_LOG.setLevel(os.environ.get("EO_KAFKA_CLIENT_LOG_LEVEL", "CRITICAL"))

# The consumer group end_offsets declares; the Airflow role may describe it (terraform/modules/iam).
OFFSETS_GROUP = "eo-offsets"


def spark_kafka_options(settings: Settings) -> dict[str, str]:
    """Options of every Spark Kafka source and sink: the address and the environment's own (authentication)."""
    return environment(settings).spark_kafka_options()


def client_config(settings: Settings, **extra) -> dict:
    """librdkafka settings for admin clients, producers and consumers, authenticated as the environment asks."""
    auth = environment(settings).kafka_authentication()
    return {"bootstrap.servers": settings.kafka_bootstrap, "logger": CLIENT_LOG, **auth, **extra}


def _admin(settings: Settings):
    from confluent_kafka.admin import AdminClient

    return AdminClient(client_config(settings))


def ensure_topic(settings: Settings, partitions: int | None = None, timeout: float = 30.0) -> None:
    from confluent_kafka import KafkaError, KafkaException
    from confluent_kafka.admin import NewTopic

    admin = _admin(settings)
    # Replication factor -1: the cluster's default (1 on the local broker, what a managed Kafka such as MSK requires).
    wanted = NewTopic(settings.topic, partitions or settings.topic_partitions, -1)
    for future in admin.create_topics([wanted], request_timeout=timeout).values():
        try:
            future.result()
        except KafkaException as exc:
            if exc.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
                raise
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:  # metadata and leadership propagate asynchronously
        if led(_metadata(admin, settings.topic)):
            return
        time.sleep(0.2)
    raise TimeoutError(f"topic {settings.topic} did not appear with a leader for each partition within {timeout} s")


def led(topic) -> bool:
    """Does the topic (confluent-kafka's TopicMetadata, or None) exist with a leader for each of its
    partitions? Right after its creation it may list partitions that have none yet, and reading
    their offsets then fails (NOT_LEADER_FOR_PARTITION)."""
    if topic is None or topic.error is not None or not topic.partitions:
        return False
    return all(p.error is None and p.leader >= 0 for p in topic.partitions.values())


def delete_topic(settings: Settings, timeout: float = 30.0) -> None:
    from confluent_kafka import KafkaError, KafkaException

    admin = _admin(settings)  # keep a reference: the futures die with the client
    for future in admin.delete_topics([settings.topic], request_timeout=timeout).values():
        try:
            future.result()
        except KafkaException as exc:
            if exc.args[0].code() != KafkaError.UNKNOWN_TOPIC_OR_PART:
                raise
    deadline = time.monotonic() + timeout
    while topic_partitions(settings):  # deletion completes asynchronously
        if time.monotonic() > deadline:
            raise TimeoutError(f"topic {settings.topic} still exists {timeout} s after its deletion")
        time.sleep(0.2)


def _metadata(admin, topic: str):
    """The topic's metadata as the broker gives it now (confluent-kafka's TopicMetadata), or None."""
    return admin.list_topics(topic=topic, timeout=10).topics.get(topic)


def topic_partitions(settings: Settings) -> list[int]:
    topic = _metadata(_admin(settings), settings.topic)
    if topic is None or topic.error is not None:
        return []
    return sorted(topic.partitions)


def end_offsets(settings: Settings, timeout: float = 30.0) -> dict[int, int]:
    """The next offset each partition will get: what a caught-up consumer has read up to."""
    return {partition: high for partition, (_, high) in watermarks(settings, timeout).items()}


def watermarks(settings: Settings, timeout: float = 30.0) -> dict[int, tuple[int, int]]:
    """Each partition's (earliest offset it still holds, next offset it will get).

    A partition whose leader is not serving yet (a topic just made, a broker just restarted)
    answers NOT_LEADER_FOR_PARTITION or LEADER_NOT_AVAILABLE: asked again until `timeout`."""
    from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition

    not_serving = (KafkaError.NOT_LEADER_FOR_PARTITION, KafkaError.LEADER_NOT_AVAILABLE)

    consumer = Consumer(client_config(settings, **{"group.id": OFFSETS_GROUP}))
    deadline = time.monotonic() + timeout
    try:
        result = {}
        for p in topic_partitions(settings):
            while p not in result:
                try:
                    low, high = consumer.get_watermark_offsets(TopicPartition(settings.topic, p), timeout=10)
                    result[p] = (int(low), int(high))
                except KafkaException as exc:
                    if exc.args[0].code() not in not_serving or time.monotonic() > deadline:
                        raise
                    time.sleep(0.2)
        return result
    finally:
        consumer.close()
