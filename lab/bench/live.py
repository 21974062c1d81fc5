"""The continuously running streaming job the live phases share (fixed cost, latency, the
sustained-rate search, recovery), on a lake and a topic of its own.

It is the real job (`spark-submit jobs/stream.py run`, the production defaults: the next
micro-batch starts as soon as the last one is done). Latency is read from the lake's Delta logs
(lab/bench/commit_log.py) and the job's own per-batch seconds from its log (lab/bench/job_log.py).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from eo.core.tables import GOLD, SILVER
from eo.runtime.config import Settings
from lab.bench import job_log, stages
from lab.bench.commit_log import LakeClock, SilverRows, latencies
from lab.bench.latency import distribution
from lab.bench.load import BurstSender, LoadMaker, PacedProducer
from lab.bench.pipeline import caught_up, wait_until
from lab.bench.spark_submit import BenchJob, Submitter
from lab.instances import committed_batches

WARM_UP_BURSTS = 3
BURST = 1_000


@dataclass
class LiveJob:
    submitter: Submitter
    settings: Settings
    folder: Path
    loads: LoadMaker
    trigger_seconds: float | None = None
    max_offsets: int | None = None
    log: object = print
    job: BenchJob | None = None
    instances: list[BenchJob] = field(default_factory=list)

    def __post_init__(self) -> None:
        path = self.settings.table_path
        gold = [path(t.name) for t in GOLD]
        self.clock = LakeClock.of(path(SILVER.name), gold)
        self._sender: BurstSender | None = None

    @property
    def sender(self) -> BurstSender:
        """The one producer every burst of this job's topic goes through."""
        if self._sender is None:
            self._sender = BurstSender(self.settings)
        return self._sender

    # -- instances -------------------------------------------------------------------------
    def args(self, standby: bool = False) -> list[str]:
        args = ["run"]
        if self.trigger_seconds is not None:
            args += ["--trigger-seconds", str(self.trigger_seconds)]
        if self.max_offsets:
            args += ["--max-offsets-per-trigger", str(self.max_offsets)]
        return [*args, "--standby"] if standby else args

    def spawn(self, standby: bool = False, event_log: bool = False) -> BenchJob:
        """A new instance of the job (not warmed up, not waited for); with `event_log`, Spark's
        event log in <role>-<n>.events/ beside its log (lab/bench/stages.py splits it)."""
        number = len(self.instances) + 1
        role = "standby" if standby else "job"
        submitter = self.submitter
        if event_log:
            conf = stages.event_log_conf(self.folder / f"{role}-{number}.events")
            submitter = replace(submitter, conf={**submitter.conf, **conf})
        instance = submitter.instance(number, self.settings, self.folder / f"{role}-{number}.log", self.args(standby))
        self.instances.append(instance.start())
        return instance

    def ensure_running(self) -> BenchJob:
        """The job, started and warmed up (a few bursts committed) if it is not running."""
        if self.job is not None and self.job.alive:
            return self.job
        began = time.monotonic()
        self.job = self.spawn()
        warm = self.loads.make(WARM_UP_BURSTS * BURST, per_second=BURST, clean=True)
        for i in range(WARM_UP_BURSTS):
            self.sender.send(warm.slice(i * BURST, (i + 1) * BURST))
            self.drain(300, "the warm-up")
        self.log(f"   streaming job {self.job.number} up and warm in {time.monotonic() - began:.0f} s ({self.job.log})")
        return self.job

    def drain(self, timeout: float, what: str = "the load") -> float:
        """Wait until the job has committed everything produced; seconds waited."""
        job = self.job

        def done() -> bool:
            if job is not None and not job.alive:
                raise RuntimeError(f"the streaming job died during {what}; see {job.log}")
            return caught_up(self.settings) and committed_batches(self.settings) > 0

        waited = wait_until(done, timeout)
        if waited is None:
            raise TimeoutError(f"the streaming job did not commit {what} within {timeout:.0f} s; see {job.log}")
        return waited

    def stop(self) -> None:
        for instance in self.instances:
            instance.kill()
        self.job = None

    # -- figures ---------------------------------------------------------------------------
    def rows(self, since: float, until: float) -> tuple[SilverRows, dict]:
        """Silver rows with Kafka timestamps in [since, until], and the batches' gold commit times."""
        self.clock.refresh()
        return self.clock.rows(since, until), self.clock.batch_times()

    def job_batches(self, rows: SilverRows) -> list[dict]:
        """The job's own log lines for the batches that committed these rows."""
        logged: dict[int, dict] = {}
        for instance in self.instances:
            logged.update(job_log.batches(instance.log_text()))
        return [logged[position - 1] for _, position in rows.batch_keys() if position - 1 in logged]

    def latency(self, since: float, until: float, expected: int | None = None) -> dict:
        rows, times = self.rows(since, until)
        figures = distribution(latencies(rows, times), expected)
        batches = self.job_batches(rows)
        figures["job_batches"] = {
            "count": len(rows.batch_keys()),
            "median_seconds": job_log.median_seconds(batches),
            "median_records": int(np.median([b["records"] for b in batches])) if batches else None,
        }
        return figures

    def offer(self, rate: int, seconds: float) -> dict:
        """Offer `rate` events/s for `seconds`, wait until all is committed, time every event."""
        load = self.loads.make(int(rate * seconds), rate)
        producer = PacedProducer(self.settings, load, rate)
        producer.run()
        if producer.failed:
            raise RuntimeError(f"{producer.failed} records were not acknowledged by Kafka")
        try:
            drained = round(self.drain(max(120.0, 3 * seconds)), 1)
        except TimeoutError as exc:
            self.log(f"   {exc}: the events not committed count as infinitely late")
            drained = None
        since, until = producer.window()
        figures = self.latency(since, until, expected=load.events)
        return {
            "rate": rate,
            "seconds": seconds,
            "sent": producer.sent,
            "achieved_events_per_s": producer.achieved_rate,
            "drain_seconds": drained,
            **figures,
        }
