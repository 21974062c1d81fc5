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
    def parse(cls, start: str, end: str) -> Interval:
        def at(text: str) -> dt.datetime:
            value = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
            return value.replace(tzinfo=value.tzinfo or dt.UTC).astimezone(dt.UTC)

        interval = cls(at(start), at(end))
        if interval.start >= interval.end:
            raise ValueError(f"empty interval: start {start} is not before end {end}")
        return interval

    def __str__(self) -> str:
        """For people: "2026-11-20" for one UTC day, else "[start, end)" (dates when at midnight)."""
        if self.end - self.start == dt.timedelta(days=1) and _midnight(self.start):
            return self.start.date().isoformat()
        if self.start == BEFORE_ANY_EVENT:
            return f"event time before {self.end.isoformat()}"
        if _midnight(self.start) and _midnight(self.end):
            return f"[{self.start.date()}, {self.end.date()})"
        return f"[{self.start.isoformat()}, {self.end.isoformat()})"

    def predicate(self, column: str) -> str:
        fmt = "%Y-%m-%d %H:%M:%S.%f"
        return f"{column} >= TIMESTAMP'{self.start.strftime(fmt)}' AND {column} < TIMESTAMP'{self.end.strftime(fmt)}'"

    def iso_predicate(self, column: str) -> str:
        """The same, with ISO-8601 UTC strings: what delta-rs takes (its TIMESTAMP literals carry no
        time zone, and comparing them with a UTC column is refused)."""
        fmt = "%Y-%m-%dT%H:%M:%S.%fZ"
        start, end = (t.astimezone(dt.UTC).strftime(fmt) for t in (self.start, self.end))
        return f"{column} >= '{start}' AND {column} < '{end}'"


def _midnight(at: dt.datetime) -> bool:
    return at.time() == dt.time(0)


def human(intervals: list[Interval] | None) -> str:
    """ "2026-11-19, 2026-11-20 and [2026-11-22, 2026-11-24)", or "all event time"."""
    if intervals is None:
        return "all event time"
    names = [str(i) for i in intervals]
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"


def compact(intervals: list[Interval] | None) -> str:
    """The same, fit for a file name: "2026-11-19--2026-11-21+2026-11-22" (ends exclusive), or "all"."""
    if intervals is None:
        return "all"
    return "+".join(str(i).strip("[)").replace(", ", "--") for i in intervals)


def parse_many(text: str) -> list[Interval] | None:
    """ "START/END,START/END,..." (ISO 8601, UTC) as intervals, merged; "all" (or nothing) is None.
    A part that is a plain date ("2026-11-21") is that UTC day: [2026-11-21, 2026-11-22)."""
    if not text or text.strip() == "all":
        return None
    parts = [part.strip() for part in text.split(",") if part.strip()]
    intervals = []
    for part in parts:
        start, sep, end = part.partition("/")
        if sep:
            intervals.append(Interval.parse(start, end))
        elif (day := _plain_day(part)) is not None:
            intervals.append(Interval(day, day + dt.timedelta(days=1)))
        else:
            raise ValueError(f"an interval is a day (2026-11-21) or START/END (ISO 8601, UTC), got {part!r}")
    return merged(intervals)


def _plain_day(text: str) -> dt.datetime | None:
    """Midnight UTC of a "YYYY-MM-DD" date, or None for anything else."""
    try:
        day = dt.date.fromisoformat(text)
    except ValueError:
        return None
    return dt.datetime(day.year, day.month, day.day, tzinfo=dt.UTC) if len(text) == 10 else None


def requested(start: str | None, end: str | None, interval: str | None, many: bool) -> list[Interval] | None:
    """What --start/--end or --interval ask for (None: everything); `many` allows several intervals."""
    if interval and (start or end):
        raise ValueError("give --interval or --start/--end, not both")
    if interval:
        found = parse_many(interval)
        if found is not None and not many and "," in interval:
            raise ValueError(f"--interval wants one day, one START/END or 'all', got {interval!r}")
        return found
    if not (start or end):
        return None
    if not (start and end):
        raise ValueError("--start and --end go together")
    return [Interval.parse(start, end)]


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


def verification_scope(rebuilt: list[str]) -> str | None:
    """What verify_agreement compares when no interval is asked for: every interval rebuilt and
    not yet verified (one "all" makes it all); None when nothing was rebuilt (nothing to compare:
    a day nobody rebuilt would only show as "extra rows")."""
    if "all" in rebuilt:
        return "all"
    if rebuilt:
        return as_text(merged([i for text in rebuilt for i in (parse_many(text) or [])]))
    return None


# Where "all event time" starts when it must be an interval: before the strict reading's floor
# (conf/platform.toml [domains] event_time_floor, 2000 by default).
BEFORE_ANY_EVENT = dt.datetime(1900, 1, 1, tzinfo=dt.UTC)


def rebuilt_before(intervals: list[Interval] | None, horizon: dt.datetime) -> list[Interval]:
    """What a rebuild holds of `intervals` (None: everything) when the log it read had no event
    time from `horizon` on: only the event time before it."""
    wanted = intervals if intervals is not None else [Interval(BEFORE_ANY_EVENT, horizon)]
    return [Interval(i.start, min(i.end, horizon)) for i in wanted if i.start < horizon]


def in_the_future(intervals: list[Interval] | None, now: dt.datetime) -> str | None:
    """One line refusing intervals that start after `now` (no event can be there yet), else None."""
    ahead = [i for i in intervals or [] if i.start > now]
    if not ahead:
        return None
    verb = "is" if len(ahead) == 1 else "are"
    when = f"{now.astimezone(dt.UTC):%Y-%m-%d %H:%M} UTC"
    return f"{human(ahead)} {verb} in the future (now {when}): nothing to rebuild or verify yet"


def covered(requested: list[Interval] | None, rebuilt: list[Interval]) -> tuple[list[Interval], list[Interval]]:
    """(the parts of `requested` that were `rebuilt`, the parts that were not); `requested` None
    is all event time, of which the rebuilt part is `rebuilt` itself."""
    if requested is None:
        return merged(rebuilt), []
    inside, outside = [], []
    for want in merged(requested):
        cursor = want.start
        for have in merged(rebuilt):
            if have.end <= cursor or have.start >= want.end:
                continue
            if have.start > cursor:
                outside.append(Interval(cursor, have.start))
            inside.append(Interval(max(cursor, have.start), min(want.end, have.end)))
            cursor = min(want.end, have.end)
        if cursor < want.end:
            outside.append(Interval(cursor, want.end))
    return merged(inside), merged(outside)


def run_interval(
    params: dict,
    data_interval_start: dt.datetime | None,
    data_interval_end: dt.datetime | None,
    when: dt.datetime | None = None,
) -> str:
    """What a rebuild_derived run covers: everything (`full_rebuild`), or its data interval, the
    UTC day its logical date names (plugins/eo_timetables.py); a run triggered without a logical
    date has none: the UTC day before `when`, as its run id says."""
    if params.get("full_rebuild"):
        return "all"
    if data_interval_start is None or data_interval_end is None:
        data_interval_start, data_interval_end = _day_before(when or dt.datetime.now(dt.UTC))
    return as_text([Interval(data_interval_start.astimezone(dt.UTC), data_interval_end.astimezone(dt.UTC))])


def plan_refusal(params: dict, interval: str, logical_date: dt.datetime | None) -> str | None:
    """One line refusing a rebuild_derived run that would say its day twice, differently: a `day`
    in its conf (the param the logical date replaced) naming another day, or a logical date outside
    the interval Airflow gave it (the command line's `dags trigger` takes the interval from
    the trigger time); None when the run's logical date, id and interval agree."""
    covered = parse_many(interval)
    if params.get("day"):
        asked = str(params["day"])[:10]
        if covered is None or len(covered) != 1 or str(covered[0]) != asked:
            return (
                f"`day` {asked} is not the day this run covers ({human(covered)}): a run covers the"
                " day of its logical date (Trigger, Logical Date); leave `day` out"
            )
    if logical_date is not None and covered is not None:
        at = logical_date.astimezone(dt.UTC)
        if not any(i.start <= at < i.end for i in covered):
            return (
                f"logical date {at.isoformat()} is not in this run's interval ({human(covered)}): trigger"
                " from the UI or the REST API, which take the interval from the logical date"
            )
    return None


def verification_run_id(interval: str, rebuild_run_id: str) -> str:
    """The id of the verify_agreement run a rebuild starts: the days it rebuilt first, then the
    rebuild run (one verification per rebuild run; the same run rebuilt again reuses it):
    "rebuilt__2026-11-20_by_backfill__2026-11-20T00:00:00+00:00"."""
    return f"rebuilt__{compact(parse_many(interval))}_by_{rebuild_run_id}"


def run_scope(
    dag_id: str,
    conf: dict | None,
    data_interval_start: dt.datetime | None,
    data_interval_end: dt.datetime | None,
    rebuilt: list[str],
    when: dt.datetime,
) -> str | None:
    """One line for people saying what event time a DAG run covers (its note and the first
    line of each task log); None for DAGs that cover no interval."""
    conf = conf or {}
    if dag_id == "rebuild_derived":
        interval = run_interval(conf, data_interval_start, data_interval_end, when)
        return f"rebuilds {human(parse_many(interval))} into {conf.get('target') or 'rebuild'}"
    if dag_id == "verify_agreement":
        scope = conf.get("interval") or verification_scope(rebuilt)
        return f"verifies {human(parse_many(scope))}" if scope else "verifies nothing: no rebuild waits for a check"
    return None


def _day_before(when: dt.datetime) -> tuple[dt.datetime, dt.datetime]:
    today = when.astimezone(dt.UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    return today - dt.timedelta(days=1), today
