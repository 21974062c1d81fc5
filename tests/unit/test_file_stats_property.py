"""The statistics of the files the tasks write bound their data, for every type a table holds or a
schema change could add: decimals to precision 38, timestamps to the microsecond with and without
a time zone, strings short, over 32 characters and over Parquet's 4 KB statistics limit, nulls,
several row groups a file. A min or max that lies makes Spark, delta-rs and Trino skip a file that
holds matching rows, silently; where no bound is exact, none is written. The counts are
delta-rs's own (`write_deltalake` of the same rows)."""

from __future__ import annotations

import datetime as dt
import decimal
import glob
import json
import tempfile
from decimal import Decimal

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from eo.runtime.data_files import STRING_STATS, file_stats

pytestmark = pytest.mark.unit

UTC = dt.UTC
WIDE = decimal.Context(prec=60)
MOMENTS = st.datetimes(min_value=dt.datetime(1970, 1, 2), max_value=dt.datetime(2200, 1, 1))
TEXTS = st.one_of(
    st.text(max_size=40),
    st.builds(
        lambda c, n: c * n, st.characters(min_codepoint=32, max_codepoint=0x2FFF), st.sampled_from([31, 33, 5000])
    ),
)


@st.composite
def tables(draw) -> tuple[pa.Table, int]:
    rows = draw(st.integers(1, 24))
    precision = draw(st.integers(1, 38))
    scale = draw(st.integers(0, min(precision, 12)))
    bound = 10**precision - 1

    def column(values):
        return draw(st.lists(st.one_of(st.none(), values), min_size=rows, max_size=rows))

    table = pa.table(
        {
            "amount": pa.array(
                # scaleb at a precision that holds 38 digits (the default context rounds at 28)
                column(st.integers(-bound, bound).map(lambda i: Decimal(i).scaleb(-scale, context=WIDE))),
                pa.decimal128(precision, scale),
            ),
            "at": pa.array(column(MOMENTS.map(lambda m: m.replace(tzinfo=UTC))), pa.timestamp("us", tz="UTC")),
            "local": pa.array(column(MOMENTS), pa.timestamp("us")),
            "label": pa.array(column(TEXTS), pa.string()),
            "count": pa.array(column(st.integers(-(2**63), 2**63 - 1)), pa.int64()),
        }
    )
    return table, draw(st.integers(1, rows))


def read(stats: str) -> dict:
    """The statistics as Spark reads them: a decimal's JSON number is parsed as a decimal, exactly
    (a double would hide a bound whose text lies past the value it was taken from)."""
    return json.loads(stats, parse_float=Decimal)


def parsed(name: str, value):
    """A statistic as a reader takes it."""
    if name == "amount":
        return Decimal(value)
    if name == "at":
        return dt.datetime.strptime(value, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC)
    if name == "local":
        return dt.datetime.strptime(value, "%Y-%m-%dT%H:%M:%S.%f")
    return value


def delta_rs_stats(table: pa.Table) -> dict:
    from deltalake import write_deltalake

    with tempfile.TemporaryDirectory() as folder:
        write_deltalake(folder, table)
        (log,) = glob.glob(f"{folder}/_delta_log/00000000000000000000.json")
        adds = [json.loads(line)["add"] for line in open(log) if '"add"' in line]
    return json.loads(adds[0]["stats"])


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(tables())
def test_every_bound_holds_and_the_counts_are_delta_rs_s(tmp_path_factory, drawn):
    table, group_rows = drawn
    path = tmp_path_factory.mktemp("stats") / "part.parquet"
    pq.write_table(table, path, row_group_size=group_rows)
    metadata = pq.ParquetFile(path).metadata
    stats = read(file_stats(metadata, table.schema))

    assert stats["numRecords"] == table.num_rows
    for name in table.column_names:
        values = [v for v in table[name].to_pylist() if v is not None]
        assert stats["nullCount"][name] == table.num_rows - len(values)
        if name in stats["minValues"]:
            assert all(parsed(name, stats["minValues"][name]) <= v for v in values), name
        if name in stats["maxValues"]:
            assert all(parsed(name, stats["maxValues"][name]) >= v for v in values), name
        if values and name != "label":  # fixed-size values: both bounds are always known
            assert name in stats["minValues"] and name in stats["maxValues"], name
        if values and name == "label" and all(len(v) <= STRING_STATS for v in values):
            assert name in stats["minValues"] and name in stats["maxValues"], name

    theirs = delta_rs_stats(table)
    assert (stats["numRecords"], stats["nullCount"]) == (theirs["numRecords"], theirs["nullCount"])


def test_a_row_group_without_bounds_leaves_the_file_without_them(tmp_path):
    """The case that once gave minValues "m": Parquet keeps no min/max of a group with a value over 4 KB."""
    table = pa.table({"label": ["a" * 5000, "b" * 5000, "m", "z"]})
    pq.write_table(table, tmp_path / "part.parquet", row_group_size=2)
    stats = json.loads(file_stats(pq.ParquetFile(tmp_path / "part.parquet").metadata, table.schema))
    assert "label" not in stats["minValues"] and "label" not in stats["maxValues"]
    assert stats["nullCount"] == {"label": 0}


def test_a_decimal_bound_is_its_exact_text_and_a_naive_timestamp_is_not_shifted(tmp_path, monkeypatch):
    """The double below 1234567890123456.77 is ...56.75, whose shortest text, 1234567890123456.8, lies
    past the min: a reader parsing the text as a decimal would skip the file."""
    monkeypatch.setenv("TZ", "America/New_York")
    import time

    time.tzset()
    try:
        table = pa.table(
            {
                "revenue": pa.array(
                    [Decimal("1234567890123456.78"), Decimal("1234567890123456.77")], pa.decimal128(18, 2)
                ),
                "local": pa.array([dt.datetime(2026, 11, 20, 5, 14), dt.datetime(2026, 11, 20, 6)], pa.timestamp("us")),
            }
        )
        pq.write_table(table, tmp_path / "part.parquet")
        text = file_stats(pq.ParquetFile(tmp_path / "part.parquet").metadata, table.schema)
        stats = read(text)
    finally:
        monkeypatch.delenv("TZ")
        time.tzset()
    assert stats["minValues"]["revenue"] == Decimal("1234567890123456.77")
    assert stats["maxValues"]["revenue"] == Decimal("1234567890123456.78")
    assert '"revenue":1234567890123456.77' in text
    assert stats["minValues"]["local"] == "2026-11-20T05:14:00.000000"
    assert stats["maxValues"]["local"] == "2026-11-20T06:00:00.000000"
