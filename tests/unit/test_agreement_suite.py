"""The agreement suite, run by Great Expectations itself, on Spark and on pandas (a frame of known,
small size; a check that names failing rows stays on Spark): it passes on equal tables and on a
day with no rows on either side, and names the column and the key of a difference, the same on
both engines; so do the domain suites. The engine follows the frame's known size."""

import datetime as dt
from decimal import Decimal

import great_expectations.expectations as gxe
import pytest

from eo.core.quality import expectations as expect
from eo.core.quality.diff import diff_counts, table_diff, value_columns
from eo.runtime.quality.evidence import IN_MEMORY_UP_TO, Evidence

pytestmark = pytest.mark.unit

SCHEMA = "campaign_id STRING, window_start TIMESTAMP, events BIGINT, revenue DECIMAL(12,2)"
KEY = ["campaign_id", "window_start"]
AT = dt.datetime(2026, 11, 20, 10, 0)


@pytest.fixture(scope="module")
def gx(tmp_path_factory):
    return Evidence(tmp_path_factory.mktemp("gx"), "test_run_2026-11-20")


class OnEngine:
    """The module's Evidence, validating on Spark or, given the frame's size, in memory."""

    def __init__(self, evidence: Evidence, in_memory: bool) -> None:
        self.evidence, self.in_memory = evidence, in_memory
        self.engine = "pandas" if in_memory else "spark"

    def check(self, name, frame, suite, **options) -> bool:
        rows = frame.count() if self.in_memory else None
        return self.evidence.check(f"{name} ({self.engine})", frame, suite, rows=rows, **options)

    def failed(self, name) -> dict:
        suite = f"{name} ({self.engine})"
        return {r["expectation"]: r for r in self.evidence.results if r["suite"] == suite and not r["success"]}


@pytest.fixture(params=[False, True], ids=["spark", "pandas"])
def evidence(gx, request):
    return OnEngine(gx, request.param)


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
    failed = evidence.failed("different")
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
    (failed,) = evidence.failed("pair order").values()
    example = failed["examples"][0]
    assert example.index("2.01") < example.index("2.00"), example  # (stream, batch)
    suite = expect.agreement(["revenue"], 1, "2026-11-20")
    assert "(stream, batch)" in suite[-1].description and suite[-1].column_A == "stream_revenue"


METRICS = (
    "campaign_id STRING, event_type STRING, window_start TIMESTAMP, events BIGINT, distinct_users BIGINT, "
    "revenue DECIMAL(18,2)"
)


def test_the_metrics_domain_holds_on_good_rows_and_names_each_broken_rule(spark, evidence):
    good = [("c1", "impression", AT, 3, 2, Decimal("0")), ("c1", "purchase", AT, 1, 1, Decimal("9.99"))]
    good_frame = spark.createDataFrame(good, METRICS)
    assert evidence.check("domain good", good_frame, expect.campaign_minute_metrics()), evidence.failed("domain good")
    bad = [
        *good,
        ("c1", "impression", AT, 3, 2, Decimal("0")),  # the key twice
        ("c2", "hover", AT, 1, 2, Decimal("-1.00")),  # unknown type, more users than events, negative revenue
        ("c3", "view", None, 0, 0, Decimal("0")),  # a null key, no events
    ]
    assert not evidence.check("domain bad", spark.createDataFrame(bad, METRICS), expect.campaign_minute_metrics())
    assert set(evidence.failed("domain bad")) == {
        "expect_compound_columns_to_be_unique(['campaign_id', 'event_type', 'window_start'])",
        "expect_column_values_to_not_be_null(window_start)",
        "expect_column_values_to_be_in_set(event_type)",
        "expect_column_values_to_be_between(events)",
        "expect_column_values_to_be_between(distinct_users)",
        "expect_column_pair_values_a_to_be_greater_than_b(events vs distinct_users)",
        "expect_column_values_to_be_between(revenue)",
    }


def test_the_engine_follows_the_frames_known_size_and_a_check_may_change_engine_between_runs(spark, tmp_path):
    frame = spark.createDataFrame([("c1", AT, 1, Decimal("1.00"))], SCHEMA)
    sizes = [(None, "spark"), (IN_MEMORY_UP_TO + 1, "spark"), (IN_MEMORY_UP_TO, "pandas"), (1, "pandas")]
    for run in range(2):  # the next run's Evidence reads the project the first one stored
        gx = Evidence(tmp_path, f"run {run}")
        for i, (rows, engine) in enumerate(sizes):
            if run:
                rows, engine = sizes[-1 - i]  # the same checks, each on the other engine
            suite = [gxe.ExpectColumnValuesToNotBeNull(column="campaign_id")]
            assert gx.check(f"check {i}", frame, suite, rows=rows)
            assert gx.results[-1]["engine"] == engine, (run, rows, gx.results[-1])
    # A check that will name failing rows keeps Spark's pages, whatever the frame's size.
    suite = [gxe.ExpectColumnValuesToNotBeNull(column="campaign_id")]
    gx.check("names rows", frame, suite, index_columns=KEY, unexpected_rows=1, rows=1)
    assert gx.results[-1]["engine"] == "spark"
    suite = [gxe.ExpectColumnValuesToNotBeNull(column="campaign_id")]
    gx.check("nothing to name", frame, suite, index_columns=KEY, unexpected_rows=0, rows=1)
    assert gx.results[-1]["engine"] == "pandas"
