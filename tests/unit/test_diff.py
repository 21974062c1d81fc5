import pytest

from eo.core.quality.diff import diff_counts, table_diff

pytestmark = pytest.mark.unit

SCHEMA = "k STRING, v INT, n BIGINT"


def test_missing_extra_and_different_rows_are_told_apart(spark):
    stream = spark.createDataFrame([("a", 1, 1), ("b", 2, 2), ("x", 9, 9), ("n", None, 1)], SCHEMA)
    batch = spark.createDataFrame([("a", 1, 1), ("b", 2, 3), ("c", 3, 3), ("n", None, 1)], SCHEMA)
    rows = {r.k: r for r in table_diff(stream, batch, ["k"]).collect()}
    assert {k: r.status for k, r in rows.items()} == {
        "a": "match",
        "b": "different",
        "c": "missing",
        "x": "extra",
        "n": "match",
    }
    # The two sides next to each other, for Great Expectations' column-pair checks.
    assert (rows["b"].stream_n, rows["b"].batch_n, rows["b"].in_stream, rows["b"].in_batch) == (2, 3, 1, 1)
    assert (rows["c"].in_stream, rows["c"].in_batch, rows["c"].stream_v, rows["c"].batch_v) == (0, 1, None, 3)
    assert diff_counts(table_diff(stream, batch, ["k"])) == {
        "stream_rows": 4,
        "batch_rows": 4,
        "missing": 1,
        "extra": 1,
        "different": 1,
    }


def test_a_cent_is_a_difference(spark):
    from decimal import Decimal

    schema = "k STRING, v DECIMAL(10,2)"
    stream = spark.createDataFrame([("a", Decimal("10.01"))], schema)
    batch = spark.createDataFrame([("a", Decimal("10.00"))], schema)
    assert table_diff(stream, batch, ["k"]).first().status == "different"
