"""Poison records: a batch that fails on its data is bisected; the culprits are quarantined,
the rest lands, the batch rebuild agrees, and errors that are not the data's still stop refine."""

import pytest

from batch.rebuild import rebuild
from eo.core.tables import BRONZE, QUARANTINE, SILVER
from eo.runtime import hooks
from eo.runtime.fencing import Fence, FileLease
from lab.faults import FaultHooks
from streaming import poison
from streaming.microbatch import MicroBatch
from streaming.poison import Span, bisect, halve
from streaming.run import QUERY
from tests.helpers import event, forget_last_commit, prepare_lake, records, sorted_rows, stream

pytestmark = pytest.mark.unit

MARKER = "__test_poison__"


def failing_on(bad: set[tuple[int, int]], runs: list | None = None):
    """A stand-in computation that fails when its spans hold any of `bad` (partition, offset)."""

    def fails(spans: list[Span]) -> str | None:
        if runs is not None:
            runs.append(spans)
        hit = any(s.partition == p and s.first <= o <= s.last for s in spans for p, o in bad)
        return "USER_RAISED_EXCEPTION" if hit else None

    return fails


def test_halve_splits_partitions_first_then_offsets():
    spans = [Span("t", 0, 0, 9), Span("t", 1, 5, 6), Span("t", 2, 0, 0)]
    assert halve(spans) == ([Span("t", 0, 0, 9)], [Span("t", 1, 5, 6), Span("t", 2, 0, 0)])
    assert halve([Span("t", 0, 0, 9)]) == ([Span("t", 0, 0, 4)], [Span("t", 0, 5, 9)])


def test_bisect_finds_exactly_the_failing_records():
    spans = [Span("t", 0, 100, 1099), Span("t", 1, 0, 999), Span("t", 3, 7, 7)]
    bad = {(0, 100), (0, 731), (1, 999), (3, 7)}
    found = bisect(spans, failing_on(bad))
    assert sorted((s.partition, s.first) for s, _ in found) == sorted(bad)
    assert all(s.first == s.last and error == "USER_RAISED_EXCEPTION" for s, error in found)


def test_bisect_cost_is_logarithmic_and_clean_batches_cost_one_run():
    runs: list = []
    assert bisect([Span("t", 0, 0, 999_999)], failing_on(set(), runs)) == []
    assert len(runs) == 1
    runs.clear()
    bisect([Span("t", 0, 0, 999_999)], failing_on({(0, 123_456)}, runs))
    assert len(runs) <= 2 * 21  # two halves per level, 20 levels for a million offsets


def test_a_failure_no_single_record_reproduces_finds_nothing():
    def only_together(spans: list[Span]) -> str | None:
        return "ARITHMETIC_OVERFLOW" if sum(s.last - s.first + 1 for s in spans) > 1 else None

    assert bisect([Span("t", 0, 0, 7)], only_together) == []


@pytest.mark.parametrize(
    ("message", "data"),
    [
        ("Fenced: refine: epoch 1 was superseded by epoch 2", False),
        ("[DELTA_FILE_NOT_FOUND_DETAILED] file missing", False),
        ("[PATH_NOT_FOUND] Path does not exist: file:/lake/silver", False),
        ("java.io.IOException: No space left on device", False),
        ("org.apache.kafka.common.errors.TimeoutException: Kafka broker down", False),
        ("[USER_RAISED_EXCEPTION] fault lab: poison record", True),
        ("year 0 is out of range", True),
    ],
)
def test_infrastructure_errors_are_never_taken_for_data(message, data):
    assert poison.may_be_data(RuntimeError(message)) is data


def lake_with_poison(spark, settings):
    payloads = [event(f"e{i}", i, user=f"u{i % 3}") for i in range(8)]
    payloads[2]["note"] = MARKER
    payloads[5]["note"] = MARKER
    prepare_lake(spark, settings)
    return records(payloads)


@pytest.mark.slow
def test_poison_records_are_quarantined_and_the_rest_lands(spark, lake, monkeypatch, capsys):
    monkeypatch.setattr(hooks, "_installed", FaultHooks(poison=MARKER))
    rows = lake_with_poison(spark, lake)
    lease = FileLease(str(lake.checkpoint_root))
    stream(spark, lake, [rows], MicroBatch(lake, Fence.start(lease, QUERY), QUERY))
    # A crash before the checkpoint's commit: a new instance replays the batch. Nothing twice.
    forget_last_commit(lake)
    stream(spark, lake, [[]], MicroBatch(lake, Fence.start(lease, QUERY), QUERY))

    quarantined = sorted_rows(spark, lake, QUARANTINE)
    assert [r.reason for r in quarantined] == ["poison:USER_RAISED_EXCEPTION"] * 2
    assert all(MARKER in r.raw_value for r in quarantined)
    assert sorted(r.event_id for r in sorted_rows(spark, lake, SILVER)) == sorted(
        f"e{i}" for i in range(8) if i not in (2, 5)
    )
    assert len(sorted_rows(spark, lake, BRONZE)) == len(rows)
    assert capsys.readouterr().out.count("2 poison record(s) found in") == 1
    record = poison.read_record(lake)  # what `make stream-status` shows
    assert record["records"] == 2 and len(record["isolations"]) == 1

    rebuild(spark, lake)  # the batch side quarantines the same records unread
    for table in (SILVER, QUARANTINE):
        assert sorted_rows(spark, lake, table) == sorted_rows(spark, lake, table, "rebuild"), table.name


def test_an_error_that_is_not_the_datas_stops_the_stream(spark, lake, monkeypatch):
    monkeypatch.setattr(hooks, "_installed", FaultHooks(poison=MARKER))
    rows = lake_with_poison(spark, lake)
    lake_without_silver = lake.with_overrides(tables={**lake.tables, SILVER.name: "nowhere/silver"})
    missing = r"not a Delta table|No files in log segment|TableNotFound|not found|does not exist"
    with pytest.raises(Exception, match=missing):
        stream(spark, lake_without_silver, [rows[:2]])
    assert poison.read_record(lake)["records"] == 0
