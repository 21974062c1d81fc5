"""The PyFlink leg of the YSB comparison, run from the main venv.

PyFlink's dependencies conflict with Airflow's, so it lives in .cache/flink-venv (`make
flink-venv`) with the Kafka connector from Maven in .cache/jars/flink (`make jars-flink`);
lab/bench/ysb_flink.py runs there as a subprocess. EO_FLINK_PYTHON and EO_FLINK_JARS point
elsewhere (a checkout that must not build into a shared .cache).
"""

from __future__ import annotations

import csv
import json
import os
import subprocess
from collections import Counter
from pathlib import Path

from eo.runtime.config import REPO_ROOT

FLINK_PYTHON = Path(os.environ.get("EO_FLINK_PYTHON", REPO_ROOT / ".cache" / "flink-venv" / "bin" / "python"))
FLINK_JARS = Path(os.environ.get("EO_FLINK_JARS", REPO_ROOT / ".cache" / "jars" / "flink"))
SCRIPT = Path(__file__).with_name("ysb_flink.py")


class FlinkMissing(RuntimeError):
    """The PyFlink venv or its connector jar is not installed."""


def read_counts(output: Path) -> dict[tuple[str, int], int]:
    """(campaign, window start ms) -> views, from the sink's committed files only.

    Files still in progress are hidden (a leading dot); each row is one ad's views, so rows of the
    same campaign and window are added up here.
    """
    counts: Counter = Counter()
    for part in sorted(output.rglob("*")):
        if part.is_file() and not part.name.startswith("."):
            with part.open(newline="") as rows:
                for campaign, window_start, views in csv.reader(rows):
                    counts[(campaign, int(window_start))] += int(views)
    return dict(counts)


def uncommitted_rows(output: Path) -> int:
    """Rows the sink left in in-progress files (a leading dot, not checksums): written, never
    committed by a checkpoint. Non-zero explains a short count."""
    return sum(
        sum(1 for _ in part.open(newline=""))
        for part in output.rglob(".*")
        if part.is_file() and not part.name.endswith(".crc")
    )


def run_ysb_flink(bootstrap: str, topic: str, ads_rows: list[tuple[str, str]], workdir: Path, log=print) -> dict:
    if not FLINK_PYTHON.exists() or not any(FLINK_JARS.glob("*.jar")):
        raise FlinkMissing("PyFlink is not installed; run `make flink-venv jars-flink` (make bench does)")
    workdir.mkdir(parents=True, exist_ok=True)
    ads = workdir / "ads.csv"
    with ads.open("w", newline="") as out:
        csv.writer(out).writerows(ads_rows)
    command = [
        str(FLINK_PYTHON), str(SCRIPT), "--bootstrap", bootstrap, "--topic", topic, "--ads", str(ads),
        "--output", str(workdir / "counts"), "--checkpoints", str(workdir / "checkpoints"), "--jars", str(FLINK_JARS),
    ]  # fmt: skip
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    last = ""
    for line in proc.stdout:
        line = line.rstrip()
        if line:
            last = line
            if not line.startswith("{"):
                log(f"[flink] {line}")
    if proc.wait() != 0 or not last.startswith("{"):
        raise RuntimeError(f"the PyFlink job failed (exit {proc.returncode}); its output is above")
    result = json.loads(last)
    output = workdir / "counts"
    return {**result, "counts": read_counts(output), "uncommitted_rows": uncommitted_rows(output)}
