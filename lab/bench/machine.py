"""What the bench ran on: the machine and the versions of everything measured."""

from __future__ import annotations

import os
import subprocess
import sys
from importlib import metadata
from pathlib import Path

from eo.runtime.config import REPO_ROOT


def machine() -> dict:
    meminfo = Path("/proc/meminfo").read_text().splitlines()
    memory_kb = next((int(line.split()[1]) for line in meminfo if line.startswith("MemTotal")), 0)
    return {"cores": os.cpu_count(), "memory_gb": round(memory_kb / 1024 / 1024, 1), "platform": sys.platform}


def versions(ysb_runs: list[dict]) -> dict:
    found = {"python": sys.version.split()[0]}
    for package in ("pyspark", "delta-spark", "deltalake", "pyarrow", "confluent-kafka"):
        found[package] = metadata.version(package)
    java = subprocess.run(["java", "-version"], capture_output=True, text=True).stderr.splitlines()
    found["java"] = java[0] if java else "unknown"
    broker_jars = (REPO_ROOT / ".cache" / "jars" / "kafka").glob("kafka_2.13-*.jar")
    found["kafka"] = next((p.stem.split("-")[-1] for p in broker_jars), "?")
    flink = next((r.get("flink_version") for r in ysb_runs if r.get("flink_version")), None)
    if flink:
        found["apache-flink"] = flink
    return found
