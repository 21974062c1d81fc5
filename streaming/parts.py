"""What a micro-batch's tasks return instead of its rows: file actions and packed parts of gold.

Every row of the batch's job output (`OUT`) is one of:
- a file a task wrote: its table (`_table`) and add action (eo/runtime/data_files.py);
- a part of gold (`_part`), its rows as one small Parquet file in a binary cell (`_gold`): a
  column per field would carry every other part's columns as nulls, uncompressed.

The parts (`PARTS`):
- "M": minute_metrics of a task's event rows (eo/core/transforms/metrics.py), and, from the
  sessions' owners, the users new to each minute. M adds up exactly across tasks: each new event
  is in one writing task, and each user's new tuples are counted by the one task that owns the
  user. A writer's sums go to the owners of their campaigns, which add them up; the driver adds
  the owners' up and merges the sums.
- "S": the sessions a task's event rows make, as intervals (eo/core/transforms/sessions.py),
  one part per task that owns their users (`_bucket`, streaming/session_merge.py). They travel
  from task to task, not to the driver, except in the lab's unguarded baseline.
- "R": the keys of the stored sessions a session-merging task replaced in files not its own:
  what the driver removes.
- "X": the task's own files of the sessions table it wrote again without the sessions it
  replaced: what the driver removes as they are (streaming/session_merge.py).
- "A:<table>": the sums of an additive gold table without distinct users (eo/core/declaration.py
  `Additive`): its transform of a task's event rows, added up by key. They pass the sessions'
  owners as they are; the driver adds the tasks' up and merges the sums (`packed_sums`).
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from eo.core.declaration import GoldTable, arrow_schema
from eo.core.transforms.metrics import REVENUE
from eo.core.transforms.sessions import INTERVALS, TIME
from eo.runtime.data_files import ACTION_FIELDS

METRIC_PART = pa.schema(
    [
        ("campaign_id", pa.string()),
        ("event_type", pa.string()),
        ("window_start", TIME),
        ("events", pa.int64()),
        ("distinct_users", pa.int64()),
        ("revenue", REVENUE),
    ]
)
REPLACED_PART = pa.schema([("user_id", pa.string()), ("session_start", TIME), ("session_date", pa.date32())])
REWRITTEN_PART = pa.schema([("path", pa.string())])
PARTS = {"M": METRIC_PART, "S": INTERVALS, "R": REPLACED_PART, "X": REWRITTEN_PART}
PART_NAMES = {
    "M": "metric sums",
    "S": "session intervals",
    "R": "replaced session keys",
    "X": "rewritten session files",
}
# How each part is sorted before it is packed: neighbouring rows then share their strings or differ
# little in their times, which is what the encodings in `packed` compress. Session intervals by
# time packed 23% smaller than by user on the bench's load.
PART_ORDER = {
    "M": ("campaign_id", "event_type", "window_start"),
    "S": ("start", "user_id"),
    "R": ("session_start", "user_id"),
    "X": ("path",),
}
# A part's end times travel as their distance from its start times: mostly 0 (a session of one
# event), where the times themselves differ from row to row.
PART_SPANS = {"S": ("end", "start")}
OUT = pa.schema(
    [
        ("_table", pa.string()),
        *ACTION_FIELDS,
        ("_part", pa.string()),
        ("_gold", pa.binary()),
        ("_bucket", pa.int32()),  # the task an S part goes to (streaming/session_merge.py)
    ]
)
SPARK_TYPES = {
    pa.string(): "string",
    pa.int64(): "bigint",
    pa.binary(): "binary",
    pa.int32(): "int",
    pa.bool_(): "boolean",
}
OUT_DDL = ", ".join(f"`{f.name}` {SPARK_TYPES[f.type]}" for f in OUT)


def packed(part: str, table: pa.Table, bucket: int | None = None) -> pa.Table:
    """One part as a Parquet file in a binary cell, in OUT's shape. Sorted (`PART_ORDER`), its
    strings dictionary-encoded, its integers and times delta-encoded and its end times as spans:
    on the bench's load, session intervals 2.4x and metric sums 4x smaller than as zstd Arrow IPC
    (docs/history/hot-path-journal.md, "Gold's parts packed as Parquet")."""
    table = table.select(PARTS[part].names).cast(PARTS[part])
    table = table.sort_by([(name, "ascending") for name in PART_ORDER[part]])
    if part in PART_SPANS:
        end, start = PART_SPANS[part]
        span = pc.subtract(table[end].cast(pa.int64()), table[start].cast(pa.int64()))
        table = table.set_column(table.schema.get_field_index(end), end, span)
    sink = pa.BufferOutputStream()
    strings = [f.name for f in table.schema if pa.types.is_string(f.type)]
    deltas = {f.name: "DELTA_BINARY_PACKED" for f in table.schema if _delta_encoded(f.type)}
    pq.write_table(table, sink, compression="zstd", use_dictionary=strings, column_encoding=deltas)
    return rows_of(pa.table({"_part": [part], "_gold": [sink.getvalue().to_pybytes()], "_bucket": [bucket]}))


SUMS = "A:"  # an additive table's part: "A:<table>"


def packed_sums(table: GoldTable, rows: pa.Table) -> pa.Table:
    """An additive table's sums as one part, in OUT's shape, sorted by key and packed as `packed`
    packs the others."""
    schema = arrow_schema(table)
    rows = rows.select(schema.names).cast(schema).sort_by([(c, "ascending") for c in table.key])
    sink = pa.BufferOutputStream()
    strings = [f.name for f in schema if pa.types.is_string(f.type)]
    deltas = {f.name: "DELTA_BINARY_PACKED" for f in schema if _delta_encoded(f.type)}
    pq.write_table(rows, sink, compression="zstd", use_dictionary=strings, column_encoding=deltas)
    return rows_of(pa.table({"_part": [SUMS + table.name], "_gold": [sink.getvalue().to_pybytes()]}))


def unpacked_sums(out: pa.Table, table: GoldTable) -> pa.Table:
    """An additive table's parts of every task's output, as one table (not added up)."""
    blobs = out.filter(is_part(out, SUMS + table.name))["_gold"].to_pylist()
    tables = [pq.read_table(pa.BufferReader(blob)).cast(arrow_schema(table)) for blob in blobs]
    return pa.concat_tables(tables) if tables else arrow_schema(table).empty_table()


def _delta_encoded(kind: pa.DataType) -> bool:
    return pa.types.is_int64(kind) or pa.types.is_int32(kind) or pa.types.is_timestamp(kind)


def is_part(out: pa.Table, part: str) -> pa.ChunkedArray:
    return pc.fill_null(pc.equal(out["_part"], part), False)


def unpacked(out: pa.Table, part: str) -> pa.Table:
    """One part of every task's output, as one table."""
    blobs = out.filter(is_part(out, part))["_gold"].to_pylist()
    tables = [_opened(part, pq.read_table(pa.BufferReader(blob))) for blob in blobs]
    return pa.concat_tables(tables) if tables else PARTS[part].empty_table()


def _opened(part: str, table: pa.Table) -> pa.Table:
    """A packed part as it was before `packed`."""
    if part in PART_SPANS:
        end, start = PART_SPANS[part]
        ends = pc.add(table[start].cast(pa.int64()), table[end]).cast(PARTS[part].field(end).type)
        table = table.set_column(table.schema.get_field_index(end), end, ends)
    return table.cast(PARTS[part])


def part_sizes(out: pa.Table) -> dict[str, int]:
    """What the tasks' output is made of, in bytes: the files' add actions (their Arrow rows) and
    each gold part (its packed Parquet files)."""
    files = out.filter(pc.is_valid(out["_table"]))
    sizes = {"file actions": files.nbytes}
    for code, name in PART_NAMES.items():
        blobs = out.filter(is_part(out, code))["_gold"]
        sizes[name] = int(pc.sum(pc.binary_length(blobs)).as_py() or 0)
    for code in pc.unique(out["_part"].fill_null("")).to_pylist():
        if code.startswith(SUMS):
            blobs = out.filter(is_part(out, code))["_gold"]
            sizes[f"sums of {code[len(SUMS) :]}"] = int(pc.sum(pc.binary_length(blobs)).as_py() or 0)
    return sizes


def rows_of(table: pa.Table, schema: pa.Schema = OUT) -> pa.Table:
    """`table`'s columns in `schema`'s shape (OUT's by default), the others null."""
    columns = [
        table[f.name].cast(f.type) if f.name in table.column_names else pa.nulls(table.num_rows, f.type) for f in schema
    ]
    return pa.Table.from_arrays(columns, schema=schema)


def file_rows(actions: list[dict], table: str) -> pa.Table:
    """Add actions of files written for `table`, in OUT's shape."""
    return rows_of(pa.Table.from_pylist([{**a, "_table": table} for a in actions]))
