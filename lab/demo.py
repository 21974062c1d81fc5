"""The main job on local defaults, start to finish (`make demo`), for every declared source.

1. start Kafka (KRaft, loopback); 2. produce a clickstream and a stream of orders, each with
duplicates, late events and bad records; 3. stream each until caught up (a stream per source,
docs/design.md); 4. rebuild each from its log; 5. verify stream == batch, per source; 6. print a
summary per source; 7. stop what it started. Exits non-zero when a verification fails. Stopped
by SIGTERM or Ctrl-C, it stops what it started too (lab/stopping.py) and exits 143 or 130.

Everything lives under data/demo/ (or a _demo/ prefix of the buckets, with ENV=local-s3) and
topics `demo-<topic>`, wiped at the start, so the demo never touches the environment's own
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

from eo.core.gold import EVERY
from eo.core.sources import CLICKS, DECLARED, SOURCE_VARIABLE
from eo.runtime.cli import guarded
from eo.runtime.config import REPO_ROOT, Settings, load_settings, local_services, source_prefix
from eo.runtime.environment import environment
from eo.runtime.kafka_admin import delete_topic, ensure_topic
from eo.runtime.submit import run_job
from infra.kafka import Broker
from infra.s3 import LocalS3
from lab.stopping import stoppable
from producer.publish import publish
from producer.sources import generator_for
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


def print_summary(
    settings: Settings, verdict: dict, stats, catch_up: dict, timings: dict[str, float], source: str = CLICKS.name
) -> None:
    r = verdict["reconciliation"]
    tables = verdict["tables"]
    streamed = catch_up["records"]
    print(f"\n== summary{'' if source == CLICKS.name else f' of {source}'}")
    declared = f"eo/core/sources/{source}.schema.json"
    print(f"  source                {source:>12}  (topic {settings.topic}; {declared})")
    print(f"  events produced       {stats.sent:>12,}  (acked {stats.acked:,}, {stats.rate:,.0f} msg/s)")
    print(f"  duplicates removed    {r['duplicates_removed']:>12,}")
    print(f"  quarantined           {r['quarantine']:>12,}")
    print(f"  silver rows           {r['silver']:>12,}")
    unknown = verdict.get("unknown_fields") or {}
    carried = ", ".join(f"{name} ({sum(fates.values()):,})" for name, fates in unknown.items())
    print(f"  unknown fields        {len(unknown):>12,}  ({carried or 'every key was declared'})")
    for name in (n for n, t in EVERY.items() if t.source == source):
        t = tables[name]
        print(f"  {name:<21} {t['stream_rows']:>12,}  (batch {t['batch_rows']:,})")
    print(
        f"  stream throughput     {streamed / catch_up['seconds']:>12,.0f} events/s "
        f"({streamed:,} records in {catch_up['seconds']:.1f} s, after Spark start-up)"
    )
    print(f"  stream == batch       {'YES' if verdict['passed'] else 'NO':>12}")
    if timings:  # the whole run's, after the last source's summary
        print("  wall time             " + ", ".join(f"{k} {v:.0f} s" for k, v in timings.items()))
    print(f"  lake                  {settings.lake_root.rstrip('/')}{source_prefix(source)}")
    print(f"  verdict               {verdict_path(settings, source)}")
    print(f"  data docs             {verdict['data_docs']}")


def verdict_path(settings: Settings, source: str) -> Path:
    """Where verification writes a source's verdict (its reports' folder)."""
    return Path(f"{settings.reports_root.rstrip('/')}{source_prefix(source)}") / "verify" / "latest.json"


def catch_up_of(settings: Settings, source: str) -> dict:
    """The stream's last catch-up of a source: {records, seconds} (streaming/query.py)."""
    folder = Path(f"{settings.reports_root.rstrip('/')}{source_prefix(source)}")
    return json.loads((folder / "streaming" / "last-catch-up.json").read_text())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m lab.demo", description=__doc__.split("\n")[0])
    parser.add_argument("--events", type=int, default=int(os.environ.get("EO_DEMO_EVENTS", 1_000_000)))
    parser.add_argument("--orders", type=int, default=None, help="orders produced (default: a fifth of --events)")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--max-offsets-per-trigger", type=int, default=250_000)
    parser.add_argument("--topic-prefix", default="demo", help="each source's topic is <prefix>-<its topic>")
    parser.add_argument("--workdir", type=Path, default=DEMO_DIR)
    parser.add_argument("--keep-kafka", action="store_true", help="leave the broker running")
    args = parser.parse_args(argv)
    counts = {"clicks": args.events, "orders": args.events // 5 if args.orders is None else args.orders}
    sources = [name for name in DECLARED if counts.get(name, 0) > 0]

    if "s3" in local_services():  # before the settings: it writes the outputs they read
        print("== 0. local S3 (moto), which this environment's buckets live in")
        LocalS3.default().start()
    base = load_settings()
    topics = {name: f"{args.topic_prefix}-{DECLARED[name].topic}" for name in sources}
    os.environ.update(demo_environment(base, args.workdir, topics[CLICKS.name]))
    settings = load_settings()
    per_source = {name: settings.with_overrides(topic=topics[name]) for name in sources}
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
        for name in sources:
            delete_topic(per_source[name])
            ensure_topic(per_source[name])
        timings["kafka"] = time.monotonic() - t

        t = step(2, "produce " + ", ".join(f"{counts[n]:,} {n} to {topics[n]}" for n in sources))
        stats = {}
        for name in sources:
            generator = generator_for(name).make(seed=args.seed, total_events=counts[name])
            ack_log = environment(settings).ack_log(f"demo-{name}-seed{args.seed}.csv")
            stats[name] = publish(generator.messages(), per_source[name], ack_log, total=counts[name])
            print(producer_summary(stats[name]))
        timings["produce"] = time.monotonic() - t

        def each(number: int, text: str, script: str, job_args: list[str], key: str, check: bool = True) -> dict:
            started, done = step(number, text), {}
            for name in sources:
                print(f"-- {name} ({SOURCE_VARIABLE}={name})", flush=True)
                done[name] = run_job(script, job_args, per_source[name], env=source_env_of(name), check=check)
            timings[key] = time.monotonic() - started
            return done

        def source_env_of(name: str) -> dict[str, str]:
            return {SOURCE_VARIABLE: name, "EO_TOPIC": topics[name]}

        stream_args = ["run", "--until-caught-up", "--max-offsets-per-trigger", str(args.max_offsets_per_trigger)]
        each(3, "stream each source until caught up (Kafka -> bronze -> silver/quarantine -> gold)",
             "jobs/stream.py", stream_args, "stream")  # fmt: skip
        each(4, "rebuild gold from each bronze log (batch)", "jobs/rebuild.py", [], "rebuild")
        for name in sources:  # never summarise an earlier run's verdict
            verdict_path(settings, name).unlink(missing_ok=True)
        verified = each(5, "verify: stream == batch, row by row, per source (Great Expectations)",
                        "jobs/verify.py", [], "verify", check=False)  # fmt: skip
        timings["total"] = time.monotonic() - begin

        passed = True
        for name in sources:
            found = verdict_path(settings, name)
            if not found.exists():
                print(f"verification of {name} crashed (exit {verified[name].returncode}) before writing a verdict")
                passed = False
                continue
            verdict = json.loads(found.read_text())
            summary_timings = timings if name == sources[-1] else {}
            print_summary(per_source[name], verdict, stats[name], catch_up_of(settings, name), summary_timings, name)
            passed = passed and verified[name].returncode == 0 and verdict["passed"]
        return 0 if passed else 1
    finally:
        if started_broker and not args.keep_kafka:
            step(7, "stop Kafka")
            broker.stop()


if __name__ == "__main__":
    sys.exit(guarded(lambda argv: stoppable(main, argv)))
