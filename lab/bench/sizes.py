"""The bench's sizes: the default run against the targets, and a quick one that checks the plumbing."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Profile:
    name: str
    ysb_events: int = 5_000_000
    ysb_batch: int = 1_000_000
    pipeline_events: int = 2_000_000
    pipeline_batch: int = 500_000
    # The guarded and unguarded jobs run this many times, alternated: on a noisy machine single
    # runs of one tree gave ratios of 0.61-0.84 (2026-12-01); the figures pool the runs.
    pipeline_pairs: int = 2
    cluster_events: int = 1_000_000  # the cluster phase's topic: the pipeline phase's when the sizes agree
    cluster_batch: int = 500_000
    rebuild_sizes: tuple[int, ...] = (1_000_000, 3_000_000, 10_000_000)
    history_sizes: tuple[int, int] = (1_000_000, 10_000_000)
    history_new_events: int = 300_000
    history_batch: int = 50_000
    fixed_cost_bursts: int = 10
    fixed_cost_pause: float = 3.0
    latency_rate: int = 10_000
    latency_seconds: int = 180
    sustained_rates: tuple[int, ...] = (20_000, 35_000, 50_000, 70_000, 100_000, 140_000)
    sustained_seconds: int = 60
    recovery_rate: int = 10_000
    recovery_seconds: int = 120  # the most load a recovery offers; it stops once caught up
    # How long the warm standby waits before the kill: as a standby does, longer than the minute
    # after which Spark ends idle Python workers (streaming/python_workers.py).
    standby_idle_seconds: float = 75.0
    live_users: int = 100_000  # the live load's user population (YSB's)
    live_max_offsets: int | None = None  # the running job's knobs: None = its defaults
    live_trigger_seconds: float | None = None


DEFAULT = Profile("default")
QUICK = Profile(  # every phase, at sizes that only check the plumbing (make test runs it)
    "quick",
    ysb_events=100_000,
    ysb_batch=50_000,
    pipeline_events=30_000,
    pipeline_batch=15_000,
    pipeline_pairs=1,
    cluster_events=30_000,  # the pipeline phase's sizes: its guarded lake is the reference
    cluster_batch=15_000,
    rebuild_sizes=(30_000, 60_000, 120_000),
    history_sizes=(30_000, 120_000),  # 300k took 4 of the quick run's 15 min
    history_new_events=6_000,
    history_batch=3_000,
    fixed_cost_bursts=2,
    fixed_cost_pause=1.0,
    latency_rate=1_000,
    latency_seconds=10,
    sustained_rates=(2_000, 4_000),
    sustained_seconds=8,
    recovery_rate=1_000,
    recovery_seconds=60,
    standby_idle_seconds=0.0,
    live_users=10_000,
)

PHASES = ("ysb", "pipeline", "cluster", "rebuild", "history", "fixed_cost", "continuous", "recovery")
LIVE_PHASES = ("fixed_cost", "continuous", "recovery")


def count(text: str) -> int:
    """1M, 500k, 2500000."""
    text = text.strip().lower().replace("_", "")
    scale = {"k": 1_000, "m": 1_000_000}.get(text[-1:], 1)
    return int(float(text[:-1] if scale > 1 else text) * scale)


def counts(text: str) -> tuple[int, ...]:
    return tuple(count(part) for part in text.split(",") if part.strip())
