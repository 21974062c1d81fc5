"""The platform's own pipeline (Kafka -> bronze -> silver -> gold), run as the real streaming job.

- throughput: catch up on a pre-loaded topic, with and without the guarantees;
- latency: a paced producer at the offered rate while the job runs continuously; each silver row's
  latency is the time its batch's last gold commit became visible minus its Kafka timestamp;
- recovery: SIGKILL the job under load and restart it cold, then again with a warm standby waiting:
  seconds from the kill to the first commit and to the catch-up, for each.
"""

from __future__ import annotations

import json
import threading
import time
import urllib.parse
from pathlib import Path

import pandas as pd

from jobs.config import Settings
from jobs.kafka_admin import end_offsets
from jobs.monitoring import kafka_offsets, read_checkpoint
from jobs.submit import run_job
from lab.instances import Instance, committed_batches
from producer.publish import producer_config


def job_env(settings: Settings) -> dict[str, str]:
    """The bench's roots and topic for a spark-submit'ed job."""
    keys = ("lake_root", "checkpoint_root", "acks_root", "reports_root", "topic", "kafka_bootstrap")
    return {f"EO_{k.upper()}": str(getattr(settings, k)) for k in keys}


def catch_up(settings: Settings, max_offsets: int, guarantees: bool = True) -> dict:
    """Run the job until caught up on what the topic holds; its own timing excludes JVM start-up."""
    args = ["run", "--until-caught-up", "--max-offsets-per-trigger", str(max_offsets)]
    started = time.monotonic()
    run_job("streaming/run.py", [*args, *([] if guarantees else ["--no-guarantees"])], settings, env=job_env(settings))
    stats = json.loads((Path(settings.reports_root) / "streaming" / "last-catch-up.json").read_text())
    events = stats["records"]
    return {
        "guarantees": guarantees,
        "events": events,
        "seconds": stats["seconds"],
        "wall_seconds": round(time.monotonic() - started, 1),
        "events_per_s": round(events / stats["seconds"]) if stats["seconds"] else None,
    }


class PacedProducer(threading.Thread):
    """Sends pre-made records at a fixed rate (in 10 ms slices), so generating them costs nothing."""

    def __init__(self, settings: Settings, records: pd.DataFrame, rate: float) -> None:
        super().__init__(daemon=True)
        self.settings, self.records, self.rate = settings, records, rate
        self.sent = 0
        self.started = self.finished = 0.0
        self.stopping = threading.Event()

    def stop(self) -> None:
        """Send no more (the records not sent yet are simply not offered)."""
        self.stopping.set()

    def run(self) -> None:
        from confluent_kafka import Producer

        producer = Producer(producer_config(self.settings))
        keys, values, parts = (self.records[c].tolist() for c in ("key", "value", "partition"))
        self.started = time.time()
        for i, (key, value, part) in enumerate(zip(keys, values, parts, strict=True)):
            if self.stopping.is_set():
                break
            ahead = i / self.rate - (time.time() - self.started)
            if ahead > 0.01:
                producer.poll(0)
                time.sleep(ahead)
            while True:
                try:
                    producer.produce(self.settings.topic, value, key, partition=int(part))
                    break
                except BufferError:
                    producer.poll(0.05)
            self.sent += 1
        producer.flush(120)
        self.finished = time.time()

    @property
    def achieved_rate(self) -> float:
        return self.sent / (self.finished - self.started) if self.finished > self.started else 0.0


def wait_until(condition, timeout: float, every: float = 0.25) -> float | None:
    """Seconds until `condition()` held, or None at the timeout."""
    started = time.monotonic()
    while time.monotonic() - started < timeout:
        if condition():
            return time.monotonic() - started
        time.sleep(every)
    return None


def committed_through(settings: Settings, targets: dict[int, int]) -> bool:
    """Has the stream committed every offset below `targets` (per partition), gold included?"""
    done = kafka_offsets(read_checkpoint(settings.checkpoint_path("events")), settings.topic)
    return all(int(done.get(str(p), -1)) >= end for p, end in targets.items())


def caught_up(settings: Settings) -> bool:
    return committed_through(settings, end_offsets(settings))


def caught_up_with(settings: Settings, backlog: dict[int, int]):
    """A check: is everything produced before `backlog` (end offsets) committed into gold?

    The load may go on meanwhile: this is not "idle", only "past the backlog"."""
    return lambda: committed_through(settings, backlog)


def start_job(
    settings: Settings, log: Path, number: int, trigger_seconds: float, max_offsets: int, standby: bool = False
) -> Instance:
    args = ["run", "--trigger-seconds", str(trigger_seconds), "--max-offsets-per-trigger", str(max_offsets)]
    return Instance(number, settings, job_env(settings), log, [*args, *(["--standby"] if standby else [])]).start()


def _commit_times(table_path: str) -> list[tuple[int, float, list[str]]]:
    """(version, commit time in epoch seconds, files added) of each commit of a local Delta table."""
    commits = []
    for entry in sorted(Path(table_path, "_delta_log").glob("*.json")):
        stamp, added = entry.stat().st_mtime, []
        for line in entry.read_text().splitlines():
            action = json.loads(line)
            if "commitInfo" in action:
                stamp = action["commitInfo"].get("timestamp", stamp * 1000) / 1000
            if "add" in action:
                added.append(Path(urllib.parse.unquote(action["add"]["path"])).name)
        commits.append((int(entry.stem), stamp, added))
    return commits


def gold_visibility(silver_path: str, gold_paths: list[str]) -> dict[str, float]:
    """Silver data file -> when its batch's gold became visible (the next gold commit after it)."""
    gold_times = sorted(t for path in gold_paths for _, t, _ in _commit_times(path))
    visible: dict[str, float] = {}
    for _, stamp, added in _commit_times(silver_path):
        later = [t for t in gold_times if t >= stamp]
        if later and added:
            # A batch commits silver, then metrics, then sessions: the last of those two after silver.
            after = later[:2]
            visible.update(dict.fromkeys(added, after[-1]))
    return visible


def latency_distribution(spark, settings: Settings, since: float) -> dict:
    """p50/p99 and a CDF of produce -> visible-in-gold over the silver rows produced after `since`."""
    from pyspark.sql import functions as F

    from jobs.tables import CAMPAIGN_MINUTE_METRICS, SILVER, USER_SESSIONS

    visible = gold_visibility(
        settings.table_path(SILVER.name),
        [settings.table_path(CAMPAIGN_MINUTE_METRICS.name), settings.table_path(USER_SESSIONS.name)],
    )
    mapping = spark.createDataFrame(list(visible.items()), "file STRING, visible DOUBLE")
    silver = spark.read.format("delta").load(settings.table_path(SILVER.name))
    rows = (
        silver.select(F.element_at(F.split("_metadata.file_path", "/"), -1).alias("file"), "kafka_timestamp")
        .where(F.col("kafka_timestamp") >= F.lit(since).cast("timestamp"))
        .join(F.broadcast(mapping), on="file")
        .select((F.col("visible") - F.col("kafka_timestamp").cast("double")).alias("latency"))
    )
    levels = [i / 100 for i in range(101)]
    quantiles = rows.approxQuantile("latency", levels, 0.001)
    events = rows.count()
    return {
        "events": events,
        "p50_s": round(quantiles[50], 3) if quantiles else None,
        "p99_s": round(quantiles[99], 3) if quantiles else None,
        "cdf": [[round(q, 3), p] for q, p in zip(quantiles, levels, strict=False)],
    }


def measure_latency(
    spark, settings: Settings, records: pd.DataFrame, rate: float, warmup: pd.DataFrame, workdir: Path, log=print
) -> tuple[dict, Instance]:
    """Run the job continuously, warm it up, then offer `records` at `rate` and time each row to gold.

    Returns the figures and the job, still running (more rates and the recovery go on with it).
    """
    job = start_job(settings, workdir / "continuous-job-1.log", 1, trigger_seconds=0.5, max_offsets=int(rate * 4))
    try:
        PacedProducer(settings, warmup, rate=len(warmup)).run()  # about a second's worth
        if wait_until(lambda: caught_up(settings) and committed_batches(settings) > 0, 300) is None:
            raise RuntimeError(f"the streaming job did not process the warm-up; see {job.log}")
        return measure_latency_again(spark, settings, job, records, rate, log), job
    except BaseException:
        job.kill()
        raise


def measure_latency_again(spark, settings: Settings, job: Instance, records: pd.DataFrame, rate: float, log=print):
    """On the running job: offer `records` at `rate`, wait until all is in gold, time each row."""
    log(f"   offering {len(records):,} events at {rate:,.0f}/s")
    producer = PacedProducer(settings, records, rate)
    producer.run()
    log(f"   offered {producer.sent:,} at {producer.achieved_rate:,.0f}/s; waiting for the job to catch up")
    drained = wait_until(lambda: caught_up(settings), 900)
    if drained is None:
        raise RuntimeError(f"the streaming job did not catch up within 15 min; see {job.log}")
    result = latency_distribution(spark, settings, producer.started)
    return {**result, "offered_events_per_s": round(producer.achieved_rate), "drain_seconds": round(drained, 1)}


def _kill_and_recover(
    settings: Settings, job: Instance, records: pd.DataFrame, rate: float, take_over, log=print
) -> tuple[dict, Instance]:
    """Offer `records` at `rate`; SIGKILL `job` once it commits under that load; `take_over()` returns
    the instance that carries on. Seconds from the kill to its first commit, and to caught up."""
    producer = PacedProducer(settings, records, rate)
    producer.start()
    successor = None
    try:
        before = committed_batches(settings)
        if wait_until(lambda: committed_batches(settings) >= before + 1, 300) is None:
            raise RuntimeError(f"the streaming job never committed under load; see {job.log}")
        killed_at = time.time()
        job.kill()
        log(f"   SIGKILLed the streaming job (pid {job.proc.pid}) under load at {rate:,.0f} events/s")
        successor = take_over()
        successor.count_from(killed_at)
        backlog = end_offsets(settings)
        first = successor.wait_first_commit(300)
        if first is None:
            raise RuntimeError(f"the job that took over never committed; see {successor.log}")
        caught = wait_until(caught_up_with(settings, backlog), 600, every=0.2)
    except BaseException:
        if successor is not None:
            successor.kill()
        raise
    finally:
        producer.stop()
        producer.join()
    figures = {
        "first_batch_s": round(first, 1),
        "caught_up_s": None if caught is None else round(time.time() - killed_at, 1),
    }
    return figures, successor


def measure_recovery(
    settings: Settings, job: Instance, records: pd.DataFrame, rate: float, workdir: Path, log=print
) -> dict:
    """SIGKILL the running job under load twice: once restarted cold, as a supervisor would, then
    with a warm standby (streaming/standby.py) waiting to take over. The figures of both."""
    max_offsets = int(rate * 4)
    cold_records, standby_records = records.iloc[: len(records) // 2], records.iloc[len(records) // 2 :]
    standby = None

    def restart() -> Instance:
        return start_job(settings, workdir / "continuous-job-2.log", 2, 0.5, max_offsets)

    try:
        cold, job = _kill_and_recover(settings, job, cold_records, rate, restart, log)
        log(f"   cold restart: first batch {cold['first_batch_s']} s, caught up {cold['caught_up_s']} s")
        standby = start_job(settings, workdir / "continuous-job-3.log", 3, 0.5, max_offsets, standby=True)
        if wait_until(lambda: "[standby] warm" in standby.log.read_text(errors="replace"), 300) is None:
            raise RuntimeError(f"the standby never got warm; see {standby.log}")
        warm, _ = _kill_and_recover(settings, job, standby_records, rate, lambda: standby, log)
        log(f"   warm standby: first batch {warm['first_batch_s']} s, caught up {warm['caught_up_s']} s")
    finally:
        for instance in (job, standby):
            if instance is not None:
                instance.kill()
    return {"rate": rate, "cold": cold, "standby": warm}
