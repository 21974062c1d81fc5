"""Table definitions: schema, partitioning, natural key and properties of every Delta table.

Paths come from config; this module only says what each table is.
"""

from __future__ import annotations

from dataclasses import dataclass, field

EVENT_TYPES = ("impression", "click", "purchase")
SESSION_GAP_MINUTES = 30
METRIC_WINDOW = "minute"  # campaign_minute_metrics counts events per event-time minute
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

    @property
    def columns(self) -> list[str]:
        return [part.split()[0] for part in _top_level_split(self.ddl)]


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

SILVER = TableDef(
    name="silver",
    ddl=(
        "event_id STRING, event_type STRING, event_time TIMESTAMP, event_date DATE, "
        "user_id STRING, session_id STRING, campaign_id STRING, ad_id STRING, "
        f"price DECIMAL(10,2), {SOURCE_COLUMNS}"
    ),
    # One row per event id across all history, whatever time its copies carry (a retry may
    # re-stamp it): the stream's engine state remembers every id (streaming/plan.py).
    key=("event_id",),
    partition_by=("event_date",),
    # Only appended: a row, once in, never changes.
    properties=APPEND_ONLY,
    zorder=("event_time",),
    live=True,
)

QUARANTINE = TableDef(
    name="quarantine",
    ddl=f"{SOURCE_COLUMNS}, key STRING, raw_value STRING, reason STRING, event_id STRING",
    key=SOURCE_KEY,
    properties=DELTA_RS_WRITES,
    live=True,
)
# Reasons of records the stream isolated because they made a micro-batch fail (streaming/poison.py):
# the batch rebuild quarantines the same records unread, so both sides agree.
POISON_PREFIX = "poison:"

# What the stream's engine state must remember after a reset (ops/reset.py): each event id
# accepted, with the user tuple it counts in. Written once per reset, read once by the stream.
SEED = TableDef(
    name="seed",
    ddl="event_id STRING, event_type STRING, event_time TIMESTAMP, user_id STRING, campaign_id STRING",
    key=("event_id",),
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

CAMPAIGN_MINUTE_METRICS = TableDef(
    name="campaign_minute_metrics",
    ddl=(
        "campaign_id STRING, event_type STRING, window_start TIMESTAMP, window_date DATE, "
        "events BIGINT, distinct_users BIGINT, revenue DECIMAL(18,2)"
    ),
    key=("campaign_id", "event_type", "window_start"),
    partition_by=("window_date",),
    range_column="window_start",
    zorder=("window_start",),
    properties=DELTA_RS_WRITES,
    live=True,
)

# user_sessions' `metric_keys`: the campaign_minute_metrics keys the session's events count its user
# in, each as "campaign|type|minute" (eo/core/transforms/sessions.py `metric_key_texts`), sorted.
# The stream counts a user in a minute's distinct users only if no stored session of the user
# holds that key (docs/hot-path.md; docs/history/hot-path-journal.md, "Distinct users counted
# against the sessions").
USER_SESSIONS = TableDef(
    name="user_sessions",
    ddl=(
        "user_id STRING, session_start TIMESTAMP, session_end TIMESTAMP, session_date DATE, "
        "events BIGINT, revenue DECIMAL(18,2), metric_keys ARRAY<STRING>"
    ),
    key=("user_id", "session_start"),
    partition_by=("session_date",),
    range_column="session_start",  # a session is rebuilt whole, in the interval it starts in
    zorder=("session_end",),
    properties=DELTA_RS_WRITES,
    live=True,
)

ALL = {
    t.name: t
    for t in (BRONZE, SILVER, QUARANTINE, SEED, SOURCE_GAPS, CAMPAIGNS, ADS, CAMPAIGN_MINUTE_METRICS, USER_SESSIONS)
}
REFERENCE = (CAMPAIGNS, ADS)
LIVE = tuple(t for t in ALL.values() if t.live)
GOLD = (CAMPAIGN_MINUTE_METRICS, USER_SESSIONS)
