"""The platform's timetable, and the plugin that registers it (Airflow deserializes a custom
timetable only when a plugin names it). The DAGs import the class from this module, through
dags/eo_common/airflow_api.py: Airflow stores it as `eo_timetables.CoveredDayTimetable`, the
plugins folder (on sys.path in every Airflow process, and zipped into MWAA's plugins.zip) is
where both find it. Nothing here imports more than Airflow's own timetables.

`CoveredDayTimetable` is a daily cron data interval whose runs say the day they cover:

- its **logical date is the covered day**: a scheduled run or a backfill run covers
  [logical date, next slot), as with Airflow's CronDataIntervalTimetable; a manual run covers the
  slot its logical date falls in (Trigger with logical date 2026-11-20, any time of that day:
  the run covers 2026-11-20), where Airflow's would cover the slot before it; a logical date
  in the future is refused when the run is triggered (Airflow would hold it until then);
- its **run ids name that day**: `scheduled__2026-11-20T00:00:00+00:00` (not the end of the
  day), `manual__2026-11-20_<when it was triggered>` (unique when a day is triggered again);
- **backfill run ids** are Airflow's own (`backfill__<run_after>`, a timetable is not asked),
  so a slot that has already ended gets its start as run_after: `backfill__2026-11-20T00:00:00+00:00`.
  Such a slot may run at once either way; a slot still under way keeps its end as run_after,
  so the scheduled run still waits for the day to end.
"""

from __future__ import annotations

import datetime as dt
from typing import ClassVar

from airflow.plugins_manager import AirflowPlugin
from airflow.timetables.base import DagRunInfo, DataInterval
from airflow.timetables.interval import CronDataIntervalTimetable


def day_name(interval: DataInterval) -> str:
    """ "2026-11-20" for one UTC day from midnight, else "<start>--<end>" (ISO)."""
    start, end = (t.astimezone(dt.UTC) for t in (interval.start, interval.end))
    if end - start == dt.timedelta(days=1) and start.time() == dt.time(0):
        return start.date().isoformat()
    return f"{start.isoformat()}--{end.isoformat()}"


class CoveredDayTimetable(CronDataIntervalTimetable):
    """Cron data intervals named after the interval they cover (see the module's docstring)."""

    def infer_manual_data_interval(self, *, run_after) -> DataInterval:
        """The slot `run_after` (a manual run's logical date) falls in, not the one before it. A
        logical date in the future is refused (the REST API answers 400 with this line, the
        Trigger form shows it): Airflow would create the run and hold its tasks until that date,
        the DAG's one active run taken meanwhile."""
        start = self._align_to_prev(run_after)
        now = dt.datetime.now(dt.UTC)
        if run_after > now:
            when = f"now {now:%Y-%m-%d %H:%M} UTC"
            if start > now:
                day = day_name(DataInterval(start, self._get_next(start)))
                raise ValueError(f"{day} is in the future ({when}): nothing to rebuild yet")
            raise ValueError(
                f"logical date {run_after.isoformat()} is in the future ({when}): Airflow would hold the run"
                " until then; give a time of that day that has passed"
            )
        return DataInterval(start=start, end=self._get_next(start))

    def next_dagrun_info(self, *, last_automated_data_interval, restriction) -> DagRunInfo | None:
        info = super().next_dagrun_info(
            last_automated_data_interval=last_automated_data_interval, restriction=restriction
        )
        if info is None or info.data_interval is None:
            return info
        if info.data_interval.end <= dt.datetime.now(dt.UTC):  # over already: it may run at once
            return info._replace(run_after=info.data_interval.start)  # backfill__<start>
        return info

    def generate_run_id(self, *, run_type, run_after, data_interval: DataInterval | None, **extra) -> str:
        """Scheduled (and any other run with an interval of its own): `<type>__<start>`; manual:
        `manual__<day>_<run_after>`, the day first. A manual run without a logical date has no
        interval: it covers the day before it was triggered (eo.core.intervals.run_interval)."""
        if data_interval is None:
            end = self._align_to_prev(run_after)
            data_interval = DataInterval(start=self._get_prev(end), end=end)
        if str(run_type) == "manual":
            return f"manual__{day_name(data_interval)}_{run_after.isoformat()}"
        return f"{run_type}__{data_interval.start.isoformat()}"


class EffectivelyOnceTimetables(AirflowPlugin):
    name = "effectively_once_timetables"
    timetables: ClassVar[list] = [CoveredDayTimetable]
