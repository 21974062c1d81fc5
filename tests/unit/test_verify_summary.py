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
