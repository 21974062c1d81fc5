"""Rebuilt intervals wait in a ledger until a verification of them passes."""

import pytest

from eo.runtime.quality.ledger import pending, record_rebuilt, settle
from tests.conftest import lake_settings

pytestmark = pytest.mark.unit

DAY5 = "2026-11-05T00:00:00+00:00/2026-11-06T00:00:00+00:00"
DAY6 = "2026-11-06T00:00:00+00:00/2026-11-07T00:00:00+00:00"


def test_rebuilds_stay_pending_until_settled(tmp_path):
    settings = lake_settings(tmp_path)
    assert pending(settings) == {}
    first = record_rebuilt(settings, DAY5, "backfill__2026-11-06T00:00:00+00:00")
    record_rebuilt(settings, DAY6, "manual__x")
    assert list(pending(settings).values()) == [DAY5, DAY6]  # oldest first
    settle(settings, [first])
    assert list(pending(settings).values()) == [DAY6]
    settle(settings, [first])  # settling twice is harmless
    assert list(pending(settings).values()) == [DAY6]


def test_what_to_verify_is_the_ledger_and_the_announced_events(tmp_path):
    from types import SimpleNamespace

    from eo.runtime.quality.ledger import scope_inputs, to_verify

    settings = lake_settings(tmp_path)
    uri = record_rebuilt(settings, DAY5, "manual__x")
    events = [SimpleNamespace(extra={"interval": DAY6}), SimpleNamespace(extra={}), SimpleNamespace(extra=None)]
    assert to_verify(settings, events) == ([uri], [DAY5, DAY6])
    assert scope_inputs("rebuild_derived", events) == []  # no I/O for other DAGs
