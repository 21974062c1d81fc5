"""`make bench`: throughput, latency, guarantee overhead, recovery, rebuild speed and history
independence, side by side with raw Spark and PyFlink, in one run on this machine.

    python -m lab.bench [--quick] [--rebuild-sizes 1M,10M,50M] [--history-sizes 1M,50M] ...

Writes reports/bench/<run-id>/{bench.json, summary.md, *.png}; reports/bench/latest points at it.
Everything runs on loopback: its own Kafka broker (port 49092) and local Spark; the work folder
data/bench/<run-id>/ is deleted at the end unless --keep-data.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import shutil
import subprocess
import sys
import time
import traceback
from dataclasses import asdict, dataclass, replace
from importlib import metadata
from pathlib import Path

from infra.kafka import Broker
from jobs.config import REPO_ROOT, load_settings
from jobs.kafka_admin import delete_topic, end_offsets, ensure_topic

PORT = int(os.environ.get("EO_BENCH_KAFKA_PORT", "49092"))
STREAM_START = dt.datetime(2026, 11, 20, tzinfo=dt.UTC)


@dataclass(frozen=True)
class Profile:
    name: str
    ysb_events: int = 5_000_000
    ysb_batch: int = 1_000_000
    pipeline_events: int = 2_000_000
    pipeline_batch: int = 500_000
    offered_rate: int = 50_000
    latency_seconds: int = 30
    # A second latency point at a rate the job keeps up with: what latency costs when not queueing.
    sustained_rate: int = 5_000
    recovery_rate: int = 5_000
    recovery_seconds: int = 150
    rebuild_sizes: tuple[int, ...] = (1_000_000, 3_000_000, 10_000_000)
    history_sizes: tuple[int, int] = (1_000_000, 50_000_000)
    history_new_events: int = 300_000
    history_batch: int = 50_000


DEFAULT = Profile("default")
QUICK = Profile(  # every phase, at sizes that only check the plumbing (make test runs it)
    "quick",
    ysb_events=100_000,
    ysb_batch=50_000,
    pipeline_events=30_000,
    pipeline_batch=30_000,
    offered_rate=10_000,
    latency_seconds=2,
    sustained_rate=1_000,
    recovery_rate=1_000,
    recovery_seconds=30,
    rebuild_sizes=(30_000, 60_000, 120_000),
    history_sizes=(30_000, 300_000),
    history_new_events=6_000,
    history_batch=3_000,
)


def count(text: str) -> int:
    """1M, 500k, 2500000."""
    text = text.strip().lower().replace("_", "")
    scale = {"k": 1_000, "m": 1_000_000}.get(text[-1:], 1)
    return int(float(text[:-1] if scale > 1 else text) * scale)


def counts(text: str) -> tuple[int, ...]:
    return tuple(count(part) for part in text.split(",") if part.strip())


class Bench:
    def __init__(self, profile: Profile, run_id: str, keep_data: bool, out_root: Path) -> None:
        self.profile, self.run_id, self.keep_data = profile, run_id, keep_data
        self.work = REPO_ROOT / "data" / "bench" / run_id
        self.out = out_root / run_id
        self.broker = Broker(PORT, REPO_ROOT / "data" / "services" / f"kafka-{PORT}")
        self.settings = load_settings("local").with_overrides(
            kafka_bootstrap=self.broker.bootstrap,
            lake_root=str(self.work / "lake"),
            checkpoint_root=str(self.work / "checkpoints"),
            acks_root=str(self.work / "acks"),
            reports_root=str(self.work / "reports"),
        )
        self.began = time.monotonic()
        self.result: dict = {"run_id": run_id, "profile": profile.name, "sizes": asdict(profile), "errors": {}}
        self.metrics: dict = dict.fromkeys(_metric_names())
        self.spark = None

    def log(self, text: str) -> None:
        print(f"[bench t+{time.monotonic() - self.began:5.0f} s] {text}", flush=True)

    def topic(self, name: str):
        settings = self.settings.with_overrides(topic=name)
        delete_topic(settings)
        ensure_topic(settings)
        return settings

    def phase(self, name: str, body) -> None:
        self.log(f"== {name}")
        started = time.monotonic()
        try:
            body()
        except Exception as exc:  # noqa: BLE001 - one phase failing must not lose the others' figures
            self.result["errors"][name] = f"{type(exc).__name__}: {exc}"
            self.log(f"!! {name} failed: {exc}")
            traceback.print_exc()
        self.log(f"   {name} took {time.monotonic() - started:.0f} s")

    # -- phases ------------------------------------------------------------------------------
    def ysb(self) -> None:
        from lab.bench import flink, ysb
        from lab.bench.synthetic import ysb_records

        p = self.profile
        settings = self.topic("bench-ysb")
        started = time.monotonic()
        ysb_records(self.spark, p.ysb_events, STREAM_START).write.format("kafka").option(
            "kafka.bootstrap.servers", settings.kafka_bootstrap
        ).option("topic", settings.topic).save()
        self.log(f"   loaded {p.ysb_events:,} YSB events into {settings.topic} in {time.monotonic() - started:.0f} s")
        runs = []
        for mode in ("raw", "exactly-once"):
            run = ysb.run_spark(self.spark, settings, settings.topic, mode, self.work / "ysb", p.ysb_batch)
            self.log(f"   spark {mode}: {run['events']:,} events in {run['seconds']} s = {run['events_per_s']:,}/s")
            runs.append(run)
        self.metrics["ysb_raw_spark_events_per_s"] = runs[0]["events_per_s"]
        self.metrics["ysb_exactly_once_events_per_s"] = runs[1]["events_per_s"]
        try:
            bootstrap, folder = settings.kafka_bootstrap, self.work / "flink"
            run = flink.run_ysb_flink(bootstrap, settings.topic, ysb.ad_rows(), folder, self.log)
            # The bounded source reads the topic from its start to its end offsets: that many events.
            run.update(system="pyflink-exactly-once", events=sum(end_offsets(settings).values()))
            run["events_per_s"] = round(run["events"] / run["seconds"]) if run["seconds"] else None
            self.log(f"   pyflink: {run['events']:,} events in {run['seconds']} s = {run['events_per_s']:,}/s")
            self.metrics["ysb_pyflink_events_per_s"] = run["events_per_s"]
            runs.append(run)
        finally:
            agreement = ysb.compare_counts(runs)
            self.log(f"   counts agree across {len(runs)} systems: {agreement['agree']} {agreement}")
            self.result["ysb"] = {
                "events": p.ysb_events,
                "runs": [{k: v for k, v in r.items() if k != "counts"} for r in runs],
                "agreement": agreement,
            }
        if not agreement["agree"]:
            raise RuntimeError(f"YSB counts differ between systems: {agreement['disagreeing_windows']}")

    def pipeline(self) -> None:
        from lab.bench.pipeline import catch_up
        from lab.bench.scaling import fresh_lake
        from lab.bench.synthetic import clickstream_records

        p = self.profile
        topic = self.topic("bench-pipeline")
        started = time.monotonic()
        clickstream_records(self.spark, p.pipeline_events, STREAM_START).write.format("kafka").option(
            "kafka.bootstrap.servers", topic.kafka_bootstrap
        ).option("topic", topic.topic).save()
        self.log(f"   loaded {p.pipeline_events:,} events in {time.monotonic() - started:.0f} s")
        runs = {}
        for guarantees in (True, False):
            name = "guarded" if guarantees else "unguarded"
            settings = fresh_lake(topic, self.work / f"pipeline-{name}")
            runs[name] = catch_up(settings, p.pipeline_batch, guarantees)
            self.log(f"   {name}: {runs[name]}")
        self.result["pipeline"] = runs
        self.metrics["pipeline_events_per_s"] = runs["guarded"]["events_per_s"]
        ratio = runs["guarded"]["events_per_s"] / runs["unguarded"]["events_per_s"]
        self.metrics["guarantee_overhead_ratio"] = round(ratio, 3)

    def _records(self, n: int, start: dt.datetime):
        from lab.bench.synthetic import clickstream_records

        return clickstream_records(self.spark, n, start).toPandas()

    def continuous(self) -> None:
        """Latency at the offered rate and at a sustained one, then recovery from SIGKILLs, on one
        continuously running job."""
        from lab.bench.pipeline import measure_latency, measure_latency_again, measure_recovery
        from lab.bench.scaling import fresh_lake

        p = self.profile
        settings = fresh_lake(self.topic("bench-continuous"), self.work / "continuous")
        loads = [10_000, p.offered_rate * p.latency_seconds, p.sustained_rate * p.latency_seconds]
        # Two recoveries (cold restart, then warm standby), each with recovery_seconds of load.
        records = self._records(sum(loads) + 2 * p.recovery_rate * p.recovery_seconds, STREAM_START)
        ends = [sum(loads[: i + 1]) for i in range(len(loads))]
        warmup, offered, sustained, after = (
            records.iloc[: ends[0]],
            records.iloc[ends[0] : ends[1]],
            records.iloc[ends[1] : ends[2]],
            records.iloc[ends[2] :],
        )
        latency, job = measure_latency(self.spark, settings, offered, p.offered_rate, warmup, self.work, self.log)
        self.result["latency"] = latency
        self.metrics.update(latency_p50_s=latency["p50_s"], latency_p99_s=latency["p99_s"])
        self.metrics["offered_events_per_s"] = latency["offered_events_per_s"]
        self.log(f"   p50 {latency['p50_s']} s, p99 {latency['p99_s']} s over {latency['events']:,} events")
        try:
            steady = measure_latency_again(self.spark, settings, job, sustained, p.sustained_rate, self.log)
        except BaseException:
            job.kill()
            raise
        self.result["latency_sustained"] = steady
        self.metrics.update(latency_sustained_p50_s=steady["p50_s"], latency_sustained_p99_s=steady["p99_s"])
        self.metrics["sustained_events_per_s"] = steady["offered_events_per_s"]
        self.log(f"   at {steady['offered_events_per_s']:,}/s: p50 {steady['p50_s']} s, p99 {steady['p99_s']} s")
        recovery = measure_recovery(settings, job, after, p.recovery_rate, self.work, self.log)
        self.result["recovery"] = recovery
        for prefix, figures in (("recovery", recovery["standby"]), ("recovery_cold", recovery["cold"])):
            self.metrics[f"{prefix}_first_batch_s"] = figures["first_batch_s"]
            self.metrics[f"{prefix}_caught_up_s"] = figures["caught_up_s"]

    def history(self) -> None:
        from lab.bench.scaling import refine_batches
        from producer.generator import ClickstreamGenerator
        from producer.publish import publish

        p = self.profile
        settings = self.topic("bench-history")
        generator = ClickstreamGenerator(seed=11, total_events=p.history_new_events)
        publish(generator.messages(), settings, self.work / "acks" / "history.csv", total=p.history_new_events)
        runs = []
        for size in p.history_sizes:
            run = refine_batches(self.spark, settings, size, self.work / f"history-{size}", p.history_batch)
            self.log(f"   silver holding {size:,}: median batch {run['median_batch_s']} s of {run['batch_seconds']}")
            runs.append(run)
        self.result["history"] = {"new_events": p.history_new_events, "runs": runs}
        self.metrics["batch_duration_history_ratio"] = round(runs[-1]["median_batch_s"] / runs[0]["median_batch_s"], 3)

    def rebuild(self) -> None:
        from lab.bench.scaling import rebuild_at, scaling_exponent

        sizes = []
        for size in self.profile.rebuild_sizes:
            point = rebuild_at(self.spark, self.settings, size, self.work / f"rebuild-{size}")
            self.log(f"   {size:,} events: {point['seconds']} s = {point['events_per_s']:,}/s")
            sizes.append(point)
        exponent = scaling_exponent([(s["events"], s["seconds"]) for s in sizes])
        self.result["rebuild"] = {"sizes": sizes, "exponent": exponent}
        self.metrics.update(rebuild_events_per_s=sizes[-1]["events_per_s"], rebuild_scaling_exponent=exponent)

    # -- the run -----------------------------------------------------------------------------
    def run(self, phases: list[str]) -> int:
        from jobs.spark import build_session
        from lab.bench.report import write_report

        self.log(f"run {self.run_id}, profile {self.profile.name}: {', '.join(phases)}")
        self.work.mkdir(parents=True, exist_ok=True)
        started_broker = self.broker.start()
        try:
            self.spark = build_session(
                "eo-bench", self.settings, conf={"spark.sql.execution.arrow.pyspark.enabled": "true"}
            )
            for name in phases:
                self.phase(name, getattr(self, name))
        finally:
            if self.spark is not None:
                self.spark.stop()
            if started_broker:
                self.broker.stop()
            if not self.keep_data:
                shutil.rmtree(self.work, ignore_errors=True)
        self.result.update(
            metrics=self.metrics,
            machine=machine(),
            versions=versions(self.result.get("ysb", {}).get("runs", [])),
            seconds=round(time.monotonic() - self.began, 1),
            finished=dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        )
        folder = write_report(self.result, self.out)
        print((folder / "summary.md").read_text())
        self.log(f"report: {folder}/ (summary.md, bench.json, 4 plots); {folder.parent}/latest -> {folder.name}")
        return 1 if self.result["errors"] else 0


def _metric_names() -> tuple[str, ...]:
    from lab.bench.report import REQUIRED_METRICS

    return REQUIRED_METRICS


def machine() -> dict:
    meminfo = Path("/proc/meminfo").read_text().splitlines()
    memory_kb = next((int(line.split()[1]) for line in meminfo if line.startswith("MemTotal")), 0)
    return {"cores": os.cpu_count(), "memory_gb": round(memory_kb / 1024 / 1024, 1), "platform": sys.platform}


def versions(ysb_runs: list[dict]) -> dict:
    found = {"python": sys.version.split()[0]}
    for package in ("pyspark", "delta-spark", "confluent-kafka"):
        found[package] = metadata.version(package)
    java = subprocess.run(["java", "-version"], capture_output=True, text=True).stderr.splitlines()
    found["java"] = java[0] if java else "unknown"
    broker_jars = (REPO_ROOT / ".cache" / "jars" / "kafka").glob("kafka_2.13-*.jar")
    found["kafka"] = next((p.stem.split("-")[-1] for p in broker_jars), "?")
    flink = next((r.get("flink_version") for r in ysb_runs if r.get("flink_version")), None)
    if flink:
        found["apache-flink"] = flink
    return found


PHASES = ("ysb", "pipeline", "continuous", "history", "rebuild")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m lab.bench", description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, about 5 minutes (checks the plumbing)")
    parser.add_argument("--phases", default=",".join(PHASES), help=f"comma-separated subset of {PHASES}")
    parser.add_argument("--ysb-events", type=count)
    parser.add_argument("--pipeline-events", type=count)
    parser.add_argument("--offered-rate", type=count, help="events/s offered in the latency phase (default 50k)")
    parser.add_argument("--latency-seconds", type=int)
    parser.add_argument("--sustained-rate", type=count, help="a second latency point at this rate (default 5k)")
    parser.add_argument("--rebuild-sizes", type=counts, help="e.g. 1M,10M,50M")
    parser.add_argument("--history-sizes", type=counts, help="two sizes, e.g. 1M,50M")
    parser.add_argument("--run-id", default=dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%SZ"))
    parser.add_argument("--out-root", type=Path, default=REPO_ROOT / "reports" / "bench", help="where run folders go")
    parser.add_argument("--keep-data", action="store_true", help="keep data/bench/<run-id>/ for inspection")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    profile = QUICK if args.quick else DEFAULT
    sizes = ("ysb_events", "pipeline_events", "offered_rate", "latency_seconds", "sustained_rate")
    sizes += ("rebuild_sizes", "history_sizes")
    overrides = {name: getattr(args, name) for name in sizes if getattr(args, name)}
    if "history_sizes" in overrides and len(overrides["history_sizes"]) != 2:
        print("--history-sizes takes two sizes, short and long, e.g. 1M,50M", file=sys.stderr)
        return 2
    phases = [p for p in args.phases.split(",") if p]
    unknown = set(phases) - set(PHASES)
    if unknown:
        print(f"unknown phases {sorted(unknown)}; choose from {PHASES}", file=sys.stderr)
        return 2
    return Bench(replace(profile, **overrides), args.run_id, args.keep_data, args.out_root).run(phases)


if __name__ == "__main__":
    sys.exit(main())
