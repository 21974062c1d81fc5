"""The benchmark's arithmetic: sizes, the scaling exponent, counts agreement, targets met or not."""

from __future__ import annotations

import pytest

from lab.bench.__main__ import count, counts
from lab.bench.report import target_rows
from lab.bench.scaling import scaling_exponent
from lab.bench.ysb import compare_counts

pytestmark = pytest.mark.unit


def test_sizes_read_like_people_write_them():
    assert count("1M") == 1_000_000 and count("500k") == 500_000 and count("2_500") == 2_500
    assert counts("1M,10M, 50M") == (1_000_000, 10_000_000, 50_000_000)


def test_scaling_exponent_is_the_log_log_slope():
    assert scaling_exponent([(1e6, 10), (1e7, 100), (5e7, 500)]) == pytest.approx(1.0)
    assert scaling_exponent([(1e6, 10), (1e7, 1000)]) == pytest.approx(2.0)
    assert scaling_exponent([(1e6, 10)]) is None


def test_counts_must_agree_window_by_window():
    a = {"system": "a", "counts": {("c1", 0): 3, ("c2", 0): 1}}
    b = {"system": "b", "counts": {("c1", 0): 3, ("c2", 0): 1}}
    c = {"system": "c", "counts": {("c1", 0): 3}}
    assert compare_counts([a, b])["agree"]
    verdict = compare_counts([a, b, c])
    assert not verdict["agree"] and verdict["disagreeing_windows"] == {"b": 0, "c": 1}


def test_targets_compare_with_constants_and_other_metrics():
    rows = target_rows(
        {
            "guarantee_overhead_ratio": 0.95,
            "ysb_exactly_once_events_per_s": 100,
            "ysb_pyflink_events_per_s": 120,
            "ysb_raw_spark_events_per_s": 110,
            "latency_p99_s": 3.0,
        }
    )
    met = {(r["metric"], r["target"]): r["met"] for r in rows}
    assert met[("guarantee_overhead_ratio", ">= 0.9")] is True
    assert met[("ysb_exactly_once_events_per_s", ">= ysb_pyflink_events_per_s")] is False
    assert met[("ysb_exactly_once_events_per_s", ">= 0.8 x ysb_raw_spark_events_per_s")] is True
    assert met[("latency_p99_s", "<= 2.0")] is False
    assert met[("pipeline_events_per_s", ">= 250,000")] is None  # not measured: neither met nor missed
