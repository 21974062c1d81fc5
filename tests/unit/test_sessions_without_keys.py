"""A lake made before user_sessions had metric_keys: the stream refuses to start on it, and says
to reset (streaming/takeover.py), since it counts distinct users against the stored keys."""

import datetime as dt

import pyarrow as pa
import pytest
from deltalake import write_deltalake

from eo.core.tables import USER_SESSIONS
from eo.runtime.cli import NotReady
from streaming.takeover import refuse_sessions_without_keys
from tests.conftest import lake_settings

pytestmark = pytest.mark.unit

START = dt.datetime(2026, 11, 20, tzinfo=dt.UTC)
OLD = pa.schema(
    [
        ("user_id", pa.string()),
        ("session_start", pa.timestamp("us", tz="UTC")),
        ("session_end", pa.timestamp("us", tz="UTC")),
        ("session_date", pa.date32()),
        ("events", pa.int64()),
        ("revenue", pa.decimal128(18, 2)),
    ]
)


def old_table(settings, rows: int) -> None:
    session = {"user_id": "u1", "session_start": START, "session_end": START, "session_date": START.date(),
               "events": 1, "revenue": None}  # fmt: skip
    write_deltalake(settings.table_path(USER_SESSIONS.name), pa.Table.from_pylist([session] * rows, OLD))


def test_sessions_stored_without_keys_refuse_the_start_and_say_to_reset(tmp_path):
    settings = lake_settings(tmp_path)
    old_table(settings, rows=1)
    with pytest.raises(NotReady, match=r"ops\.reset"):
        refuse_sessions_without_keys(settings)


def test_no_table_an_empty_old_table_or_keys_stored_start(tmp_path):
    settings = lake_settings(tmp_path)
    refuse_sessions_without_keys(settings)  # a new lake: the table is made with the column
    old_table(settings, rows=0)
    refuse_sessions_without_keys(settings)  # no session to count against: the column is added
    keyed = pa.schema([*OLD, ("metric_keys", pa.list_(pa.string()))])
    session = {"user_id": "u1", "session_start": START, "session_end": START, "session_date": START.date(),
               "events": 1, "revenue": None, "metric_keys": ["c1|click|2026-11-20T00:00"]}  # fmt: skip
    write_deltalake(
        settings.table_path(USER_SESSIONS.name), pa.Table.from_pylist([session], keyed), mode="overwrite",
        schema_mode="overwrite",
    )  # fmt: skip
    refuse_sessions_without_keys(settings)
