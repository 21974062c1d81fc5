"""Streaming health without Spark: read the query's checkpoint and compare with Kafka.

- lag: Kafka end offsets per partition - offsets of the last committed batch (records behind);
- freshness: how long ago the last batch committed.
Checkpoints are read where the environment keeps them (eo/runtime/environment.py: the local disk or S3).
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, field

from eo.runtime.config import STREAM_QUERY, Settings
from eo.runtime.environment import environment
from eo.runtime.storage import Files, LocalFiles


@dataclass
class CheckpointState:
    """What a Structured Streaming checkpoint says about its last committed micro-batch."""

    batch_id: int | None = None
    committed_at: float | None = None  # epoch seconds
    source_offsets: list[dict] = field(default_factory=list)

    @property
    def age_seconds(self) -> float | None:
        return None if self.committed_at is None else max(0.0, time.time() - self.committed_at)


def numbered(fs: Files, folder: str) -> list[int]:
    """The numbered files of a checkpoint folder (offsets/, commits/, ...), in order."""
    return sorted(int(name) for name in fs.names(folder) if name.isdigit())


def last_committed_batch(path: str, fs: Files | None = None) -> int | None:
    """The newest batch id in a checkpoint's commit log (Spark keeps only its newest ~100 files)."""
    commits = numbered(fs or LocalFiles(), f"{path.rstrip('/')}/commits")
    return commits[-1] if commits else None


def read_checkpoint(path: str, fs: Files | None = None) -> CheckpointState:
    fs = fs or LocalFiles()
    root = path.rstrip("/")
    last = last_committed_batch(root, fs)
    if last is None:
        return CheckpointState()
    # offsets/<n>: a version line, the batch metadata, then one JSON line per source.
    lines = fs.read_text(f"{root}/offsets/{last}").splitlines()
    sources = [json.loads(line) for line in lines[2:] if line.strip() and line.strip() != "-"]
    return CheckpointState(last, fs.modified(f"{root}/commits/{last}"), sources)


@dataclass
class QueryHealth:
    query: str
    last_batch: int | None
    seconds_since_commit: float | None
    lag: int  # Kafka records not yet committed
    lag_by_partition: dict[str, int] = field(default_factory=dict)


def kafka_offsets(state: CheckpointState, topic: str) -> dict:
    """The Kafka offsets the last committed batch reached, per partition ({} before the first)."""
    return next((source[topic] for source in state.source_offsets if topic in source), {})


def stream_health(settings: Settings, end_offsets: dict[int, int], query: str = STREAM_QUERY) -> QueryHealth:
    state = read_checkpoint(settings.checkpoint_path(query), environment(settings).lake_files)
    done = kafka_offsets(state, settings.topic)
    by_partition = {str(p): max(0, end - int(done.get(str(p), 0))) for p, end in sorted(end_offsets.items())}
    return QueryHealth(query, state.batch_id, state.age_seconds, sum(by_partition.values()), by_partition)


def health(settings: Settings) -> dict[str, dict]:
    from eo.runtime.kafka_admin import end_offsets

    query = stream_health(settings, end_offsets(settings))
    return {query.query: asdict(query)}
