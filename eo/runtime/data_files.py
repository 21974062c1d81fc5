"""Delta data files written where the rows are (a Spark task), committed later as metadata.

A task writes its rows of a table as Parquet files under the table's folder and returns one
add action per file (path, size, partition values, statistics). The driver commits the actions
of all tasks in one delta-rs transaction (eo/runtime/commits.py `append_files`). A file no
commit names is not part of the table: the files of a batch killed before its commit, or of
a task attempt that lost, are never read, and VACUUM removes them.

Names carry the batch's commit version, the task attempt and a random part, so no attempt can
overwrite a file another attempt reported.
"""

from __future__ import annotations

import datetime as dt
import decimal
import json
import re
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

# One add action, as a task returns it (a row of Arrow: it travels back through Spark).
ACTION_FIELDS = (
    ("path", pa.string()),
    ("size", pa.int64()),
    ("partition_values", pa.string()),  # JSON: {"event_date": "2026-11-05"}
    ("stats", pa.string()),  # Delta's per-file statistics, JSON
    ("rows", pa.int64()),
)
DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
STRING_STATS = 32  # characters of a string min/max kept, as Delta's writers do


def file_stats(metadata: pq.FileMetaData, schema: pa.Schema) -> str:
    """Delta's statistics of one Parquet file (numRecords, minValues, maxValues, nullCount), in
    the encoding delta-rs writes: Spark and delta-rs skip files by them."""
    stats: dict = {"numRecords": metadata.num_rows, "minValues": {}, "maxValues": {}, "nullCount": {}}
    groups = [metadata.row_group(i) for i in range(metadata.num_row_groups) if metadata.row_group(i).num_rows]
    for index in range(metadata.num_columns):
        name = metadata.schema.column(index).path
        if "." in name:  # a nested column's leaf (a list's items): Delta keeps no statistics of it
            continue
        found = [g.column(index).statistics for g in groups]
        if not found or not all(s is not None and s.has_null_count for s in found):
            continue
        stats["nullCount"][name] = sum(s.null_count for s in found)
        kind = schema.field(name).type
        if pa.types.is_binary(kind) or pa.types.is_large_binary(kind):
            continue
        # A row group holding values but no min/max (Parquet drops them for values over 4 KB)
        # leaves the file's bounds unknown: none is written, rather than one that skips its rows.
        if any(not s.has_min_max and s.num_values > 0 for s in found):
            continue
        bounded = [s for s in found if s.has_min_max]
        if not bounded:
            continue
        low, high = min(s.min for s in bounded), max(s.max for s in bounded)
        stats["minValues"][name] = _json_value(low[:STRING_STATS] if isinstance(low, str) else low)
        if not (isinstance(high, str) and len(high) > STRING_STATS):  # a cut max is no upper bound
            stats["maxValues"][name] = _json_value(high)
    return _dumps(stats)


def _dumps(value) -> str:
    """JSON text of the statistics, a decimal written as its exact digits (a JSON number).

    Spark parses a decimal bound's text as a decimal of the column's type, exactly, and delta-rs
    (arrow-json) too: a double's shortest text (`repr`) may lie past the bound at 17 significant
    digits (the double 1234567890123456.75, below a min of .77, prints as 1234567890123456.8),
    and a file holding the min would be skipped. The exact digits are what Delta's writers mean."""
    if isinstance(value, dict):
        return "{" + ",".join(f"{json.dumps(k)}:{_dumps(v)}" for k, v in value.items()) + "}"
    if isinstance(value, decimal.Decimal):
        return format(value, "f")  # positional: never 1E+3, which a reader of the column's scale may refuse
    return json.dumps(value)


def _with_statistics(schema: pa.Schema) -> list[str]:
    """The columns whose Parquet statistics anyone reads: the top-level ones (Delta keeps none of a
    list's items, `file_stats`). Min and max over every key of a session's list cost ~15% of an
    owner's write of long sessions."""
    return [field.name for field in schema if not pa.types.is_nested(field.type)]


# A list's items (a session's metric keys) repeat across rows, and the distinct ones of a day's file
# outgrow Parquet's 1 MB dictionary (within hours on the bench's load); past it the writer
# stores every item as plain text: 3.5x the bytes at 400 keys a session (lab.bench.owner_merge).
LIST_DICTIONARY_BYTES = 16 << 20


def _dictionary_limit(schema: pa.Schema) -> int | None:
    """A larger dictionary for tables with lists; Parquet's default (1 MB) otherwise, where a
    column that outgrows it (an event id) is better written plain."""
    return LIST_DICTIONARY_BYTES if any(pa.types.is_nested(field.type) for field in schema) else None


def _write_parquet(rows: pa.Table, path: str, filesystem, collected: list) -> None:
    options = {
        "filesystem": filesystem,
        "compression": "snappy",
        "write_statistics": _with_statistics(rows.schema),
        "dictionary_pagesize_limit": _dictionary_limit(rows.schema),
        "metadata_collector": collected,
    }
    pq.write_table(rows, path, **options)


def _json_value(value):
    """A statistic as Delta's JSON holds it (`_dumps` writes a decimal's exact digits). A naive
    timestamp (timestamp_ntz) stays as it is."""
    if isinstance(value, dt.datetime):
        if value.tzinfo is None:
            return value.strftime("%Y-%m-%dT%H:%M:%S.%f")
        return value.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    if isinstance(value, dt.date):
        return value.isoformat()
    return value


def _partition_value(value) -> str | None:
    if value is None:
        return None
    text = value.isoformat() if isinstance(value, dt.date) else str(value)
    if not DATE.match(text):  # paths are URIs: only plain dates need no escaping (every partition here)
        raise ValueError(f"unsupported partition value {text!r}: only dates are written by tasks")
    return text


def _groups(rows: pa.Table, partition_by: Sequence[str]):
    """(partition values, rows without the partition columns) per distinct partition."""
    if not partition_by:
        yield {}, rows
        return
    keys = rows.select(list(partition_by)).group_by(list(partition_by)).aggregate([])
    data = rows.drop_columns(list(partition_by))
    if keys.num_rows == 1:  # the common case: no filter, which would copy every row
        yield {c: _partition_value(v) for c, v in keys.to_pylist()[0].items()}, data
        return
    for key in keys.to_pylist():
        mask = None
        for column, value in key.items():
            here = pc.is_null(rows[column]) if value is None else pc.equal(rows[column], pa.scalar(value))
            mask = here if mask is None else pc.and_(mask, here)
        yield {c: _partition_value(v) for c, v in key.items()}, data.filter(mask)


BUCKET_KEY = b"eo.bucket"


@dataclass(frozen=True)
class Buckets:
    """Files laid out by bucket: each file holds the rows of one bucket of `count` (`of(values,
    count)`: the bucket of each value of `column`) and says so in its metadata. A reader that
    wants one bucket skips the others' files, and the task that owns a bucket may rewrite its
    files alone. A file without that note, or with another `count` or `hash` (the name of what
    `of` computes), may hold any bucket; a note without a hash was written by this one."""

    column: str
    count: int
    of: Callable[[pa.ChunkedArray, int], np.ndarray]
    hash: str = ""

    def split(self, rows: pa.Table) -> list[tuple[int, pa.Table]]:
        """`rows` by bucket, in bucket order (empty buckets left out)."""
        buckets = self.of(rows[self.column], self.count)
        return [(int(b), rows.filter(pa.array(buckets == b))) for b in np.unique(buckets)]

    def note(self, bucket: int) -> dict[bytes, bytes]:
        noted = {"column": self.column, "count": self.count, "hash": self.hash, "bucket": bucket}
        return {BUCKET_KEY: json.dumps(noted).encode()}

    def bucket_of(self, metadata: dict[bytes, bytes] | None) -> int | None:
        """The bucket a file holds (its key-value metadata); None: it may hold any."""
        noted = json.loads((metadata or {}).get(BUCKET_KEY, b"null"))
        if not noted or noted["column"] != self.column or noted["count"] != self.count:
            return None
        if noted.get("hash", self.hash) != self.hash:
            return None
        return int(noted["bucket"])


def _laid_out(rows: pa.Table, buckets: Buckets | None, bucket: int | None = None) -> list[pa.Table]:
    """A partition's rows, file by file: one file, or one per bucket with its note (`bucket`: all
    rows are known to be of that one bucket)."""
    if buckets is None or rows.num_rows == 0:
        return [rows]
    if bucket is not None:
        return [rows.replace_schema_metadata({**(rows.schema.metadata or {}), **buckets.note(bucket)})]
    return [
        part.replace_schema_metadata({**(part.schema.metadata or {}), **buckets.note(b)})
        for b, part in buckets.split(rows)
    ]


def write_files(
    filesystem,
    rows: pa.Table,
    partition_by: Sequence[str],
    tag: str,
    buckets: Buckets | None = None,
    bucket: int | None = None,
) -> list[dict]:
    """Write `rows` (already in the table's schema) under the table's root, one file per
    partition, or per partition and bucket if `buckets`; return their add actions
    (ACTION_FIELDS). `filesystem` is rooted at the table. `bucket`: the caller knows every row is
    of that bucket (the task that owns it), and the rows are not hashed again."""
    actions = []
    files = (
        (values, part)
        for values, rows_of_partition in _groups(rows, partition_by)
        for part in _laid_out(rows_of_partition, buckets, bucket)
    )
    for index, (values, part) in enumerate(files):
        folder = "".join(f"{c}={'__HIVE_DEFAULT_PARTITION__' if v is None else v}/" for c, v in values.items())
        path = f"{folder}part-{tag}-{index:03d}-{uuid.uuid4().hex[:12]}.c000.snappy.parquet"
        if folder:
            filesystem.create_dir(folder.rstrip("/"), recursive=True)
        collected: list = []
        _write_parquet(part, path, filesystem, collected)
        actions.append(
            {
                "path": path,
                "size": filesystem.get_file_info(path).size,
                "partition_values": json.dumps(values),
                "stats": file_stats(collected[0], part.schema),
                "rows": part.num_rows,
            }
        )
    return actions


def add_actions(actions: list[dict]) -> list:
    """delta-rs add actions of the files tasks wrote (data_change: these are new rows)."""
    from deltalake.transaction import AddAction

    now = int(time.time() * 1000)
    return [
        AddAction(
            path=a["path"],
            size=a["size"],
            partition_values=json.loads(a["partition_values"]),
            modification_time=now,
            data_change=True,
            stats=a["stats"],
        )
        for a in actions
    ]
