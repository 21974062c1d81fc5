"""Streaming health from checkpoint files, and the VACUUM retention policy built on it."""

import json
import os
import time

import pytest

from eo.cloud.s3 import ObjectStoreFiles
from eo.runtime.environment import environment
from eo.runtime.maintenance import UnsafeRetention, check_retention, delete_old_reports, old_reports, retention_policy
from eo.runtime.monitoring import read_checkpoint, stream_health
from eo.runtime.storage import LocalFiles, files_under
from tests.conftest import lake_settings

pytestmark = pytest.mark.unit


def fake_aws_credentials(monkeypatch) -> None:
    credentials = {"AWS_ACCESS_KEY_ID": "x", "AWS_SECRET_ACCESS_KEY": "x", "AWS_DEFAULT_REGION": "us-east-1"}
    for key, value in credentials.items():
        monkeypatch.setenv(key, value)


@pytest.fixture(params=["local", "s3"])
def lake(request, tmp_path, monkeypatch):
    """Settings and their file access, on the local disk or on (moto's) S3: the answers must agree."""
    settings = lake_settings(tmp_path, topic="t")
    if request.param == "local":
        yield settings, environment(settings).lake_files
        return
    import boto3
    from moto import mock_aws

    fake_aws_credentials(monkeypatch)
    with mock_aws():
        boto3.client("s3").create_bucket(Bucket="lake")
        remote = settings.with_overrides(lake_root="s3a://lake/lake", checkpoint_root="s3a://lake/checkpoints")
        fs = environment(remote).lake_files
        assert isinstance(fs, ObjectStoreFiles)
        yield remote, fs


def write_checkpoint(fs, root: str, batch: int, source: dict, committed: bool = True, seed: dict | None = None) -> None:
    """offsets/<n> as Spark writes it: version, batch metadata, then one line per source."""
    sources = "\n".join(json.dumps(s) for s in (source, seed) if s is not None)
    fs.write_text(f"{root}/offsets/{batch}", f'v1\n{{"batchWatermarkMs":0}}\n{sources}\n')
    if committed:
        fs.write_text(f"{root}/commits/{batch}", 'v1\n{"nextBatchWatermarkMs":0}\n')


def write_seed_log(settings, fs, versions: int, age_hours: float = 0) -> None:
    stamp = int((time.time() - age_hours * 3600) * 1000)
    for v in range(versions):
        fs.write_text(
            f"{settings.table_path('seed')}/_delta_log/{v:020d}.json",
            json.dumps({"commitInfo": {"timestamp": stamp}}) + "\n",
        )


def test_lag_per_partition_counts_from_the_last_committed_batch(lake):
    settings, fs = lake
    root = settings.checkpoint_path("events")
    seed = {"reservoirVersion": 1, "index": -1}
    write_checkpoint(fs, root, 0, {"t": {"0": 50, "1": 70}}, seed=seed)
    write_checkpoint(fs, root, 1, {"t": {"0": 90, "1": 100}}, committed=False, seed=seed)  # planned, not done
    health = stream_health(settings, {0: 100, 1: 100})
    assert health.query == "events" and health.last_batch == 0
    assert health.lag_by_partition == {"0": 50, "1": 30} and health.lag == 80
    assert health.seconds_since_commit is not None and health.seconds_since_commit < 60


def test_a_fresh_checkpoint_has_no_batches(lake):
    settings, fs = lake
    assert read_checkpoint(settings.checkpoint_path("nothing"), fs).batch_id is None


def test_vacuum_retention_must_outlast_delta_minimum_downtime_and_what_a_reader_has_not_read(lake):
    settings, fs = lake
    write_seed_log(settings, fs, versions=5, age_hours=300)  # the stream has read none of the seed: 300 h behind
    policy = retention_policy(settings)
    assert policy.required_hours == pytest.approx(324, abs=1)
    with pytest.raises(UnsafeRetention) as refused:
        check_retention(settings, 168)
    rule = "current lag of the lake's readers + margin"
    assert str(refused.value) == f"refusing VACUUM with 168 h retention: the minimum is 324 h ({rule})"
    assert "delta minimum 168 h" in refused.value.detail and f"{rule} 324 h" in refused.value.detail
    assert check_retention(settings, 400).required_hours == pytest.approx(policy.required_hours, abs=0.01)
    write_checkpoint(
        fs, settings.checkpoint_path("events"), 0, {"t": {"0": 1}}, seed={"reservoirVersion": 5, "index": -1}
    )
    assert retention_policy(settings).required_hours == 168  # caught up: Delta's floor rules


def test_old_reports_go_but_latest_stays(tmp_path):
    settings = lake_settings(tmp_path)
    verify = tmp_path / "reports" / "verify"
    validations = tmp_path / "reports" / "gx" / "gx" / "uncommitted" / "validations" / "suite" / "run"
    for folder in (verify / "runs", validations, verify / "explanations" / "r"):
        folder.mkdir(parents=True)
    old, new, latest, run, validation, explained, fresh = (
        verify / "old.json",
        verify / "new.json",
        verify / "latest.json",
        verify / "runs" / "r.json",
        validations / "v.json",
        verify / "explanations" / "r" / "user_sessions-0.json",  # batch/verify_explain.py
        verify / "explanations" / "r" / "user_sessions-1.json",
    )
    for path in (old, new, latest, run, validation, explained, fresh):
        path.write_text("{}")
    month_ago = time.time() - 40 * 86400
    for path in (old, latest, run, validation, explained):
        os.utime(path, (month_ago, month_ago))
    assert old_reports(settings, keep_days=30) == sorted(str(p) for p in (old, run, validation, explained))
    assert settings.maintenance["report_keep_days"] == 30  # the default comes from the config
    assert old_reports(settings) == old_reports(settings, keep_days=30)


def test_old_reports_in_a_bucket_are_found_and_deleted_there(tmp_path, monkeypatch):
    import boto3
    from moto import mock_aws

    fake_aws_credentials(monkeypatch)
    with mock_aws():
        boto3.client("s3").create_bucket(Bucket="lake")
        settings = lake_settings(tmp_path).with_overrides(
            lake_root="s3a://lake/lake", reports_root="s3a://lake/reports"
        )
        names = ("verify/old.json", "verify/latest.json", "verify/runs/r.json")
        for name in names:
            environment(settings).report_files.write_text(f"s3a://lake/reports/{name}", "{}")
        in_40_days = time.time() + 40 * 86400  # moto dates every object now
        expected = ["s3a://lake/reports/verify/old.json", "s3a://lake/reports/verify/runs/r.json"]
        assert old_reports(settings, keep_days=30, now=in_40_days) == expected
        assert old_reports(settings, keep_days=30) == []
        monkeypatch.setattr(time, "time", lambda: in_40_days)
        assert delete_old_reports(settings, keep_days=30) == expected
        assert files_under(environment(settings).report_files, "s3a://lake/reports/verify", ".json") == [
            "s3a://lake/reports/verify/latest.json"
        ]


def test_caught_up_means_past_the_backlog_even_while_the_load_goes_on(tmp_path):
    from lab.bench.pipeline import caught_up_with

    settings = lake_settings(tmp_path, topic="t")
    root, fs = settings.checkpoint_path("events"), LocalFiles()
    write_checkpoint(fs, root, 0, {"t": {"0": 40}})
    check = caught_up_with(settings, {0: 100})  # 100 records were produced before the kill
    assert not check(), "the stream has not reached the backlog yet"
    write_checkpoint(fs, root, 1, {"t": {"0": 120}}, committed=False)
    assert not check(), "planned is not committed"
    write_checkpoint(fs, root, 1, {"t": {"0": 120}})  # the load goes on: the stream never sees lag 0
    assert check()


def test_maintenance_skips_a_scheduled_run_long_after_its_slot_but_never_one_asked_for():
    import datetime as dt

    from eo.runtime.maintenance import outside_window

    slot = dt.datetime(2026, 11, 22, 3, tzinfo=dt.UTC)  # Sunday 03:00
    assert outside_window("scheduled", slot, slot + dt.timedelta(minutes=5)) is None
    assert outside_window("scheduled", slot, slot + dt.timedelta(hours=2)) is None
    late = outside_window("scheduled", slot, slot + dt.timedelta(days=3, hours=11))  # unpaused on Wednesday
    assert late == (
        "a catch-up of the 2026-11-22 03:00 UTC slot, 83 h late (over 2 h): skipped; "
        "trigger the DAG (or set force) to run it now"
    )
    assert outside_window("scheduled", slot, slot + dt.timedelta(days=3), force=True) is None
    assert outside_window("manual", slot, slot + dt.timedelta(days=3)) is None
    assert outside_window("backfill", slot, slot + dt.timedelta(days=3)) is None
