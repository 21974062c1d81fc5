"""What happened when during a lab run: faults, restarts, and consumer lag sampled over time."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

from eo.runtime.config import Settings


@dataclass
class Timeline:
    started: float = field(default_factory=time.time)
    events: list[dict] = field(default_factory=list)
    lag: list[tuple[float, int | None]] = field(default_factory=list)

    def now(self) -> float:
        return round(time.time() - self.started, 2)

    def add(self, kind: str, **detail) -> None:
        event = {"t": self.now(), "kind": kind, **detail}
        self.events.append(event)
        shown = " ".join(f"{k}={v}" for k, v in detail.items())
        print(f"[lab t+{event['t']:7.1f}s] {kind} {shown}", flush=True)

    def count(self, kind: str) -> int:
        return sum(1 for e in self.events if e["kind"] == kind)


class LagSampler(threading.Thread):
    """Ingest lag (Kafka end offsets minus the checkpoint), every `every` seconds."""

    def __init__(self, settings: Settings, timeline: Timeline, every: float = 2.0) -> None:
        super().__init__(daemon=True)
        self.settings, self.timeline, self.every = settings, timeline, every
        self.stopped = threading.Event()

    def run(self) -> None:
        from eo.runtime.kafka_admin import end_offsets
        from eo.runtime.monitoring import stream_health

        while not self.stopped.wait(self.every):
            try:
                lag = stream_health(self.settings, end_offsets(self.settings)).lag
            except Exception:  # noqa: BLE001 - broker down: a gap in the plot, not a failure
                lag = None
            self.timeline.lag.append((self.timeline.now(), lag))

    def stop(self) -> None:
        self.stopped.set()
        self.join(10)
