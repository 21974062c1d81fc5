"""The Airflow names the DAGs use, on every Airflow they run on: the local one (3.3, whose task
SDK has them all) and the one Terraform deploys on MWAA (3.0.6, whose task SDK lacks the
timetables and the exceptions, still in the core). One import site, checked by
tests/dags/test_deployed_airflow.py on MWAA's own Airflow and constraints."""

from __future__ import annotations

try:  # Airflow 3.1 and later
    from airflow.sdk import AssetOrTimeSchedule, CronDataIntervalTimetable, CronTriggerTimetable
    from airflow.sdk.exceptions import AirflowFailException, AirflowSkipException
except ImportError:  # Airflow 3.0
    from airflow.exceptions import AirflowFailException, AirflowSkipException
    from airflow.timetables.assets import AssetOrTimeSchedule
    from airflow.timetables.interval import CronDataIntervalTimetable
    from airflow.timetables.trigger import CronTriggerTimetable

__all__ = [
    "AirflowFailException",
    "AirflowSkipException",
    "AssetOrTimeSchedule",
    "CronDataIntervalTimetable",
    "CronTriggerTimetable",
]
