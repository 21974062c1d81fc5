"""The fixed cost of a warm micro-batch: 1,000 events, Kafka to gold committed.

With the job running and idle (everything committed, then a pause), a burst of exactly 1,000
valid, distinct events is sent as fast as the client goes and acknowledged. The figure of a
burst is the commit time in gold of the micro-batch that holds its last record (the latest
commit time over the burst's events: a burst can straddle two batches) minus the Kafka
timestamp of its last record. Repeated with pauses; the median and the spread are reported,
and the job's own seconds for those batches (its log lines) beside them, with when Spark
planned each batch (its checkpoint's offsets/<batch> file appears then) and when it committed it
to the checkpoint (commits/<batch>), both relative to the burst's last record.
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from lab.bench.commit_log import commit_times_of
from lab.bench.latency import median_and_spread
from lab.bench.live import BURST, LiveJob


def burst_figure(live: LiveJob, sent: dict, timeout: float = 30.0) -> dict:
    """One burst's seconds from its last produce to its last event committed in gold."""
    deadline = time.monotonic() + timeout
    while True:
        rows, times = live.rows(sent["first_ts"], sent["last_ts"])
        committed = commit_times_of(rows, times)
        complete = len(rows) == sent["records"] and not np.isnan(committed).any()
        if complete or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    if not complete:
        raise RuntimeError(f"burst: {len(rows)} of {sent['records']} events found committed in gold")
    batches = live.job_batches(rows)
    ids = [position - 1 for _, position in rows.batch_keys()]
    checkpoint = Path(live.settings.checkpoint_path("events"))
    return {
        "seconds": round(float(committed.max()) - sent["last_ts"], 3),
        "produce_span_s": round(sent["last_ts"] - sent["first_ts"], 3),
        "batches": ids,
        "job_batch_seconds": [b["seconds"] for b in batches],
        "job_batch_records": [b["records"] for b in batches],
        "planned_s": [_since(checkpoint / "offsets" / str(i), sent["last_ts"]) for i in ids],
        "checkpointed_s": [_since(checkpoint / "commits" / str(i), sent["last_ts"]) for i in ids],
    }


def _since(marker: Path, moment: float) -> float | None:
    """When a checkpoint file was written, in seconds after `moment`."""
    return round(marker.stat().st_mtime - moment, 3) if marker.exists() else None


def measure_fixed_cost(live: LiveJob, bursts: int, pause: float, log=print) -> dict:
    live.ensure_running()
    load = live.loads.make(bursts * BURST, per_second=BURST, clean=True)
    figures = []
    for i in range(bursts):
        live.drain(120, "the previous burst")
        time.sleep(pause)  # idle: no micro-batch in flight when the burst arrives
        sent = live.sender.send(load.slice(i * BURST, (i + 1) * BURST))
        live.drain(120, f"burst {i + 1}")
        figure = burst_figure(live, sent)
        log(
            f"   burst {i + 1}/{bursts}: {figure['seconds']} s (batches {figure['batches']} planned at "
            f"{figure['planned_s']} s, job's own {figure['job_batch_seconds']} s)"
        )
        figures.append(figure)
    job_seconds = [s for f in figures for s in f["job_batch_seconds"]]
    return {
        "burst_events": BURST,
        "pause_s": pause,
        "bursts": figures,
        # a burst the query began to plan before all of it was in the log: two batches' time
        "split_bursts": sum(len(f["batches"]) > 1 for f in figures),
        **median_and_spread([f["seconds"] for f in figures]),
        "job_batch_seconds": median_and_spread(job_seconds),
    }
