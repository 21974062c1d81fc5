"""The Airflow names the DAGs use, on every Airflow they run on: the local one (3.3, whose task
SDK has them all) and the one Terraform deploys on MWAA (3.0.6, whose task SDK lacks the
timetables and the exceptions, still in the core). One import site, checked by
tests/dags/test_deployed_airflow.py on MWAA's own Airflow and constraints.

`CoveredDayTimetable` is the platform's own (plugins/eo_timetables.py, registered by the plugin
there): imported from the plugins folder, so that Airflow stores and finds it under one name."""

from __future__ import annotations

from airflow.providers.standard.operators.trigger_dagrun import TriggerDagRunOperator
from eo_timetables import CoveredDayTimetable

try:  # Airflow 3.1 and later
    from airflow.sdk import CronTriggerTimetable
    from airflow.sdk.exceptions import AirflowException, AirflowFailException, AirflowSkipException
except ImportError:  # Airflow 3.0
    from airflow.exceptions import AirflowException, AirflowFailException, AirflowSkipException
    from airflow.timetables.trigger import CronTriggerTimetable

__all__ = [
    "AirflowException",
    "AirflowFailException",
    "AirflowSkipException",
    "CoveredDayTimetable",
    "CronTriggerTimetable",
    "TriggerDagRunOperator",
]
