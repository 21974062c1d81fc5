"""Streaming health without Spark: read the queries' checkpoints and compare with their sources.

- ingest: Kafka end offsets per partition - offsets of the last committed batch = consumer lag;
- refine: latest bronze version - bronze version of the last committed batch = versions behind;
- freshness: how long ago the last batch committed.
Local paths only for now (checkpoints on object storage are read by the cloud runtime's own
monitoring).
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from jobs.config import Settings
from jobs.tables import BRONZE


@dataclass
class CheckpointState:
    """What a Structured Streaming checkpoint says about its last committed micro-batch."""

    batch_id: int | None = None
    committed_at: float | None = None  # epoch seconds
    source_offsets: list[dict] = field(default_factory=list)

    @property
    def age_seconds(self) -> float | None:
        return None if self.committed_at is None else max(0.0, time.time() - self.committed_at)


def _numbered(folder: Path) -> list[int]:
    return sorted(int(p.name) for p in folder.glob("[0-9]*") if p.name.isdigit()) if folder.is_dir() else []


def read_checkpoint(path: str) -> CheckpointState:
    root = Path(path)
    commits = _numbered(root / "commits")
    if not commits:
        return CheckpointState()
    last = commits[-1]
    # offsets/<n>: a version line, the batch metadata, then one JSON line per source.
    lines = (root / "offsets" / str(last)).read_text().splitlines()
    sources = [json.loads(line) for line in lines[2:] if line.strip() and line.strip() != "-"]
    return CheckpointState(last, (root / "commits" / str(last)).stat().st_mtime, sources)


def latest_delta_version(table_path: str) -> int | None:
    versions = [int(p.stem) for p in Path(table_path, "_delta_log").glob("*.json") if p.stem.isdigit()]
    return max(versions) if versions else None


@dataclass
class QueryHealth:
    query: str
    last_batch: int | None
    seconds_since_commit: float | None
    lag: int  # records (ingest) or bronze versions (refine) not yet committed
    lag_by_partition: dict[str, int] = field(default_factory=dict)


def ingest_health(settings: Settings, end_offsets: dict[int, int]) -> QueryHealth:
    state = read_checkpoint(settings.checkpoint_path("ingest"))
    done = state.source_offsets[0].get(settings.topic, {}) if state.source_offsets else {}
    by_partition = {str(p): max(0, end - int(done.get(str(p), 0))) for p, end in sorted(end_offsets.items())}
    return QueryHealth("ingest", state.batch_id, state.age_seconds, sum(by_partition.values()), by_partition)


def _refined_through(state: CheckpointState) -> int:
    """The last bronze version refine has wholly committed (-1: none)."""
    offset = state.source_offsets[0] if state.source_offsets else {"reservoirVersion": 0, "index": -1}
    # index -1: every version before reservoirVersion is done; otherwise it is part-way through it.
    return int(offset["reservoirVersion"]) - (1 if int(offset.get("index", -1)) == -1 else 0)


def refined_through(settings: Settings) -> int:
    return _refined_through(read_checkpoint(settings.checkpoint_path("refine")))


def refine_health(settings: Settings) -> QueryHealth:
    state = read_checkpoint(settings.checkpoint_path("refine"))
    latest = latest_delta_version(settings.table_path(BRONZE.name))
    behind = 0 if latest is None else max(0, latest - _refined_through(state))
    return QueryHealth("refine", state.batch_id, state.age_seconds, behind)


def health(settings: Settings) -> dict[str, dict]:
    from jobs.kafka_admin import end_offsets

    queries = (ingest_health(settings, end_offsets(settings)), refine_health(settings))
    return {q.query: asdict(q) for q in queries}
