"""What a person chooses quarantined records by: a reason pattern, a time window, Kafka coordinates;
and those timestamps and coordinates as the commands print them back."""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass

from pyspark.sql import Column
from pyspark.sql import functions as F

# Kafka's legal topic names; partitions and offsets are plain decimal numbers.
COORDINATE = re.compile(r"(?P<topic>[A-Za-z0-9._-]{1,249}):(?P<partition>[0-9]{1,9}):(?P<offset>[0-9]{1,18})")
EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)

Coordinate = tuple[str, int, int]  # kafka_topic, kafka_partition, kafka_offset


@dataclass(frozen=True)
class ReasonPattern:
    """A reason exactly, or a whole family (the part before the colon); `value` None means all."""

    value: str | None
    family: bool = False

    @classmethod
    def parse(cls, text: str) -> ReasonPattern:
        text = text.strip()
        if text == "*":
            return cls(None, family=True)
        family = text.endswith("*")
        value = text.removesuffix("*").removesuffix(":") if family else text
        if not value or "*" in value or (family and ":" in value):
            raise ValueError(f"bad reason pattern {text!r}: give a reason (bad_type:price) or a family (bad_type:*)")
        return cls(value, family)

    def column(self) -> Column:
        """The Spark filter: a Column, never SQL text, so a pattern cannot inject anything."""
        if self.value is None:
            return F.lit(True)
        if self.family:
            return F.substring_index(F.col("reason"), ":", 1) == self.value
        return F.col("reason") == self.value

    def __str__(self) -> str:
        return "*" if self.value is None else f"{self.value}:*" if self.family else self.value


def family_of(reason: str) -> str:
    return reason.split(":", 1)[0]


def parse_timestamp(text: str) -> dt.datetime:
    """ISO 8601, UTC when no offset is given: a bare date is its midnight."""
    try:
        value = dt.datetime.fromisoformat(text.strip())
    except ValueError:
        raise ValueError(f"bad timestamp {text!r}: use ISO 8601, e.g. 2026-11-05T10:00:00Z") from None
    return (value if value.tzinfo else value.replace(tzinfo=dt.UTC)).astimezone(dt.UTC)


def parse_coordinates(text: str) -> list[Coordinate]:
    """topic:partition:offset[,...] -> distinct coordinates, in the given order."""
    found: list[Coordinate] = []
    for item in filter(None, (part.strip() for part in text.split(","))):
        match = COORDINATE.fullmatch(item)
        if not match:
            raise ValueError(f"bad coordinate {item!r}: want topic:partition:offset, e.g. clickstream:2:1041")
        coordinate = (match["topic"], int(match["partition"]), int(match["offset"]))
        if coordinate not in found:
            found.append(coordinate)
    if not found:
        raise ValueError("no coordinates given: want topic:partition:offset[,...]")
    return found


def coordinate_text(topic: str, partition: int, offset: int) -> str:
    return f"{topic}:{partition}:{offset}"


def iso(micros: int | None) -> str | None:
    """Epoch microseconds (Spark's unix_micros, free of any time zone) -> ISO 8601 in UTC."""
    if micros is None:
        return None
    return (EPOCH + dt.timedelta(microseconds=micros)).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def iso_arg(value: dt.datetime | None) -> str | None:
    """A --since or --until as given back to the person: ISO 8601, Z for UTC."""
    return value and value.isoformat().replace("+00:00", "Z")
