"""The reads behind an explanation (batch/explain.py), through delta-rs: no Spark job, and each read
pruned by the tables' partitions and file statistics.

Snapshots agree with each other: the stream commits its five tables with the same transaction
(app id, epoch, position), so a gold row at version N is explained with silver, bronze and
quarantine as they stood after that same micro-batch (`aligned_version`).
"""

from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import Iterable

import pyarrow as pa
import pyarrow.compute as pc

from eo.core.lineage import TIME, EventRange, ExplainError
from eo.core.tables import EVENT_ID, EVENT_TIME, INGEST_BATCH, SOURCE_KEY, TableDef
from eo.runtime.cli import NotReady
from eo.runtime.config import Settings
from eo.runtime.environment import environment
from eo.runtime.fencing import decode_version

Coordinates = tuple[str, int, int]
# Commits that change no row (lake_maintenance): they do not decide which micro-batch a version holds.
MAINTENANCE = {"OPTIMIZE", "VACUUM START", "VACUUM END"}


def open_table(settings: Settings, name: str, namespace: str, version: int | None = None):
    """The table at `version` (default: its latest); ExplainError when there is no such table or version."""
    from deltalake import DeltaTable
    from deltalake.exceptions import DeltaError, TableNotFoundError

    env = environment(settings)
    where = env.table(name, namespace)
    try:
        latest = DeltaTable(where.uri, storage_options=where.storage_options)
    except TableNotFoundError as exc:
        raise NotReady(f"no {name} table in the {namespace} namespace yet ({where.uri})") from exc
    if version is not None and not 0 <= version <= latest.version():
        raise ExplainError(f"{name} has versions 0 to {latest.version()}; there is no version {version}")
    try:
        at = latest if version in (None, latest.version()) else DeltaTable(where.uri, version, where.storage_options)
    except DeltaError as exc:  # cleaned up by log retention
        raise ExplainError(f"{name} version {version} is no longer readable: {exc}") from exc
    return Snapshot(at, env.arrow_filesystem(settings.table_path(name, namespace)))


class Snapshot:
    """A table at one version (a delta-rs DeltaTable: version(), history(), schema(), table_uri), whose
    files are read through the environment's pyarrow filesystem."""

    def __init__(self, delta, filesystem) -> None:
        self.delta, self.filesystem = delta, filesystem

    def __getattr__(self, name: str):
        return getattr(self.delta, name)

    def dataset(self, partitions=None):
        return self.delta.to_pyarrow_dataset(partitions=partitions, filesystem=self.filesystem)


def history(delta) -> list[dict]:
    """The commits of the table, oldest first (as far as the log keeps them)."""
    return sorted(delta.history(), key=lambda c: c["version"])


def version_as_of(delta, when: dt.datetime) -> int:
    """The newest version committed at or before `when`."""
    stamp = when.timestamp() * 1000
    found = [c["version"] for c in history(delta) if c["timestamp"] <= stamp]
    if not found:
        raise ExplainError(f"{delta.table_uri} has no version committed by {when.isoformat()}")
    return max(found)


def committed_at(delta, version: int) -> dt.datetime:
    commit = next(c for c in history(delta) if c["version"] == version)
    return dt.datetime.fromtimestamp(commit["timestamp"] / 1000, dt.UTC)


def batch_of(delta, version: int) -> dict | None:
    """The stream's transaction (app id, epoch, position) of the newest commit at or before `version`
    that carries one; None for a table no stream commits (the rebuild's)."""
    writes = [c for c in history(delta) if c["version"] <= version and c.get("operation") not in MAINTENANCE]
    last = writes[-1] if writes else None
    if last is None or not last.get("app_id"):  # written by Spark (a rebuild, a reset): no micro-batch
        return None
    return {"app_id": last["app_id"], "epoch": int(last["epoch"]), "position": int(last["position"])}


def aligned_version(delta, batch: dict | None, when: dt.datetime | None = None) -> int:
    """The version of another table that holds the same micro-batch: the first commit of the same app
    at or past its position (a replay skipped as done holds it earlier). Without a batch, the newest
    version committed by `when` (the explained commit's time), else the latest."""
    if batch is None:
        return delta.version() if when is None else version_as_of(delta, when)
    for commit in history(delta):
        if commit.get("app_id") == batch["app_id"] and int(commit.get("position", 0)) >= batch["position"] > 0:
            return commit["version"]
    return delta.version()


def _partition_filter(table: TableDef, dates: Iterable[dt.date]):
    if not table.partition_by:
        return None
    return [(table.partition_by[0], "in", sorted({d.isoformat() for d in dates}))]


def rows(
    delta,
    table: TableDef,
    equal: dict[str, object],
    dates: Iterable[dt.date] | None = None,
    between: tuple[str, dt.datetime, dt.datetime] | None = None,
) -> pa.Table:
    """The rows whose columns equal `equal` (and whose `between` column lies in its bounds, inclusive),
    reading only the partitions of `dates` when the table has them."""
    partitions = _partition_filter(table, dates) if dates is not None else None
    dataset = delta.dataset(partitions) if partitions is None or partitions[0][2] else None
    if dataset is None:
        return pa.schema(delta.schema().to_arrow()).empty_table()
    where = pc.scalar(True)
    for column, value in equal.items():
        where = where & (_field(column, value) == value)
    if between is not None:
        column, since, until = between
        where = where & (pc.field(column) >= pa.scalar(since, TIME)) & (pc.field(column) <= pa.scalar(until, TIME))
    return plain(dataset.to_table(filter=where))


def _field(column: str, value: object) -> pc.Expression:
    """delta-rs writes strings as string_view, which the dataset's filters cannot compare with a string."""
    return pc.field(column).cast(pa.string()) if isinstance(value, str) else pc.field(column)


def plain(table: pa.Table) -> pa.Table:
    """string_view columns as strings, which every compute function and transform takes."""
    fields = [pa.field(f.name, pa.string()) if f.type == pa.string_view() else f for f in table.schema]
    return table.cast(pa.schema(fields))


def events(silver, silver_def: TableDef, span: EventRange) -> pa.Table:
    found = rows(silver, silver_def, span.equal, span.dates, (EVENT_TIME, span.since, span.until))
    return found.sort_by([(EVENT_TIME, "ascending"), (EVENT_ID, "ascending")])


def in_bronze(bronze, coordinates: list[Coordinates]) -> set[Coordinates]:
    """Which of these coordinates bronze holds (pruned by the offsets' statistics)."""
    if not coordinates:
        return set()
    offsets = pa.array(sorted({c[2] for c in coordinates}), pa.int64())
    found = plain(bronze.dataset().to_table(columns=list(SOURCE_KEY), filter=pc.field("kafka_offset").isin(offsets)))
    return set(zip(*(found[c].to_pylist() for c in SOURCE_KEY), strict=True)) & set(coordinates)


def copies(bronze, event_ids: list[str]) -> dict[str, list[dict]]:
    """Every bronze record whose payload names one of these event ids, by id: the copy silver kept,
    the ones dropped as duplicates and the ones the reading refused. Each with its coordinates,
    payload, Kafka timestamp and `ingest_batch` (the micro-batch that ingested it, as bronze records
    it: version, epoch and position; None for records ingested before bronze recorded it). Bronze
    has no key to prune by: this reads its payloads once."""
    if not event_ids:
        return {}
    pattern = "|".join(re.escape(json.dumps(i)) for i in event_ids)
    names = set(pa.schema(bronze.schema().to_arrow()).names)  # a lake older than the ingest batch lacks it
    extra = [c for c in ("kafka_timestamp", INGEST_BATCH) if c in names]
    scanned = plain(bronze.dataset().to_table(columns=["value", *SOURCE_KEY, *extra]))
    hits = scanned.filter(pc.match_substring_regex(scanned["value"], pattern))  # bytes: invalid UTF-8 stays
    wanted, found = set(event_ids), {}
    for record in hits.to_pylist():
        payload = _json(record["value"])
        event_id = payload.get(EVENT_ID) if isinstance(payload, dict) else None
        if event_id in wanted:
            found.setdefault(event_id, []).append(
                {
                    "coordinates": _coordinates(record),
                    "payload": payload,
                    "kafka_timestamp": _utc(record.get("kafka_timestamp")),
                    "ingest_batch": ingest_batch(record.get(INGEST_BATCH)),
                }
            )
    return found


def ingest_batch(version: int | None) -> dict | None:
    """Bronze's ingest batch (a commit version, epoch << 40 | position) as its parts."""
    if version is None:
        return None
    epoch, position = decode_version(version)
    return {"version": version, "epoch": epoch, "position": position}


def quarantined(quarantine, coordinates: list[Coordinates]) -> dict[Coordinates, str]:
    """Which of these coordinates quarantine holds, each with its reason (pruned by the offsets)."""
    if not coordinates:
        return {}
    offsets = pa.array(sorted({c[2] for c in coordinates}), pa.int64())
    found = plain(
        quarantine.dataset().to_table(columns=[*SOURCE_KEY, "reason"], filter=pc.field("kafka_offset").isin(offsets))
    )
    at = zip(*(found[c].to_pylist() for c in SOURCE_KEY), strict=True)
    wanted = set(coordinates)
    return {c: reason for c, reason in zip(at, found["reason"].to_pylist(), strict=True) if c in wanted}


def _utc(value: dt.datetime | None) -> dt.datetime | None:
    if value is None:
        return None
    return value.replace(tzinfo=dt.UTC) if value.tzinfo is None else value.astimezone(dt.UTC)


def _json(value: bytes | None) -> object:
    try:
        return json.loads(value) if value is not None else None
    except (ValueError, UnicodeDecodeError):
        return None


def _coordinates(record: dict) -> dict:
    return {"topic": record["kafka_topic"], "partition": record["kafka_partition"], "offset": record["kafka_offset"]}


def refused(quarantine, names: dict[str, object], span: EventRange) -> dict[str, list[dict]]:
    """Quarantined records whose raw text names the key's values (campaign and type, or user, or the
    event id): `in_range`, those whose event time can be read and lies inside the row's span (what
    might have counted, and why it did not); `unreadable`, those whose event time cannot be read,
    which belong to no range (listed apart, for every row they name)."""
    scanned = plain(quarantine.dataset().to_table(columns=["raw_value", "reason", "event_id", *SOURCE_KEY]))
    text = pc.fill_null(scanned["raw_value"], "")
    keep = None
    for value in names.values():
        term = pc.match_substring(text, json.dumps(str(value)))
        keep = term if keep is None else pc.and_(keep, term)
    found: dict[str, list[dict]] = {"in_range": [], "unreadable": []}
    for record in scanned.filter(keep).to_pylist():
        payload = _json(record["raw_value"].encode() if record["raw_value"] else None)
        when = _time(payload.get(EVENT_TIME)) if isinstance(payload, dict) else None
        if when is not None and not span.since <= when <= span.until:
            continue
        found["in_range" if when is not None else "unreadable"].append(
            {
                "coordinates": _coordinates(record),
                "reason": record["reason"],
                "event_time": when.isoformat() if when else None,
                "raw_value": record["raw_value"],
            }
        )
    return found


def _time(text: object) -> dt.datetime | None:
    if not isinstance(text, str):
        return None
    try:
        value = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return value.replace(tzinfo=value.tzinfo or dt.UTC).astimezone(dt.UTC)


def touched_partitions(settings: Settings, delta, version: int, column: str) -> set[str] | None:
    """The values of partition `column` that commit `version` added or removed files in; None when the
    log no longer holds that commit as JSON (then every version is read)."""
    files = environment(settings).lake_files
    uri = f"{_local(delta.table_uri)}/_delta_log/{version:020d}.json"
    if not files.exists(uri):
        return None
    found = set()
    for line in files.read_text(uri).splitlines():
        action = json.loads(line)
        for kind in ("add", "remove"):
            if kind in action:
                found.add((action[kind].get("partitionValues") or {}).get(column))
    return found


def _local(uri: str) -> str:
    """delta-rs names local tables file:///...; the environment's files take plain paths."""
    return uri.removeprefix("file://")
