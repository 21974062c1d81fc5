"""The intervals rebuilt and not yet verified: a file per rebuild under reports/verify/rebuilt/.

Each rebuild leaves a file here and starts a verify_agreement run of its own interval, which
removes the rebuild's files when it passes. A run that failed, or never ran (verify_agreement
paused, a run deleted), leaves them pending: verify_agreement's daily run verifies every pending
interval, until the day is rebuilt or fixed.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterable

from eo.runtime.config import Settings
from eo.runtime.environment import environment
from eo.runtime.storage import files_under


def ledger_folder(settings: Settings) -> str:
    return f"{settings.source_reports}/verify/rebuilt"


def record_rebuilt(settings: Settings, interval: str, run_id: str) -> str:
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%S%fZ")
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in run_id)
    uri = f"{ledger_folder(settings)}/{stamp}-{safe}.json"
    environment(settings).report_files.write_text(uri, json.dumps({"interval": interval, "run_id": run_id}))
    return uri


def pending(settings: Settings) -> dict[str, str]:
    """{file: interval} of every rebuild not yet verified, oldest first."""
    return {
        uri: json.loads(environment(settings).report_files.read_text(uri))["interval"]
        for uri in files_under(environment(settings).report_files, ledger_folder(settings), ".json")
    }


def recorded_by(settings: Settings, run_id: str) -> list[str]:
    """The pending files of one rebuild run: what the verification it started settles when it passes."""
    files = environment(settings).report_files
    return [
        uri
        for uri in files_under(files, ledger_folder(settings), ".json")
        if json.loads(files.read_text(uri)).get("run_id") == run_id
    ]


def settle(settings: Settings, uris: list[str]) -> None:
    """The rebuilds in `uris` were verified and agreed: no longer pending."""
    for uri in uris:
        environment(settings).report_files.delete_file(uri)


def announced(events: Iterable) -> list[str]:
    """The intervals that Airflow asset events (rebuild_derived's `gold_rebuilt`) carry."""
    return [e.extra["interval"] for e in events if (e.extra or {}).get("interval")]


def to_verify(settings: Settings, events: Iterable) -> tuple[list[str], list[str]]:
    """(the ledger files pending, every interval to verify: theirs and the events')."""
    waiting = pending(settings)
    return list(waiting), [*waiting.values(), *announced(events)]


def scope_inputs(dag_id: str, events: Iterable) -> list[str]:
    """The intervals a run's note and first log line are computed from (eo.core.intervals.run_scope):
    for verify_agreement, what its pick_interval reads; no other DAG needs any."""
    if dag_id != "verify_agreement":
        return []
    from eo.runtime.config import load_settings

    return to_verify(load_settings(), events)[1]
