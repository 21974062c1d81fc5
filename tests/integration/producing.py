"""Publishing test traffic to the test broker, with an ack log under the settings' acks_root."""

from pathlib import Path

from producer.generator import ClickstreamGenerator, Rates
from producer.publish import publish


def produce(settings, events: int, seed: int = 7, rates: Rates | None = None, label: str = "acks"):
    generator = ClickstreamGenerator(seed=seed, rates=rates or Rates(), span_hours=6, total_events=events)
    ack_log = Path(settings.acks_root) / f"{label}-{seed}.csv"
    stats = publish(generator.messages(), settings, ack_log, log=lambda *_: None)
    assert stats.acked == stats.sent == events, stats.errors
    return stats
