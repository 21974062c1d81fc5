"""The main job on local defaults, start to finish (`make demo`).

1. start Kafka (KRaft, loopback); 2. produce a clickstream with duplicates, late events and bad
records; 3. stream until caught up; 4. rebuild from the log; 5. verify stream == batch;
6. print a summary; 7. stop what it started. Exits non-zero when verification fails. Stopped by
SIGTERM or Ctrl-C, it stops what it started too (lab/stopping.py) and exits 143 or 130.

Everything lives under data/demo/ (or a _demo/ prefix of the buckets, with ENV=local-s3) and
topic `demo-clickstream`, wiped at the start, so the demo never touches the environment's own
tables.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
from pathlib import Path

from eo.core.gold import DECLARED
from eo.core.sources import CLICKS
from eo.runtime.cli import guarded
from eo.runtime.config import REPO_ROOT, Settings, load_settings, local_services
from eo.runtime.environment import environment
from eo.runtime.kafka_admin import delete_topic, ensure_topic
from eo.runtime.submit import run_job
from infra.kafka import Broker
from infra.s3 import LocalS3
from lab.stopping import stoppable
from producer.generator import ClickstreamGenerator
from producer.publish import publish
from producer.summary import summary as producer_summary

DEMO_DIR = REPO_ROOT / "data" / "demo"


def demo_environment(base: Settings, workdir: Path, topic: str) -> dict[str, str]:
    """The demo's own lake, checkpoints and topic: under data/demo/ locally, under a _demo/
    prefix of the environment's buckets on an object store."""
    lake, checkpoints = environment(base).sandbox("demo", workdir)
    return {
        "EO_LAKE_ROOT": lake,
        "EO_CHECKPOINT_ROOT": checkpoints,
        "EO_ACKS_ROOT": str(workdir / "acks"),
        "EO_TOPIC": topic,
    }


def step(number: int, text: str) -> float:
    print(f"\n== {number}. {text}", flush=True)
    return time.monotonic()


def print_summary(settings: Settings, verdict: dict, stats, catch_up: dict, timings: dict[str, float]) -> None:
    r = verdict["reconciliation"]
    tables = verdict["tables"]
    streamed = catch_up["records"]
    print("\n== summary")
    declared = f"eo/core/sources/{CLICKS.name}.schema.json"
    print(f"  source                {CLICKS.name:>12}  (topic {settings.topic}; {declared})")
    print(f"  events produced       {stats.sent:>12,}  (acked {stats.acked:,}, {stats.rate:,.0f} msg/s)")
    print(f"  duplicates removed    {r['duplicates_removed']:>12,}")
    print(f"  quarantined           {r['quarantine']:>12,}")
    print(f"  silver rows           {r['silver']:>12,}")
    unknown = verdict.get("unknown_fields") or {}
    carried = ", ".join(f"{name} ({sum(fates.values()):,})" for name, fates in unknown.items())
    print(f"  unknown fields        {len(unknown):>12,}  ({carried or 'every key was declared'})")
    for name in DECLARED:
        t = tables[name]
        print(f"  {name:<21} {t['stream_rows']:>12,}  (batch {t['batch_rows']:,})")
    print(
        f"  stream throughput     {streamed / catch_up['seconds']:>12,.0f} events/s "
        f"({streamed:,} records in {catch_up['seconds']:.1f} s, after Spark start-up)"
    )
    print(f"  stream == batch       {'YES' if verdict['passed'] else 'NO':>12}")
    print("  wall time             " + ", ".join(f"{k} {v:.0f} s" for k, v in timings.items()))
    print(f"  lake                  {settings.lake_root}")
    print(f"  verdict               {REPO_ROOT / 'reports' / 'verify' / 'latest.json'}")
    print(f"  data docs             {verdict['data_docs']}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m lab.demo", description=__doc__.split("\n")[0])
    parser.add_argument("--events", type=int, default=int(os.environ.get("EO_DEMO_EVENTS", 1_000_000)))
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--max-offsets-per-trigger", type=int, default=250_000)
    parser.add_argument("--topic", default="demo-clickstream")
    parser.add_argument("--workdir", type=Path, default=DEMO_DIR)
    parser.add_argument("--keep-kafka", action="store_true", help="leave the broker running")
    args = parser.parse_args(argv)

    if "s3" in local_services():  # before the settings: it writes the outputs they read
        print("== 0. local S3 (moto), which this environment's buckets live in")
        LocalS3.default().start()
    base = load_settings()
    os.environ.update(demo_environment(base, args.workdir, args.topic))
    settings = load_settings()
    broker = Broker.default()
    timings: dict[str, float] = {}
    begin = time.monotonic()
    t = step(1, f"Kafka on {broker.bootstrap}")
    started_broker = broker.start()
    print(f"   {'started' if started_broker else 'already running'} (home {broker.home})")
    try:
        for root in (settings.lake_root, settings.checkpoint_root):
            environment(settings).lake_files.delete_tree(root)
        shutil.rmtree(args.workdir, ignore_errors=True)
        delete_topic(settings)
        ensure_topic(settings)
        timings["kafka"] = time.monotonic() - t

        t = step(2, f"produce {args.events:,} events to {settings.topic}")
        generator = ClickstreamGenerator(seed=args.seed, total_events=args.events)
        ack_log = environment(settings).ack_log(f"demo-seed{args.seed}.csv")
        stats = publish(generator.messages(), settings, ack_log, total=args.events)
        print(producer_summary(stats))
        timings["produce"] = time.monotonic() - t

        t = step(3, "stream until caught up (Kafka -> bronze -> silver/quarantine -> gold)")
        run_job(
            "jobs/stream.py",
            ["run", "--until-caught-up", "--max-offsets-per-trigger", str(args.max_offsets_per_trigger)],
            settings,
        )
        timings["stream"] = time.monotonic() - t

        t = step(4, "rebuild gold from the bronze log (batch)")
        run_job("jobs/rebuild.py", [], settings)
        timings["rebuild"] = time.monotonic() - t

        t = step(5, "verify: stream == batch, row by row (Great Expectations)")
        verdict_path = Path(settings.reports_root) / "verify" / "latest.json"
        verdict_path.unlink(missing_ok=True)  # never summarise an earlier run's verdict
        verified = run_job("jobs/verify.py", [], settings, check=False)
        timings["verify"] = time.monotonic() - t
        timings["total"] = time.monotonic() - begin
        if not verdict_path.exists():
            print(f"verification crashed (exit {verified.returncode}) before writing a verdict; see above")
            return 1

        verdict = json.loads(verdict_path.read_text())
        catch_up = json.loads((Path(settings.reports_root) / "streaming" / "last-catch-up.json").read_text())
        print_summary(settings, verdict, stats, catch_up, timings)
        return 0 if verified.returncode == 0 and verdict["passed"] else 1
    finally:
        if started_broker and not args.keep_kafka:
            step(7, "stop Kafka")
            broker.stop()


if __name__ == "__main__":
    sys.exit(guarded(lambda argv: stoppable(main, argv)))
