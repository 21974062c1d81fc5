"""Table definitions: schema, partitioning, natural key and properties of every Delta table.

Paths come from config; this module only says what each table is.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from eo.core.sources import SELECTED, UNKNOWN_FIELDS

# The source this process serves (EO_SOURCE): silver's columns and key are its declaration's.
SOURCE = SELECTED
EVENT_ID = SOURCE.event_id  # silver's key: an event is known by it, within its source
EVENT_TIME = SOURCE.event_time  # the time an interval rebuild and verification go by
# A record's event id as the reading gives it beside the fields, whatever its source calls the field
# (x-event-id): quarantine keeps it, verification's reconciliation and the first-copy state key on it.
READ_ID = "event_id"
SESSION_GAP_MINUTES = 30
METRIC_WINDOW = "minute"  # the window of the table whose distinct users the sessions count
# The stream counts a window's distinct users against the stored sessions within the gap of its
# new events (eo/core/transforms/sessions.py `new_user_tuples`): a window must be shorter than the
# gap, so that two events in one window are always in reach of each other.
METRIC_WINDOW_MINUTES = {"minute": 1, "hour": 60, "day": 24 * 60}[METRIC_WINDOW]

# Source coordinates: where a record sat in Kafka. Bronze, silver and quarantine all carry them.
SOURCE_COLUMNS = "kafka_topic STRING, kafka_partition INT, kafka_offset BIGINT, kafka_timestamp TIMESTAMP"
SOURCE_KEY = ("kafka_topic", "kafka_partition", "kafka_offset")
# Bronze's record of the stream micro-batch that ingested each record: its commit version
# (epoch << 40 | position, eo/runtime/fencing.py), which only grows from one batch to the next.
# Null for records ingested before it was recorded (they came first). The first copy of an event
# is the one with the lowest (ingest batch, source key): eo/core/transforms/dedup.py.
INGEST_BATCH = "ingest_batch"


def _top_level_split(ddl: str) -> list[str]:
    """Split "a INT, b DECIMAL(10,2)" on the commas that separate columns."""
    parts, depth, current = [], 0, ""
    for char in ddl:
        depth += {"(": 1, ")": -1}.get(char, 0)
        if char == "," and depth == 0:
            parts.append(current.strip())
            current = ""
        else:
            current += char
    return [*parts, current.strip()]


@dataclass(frozen=True)
class TableDef:
    name: str
    ddl: str
    key: tuple[str, ...]
    partition_by: tuple[str, ...] = ()
    properties: dict[str, str] = field(default_factory=dict)
    # The event-time column an interval rebuild replaces and verification compares by (gold only).
    range_column: str | None = None
    # Compaction order (OPTIMIZE ... ZORDER BY): the columns the stream and the rebuild filter on.
    zorder: tuple[str, ...] = ()
    # Written by delta-rs alone in the live lake (main): created and altered by it too, never by
    # Spark, with DELTA_RS_WRITES among its properties (a test pins them).
    live: bool = False
    # A table whose columns a source declares: the fields that declaration requires. Its stored
    # schema follows the declaration only where stored rows can (eo/core/evolution.py); None for
    # the others, whose new columns are added.
    declared_required: tuple[str, ...] | None = None

    @property
    def columns(self) -> list[str]:
        return [part.split()[0] for part in _top_level_split(self.ddl)]

    @property
    def column_types(self) -> list[tuple[str, str]]:
        """(name, type) of each column, the type in Spark's lower case ("decimal(10,2)")."""
        return [(part.split(None, 1)[0], part.split(None, 1)[1].lower()) for part in _top_level_split(self.ddl)]


# The properties of every live table, set at its creation and set again where they differ
# (eo/runtime/live_tables.py `restore_properties`), so no engine's or release's defaults decide
# whether delta-rs can keep writing it: no deletion vectors, classic checkpoints. And no
# `delta.setTransactionRetentionDuration`: a replay is known by its transaction id, which must
# outlive every replay, so a table that has the property is refused (NOT_RETAINED).
DELTA_RS_WRITES = {"delta.enableDeletionVectors": "false", "delta.checkpointPolicy": "classic"}
NOT_RETAINED = "delta.setTransactionRetentionDuration"
APPEND_ONLY = {**DELTA_RS_WRITES, "delta.appendOnly": "true"}

# A Kafka record in bronze's shape, before the stream ingests it (no ingest batch yet).
RECORD_DDL = f"key STRING, value BINARY, {SOURCE_COLUMNS}"
RECORD_COLUMNS = tuple(part.split()[0] for part in _top_level_split(RECORD_DDL))

BRONZE = TableDef(
    name="bronze",
    ddl=f"{RECORD_DDL}, {INGEST_BATCH} BIGINT",
    key=SOURCE_KEY,
    # The full log: nothing may ever rewrite or delete it.
    properties=APPEND_ONLY,
    live=True,
)

# A declared table's record of the fields its declaration requires (see SILVER).
REQUIRED_PROPERTY = "eo.source.required"

# The keys a record had that its source's declaration lacks (null when none): kept records count
# them here, quarantined ones in quarantine (docs/sources.md).
UNKNOWN_DDL = f"{UNKNOWN_FIELDS} ARRAY<STRING>"

SILVER = TableDef(
    name="silver",
    # The declared fields (eo/core/sources/<source>.schema.json), then where each record sat. A
    # field added to the declaration is added to the stored table, nullable (eo/runtime/lake.py).
    ddl=f"{SOURCE.silver_ddl}, {SOURCE_COLUMNS}, {UNKNOWN_DDL}",
    # One row per event id across all history, whatever time its copies carry (a retry may
    # re-stamp it): the stream's engine state remembers every id (streaming/plan.py). Each source
    # has its own silver and its own state: equal ids in two sources are two events.
    key=(EVENT_ID,),
    partition_by=("event_date",),
    # Only appended: a row, once in, never changes. It records the fields its declaration required
    # when the stream last started: a field made required later is refused (eo/core/evolution.py).
    properties={**APPEND_ONLY, REQUIRED_PROPERTY: ",".join(SOURCE.required)},
    zorder=(EVENT_TIME,),
    live=True,
    declared_required=SOURCE.required,
)

# `event_id`: the record's event id where the reading could read it (its source's x-event-id field).
QUARANTINE = TableDef(
    name="quarantine",
    ddl=f"{SOURCE_COLUMNS}, key STRING, raw_value STRING, reason STRING, event_id STRING, {UNKNOWN_DDL}",
    key=SOURCE_KEY,
    properties=DELTA_RS_WRITES,
    live=True,
)
# Reasons of records the stream isolated because they made a micro-batch fail (streaming/poison.py):
# the batch rebuild quarantines the same records unread, so both sides agree.
POISON_PREFIX = "poison:"

# What the stream's engine state must remember after a reset (ops/reset.py): each event id
# accepted. Written once per reset (whole), read once by the stream.
SEED = TableDef(
    name="seed",
    ddl=f"{EVENT_ID} STRING, {EVENT_TIME} TIMESTAMP",
    key=(EVENT_ID,),
)

# Records lost at the source that a person accepted (`python -m ops.source_gaps accept`): a row per
# gap of one partition, [from_offset, to_offset). The stream skips only these; verify reports them
# against the producers' acknowledgements (eo/core/source_gaps.py).
SOURCE_GAPS = TableDef(
    name="source_gaps",
    ddl=(
        "kafka_topic STRING, kafka_partition INT, from_offset BIGINT, to_offset BIGINT, records BIGINT, "
        "accepted_by STRING, accepted_at TIMESTAMP, reason STRING"
    ),
    key=("kafka_topic", "kafka_partition", "from_offset"),
    properties=DELTA_RS_WRITES,
    live=True,
)

CAMPAIGNS = TableDef(
    name="campaigns",
    ddl="campaign_id STRING, campaign_name STRING, advertiser_id STRING",
    key=("campaign_id",),
)

# Which campaign each ad belongs to: an event's ad must be one of its campaign's.
ADS = TableDef(
    name="ads",
    ddl="ad_id STRING, campaign_id STRING",
    key=("ad_id",),
)

# The platform's own tables. Gold tables are declarations (eo/core/gold/, eo/core/declaration.py):
# GOLD, ALL and LIVE below take them from the registry when first asked for, so that a
# declaration's transform may import this module.
BASE = {t.name: t for t in (BRONZE, SILVER, QUARANTINE, SEED, SOURCE_GAPS, CAMPAIGNS, ADS)}
REFERENCE = (CAMPAIGNS, ADS)


def __getattr__(name: str):
    """GOLD (the declared tables' definitions, in the registry's order), ALL (every table by
    name), LIVE (the live ones), and each declared table by its name in capitals."""
    if not name.isupper() or name.startswith("_"):  # `__path__` and the like: asked by imports
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from eo.core.gold import DECLARED

    gold = tuple(t.table for t in DECLARED.values())
    every = {**BASE, **{t.name: t for t in gold}}
    found = {"GOLD": gold, "ALL": every, "LIVE": tuple(t for t in every.values() if t.live)}
    found.update({t.name.upper(): t for t in gold})
    if name in found:
        return found[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
