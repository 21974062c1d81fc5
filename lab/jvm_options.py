"""What EO_JVM_OPTIONS saves on a JVM that lives under a minute, as the tests start them by the
dozen (docs/testing.md, "JVMs that live a minute"): the class archive's small job (a Delta write,
a merge, a windowed aggregate, a join, an Arrow map) under spark-submit, alternately with the
deployed options and with `--options`, each run's wall and CPU seconds (the job's processes).

    python -m lab.jvm_options [--options "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"] [--rounds 2]

Measure on a machine with nothing else running: a ratio of CPU seconds, side by side in one run.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import sys
import tempfile
import time

from eo.runtime.config import SHORT_LIVED_JVM_OPTIONS, load_settings
from eo.runtime.submit import run_job


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def one_run(options: str) -> tuple[float, float]:
    """Wall and CPU seconds of the small job with EO_JVM_OPTIONS=`options`."""
    os.environ["EO_JVM_OPTIONS"] = options
    cpu, wall = children_cpu(), time.monotonic()
    with tempfile.TemporaryDirectory(prefix="eo-jvm-options-") as scratch:
        run_job("jobs/class_archive.py", ["--workload", scratch], load_settings("local"))
    return time.monotonic() - wall, children_cpu() - cpu


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--options", default=SHORT_LIVED_JVM_OPTIONS, help="set against the deployed options")
    parser.add_argument("--rounds", type=int, default=2, help="alternated pairs of runs")
    args = parser.parse_args(argv)
    runs: dict[str, list[tuple[float, float]]] = {"deployed": [], args.options: []}
    for n in range(args.rounds):
        for label, options in (("deployed", ""), (args.options, args.options)):
            wall, cpu = one_run(options)
            runs[label].append((wall, cpu))
            print(f"[jvm-options] round {n + 1}/{args.rounds}, {label}: wall {wall:.1f} s, CPU {cpu:.1f} s", flush=True)
    (dw, dc), (ow, oc) = ([statistics.mean(x) for x in zip(*runs[k], strict=True)] for k in runs)
    print(f"[jvm-options] mean wall {dw:.1f} -> {ow:.1f} s, CPU {dc:.1f} -> {oc:.1f} s ({oc / dc:.2f}x)", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
