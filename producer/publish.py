"""Publish messages to Kafka and record exactly what the broker acknowledged.

The ack log (CSV: topic, partition, offset, kind) is the ground truth the checks count against:
every line is a record the source accepted, so it must end up in silver or quarantine.
"""

from __future__ import annotations

import csv
import sys
import time
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

from eo.runtime.config import Settings
from eo.runtime.environment import environment
from eo.runtime.kafka_admin import client_config
from producer.generator import Message

ACK_HEADER = ("topic", "partition", "offset", "kind")


@dataclass
class PublishStats:
    sent: int = 0
    acked: int = 0
    failed: int = 0
    seconds: float = 0.0
    kinds: Counter = field(default_factory=Counter)
    errors: Counter = field(default_factory=Counter)
    ack_log: str = ""  # where verification finds the ack log (on object storage for a cloud environment)

    @property
    def rate(self) -> float:
        return self.sent / self.seconds if self.seconds else 0.0


def producer_config(settings: Settings) -> dict:
    return client_config(
        settings,
        **{
            # Idempotent producer: the broker drops the producer's own retries, so every
            # duplicate in the topic is one the source meant to send.
            "enable.idempotence": True,
            "acks": "all",
            "linger.ms": 50,
            "batch.num.messages": 10000,
            "compression.type": "lz4",
            "queue.buffering.max.messages": 500000,
            "queue.buffering.max.kbytes": 1048576,
            # Ride out a broker restart instead of failing messages.
            "message.timeout.ms": 300000,
            # Same partitioner as the Java clients: copies of one key share a partition anywhere.
            "partitioner": "murmur2_random",
        },
    )


def publish(
    messages: Iterable[Message],
    settings: Settings,
    ack_log: Path,
    progress_every: float = 5.0,
    total: int | None = None,
    log=print,
) -> PublishStats:
    from confluent_kafka import Producer

    stats = PublishStats()
    bar = _progress_bar(total)
    ack_log.parent.mkdir(parents=True, exist_ok=True)
    producer = Producer(producer_config(settings))
    started = last_report = time.monotonic()
    with open(ack_log, "w", newline="") as fh:
        acks = csv.writer(fh)
        acks.writerow(ACK_HEADER)

        def delivered(kind: str, err, msg) -> None:
            if err is not None:
                stats.failed += 1
                stats.errors[str(err)] += 1
                return
            stats.acked += 1
            acks.writerow((msg.topic(), msg.partition(), msg.offset(), kind))

        for message in messages:
            while True:
                try:
                    producer.produce(
                        settings.topic, message.value, message.key, on_delivery=partial(delivered, message.kind)
                    )
                    break
                except BufferError:  # local queue full: let deliveries drain
                    producer.poll(0.1)
            stats.sent += 1
            stats.kinds[message.kind] += 1
            if stats.sent % 1000 == 0:
                producer.poll(0)
                now = time.monotonic()
                if bar is not None:
                    bar.update(1000)
                    bar.set_postfix(acked=f"{stats.acked:,}", refresh=False)
                elif now - last_report >= progress_every:
                    last_report = now
                    of = f"/{total}" if total else ""
                    log(
                        f"[producer] sent {stats.sent}{of}, acked {stats.acked} "
                        f"({stats.sent / (now - started):,.0f} msg/s)"
                    )
        remaining = producer.flush(600)
    if bar is not None:
        bar.update(stats.sent - bar.n)
        bar.close()
    stats.seconds = time.monotonic() - started
    if remaining:
        stats.errors["not delivered within 600 s"] += remaining
    stats.ack_log = environment(settings).keep_ack_log(ack_log)
    return stats


def _progress_bar(total: int | None):
    """A bar on a terminal; log lines every few seconds elsewhere (job logs, CI)."""
    if not sys.stdout.isatty():
        return None
    from tqdm import tqdm

    return tqdm(total=total, unit="msg", unit_scale=True, desc="producing", smoothing=0.1)
