"""Which event-time intervals a verification compares: exactly the rebuilt ones, never a span."""

from __future__ import annotations

import datetime as dt

import pytest

from eo.core.intervals import Interval, as_text, merged, parse_many, predicate, verification_scope

pytestmark = pytest.mark.unit

UTC = dt.UTC


def day(d: int) -> str:
    start = dt.datetime(2026, 11, d, tzinfo=UTC)
    return f"{start.isoformat()}/{(start + dt.timedelta(days=1)).isoformat()}"


def test_non_adjacent_days_stay_apart_and_adjacent_ones_join():
    scope = verification_scope([day(22), day(19), day(20)])
    assert scope == (
        "2026-11-19T00:00:00+00:00/2026-11-21T00:00:00+00:00,2026-11-22T00:00:00+00:00/2026-11-23T00:00:00+00:00"
    )
    assert "2026-11-21T00:00:00+00:00/2026-11-22" not in scope  # nobody rebuilt 11-21


def test_all_wins_and_nothing_rebuilt_means_nothing_to_verify():
    assert verification_scope([day(19), "all"]) == "all"
    assert verification_scope([]) is None  # never "the previous day": nobody may have rebuilt it


def test_days_that_start_after_now_are_refused_in_one_line():
    from eo.core.intervals import in_the_future

    now = dt.datetime(2026, 11, 25, 22, 50, tzinfo=UTC)
    assert in_the_future(parse_many(day(25)), now) is None  # today has begun: its events so far
    assert in_the_future(parse_many(day(24)), now) is None
    assert in_the_future(None, now) is None  # all event time
    line = in_the_future(parse_many(f"{day(24)},{day(27)},{day(29)}"), now)
    assert (
        line
        == "2026-11-27 and 2026-11-29 are in the future (now 2026-11-25 22:50 UTC): nothing to rebuild or verify yet"
    )
    assert "\n" not in line


def test_the_rebuilt_part_of_a_request_and_the_part_nobody_rebuilt():
    from eo.core.intervals import covered

    rebuilt = parse_many(f"{day(19)},{day(20)},{day(22)}")
    inside, outside = covered(parse_many("2026-11-18T12:00:00Z/2026-11-23T00:00:00Z"), rebuilt)
    assert as_text(inside) == as_text(parse_many(f"{day(19)},{day(20)},{day(22)}"))
    assert as_text(outside) == as_text(parse_many(f"2026-11-18T12:00:00Z/2026-11-19T00:00:00Z,{day(21)}"))
    assert covered(parse_many(day(21)), rebuilt) == ([], parse_many(day(21)))  # never rebuilt: all outside
    assert covered(parse_many(day(21)), []) == ([], parse_many(day(21)))
    half = parse_many("2026-11-20T06:00:00Z/2026-11-20T18:00:00Z")
    assert covered(half, rebuilt) == (half, [])  # inside one rebuilt day
    assert covered(None, rebuilt) == (merged(rebuilt), [])  # "all" of a lake rebuilt day by day: those days


def test_a_rebuild_holds_only_the_event_time_before_it_started():
    from eo.core.intervals import BEFORE_ANY_EVENT, covered, human, rebuilt_before

    started = dt.datetime(2026, 11, 25, 10, 30, tzinfo=UTC)
    (full,) = rebuilt_before(None, started)  # a full rebuild: everything before it
    assert (full.start, full.end) == (BEFORE_ANY_EVENT, started)
    assert human([full]) == "event time before 2026-11-25T10:30:00+00:00"
    assert rebuilt_before(parse_many(f"{day(24)},{day(25)},{day(26)}"), started) == parse_many(
        f"{day(24)},2026-11-25T00:00:00Z/2026-11-25T10:30:00Z"
    )
    # Two days after a full rebuild, a day nobody rebuilt since is not covered by it.
    assert covered(parse_many(day(27)), [full]) == ([], parse_many(day(27)))
    assert covered(parse_many(day(20)), [full]) == (parse_many(day(20)), [])


def test_parsing_merges_overlaps_and_refuses_nonsense():
    assert parse_many("all") is None
    (one,) = parse_many(f"{day(5)},2026-11-05T12:00:00Z/2026-11-06T06:00:00Z")
    assert (one.start.day, one.end.day, one.end.hour) == (5, 6, 6)
    with pytest.raises(ValueError, match="START/END"):
        parse_many("2026-11-05T12:00:00Z")  # a moment is not an interval (a plain day is: below)
    with pytest.raises(ValueError, match="empty interval"):
        parse_many("2026-11-06T00:00:00Z/2026-11-05T00:00:00Z")
    assert as_text(merged(parse_many(day(1)) + parse_many(day(3)))) == f"{day(1)},{day(3)}"


def test_the_sql_predicate_covers_each_interval_and_nothing_between(spark):
    rows = spark.createDataFrame([(dt.datetime(2026, 11, d, 12),) for d in (19, 20, 21, 22)], "ts TIMESTAMP")
    intervals = parse_many(f"{day(19)},{day(22)}")
    assert all(isinstance(i, Interval) for i in intervals)
    kept = sorted(r.ts.day for r in rows.where(predicate(intervals, "ts")).collect())
    assert kept == [19, 22]


def test_a_rebuild_run_covers_its_data_interval():
    """The day of its logical date (plugins/eo_timetables.py gives a run dated 11-20 [11-20, 11-21))."""
    from eo.core.intervals import run_interval

    start, end = dt.datetime(2026, 11, 20, tzinfo=UTC), dt.datetime(2026, 11, 21, tzinfo=UTC)
    assert run_interval({}, start, end) == day(20)
    assert run_interval({"full_rebuild": True}, start, end) == "all"


def test_a_rebuild_run_that_would_say_its_day_twice_differently_is_refused():
    """A `day` in the conf (the param the logical date replaced) must name the day the run covers,
    and the logical date must fall in the run's interval (the command line's `dags trigger` takes
    it from the trigger time)."""
    from eo.core.intervals import plan_refusal

    in_the_day = dt.datetime(2026, 11, 20, 15, 7, tzinfo=UTC)
    assert plan_refusal({}, day(20), in_the_day) is None
    assert plan_refusal({"day": "2026-11-20"}, day(20), in_the_day) is None  # agrees: harmless
    assert plan_refusal({}, day(20), None) is None  # no logical date: the interval alone
    refused = plan_refusal({"day": "2026-11-05"}, day(20), in_the_day)
    assert refused.startswith("`day` 2026-11-05 is not the day this run covers (2026-11-20)"), refused
    assert plan_refusal({"day": "2026-11-20"}, "all", in_the_day).startswith("`day` 2026-11-20 is not")
    elsewhere = plan_refusal({}, day(22), in_the_day)
    assert elsewhere.startswith("logical date 2026-11-20T15:07:00+00:00 is not in this run's interval (2026-11-22)")


def test_a_rebuilds_verification_is_named_after_the_days_and_the_rebuild():
    from eo.core.intervals import verification_run_id

    assert verification_run_id(day(20), "backfill__2026-11-20T00:00:00+00:00") == (
        "rebuilt__2026-11-20_by_backfill__2026-11-20T00:00:00+00:00"
    )
    assert verification_run_id("all", "manual__x") == "rebuilt__all_by_manual__x"
    assert verification_run_id(f"{day(19)},{day(20)}", "r") == "rebuilt__2026-11-19--2026-11-21_by_r"


def test_a_rebuild_run_without_a_data_interval_covers_the_day_before_it_was_triggered():
    from eo.core.intervals import run_interval

    triggered = dt.datetime(2026, 11, 23, 14, 5, tzinfo=UTC)
    assert run_interval({}, None, None, triggered) == day(22)


def test_intervals_read_as_days_for_people():
    from eo.core.intervals import compact, human

    assert human(parse_many(day(20))) == "2026-11-20"
    assert human(parse_many(f"{day(19)},{day(20)},{day(22)}")) == "[2026-11-19, 2026-11-21) and 2026-11-22"
    assert human(parse_many("2026-11-20T06:00:00Z/2026-11-20T07:00:00Z")).startswith("[2026-11-20T06:00:00+00:00")
    assert human(None) == "all event time"
    assert compact(parse_many(f"{day(19)},{day(20)},{day(22)}")) == "2026-11-19--2026-11-21+2026-11-22"
    assert compact(None) == "all"


def test_each_run_says_what_event_time_it_covers():
    """The note on a run and the first line of its task logs (plugins/eo_platform.py)."""
    from eo.core.intervals import run_scope

    when = dt.datetime(2026, 11, 23, 6, tzinfo=UTC)
    start, end = dt.datetime(2026, 11, 19, tzinfo=UTC), dt.datetime(2026, 11, 20, tzinfo=UTC)
    unnamed = run_scope("rebuild_derived", {}, None, None, [], when)  # no logical date: the day before
    assert unnamed == "rebuilds 2026-11-22 into rebuild"
    assert run_scope("rebuild_derived", {}, start, end, [], when) == "rebuilds 2026-11-19 into rebuild"
    assert run_scope("rebuild_derived", {"full_rebuild": True, "target": "main"}, start, end, [], when) == (
        "rebuilds all event time into main"
    )
    rebuilt = [day(19), day(22), day(20)]
    assert run_scope("verify_agreement", {}, None, None, rebuilt, when) == (
        "verifies [2026-11-19, 2026-11-21) and 2026-11-22"
    )
    assert run_scope("verify_agreement", {}, None, None, [], when) == "verifies nothing: no rebuild waits for a check"
    assert run_scope("verify_agreement", {"interval": day(5)}, None, None, rebuilt, when) == "verifies 2026-11-05"
    assert run_scope("lake_maintenance", {}, start, end, [], when) is None


def test_a_plain_day_is_that_utc_day_alone_or_among_intervals():
    """verify_agreement's `interval` param and --interval take "2026-11-21" as the whole UTC day."""
    assert parse_many("2026-11-21") == parse_many("2026-11-21T00:00:00Z/2026-11-22T00:00:00Z")
    assert as_text(parse_many("2026-11-19, 2026-11-20,2026-11-22T00:00:00Z/2026-11-22T06:00:00Z")) == as_text(
        parse_many("2026-11-19T00:00:00Z/2026-11-21T00:00:00Z,2026-11-22T00:00:00Z/2026-11-22T06:00:00Z")
    )
    assert str(parse_many("2026-11-21")[0]) == "2026-11-21"


@pytest.mark.parametrize("text", ["2026-11-21T05:00:00", "20261121", "2026-11-31", "yesterday", "2026-11"])
def test_anything_else_without_a_slash_is_refused_naming_both_forms(text):
    with pytest.raises(ValueError, match=r"an interval is a day \(2026-11-21\) or START/END"):
        parse_many(text)


def test_a_verify_run_of_a_plain_day_names_it_in_its_note():
    from eo.core.intervals import run_scope

    at = dt.datetime(2026, 11, 22, 6, tzinfo=dt.UTC)
    assert run_scope("verify_agreement", {"interval": "2026-11-21"}, None, None, [], at) == "verifies 2026-11-21"
