"""What the rebuild namespace holds: the event time each rebuild into it covered.

A file per rebuild beside the rebuilt tables (`<lake>/_rebuild/_rebuilt/`), so it goes wherever
they go. Verification compares only the event time rebuilt before it (eo/core/intervals.py
`covered`): a day nobody rebuilt is "not rebuilt, nothing to compare", never "extra rows".
"""

from __future__ import annotations

import datetime as dt
import json

from eo.core.domains import Domains
from eo.core.intervals import Interval, as_text, compact, merged, parse_many, rebuilt_before
from eo.runtime.config import Settings
from eo.runtime.environment import environment
from eo.runtime.storage import files_under


def coverage_folder(settings: Settings) -> str:
    return f"{settings.source_lake}/_rebuild/_rebuilt"


def record_rebuilt(settings: Settings, intervals: list[Interval] | None, started: dt.datetime) -> str:
    """Note that a rebuild that started at `started` rewrote `intervals` (None: everything). The
    log it read held no event time later than `started` plus the clock skew the reading allows."""
    stamp = started.astimezone(dt.UTC).strftime("%Y%m%dT%H%M%S%fZ")
    uri = f"{coverage_folder(settings)}/{stamp}-{compact(intervals)}.json"
    horizon = started + dt.timedelta(minutes=Domains.from_conf(settings.domains).max_future_skew_minutes)
    record = {"intervals": as_text(intervals), "started": started.isoformat(), "horizon": horizon.isoformat()}
    environment(settings).lake_files.write_text(uri, json.dumps(record))
    return uri


def rebuilt_intervals(settings: Settings) -> list[Interval]:
    """Every event-time interval some rebuild into the namespace covered, merged."""
    files = environment(settings).lake_files
    found: list[Interval] = []
    for uri in files_under(files, coverage_folder(settings), ".json"):
        record = json.loads(files.read_text(uri))
        found += rebuilt_before(parse_many(record["intervals"]), dt.datetime.fromisoformat(record["horizon"]))
    return merged(found)
