"""Streaming health from checkpoint files, and the VACUUM retention policy built on it."""

import json
import os
import time

import pytest

from jobs.maintenance import UnsafeRetention, check_retention, old_reports, retention_policy
from jobs.monitoring import ingest_health, read_checkpoint, refine_health
from tests.conftest import lake_settings

pytestmark = pytest.mark.unit


def write_checkpoint(root, batch: int, source_offset: dict, committed: bool = True) -> None:
    (root / "offsets").mkdir(parents=True, exist_ok=True)
    (root / "commits").mkdir(parents=True, exist_ok=True)
    (root / "offsets" / str(batch)).write_text(f'v1\n{{"batchWatermarkMs":0}}\n{json.dumps(source_offset)}\n')
    if committed:
        (root / "commits" / str(batch)).write_text('v1\n{"nextBatchWatermarkMs":0}\n')


def write_bronze_log(settings, versions: int, age_hours: float = 0) -> None:
    log = settings.table_path("bronze").replace("file://", "")
    os.makedirs(f"{log}/_delta_log", exist_ok=True)
    stamp = int((time.time() - age_hours * 3600) * 1000)
    for v in range(versions):
        with open(f"{log}/_delta_log/{v:020d}.json", "w") as fh:
            fh.write(json.dumps({"commitInfo": {"timestamp": stamp}}) + "\n")


def test_ingest_lag_per_partition_counts_from_the_last_committed_batch(tmp_path):
    settings = lake_settings(tmp_path, topic="t")
    root = tmp_path / "checkpoints" / "ingest"
    write_checkpoint(root, 0, {"t": {"0": 50, "1": 70}})
    write_checkpoint(root, 1, {"t": {"0": 90, "1": 100}}, committed=False)  # planned, not done
    health = ingest_health(settings, {0: 100, 1: 100})
    assert health.last_batch == 0
    assert health.lag_by_partition == {"0": 50, "1": 30} and health.lag == 80
    assert health.seconds_since_commit is not None and health.seconds_since_commit < 60


def test_refine_lag_counts_bronze_versions_not_yet_read(tmp_path):
    settings = lake_settings(tmp_path)
    write_bronze_log(settings, versions=10)
    root = tmp_path / "checkpoints" / "refine"
    write_checkpoint(root, 3, {"reservoirVersion": 7, "index": -1})  # versions 0..6 done
    assert refine_health(settings).lag == 3
    write_checkpoint(root, 4, {"reservoirVersion": 9, "index": 4})  # part-way through 9
    assert refine_health(settings).lag == 0


def test_a_fresh_checkpoint_has_no_batches(tmp_path):
    assert read_checkpoint(str(tmp_path / "nothing")).batch_id is None


def test_vacuum_retention_must_outlast_delta_minimum_downtime_and_current_lag(tmp_path):
    settings = lake_settings(tmp_path)
    write_bronze_log(settings, versions=5, age_hours=300)  # refine has read nothing: 300 h behind
    policy = retention_policy(settings)
    assert policy.required_hours == pytest.approx(324, abs=1)
    with pytest.raises(UnsafeRetention, match="refusing VACUUM with 168 h retention"):
        check_retention(settings, 168)
    assert check_retention(settings, 400).required_hours == pytest.approx(policy.required_hours, abs=0.01)
    write_checkpoint(tmp_path / "checkpoints" / "refine", 0, {"reservoirVersion": 5, "index": -1})
    assert retention_policy(settings).required_hours == 168  # caught up: Delta's floor rules


def test_old_reports_go_but_latest_stays(tmp_path):
    settings = lake_settings(tmp_path)
    verify = tmp_path / "reports" / "verify"
    (verify / "runs").mkdir(parents=True)
    old, new, latest, run = (
        verify / "old.json",
        verify / "new.json",
        verify / "latest.json",
        verify / "runs" / "r.json",
    )
    for path in (old, new, latest, run):
        path.write_text("{}")
    month_ago = time.time() - 40 * 86400
    for path in (old, latest, run):
        os.utime(path, (month_ago, month_ago))
    assert old_reports(settings, keep_days=30) == sorted([old, run])


def test_caught_up_means_past_the_backlog_even_while_the_load_goes_on(tmp_path):
    from lab.bench.pipeline import caught_up_with

    settings = lake_settings(tmp_path, topic="t")
    ingest, refine = tmp_path / "checkpoints" / "ingest", tmp_path / "checkpoints" / "refine"
    write_bronze_log(settings, versions=5)
    write_checkpoint(ingest, 0, {"t": {"0": 40}})
    write_checkpoint(refine, 0, {"reservoirVersion": 5, "index": -1})
    check = caught_up_with(settings, {0: 100})  # 100 records were produced before the kill
    assert not check(), "ingest has not reached the backlog yet"
    write_checkpoint(ingest, 1, {"t": {"0": 120}})
    write_bronze_log(settings, versions=7)  # version 6 holds the backlog's end
    assert not check(), "refine has not read the version holding the backlog"
    write_bronze_log(settings, versions=9)  # the load goes on: refine never sees lag 0
    write_checkpoint(refine, 1, {"reservoirVersion": 7, "index": -1})
    assert check()
