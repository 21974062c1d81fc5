"""What a publication leaves a person: the one-line summary of its stats, and where its ack log goes
unless told. Shared by `python -m producer`, the demo and `python -m ops.quarantine republish`."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from eo.runtime.config import Settings
from producer.publish import PublishStats


def default_ack_log(settings: Settings, label: str) -> Path:
    from eo.runtime.environment import environment

    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%S%fZ")
    return environment(settings).ack_log(f"{stamp}-{label}.csv")


def summary(stats: PublishStats) -> str:
    kinds = ", ".join(f"{k}={v}" for k, v in sorted(stats.kinds.items()))
    line = (
        f"[producer] sent {stats.sent}, acked {stats.acked}, failed {stats.failed} "
        f"in {stats.seconds:.1f} s ({stats.rate:,.0f} msg/s); {kinds}"
    )
    if stats.errors:
        line += f"; errors: {dict(stats.errors)}"
    return line
