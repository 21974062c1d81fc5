"""`make bench`: the streaming hot path against its targets (issue 12), with raw Spark and PyFlink
beside it, in one run on this machine.

    python -m lab.bench [--quick] [--phases ysb,pipeline,...] [--latency-seconds 30] ...

Phases, always run in this order (the live ones share one running job, so they come last):
  ysb         YSB from Kafka: raw Spark / the platform's exactly-once commits / PyFlink, same counts
  pipeline    catch-up of a pre-loaded topic: guarded job, unguarded baseline, raw read + reading
  cluster     the guarded catch-up on a Spark standalone cluster of 1, then 2 workers; tables == local run's
  rebuild     batch rebuild from bronze at several sizes, and the scaling exponent
  history     micro-batch seconds with a short and a long history (engine state, silver, gold)
  fixed_cost  bursts of 1,000 events into the idle running job
  continuous  latency at 10k events/s, then the sustained-rate search
  recovery    SIGKILL under load: cold restart, then warm standby

Writes reports/bench/<run-id>/{bench.json, summary.md, *.png, logs/}; reports/bench/latest points
at it. Everything runs on loopback: its own Kafka broker (port 49092) and local Spark; the work
folder data/bench/<run-id>/ is deleted at the end unless --keep-data.
"""

from __future__ import annotations

import argparse
import datetime as dt
import sys
from dataclasses import replace
from pathlib import Path

from eo.runtime.config import REPO_ROOT
from lab.bench.runner import Bench
from lab.bench.sizes import DEFAULT, PHASES, QUICK, count, counts
from lab.stopping import stoppable

SIZE_OPTIONS = {  # option -> (Profile field, parser, help)
    "--ysb-events": ("ysb_events", count, "YSB events (default 5M)"),
    "--pipeline-events": ("pipeline_events", count, "events of the catch-up (default 2M)"),
    "--pipeline-batch": ("pipeline_batch", count, "max offsets per micro-batch of the catch-up (default 500k)"),
    "--pipeline-pairs": ("pipeline_pairs", int, "runs of the guarded and unguarded catch-ups, alternated (default 2)"),
    "--cluster-events": ("cluster_events", count, "events of the cluster phase's catch-up (default 1M)"),
    "--cluster-batch": ("cluster_batch", count, "max offsets per micro-batch of the cluster phase (default 500k)"),
    "--rebuild-sizes": ("rebuild_sizes", counts, "e.g. 1M,3M,10M"),
    "--history-sizes": ("history_sizes", counts, "two sizes, short and long, e.g. 1M,10M"),
    "--fixed-cost-bursts": ("fixed_cost_bursts", int, "bursts of 1,000 events (default 10)"),
    "--latency-rate": ("latency_rate", count, "events/s of the latency run (default 10k)"),
    "--latency-seconds": ("latency_seconds", int, "seconds of the latency run (default 180)"),
    "--sustained-rates": ("sustained_rates", counts, "rates of the sustained-rate search (default 20k,35k,...)"),
    "--sustained-seconds": ("sustained_seconds", int, "seconds per rate of the search (default 60)"),
    "--recovery-rate": ("recovery_rate", count, "events/s offered during the recoveries (default 10k)"),
    "--standby-idle": ("standby_idle_seconds", float, "seconds the warm standby waits before the kill (default 75)"),
    "--live-max-offsets": ("live_max_offsets", count, "the running job's --max-offsets-per-trigger"),
}


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m lab.bench", description=__doc__.split("\n\n")[0], formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="tiny sizes, every phase (checks the plumbing)")
    parser.add_argument("--phases", default=",".join(PHASES), help=f"comma-separated subset of {', '.join(PHASES)}")
    for option, (field, parse, text) in SIZE_OPTIONS.items():
        parser.add_argument(option, dest=field, type=parse, help=text)
    parser.add_argument("--run-id", default=dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%SZ"))
    parser.add_argument("--out-root", type=Path, default=REPO_ROOT / "reports" / "bench", help="where run folders go")
    parser.add_argument("--keep-data", action="store_true", help="keep data/bench/<run-id>/ for inspection")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    profile = QUICK if args.quick else DEFAULT
    overrides = {field: getattr(args, field) for field, *_ in SIZE_OPTIONS.values() if getattr(args, field)}
    if "history_sizes" in overrides and len(overrides["history_sizes"]) != 2:
        print("--history-sizes takes two sizes, short and long, e.g. 1M,10M", file=sys.stderr)
        return 2
    wanted = [p for p in args.phases.split(",") if p]
    unknown = set(wanted) - set(PHASES)
    if unknown:
        print(f"unknown phases {sorted(unknown)}; choose from {PHASES}", file=sys.stderr)
        return 2
    phases = [p for p in PHASES if p in wanted]  # live phases last, whatever the order asked
    return Bench(replace(profile, **overrides), args.run_id, args.keep_data, args.out_root).run(phases)


if __name__ == "__main__":
    sys.exit(stoppable(main))  # SIGTERM stops its jobs and broker too (lab/stopping.py)
