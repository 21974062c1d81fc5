"""When each micro-batch became visible in gold, read from the Delta logs alone (no Spark).

Every commit the streaming job makes carries delta-rs `custom_metadata` {app_id, epoch,
position} in its commitInfo, with position = micro-batch id + 1 (eo/runtime/commits.py). So:

- a batch's commit time on a table is the commitInfo timestamp of the first commit carrying
  its (app_id, position). Later commits with the same position are a new instance's claims
  (an empty commit at the position its predecessor reached), never the batch itself;
- a batch is committed in gold when silver, campaign_minute_metrics and user_sessions all hold
  its commit; its commit time is the latest of the three;
- a silver row was committed by the commit that added its data file.

The logs are read incrementally (`_delta_log/<version>.json`, local paths), and each silver
data file is read once (its Kafka coordinates only).
"""

from __future__ import annotations

import json
import urllib.parse
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

BatchKey = tuple[str, int]  # (app_id, position)
SILVER_COLUMNS = ("kafka_timestamp", "kafka_partition", "kafka_offset")


@dataclass(frozen=True)
class Commit:
    version: int
    timestamp: float  # seconds since the epoch, from commitInfo
    batch: BatchKey | None  # None: not a streaming job's commit (table creation, a rebuild...)
    added: tuple[str, ...] = ()  # data files added, relative to the table


def parse_commit(version: int, text: str) -> Commit:
    timestamp, batch, added = None, None, []
    for line in text.splitlines():
        if not line.strip():
            continue
        action = json.loads(line)
        if "commitInfo" in action:
            info = action["commitInfo"]
            timestamp = info.get("timestamp")
            if "position" in info and "app_id" in info:
                batch = (str(info["app_id"]), int(info["position"]))
        elif "add" in action:
            added.append(urllib.parse.unquote(action["add"]["path"]))
    if timestamp is None:
        raise ValueError(f"commit {version} has no commitInfo timestamp")
    return Commit(version, timestamp / 1000, batch, tuple(added))


@dataclass
class DeltaLog:
    """The commits of one local Delta table, read incrementally."""

    path: Path
    commits: list[Commit] = field(default_factory=list)
    first: dict[BatchKey, Commit] = field(default_factory=dict)  # each batch's first commit

    def refresh(self) -> list[Commit]:
        """Read the commits made since the last call; returns them."""
        new = []
        version = self.commits[-1].version + 1 if self.commits else 0
        while True:
            entry = self.path / "_delta_log" / f"{version:020d}.json"
            try:
                commit = parse_commit(version, entry.read_text())
            except (FileNotFoundError, json.JSONDecodeError):
                break  # not there yet (a commit file appears whole: written aside, then renamed)
            self.commits.append(commit)
            if commit.batch is not None and commit.batch[1] > 0:
                self.first.setdefault(commit.batch, commit)
            new.append(commit)
            version += 1
        return new


def batch_commit_times(silver: DeltaLog, gold: list[DeltaLog]) -> dict[BatchKey, float]:
    """(app_id, position) -> when the batch was committed on every table (the latest of its commits)."""
    tables = [silver, *gold]
    common = set(silver.first).intersection(*(log.first for log in gold))
    return {key: max(log.first[key].timestamp for log in tables) for key in common}


@dataclass
class SilverRows:
    """Silver rows' Kafka coordinates, each with the batch that committed it (an index into `batches`)."""

    timestamp: np.ndarray  # Kafka timestamp, seconds since the epoch
    partition: np.ndarray
    offset: np.ndarray
    batch: np.ndarray  # index into `batches`, per row
    batches: list[BatchKey]

    @classmethod
    def empty(cls) -> SilverRows:
        return cls(np.empty(0), np.empty(0, np.int64), np.empty(0, np.int64), np.empty(0, np.int64), [])

    def __len__(self) -> int:
        return len(self.timestamp)

    def where(self, mask: np.ndarray) -> SilverRows:
        return SilverRows(self.timestamp[mask], self.partition[mask], self.offset[mask], self.batch[mask], self.batches)

    def batch_keys(self) -> list[BatchKey]:
        """The batches these rows were committed by, in position order."""
        return sorted({self.batches[i] for i in np.unique(self.batch)}, key=lambda key: (key[0], key[1]))


def read_coordinates(data_file: Path) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    table = pq.read_table(data_file, columns=list(SILVER_COLUMNS))
    micros = table["kafka_timestamp"].cast(pa.timestamp("us", tz="UTC")).cast(pa.int64())
    return (
        micros.to_numpy() / 1e6,
        table["kafka_partition"].cast(pa.int64()).to_numpy(),
        table["kafka_offset"].cast(pa.int64()).to_numpy(),
    )


@dataclass
class LakeClock:
    """The commit times of one lake's micro-batches and its silver rows, kept up to date."""

    silver: DeltaLog
    gold: list[DeltaLog]
    _files: list[tuple[BatchKey, tuple[np.ndarray, np.ndarray, np.ndarray]]] = field(default_factory=list)

    @classmethod
    def of(cls, silver_path: str, gold_paths: list[str]) -> LakeClock:
        return cls(DeltaLog(Path(silver_path)), [DeltaLog(Path(p)) for p in gold_paths])

    def refresh(self) -> LakeClock:
        for log in self.gold:
            log.refresh()
        for commit in self.silver.refresh():
            if commit.batch is None or self.silver.first.get(commit.batch) is not commit:
                continue
            for name in commit.added:
                self._files.append((commit.batch, read_coordinates(self.silver.path / name)))
        return self

    def batch_times(self) -> dict[BatchKey, float]:
        return batch_commit_times(self.silver, self.gold)

    def rows(self, since: float, until: float) -> SilverRows:
        """Silver rows whose Kafka timestamp is in [since, until] (seconds since the epoch)."""
        batches: dict[BatchKey, int] = {}
        parts = []
        for batch, (ts, part, off) in self._files:
            mask = (ts >= since) & (ts <= until)
            if mask.any():
                index = batches.setdefault(batch, len(batches))
                parts.append((ts[mask], part[mask], off[mask], np.full(int(mask.sum()), index)))
        if not parts:
            return SilverRows.empty()
        columns = [np.concatenate([p[i] for p in parts]) for i in range(4)]
        return SilverRows(*columns, list(batches))


def commit_times_of(rows: SilverRows, times: dict[BatchKey, float]) -> np.ndarray:
    """Each row's batch commit time in gold (NaN while its batch is not committed on every table)."""
    per_batch = np.array([times.get(key, np.nan) for key in rows.batches] or [np.nan], dtype=float)
    return per_batch[rows.batch] if len(rows) else np.empty(0)


def latencies(rows: SilverRows, times: dict[BatchKey, float]) -> np.ndarray:
    """Per row: its batch's gold commit time - its Kafka timestamp (NaN: not in gold yet)."""
    return commit_times_of(rows, times) - rows.timestamp
