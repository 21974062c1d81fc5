"""The agreement suite, run by Great Expectations itself: it passes on equal tables and on a day
with no rows on either side, and names the column and the key of a difference."""

import datetime as dt
from decimal import Decimal

import pytest

from eo.core.quality import expectations as expect
from eo.core.quality.diff import diff_counts, table_diff, value_columns
from eo.runtime.quality.evidence import Evidence

pytestmark = pytest.mark.unit

SCHEMA = "campaign_id STRING, window_start TIMESTAMP, events BIGINT, revenue DECIMAL(12,2)"
KEY = ["campaign_id", "window_start"]
AT = dt.datetime(2026, 11, 20, 10, 0)


@pytest.fixture(scope="module")
def evidence(tmp_path_factory):
    return Evidence(tmp_path_factory.mktemp("gx"), "test_run_2026-11-20")


def check(spark, evidence, name, stream_rows, batch_rows) -> bool:
    stream, batch = spark.createDataFrame(stream_rows, SCHEMA), spark.createDataFrame(batch_rows, SCHEMA)
    diff = table_diff(stream, batch, KEY)
    counts = diff_counts(diff)
    suite = expect.agreement(value_columns(batch, KEY), counts["batch_rows"], "2026-11-20")
    unexpected = counts["missing"] + counts["extra"] + counts["different"]
    return evidence.check(name, diff.drop("status"), suite, index_columns=KEY, unexpected_rows=unexpected)


def test_equal_tables_and_an_empty_day_agree(spark, evidence):
    rows = [("c1", AT, 5, Decimal("1.00")), ("c2", AT, 3, Decimal("2.00"))]
    assert check(spark, evidence, "equal", rows, list(rows))
    assert check(spark, evidence, "empty", [], [])  # GX's sum of an empty column is null


def test_a_difference_names_its_column_and_key(spark, evidence):
    stream = [("c1", AT, 5, Decimal("1.00")), ("c2", AT, 3, Decimal("2.01"))]
    batch = [("c1", AT, 5, Decimal("1.00")), ("c2", AT, 3, Decimal("2.00")), ("c3", AT, 1, Decimal("0"))]
    assert not check(spark, evidence, "different", stream, batch)
    failed = {r["expectation"]: r for r in evidence.results if r["suite"] == "different" and not r["success"]}
    assert set(failed) == {
        "expect_column_sum_to_be_between(in_stream)",  # 2 rows in the stream, 3 in the batch
        "expect_column_values_to_be_in_set(in_stream)",  # c3 missing
        "expect_column_pair_values_to_be_equal(stream_revenue vs batch_revenue)",
    }
    assert "'c2'" in failed["expect_column_pair_values_to_be_equal(stream_revenue vs batch_revenue)"]["examples"][0]
    assert "'c3'" in failed["expect_column_values_to_be_in_set(in_stream)"]["examples"][0]


def test_a_differing_pair_reads_stream_then_batch_as_its_description_says(spark, evidence):
    stream = [("c2", AT, 3, Decimal("2.01"))]
    batch = [("c2", AT, 3, Decimal("2.00"))]
    assert not check(spark, evidence, "pair order", stream, batch)
    (failed,) = [r for r in evidence.results if r["suite"] == "pair order" and not r["success"]]
    example = failed["examples"][0]
    assert example.index("2.01") < example.index("2.00"), example  # (stream, batch)
    suite = expect.agreement(["revenue"], 1, "2026-11-20")
    assert "(stream, batch)" in suite[-1].description and suite[-1].column_A == "stream_revenue"
