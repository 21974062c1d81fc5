"""Records lost at the source, as the stream, `status`, `ops.source_gaps` and verify see them.

Where the stream's next read starts comes from its checkpoint: after the last committed batch,
or where the checkpoint started when none is committed yet; for a new checkpoint, right after
the last offset bronze holds of each partition (streaming/query.py `bootstrap_offsets`), and 0
for a partition bronze has none of. The broker's earliest offsets say what it still holds
(eo/core/source_gaps.py). The gaps a person accepted live in the `source_gaps` table.
"""

from __future__ import annotations

import datetime as dt
import json

import pyarrow as pa
import pyarrow.compute as pc
from deltalake.exceptions import TableNotFoundError

from eo.core.source_gaps import Gap, found, uncovered
from eo.core.tables import BRONZE, SOURCE_GAPS
from eo.runtime.config import STREAM_QUERY, Settings
from eo.runtime.environment import environment
from eo.runtime.monitoring import kafka_offsets, read_checkpoint

SCHEMA = pa.schema(
    [
        ("kafka_topic", pa.string()),
        ("kafka_partition", pa.int32()),
        ("from_offset", pa.int64()),
        ("to_offset", pa.int64()),
        ("records", pa.int64()),
        ("accepted_by", pa.string()),
        ("accepted_at", pa.timestamp("us", tz="UTC")),
        ("reason", pa.string()),
    ]
)


def earliest_offsets(settings: Settings) -> dict[int, int]:
    """The first offset each partition of the topic still holds (its low watermark)."""
    from eo.runtime.kafka_admin import watermarks

    return {partition: low for partition, (low, _) in watermarks(settings).items()}


def _bronze_next(settings: Settings) -> dict[int, int]:
    """Right after the last offset bronze holds of each partition of the topic (delta-rs, no Spark)."""
    table = environment(settings).table(BRONZE.name)
    try:
        if table.records() == 0:
            return {}
        rows = environment(settings).rows(table, ["kafka_topic", "kafka_partition", "kafka_offset"])
    except TableNotFoundError:  # no bronze yet: nothing read
        return {}
    rows = rows.filter(pc.equal(rows["kafka_topic"], settings.topic))
    last = rows.group_by("kafka_partition").aggregate([("kafka_offset", "max")]).to_pylist()
    return {int(r["kafka_partition"]): int(r["kafka_offset_max"]) + 1 for r in last}


def next_offsets(settings: Settings) -> dict[int, int]:
    """Where the stream's next read of each partition starts (see the module)."""
    files = environment(settings).lake_files
    root = settings.checkpoint_path(STREAM_QUERY)
    state = read_checkpoint(root, files)
    if state.batch_id is not None:
        return {int(p): int(o) for p, o in kafka_offsets(state, settings.topic).items()}
    first = f"{root}/sources/0/0"
    if files.exists(first):  # planned, none committed: the first batch is read again from here
        started = json.loads(files.read_text(first).splitlines()[-1]).get(settings.topic, {})
        return {int(p): int(o) for p, o in started.items() if int(o) >= 0}
    return _bronze_next(settings)


def accepted_rows(settings: Settings) -> list[dict]:
    """The accepted gaps of this topic as rows: where, who accepted them, when and why ([] before
    the first)."""
    table = environment(settings).table(SOURCE_GAPS.name)
    try:
        table.refresh()
        rows = environment(settings).rows(table).to_pylist()
    except TableNotFoundError:  # none accepted yet
        return []
    mine = (r for r in rows if r["kafka_topic"] == settings.topic)
    return sorted(mine, key=lambda r: (r["kafka_partition"], r["from_offset"]))


def accepted(settings: Settings) -> list[Gap]:
    return [
        Gap(r["kafka_topic"], r["kafka_partition"], r["from_offset"], r["to_offset"]) for r in accepted_rows(settings)
    ]


def found_before(settings: Settings, next_read: dict[int, int] | None = None) -> list[Gap]:
    """Every gap before the stream's next read (`next_read`: given, else `next_offsets`)."""
    return found(settings.topic, next_offsets(settings) if next_read is None else next_read, earliest_offsets(settings))


def current(settings: Settings) -> tuple[list[Gap], list[Gap]]:
    """(every gap before the stream's next read, those of them no one accepted)."""
    gaps = found_before(settings)
    return gaps, uncovered(gaps, accepted(settings))


def refused_uri(settings: Settings) -> str:
    """Where the stream's last refusal for records lost at the source records what it named."""
    return f"{settings.source_lake}/_stream/source_gaps_refused.json"


def write_refused(settings: Settings, gaps: list[Gap]) -> None:
    """The gaps a refusal named (as its line shows them): what `accept` records when it is given
    no ranges. Replaced by each refusal."""
    record = {
        "topic": settings.topic,
        "refused_at": dt.datetime.now(dt.UTC).isoformat(),
        "gaps": [{"partition": g.partition, "from_offset": g.start, "to_offset": g.end} for g in gaps],
    }
    environment(settings).lake_files.write_text(refused_uri(settings), json.dumps(record, indent=2))


def read_refused(settings: Settings) -> tuple[list[Gap], str] | None:
    """The gaps the last refusal named for this topic, and when; None when none was recorded."""
    files = environment(settings).lake_files
    uri = refused_uri(settings)
    if not files.exists(uri):
        return None
    record = json.loads(files.read_text(uri))
    if record.get("topic") != settings.topic:
        return None
    gaps = [Gap(settings.topic, g["partition"], g["from_offset"], g["to_offset"]) for g in record["gaps"]]
    return gaps, record["refused_at"]


def record(settings: Settings, gaps: list[Gap], by: str, reason: str) -> None:
    """The gaps accepted by `by`, for `reason`: one append (created with the first)."""
    from deltalake import write_deltalake

    now = dt.datetime.now(dt.UTC)
    rows = pa.Table.from_pylist(
        [
            {
                "kafka_topic": g.topic,
                "kafka_partition": g.partition,
                "from_offset": g.start,
                "to_offset": g.end,
                "records": g.records,
                "accepted_by": by,
                "accepted_at": now,
                "reason": reason,
            }
            for g in gaps
        ],
        SCHEMA,
    )
    table = environment(settings).table(SOURCE_GAPS.name)
    write_deltalake(table.uri, rows, mode="append", storage_options=table.storage_options)
