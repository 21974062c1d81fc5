"""Event-time intervals: what a rebuild overwrites and what a verification compares.

A rebuild covers one interval [start, end) (or everything). A verification may cover several
that were rebuilt separately (11-19, 11-20 and 11-22, say): it compares exactly those, never the
span between them, so a day nobody rebuilt is never compared (it would show as disagreement).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass


@dataclass(frozen=True)
class Interval:
    """An event-time interval [start, end) in UTC."""

    start: dt.datetime
    end: dt.datetime

    @classmethod
    def from_args(cls, start: str | None, end: str | None, interval: str | None) -> Interval | None:
        """--start/--end, or --interval START/END (ISO 8601) or --interval all; None means all."""
        if interval and (start or end):
            raise ValueError("give --interval or --start/--end, not both")
        if interval:
            if interval == "all":
                return None
            start, sep, end = interval.partition("/")
            if not sep:
                raise ValueError(f"--interval wants START/END or 'all', got {interval!r}")
        if not (start or end):
            return None
        if not (start and end):
            raise ValueError("--start and --end go together")
        return cls.parse(start, end)

    @classmethod
    def parse(cls, start: str, end: str) -> Interval:
        def at(text: str) -> dt.datetime:
            value = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
            return value.replace(tzinfo=value.tzinfo or dt.UTC).astimezone(dt.UTC)

        interval = cls(at(start), at(end))
        if interval.start >= interval.end:
            raise ValueError(f"empty interval: start {start} is not before end {end}")
        return interval

    def predicate(self, column: str) -> str:
        fmt = "%Y-%m-%d %H:%M:%S.%f"
        return f"{column} >= TIMESTAMP'{self.start.strftime(fmt)}' AND {column} < TIMESTAMP'{self.end.strftime(fmt)}'"


def parse_many(text: str) -> list[Interval] | None:
    """ "START/END,START/END,..." (ISO 8601, UTC) as intervals, merged; "all" (or nothing) is None."""
    if not text or text.strip() == "all":
        return None
    parts = [part.strip() for part in text.split(",") if part.strip()]
    intervals = []
    for part in parts:
        start, sep, end = part.partition("/")
        if not sep:
            raise ValueError(f"an interval is START/END, got {part!r}")
        intervals.append(Interval.parse(start, end))
    return merged(intervals)


def merged(intervals: list[Interval]) -> list[Interval]:
    """Sorted, with overlapping or touching intervals joined: the same event times, fewest pieces."""
    out: list[Interval] = []
    for interval in sorted(intervals, key=lambda i: (i.start, i.end)):
        if out and interval.start <= out[-1].end:
            out[-1] = Interval(out[-1].start, max(out[-1].end, interval.end))
        else:
            out.append(interval)
    return out


def as_text(intervals: list[Interval] | None) -> str:
    if intervals is None:
        return "all"
    return ",".join(f"{i.start.isoformat()}/{i.end.isoformat()}" for i in intervals)


def predicate(intervals: list[Interval], column: str) -> str:
    """SQL: `column` in any of the intervals."""
    return " OR ".join(f"({i.predicate(column)})" for i in intervals)


def verification_scope(rebuilt: list[str], logical_date: dt.datetime) -> str:
    """What verify_agreement compares: every interval rebuilt since its last run (one "all"
    makes it all), or, on its timetable with nothing rebuilt, the previous UTC day."""
    if "all" in rebuilt:
        return "all"
    if rebuilt:
        return as_text(merged([i for text in rebuilt for i in (parse_many(text) or [])]))
    today = logical_date.astimezone(dt.UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    return as_text([Interval(today - dt.timedelta(days=1), today)])


def run_interval(params: dict, data_interval_start: dt.datetime, data_interval_end: dt.datetime) -> str:
    """What a rebuild_derived run covers: everything, the `day` param's UTC day, or its data interval."""
    if params.get("full_rebuild"):
        return "all"
    if params.get("day"):
        start = dt.datetime.fromisoformat(str(params["day"])[:10]).replace(tzinfo=dt.UTC)
        return as_text([Interval(start, start + dt.timedelta(days=1))])
    return as_text([Interval(data_interval_start.astimezone(dt.UTC), data_interval_end.astimezone(dt.UTC))])
