"""What a publication leaves a person: the one-line summary of its stats (counts by kind, whichever
source's), and where its ack log goes unless told. Shared by `python -m producer`, the demo and
`python -m ops.quarantine republish`."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from eo.runtime.config import Settings
from producer.publish import PublishStats


def default_ack_log(settings: Settings, label: str, source: str | None = None) -> Path:
    """A new ack log's path, per topic: the clickstream's `<stamp>-<label>.csv` (as it always was),
    another source's `<stamp>-<topic>-<label>.csv` (its topic: settings.topic), all in the acks
    folder, where verification reads them and keeps its topic's rows. `source`: the served one
    (EO_SOURCE) unless named."""
    from eo.core.sources import CLICKS, SELECTED
    from eo.runtime.environment import environment

    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%S%fZ")
    topic = "" if (source or SELECTED.name) == CLICKS.name else f"{settings.topic}-"
    return environment(settings).ack_log(f"{stamp}-{topic}{label}.csv")


def summary(stats: PublishStats) -> str:
    kinds = ", ".join(f"{k}={v}" for k, v in sorted(stats.kinds.items()))
    line = (
        f"[producer] sent {stats.sent}, acked {stats.acked}, failed {stats.failed} "
        f"in {stats.seconds:.1f} s ({stats.rate:,.0f} msg/s); {kinds}"
    )
    if stats.errors:
        line += f"; errors: {dict(stats.errors)}"
    return line
