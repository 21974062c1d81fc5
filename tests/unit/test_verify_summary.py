"""The verdict's summary says what was proven: loss against the producers' acks, or that it was not checked."""

from __future__ import annotations

import pytest

from batch.verify import describe

pytestmark = pytest.mark.unit

COUNTS = {"bronze": 10, "silver": 8, "quarantine": 1, "poison": 0, "duplicates_removed": 1, "accounted": 10}


def verdict(reconciliation: dict) -> dict:
    return {
        "passed": reconciliation["passed"],
        "scope": "all event time",
        "tables": {},
        "reconciliation": reconciliation,
        "expectations": [],
        "data_docs": "reports/gx/index.html",
    }


def test_without_ack_logs_the_summary_says_loss_was_not_checked_and_counts_against_bronze():
    r = dict(COUNTS, acked=None, accepted=10, passed=True, no_loss="not checked: no producer ack logs under data/acks")
    text = describe(verdict(r))
    assert "accepted (in bronze) 10 = silver 8" in text
    assert "loss against the producers' acks: not checked: no producer ack logs under data/acks" in text


def test_with_ack_logs_the_summary_counts_the_acknowledged_and_reports_the_loss_check():
    r = dict(COUNTS, acked=11, accepted=11, passed=False, lost=1, no_loss="FAILED")
    text = describe(verdict(r))
    assert "accepted (acknowledged) 11 = silver 8" in text
    assert "; lost 1  <- FAILED" in text
    assert "loss against the producers' acks: FAILED" in text
    assert text.startswith("verification FAILED")


def test_a_failure_is_one_line_with_each_failing_table_its_counts_first_keys_and_both_values():
    from eo.runtime.quality.verdicts import failure_line

    table = {"passed": False, "missing": 0, "extra": 2, "different": 1}
    table["sample"] = [
        {
            "campaign_id": "c1",
            "window_start": "2026-11-20T05:07:00+00:00",
            "status": "different",
            "values": {"events": {"stream": "2", "batch": "1"}, "revenue": {"stream": "3.00", "batch": "1.50"}},
        },
        {"campaign_id": "c2", "window_start": "2026-11-20T05:08:00+00:00", "status": "extra"},
        {"campaign_id": "c3", "window_start": "2026-11-20T05:09:00+00:00", "status": "extra"},
    ]
    found = {
        "scope": "2026-11-20",
        "tables": {"campaign_minute_metrics": table, "user_sessions": {"passed": True}},
        "reconciliation": dict(COUNTS, accepted=11, passed=False, lost=1),
    }
    line = failure_line(found)
    assert line == (
        "stream and batch disagree over 2026-11-20: campaign_minute_metrics extra 2, different 1 "
        "(first: campaign_id=c1 window_start=2026-11-20T05:07:00+00:00: events stream 2, batch 1, revenue stream "
        "3.00, batch 1.50; campaign_id=c2 window_start=2026-11-20T05:08:00+00:00: only in the stream, not in the "
        "rebuild) | reconciliation: accepted 11 != accounted 10, lost 1"
    )
    assert "\n" not in line and "user_sessions" not in line and "c3" not in line
    from eo.runtime.quality.verdicts import headline

    first = headline(found)  # the red task's first line, before the whole one
    assert first == (
        "campaign_minute_metrics: campaign_id=c1 window_start=2026-11-20T05:07:00+00:00: events stream 2, batch 1, "
        "revenue stream 3.00, batch 1.50"
    )
    assert len(first) < 160  # fits a log panel at 1600 px
    only_counts = {**found, "tables": {"user_sessions": {"passed": True}}}
    assert headline(only_counts) == "reconciliation: 1 accepted records lost"


def test_a_day_nobody_rebuilt_reads_as_not_rebuilt_never_as_failed():
    from eo.runtime.quality.verdicts import NOT_REBUILT

    text = describe(
        {"passed": None, "status": NOT_REBUILT, "not_rebuilt": "2026-11-21", "rebuilt": "2026-11-19 and 2026-11-20"}
    )
    assert text.startswith("not rebuilt: 2026-11-21, nothing to compare (rebuilt so far: 2026-11-19 and 2026-11-20)")
    assert "FAILED" not in text and "extra" not in text


def test_days_not_rebuilt_beside_compared_ones_are_named_apart():
    r = dict(COUNTS, acked=None, accepted=10, passed=True, no_loss="not checked")
    text = describe({**verdict(r), "status": "passed", "not_rebuilt": "2026-11-21"})
    assert text.startswith("verification PASSED")
    assert "  not rebuilt, not compared: 2026-11-21" in text


def test_a_day_says_what_it_counted_and_what_it_left_to_others():
    r = dict(COUNTS, acked=7, unacked=3, accepted=10, passed=True, lost=0, no_loss="passed")
    r.update(scope="2026-11-20", no_event_time=4, not_read_yet=2)
    text = describe(verdict(r))
    assert "accepted (acknowledged 7 + in bronze without an ack 3) 10 = silver 8" in text
    assert "counted: the records whose events fall in 2026-11-20; 4 in bronze have no readable event time" in text
    assert "in bronze without a producer's ack log: 3 " in text
    assert "acknowledged, not read by the stream yet: 2 " in text
    lost = dict(r, passed=False, lost=2, lost_not_in_bronze=1, no_loss="FAILED")
    assert "; lost 2 (1 not in bronze: event time unknown)  <- FAILED" in describe(verdict(lost))
