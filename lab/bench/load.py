"""Live load for the running job: records made ahead by Spark, sent at a fixed rate or as a burst.

Records are made before they are offered (lab/bench/synthetic.py `live_records`), kept as Arrow
columns and turned into Python objects one 10 ms slice at a time, so that sending costs little
more than the Kafka client itself. The producer is the platform's (producer/publish.py settings:
idempotent, acks=all, lz4, linger 50 ms). Each record's Kafka timestamp is its create time, set
by the client when it is produced: latency is measured from it.
"""

from __future__ import annotations

import datetime as dt
import threading
import time
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc

from eo.runtime.config import Settings
from producer.publish import producer_config

SLICE_SECONDS = 0.01
# Event times start this far ahead of the moment the records are made: about when they are sent.
LEAD_SECONDS = 5.0
# Records collected to Python per Spark job: a few hundred MB, under spark.driver.maxResultSize (1g).
CHUNK = 1_000_000


@dataclass(frozen=True)
class Load:
    """Records to send: key (event id), value and partition, and how many distinct valid events they hold."""

    records: pa.Table
    events: int

    def __len__(self) -> int:
        return self.records.num_rows

    def slice(self, start: int, stop: int) -> Load:
        part = self.records.slice(start, stop - start)
        return Load(part, valid_events(part))


def valid_events(records: pa.Table) -> int:
    """Distinct event ids among the records that are not broken: the rows silver will get."""
    if "broken" not in records.column_names:
        return pc.count_distinct(records["key"]).as_py()
    return pc.count_distinct(records.filter(pc.invert(records["broken"]))["key"]).as_py()


class LoadMaker:
    """Makes successive loads with the bench's Spark session; event ids never repeat across them."""

    def __init__(self, spark, users: int) -> None:
        self.spark, self.users, self.next_id = spark, users, 0

    def make(self, count: int, per_second: float, clean: bool = False) -> Load:
        """`count` records whose event times go on at `per_second` from about now."""
        from lab.bench.synthetic import live_records

        start = dt.datetime.now(dt.UTC) + dt.timedelta(seconds=LEAD_SECONDS)
        chunks = []
        for done in range(0, count, CHUNK):
            size = min(CHUNK, count - done)
            at = start + dt.timedelta(seconds=done / per_second)
            chunks.append(live_records(self.spark, size, at, per_second, self.users, self.next_id, clean).toArrow())
            self.next_id += size
        records = pa.concat_tables(chunks)  # chunked: one binary column of several GB would overflow
        return Load(records, valid_events(records))


class PacedProducer(threading.Thread):
    """Sends a load at a fixed rate (in 10 ms slices); `run()` in the caller's thread, or `start()`."""

    def __init__(self, settings: Settings, load: Load, rate: float) -> None:
        super().__init__(daemon=True)
        self.settings, self.load, self.rate = settings, load, rate
        self.sent = self.failed = 0
        self.started = self.last_sent = self.finished = 0.0
        self.stopping = threading.Event()

    def stop(self) -> None:
        """Send no more (the records not sent yet are simply not offered)."""
        self.stopping.set()

    def _delivered(self, err, _msg) -> None:
        if err is not None:
            self.failed += 1

    def run(self) -> None:
        from confluent_kafka import Producer

        producer = Producer({**producer_config(self.settings), "on_delivery": self._delivered})
        topic, records = self.settings.topic, self.load.records
        step = max(1, round(self.rate * SLICE_SECONDS))
        self.started = time.time()
        for first in range(0, records.num_rows, step):
            if self.stopping.is_set():
                break
            ahead = first / self.rate - (time.time() - self.started)
            if ahead > 0:
                time.sleep(ahead)
            part = records.slice(first, step)
            for key, value, partition in zip(
                part["key"].to_pylist(), part["value"].to_pylist(), part["partition"].to_pylist(), strict=True
            ):
                while True:
                    try:
                        producer.produce(topic, value, key, partition=partition)
                        break
                    except BufferError:
                        producer.poll(0.05)
                self.sent += 1
            producer.poll(0)
        self.last_sent = time.time()
        remaining = producer.flush(300)
        self.failed += remaining
        self.finished = time.time()

    @property
    def achieved_rate(self) -> int:
        """Records per second from the first send to the last."""
        span = self.last_sent - self.started
        return round(self.sent / span) if span > 0 else 0

    def window(self) -> tuple[float, float]:
        """The Kafka timestamps this producer's records can carry (ms resolution, padded)."""
        return self.started - 0.005, self.last_sent + 0.005


class BurstSender:
    """Sends bursts through one long-lived producer, as a real source does: a new client per burst
    would stamp its records before it has even connected (its connection and idempotent-producer
    handshake, ~0.5 s here, counted as the platform's latency)."""

    def __init__(self, settings: Settings) -> None:
        from confluent_kafka import Producer

        self.settings = settings
        self.producer = Producer({**producer_config(settings), "on_delivery": self._delivered})
        self.producer.list_topics(settings.topic, timeout=30)  # connected before the first burst
        self.stamps: list[int] = []
        self.errors: list[str] = []

    def _delivered(self, err, msg) -> None:
        if err is not None:
            self.errors.append(str(err))
        else:
            self.stamps.append(msg.timestamp()[1])

    def send(self, load: Load) -> dict:
        """Send a load as fast as the client goes, wait until every record is acknowledged.

        Returns {records, first_ts, last_ts} with the records' Kafka timestamps (seconds)."""
        self.stamps, self.errors = [], []
        records = load.records
        for key, value, partition in zip(
            records["key"].to_pylist(), records["value"].to_pylist(), records["partition"].to_pylist(), strict=True
        ):
            self.producer.produce(self.settings.topic, value, key, partition=partition)
        self.producer.flush(60)
        stamps, errors = self.stamps, self.errors
        if errors or len(stamps) != len(load):
            raise RuntimeError(f"burst: {len(stamps)} of {len(load)} records acknowledged; errors {errors[:3]}")
        return {"records": len(stamps), "first_ts": min(stamps) / 1000, "last_ts": max(stamps) / 1000}
