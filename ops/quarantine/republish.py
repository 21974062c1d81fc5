"""The `republish` command: the chosen records' exact bronze bytes sent to the topic again, through
the producer's own publishing and ack log, so the stream checks them again and verification counts them."""

from __future__ import annotations

import argparse
import hashlib
import json

from pyspark.sql import DataFrame, SparkSession

from eo.core.tables import BRONZE, EVENT_ID, SOURCE_KEY
from eo.runtime.cli import FAILED, OK, USAGE, NotReady
from eo.runtime.config import Settings
from ops.quarantine.escape import SAMPLE_CHARS, printable
from ops.quarantine.filters import Coordinate, coordinate_text
from ops.quarantine.selection import describe, open_table, records, selection, with_bronze
from ops.quarantine.stderr import fail, some, warn, warn_missing

CONFIRM_ABOVE = 1000  # republish asks for --yes above this many records
KAFKA_TIMEOUT = 5.0  # seconds to wait for the broker's metadata before saying it is not reachable


def message_key(value: bytes | None, event_id: str | None, original_key: str | None) -> bytes:
    """Keyed like the producer: by the event id (its source's x-event-id field) when the record has
    one, so every copy shares a partition."""
    try:
        payload_id = json.loads(value).get(EVENT_ID)  # as `producer replay` keys an exported file
    except (TypeError, ValueError, AttributeError):
        payload_id = None
    for key in (payload_id, event_id, original_key):
        if isinstance(key, str) and key:
            return key.encode()
    return hashlib.sha1(value or b"").hexdigest()[:16].encode()


def republish_command(spark: SparkSession, settings: Settings, args: argparse.Namespace) -> int:
    quarantined = selection(spark, settings, args)
    if args.coordinates:
        warn_absent(quarantined, args.coordinates)
    rows = with_bronze(open_table(spark, settings, BRONZE), quarantined, args)
    chosen = rows.count()
    if not chosen:
        print(f"nothing to re-send: no quarantined records match ({describe(args)})")
        return OK
    if not (args.dry_run or args.yes) and chosen > CONFIRM_ABOVE:
        return fail(
            USAGE,
            f"{chosen:,} records chosen, more than {CONFIRM_ABOVE:,}: add --yes to send them all, "
            "or narrow the choice (--limit, --since/--until, --reason); --dry-run lists them",
        )
    if args.dry_run:
        return dry_run(rows, chosen, settings)
    return send(rows, chosen, settings)


def warn_absent(quarantined: DataFrame, wanted: list[Coordinate]) -> None:
    found = {tuple(r) for r in quarantined.select(*SOURCE_KEY).collect()}
    absent = [coordinate_text(*c) for c in wanted if c not in found]
    if absent:
        warn(f"{len(absent)} coordinates match no quarantined record: {some(absent)}")


def dry_run(rows: DataFrame, chosen: int, settings: Settings) -> int:
    """What would be sent, one escaped line per record; nothing is sent."""
    missing: list[str] = []
    for where, row, value in records(rows, missing):
        key = message_key(value, row.event_id, row.bronze_key).decode("utf-8", "replace")
        text = "(no value)" if value is None else printable(value.decode("utf-8", "backslashreplace"), SAMPLE_CHARS)
        size = len(value or b"")
        print(f"{where}  {printable(row.reason or '')}  key={printable(key)}  {size} bytes  {text}")
    warn_missing(missing)
    print(
        f"[quarantine] dry run: would re-send {chosen - len(missing)} of {chosen} chosen records to topic "
        f"{settings.topic} at {settings.kafka_bootstrap}; nothing sent"
    )
    return OK


def check_kafka(settings: Settings) -> None:
    """Fail in one line, naming the address, before anything is sent."""
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AdminClient

    from eo.runtime.kafka_admin import client_config

    advice = (
        f"Kafka is not reachable at {settings.kafka_bootstrap or '(no address configured)'}: "
        "start it with `make kafka-start`, or point EO_KAFKA_BOOTSTRAP at your broker"
    )
    if not settings.kafka_bootstrap:
        raise NotReady(advice)
    try:
        AdminClient(client_config(settings)).list_topics(timeout=KAFKA_TIMEOUT)
    except KafkaException:
        raise NotReady(advice) from None


def send(rows: DataFrame, chosen: int, settings: Settings) -> int:
    """Through the producer's own path: its publish function and an ack log that verification counts."""
    from eo.runtime.kafka_admin import ensure_topic
    from producer.generator import Message
    from producer.publish import publish
    from producer.summary import default_ack_log

    check_kafka(settings)
    ensure_topic(settings)
    ack_log = default_ack_log(settings, "quarantine-republish")
    missing: list[str] = []
    messages = (
        Message(message_key(value, row.event_id, row.bronze_key), value, "republish")
        for _, row, value in records(rows, missing)
    )
    stats = publish(messages, settings, ack_log)
    warn_missing(missing)
    print(f"[quarantine] chosen {chosen}, sent {stats.sent}, acked {stats.acked} to topic {settings.topic}")
    print(f"[quarantine] ack log: {stats.ack_log}")
    if stats.acked < stats.sent:
        errors = "; ".join(f"{e} ({n})" for e, n in stats.errors.items())
        return fail(
            FAILED,
            f"{stats.sent - stats.acked} of {stats.sent} re-sent records were not acknowledged ({errors}): "
            "check the broker and run the same command again (copies with an event_id are deduplicated)",
        )
    print("[quarantine] the stream checks them again: records that still fail are quarantined at their new coordinates")
    return OK
