"""Lake maintenance policy: when VACUUM is safe, and which old reports may go.

VACUUM deletes data files no longer in the latest table version. A stream that reads a lake
table and is behind still needs the files of the versions it has not read yet (OPTIMIZE removes
the small ones it compacted), so the retention must outlast the longest lag such a reader has.
The platform's own stream reads Kafka; of the lake it streams only the seed table, after a reset
(streaming/plan.py).
"""

from __future__ import annotations

import datetime as dt
import json
import time
from dataclasses import dataclass

from eo.core.tables import SEED
from eo.runtime.config import STREAM_QUERY, Settings
from eo.runtime.environment import environment
from eo.runtime.monitoring import read_checkpoint
from eo.runtime.quality.site import gx_project
from eo.runtime.quality.verdicts import verify_folder
from eo.runtime.storage import files_under

WINDOW = dt.timedelta(hours=2)  # how late a scheduled maintenance run may still start


def outside_window(run_type: str, slot: dt.datetime, now: dt.datetime, force: bool = False) -> str | None:
    """Why a run must not touch the live lake now (one line), or None: only a scheduled run that
    starts more than WINDOW after its slot, unless forced; a run someone triggered always runs."""
    if force or run_type != "scheduled" or now - slot <= WINDOW:
        return None
    hours = (now - slot).total_seconds() / 3600
    return (
        f"a catch-up of the {slot:%Y-%m-%d %H:%M} UTC slot, {hours:.0f} h late (over {WINDOW.seconds // 3600} h): "
        "skipped; trigger the DAG (or set force) to run it now"
    )


class UnsafeRetention(ValueError):
    """The requested VACUUM retention could delete files a stream still needs. Its message is one
    short line (the retention, the minimum and the rule that sets it); `detail` has every rule."""

    def __init__(self, message: str, detail: str) -> None:
        super().__init__(message)
        self.detail = detail


@dataclass(frozen=True)
class RetentionPolicy:
    required_hours: float
    reasons: dict[str, float]


def delta_readers(settings: Settings) -> list[tuple[str, str]]:
    """The streams that read lake tables, as (checkpoint, table)."""
    return [(settings.checkpoint_path(STREAM_QUERY), SEED.name)]


def oldest_unread_commit_age_hours(settings: Settings, checkpoint: str, table: str) -> float:
    """Age of the oldest commit of `table` the stream at `checkpoint` has not read yet (0 if none)."""
    fs = environment(settings).lake_files
    log = f"{settings.table_path(table).rstrip('/')}/_delta_log"
    state = read_checkpoint(checkpoint, fs)
    delta = [s for s in state.source_offsets if "reservoirVersion" in s]
    next_version = int(delta[0]["reservoirVersion"]) if delta else 0
    versions = (name.removesuffix(".json") for name in fs.names(log) if name.endswith(".json"))
    unread = sorted(int(v) for v in versions if v.isdigit() and int(v) >= next_version)
    if not unread:
        return 0.0
    first = f"{log}/{unread[0]:020d}.json"
    for line in fs.read_text(first).splitlines():
        info = json.loads(line).get("commitInfo")
        if info and "timestamp" in info:
            return max(0.0, (time.time() * 1000 - info["timestamp"]) / 3_600_000)
    return max(0.0, (time.time() - fs.modified(first)) / 3600)


def retention_policy(settings: Settings) -> RetentionPolicy:
    m = settings.maintenance
    margin = m.get("safety_margin_hours", 24)
    reasons = {
        "delta minimum": m.get("min_retention_hours", 168),
        "longest allowed stream downtime + margin": m.get("max_stream_downtime_hours", 72) + margin,
        "current lag of the lake's readers + margin": max(
            (oldest_unread_commit_age_hours(settings, *reader) for reader in delta_readers(settings)), default=0.0
        )
        + margin,
    }
    return RetentionPolicy(max(reasons.values()), reasons)


def check_retention(settings: Settings, hours: float) -> RetentionPolicy:
    policy = retention_policy(settings)
    if hours < policy.required_hours:
        detail = "; ".join(f"{k} {v:.0f} h" for k, v in policy.reasons.items())
        rule = max(policy.reasons, key=policy.reasons.__getitem__)
        raise UnsafeRetention(
            f"refusing VACUUM with {hours:g} h retention: the minimum is {policy.required_hours:.0f} h ({rule})",
            f"the minimum retention is the longest of: {detail}",
        )
    return policy


def old_reports(settings: Settings, keep_days: float | None = None, now: float | None = None) -> list[str]:
    """Verification reports older than keep_days (default: the config's report_keep_days), on the
    local disk or in the bucket, and GX's own results in its local project; latest.json stays."""
    days = settings.maintenance["report_keep_days"] if keep_days is None else keep_days
    cutoff = (now or time.time()) - days * 86400
    verdicts, files = verify_folder(settings), environment(settings).report_files
    explained = f"{verdicts}/explanations"  # one folder per verify run (batch/verify_explain.py)
    candidates = [
        *files_under(files, verdicts, ".json"),
        *files_under(files, f"{verdicts}/runs", ".json"),
        *(uri for run in files.names(explained) for uri in files_under(files, f"{explained}/{run}", ".json")),
        *(str(p) for p in (gx_project(settings) / "gx" / "uncommitted" / "validations").rglob("*.json")),
    ]
    return sorted(
        u
        for u in candidates
        if not u.endswith("/latest.json") and environment(settings).report_files.modified(u) < cutoff
    )


def delete_old_reports(settings: Settings, keep_days: float | None = None) -> list[str]:
    stale = old_reports(settings, keep_days)
    for uri in stale:
        environment(settings).report_files.delete_file(uri)
    return stale
