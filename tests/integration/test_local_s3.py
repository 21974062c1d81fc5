"""The local-s3 environment against a real S3-compatible server (moto's, on loopback): the epoch
lease in its DynamoDB (the stream's hold seen from another machine), and the VACUUM guard reading a
lagging stream's checkpoint and Delta log from the buckets, through the same command an operator runs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from unittest.mock import patch

import pytest

from eo.cloud.dynamodb_lease import DynamoLease
from eo.cloud.s3 import ObjectStoreFiles
from eo.runtime.config import REPO_ROOT, load_settings
from eo.runtime.environment import environment
from eo.runtime.fencing import Fence, Fenced
from infra.s3 import LocalS3

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def local_s3(tmp_path_factory):
    outputs = tmp_path_factory.mktemp("tf") / "local-s3.json"
    env = {"EO_ENV": "local-s3", "EO_TF_OUTPUTS": str(outputs)}
    with patch.dict(os.environ, env):  # restored on the way out
        server = LocalS3.default()
        started = server.start()  # buckets and the log store table, as the dev environment has them
        prefix = f"t-{uuid.uuid4().hex[:8]}"
        settings = load_settings("local-s3")
        settings = settings.with_overrides(
            lake_root=f"{settings.lake_root}/{prefix}", checkpoint_root=f"{settings.checkpoint_root}/{prefix}"
        )
        try:
            yield settings, env
        finally:
            if started:
                server.stop()


def test_epochs_come_from_the_servers_dynamodb_and_fence_a_zombie(local_s3):
    settings, _ = local_s3
    lease = environment(settings).lease()
    assert isinstance(lease, DynamoLease)
    job = f"events-{uuid.uuid4().hex[:6]}"
    zombie = Fence.start(lease, job)
    successor = Fence.start(lease, job)
    assert successor.epoch == zombie.epoch + 1
    with pytest.raises(Fenced):
        zombie.check()


def test_vacuum_is_refused_while_a_stream_on_s3_lags_behind(local_s3):
    settings, env = local_s3
    fs = environment(settings).lake_files
    assert isinstance(fs, ObjectStoreFiles)
    # The seed table has 3 commits from 300 hours ago; the stream reading it has read none of them.
    stamp = int((time.time() - 300 * 3600) * 1000)
    for version in range(3):
        log = f"{settings.table_path('seed')}/_delta_log/{version:020d}.json"
        fs.write_text(log, json.dumps({"commitInfo": {"timestamp": stamp}}) + "\n")
    checkpoint = settings.checkpoint_path("events")
    fs.write_text(f"{checkpoint}/offsets/0", 'v1\n{"batchWatermarkMs":0}\n{"reservoirVersion":0,"index":-1}\n')
    fs.write_text(f"{checkpoint}/commits/0", 'v1\n{"nextBatchWatermarkMs":0}\n')

    roots = {"EO_LAKE_ROOT": settings.lake_root, "EO_CHECKPOINT_ROOT": settings.checkpoint_root}
    command = [sys.executable, "-m", "batch.maintenance", "--vacuum", "--retention-hours", "168"]
    done = subprocess.run(
        command, cwd=REPO_ROOT, env={**os.environ, **env, **roots}, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 2, done.stderr
    assert "refusing VACUUM with 168 h retention" in done.stderr
    assert "current lag of the lake's readers + margin 324 h" in done.stderr


def test_files_a_task_writes_to_the_bucket_are_committed_as_metadata(local_s3):
    """What a stream task does on object storage (streaming/task_writes.py): Parquet written
    through the environment's filesystem, then one delta-rs commit of their add actions."""
    import datetime as dt

    import pyarrow as pa
    from deltalake import write_deltalake

    from eo.runtime import commits, data_files

    settings, _ = local_s3
    env = environment(settings)
    table = env.table("silver")
    rows = pa.table({"event_id": ["a", "b"], "event_date": [dt.date(2026, 11, 5), dt.date(2026, 11, 6)], "n": [1, 2]})
    write_deltalake(table.uri, rows.slice(0, 0), partition_by=["event_date"], storage_options=table.storage_options)
    files = data_files.write_files(env.arrow_filesystem(table.uri), rows, ["event_date"], "1-00000-1")
    assert commits.append_files(table, data_files.add_actions(files), commits.Txn("app", 0, 1))
    assert sorted(table.refresh().to_pyarrow_table().column("event_id").to_pylist()) == ["a", "b"]


def test_a_stream_holding_the_shared_lease_on_one_machine_refuses_a_reset_on_another(local_s3, tmp_path):
    """Two machines (two working folders, as two EMR job runs have) share only the lease table. The
    guard that `rebuild --target main` and `ops.reset` run refuses while the other machine's stream
    holds the lease; once it lets go or its hold expires, it proceeds with a newer epoch."""
    from eo.cloud.outputs import LOG_STORE_KEYS
    from eo.runtime.active import ActiveLock
    from eo.runtime.cli import NotReady
    from eo.runtime.fencing import HOLD_SECONDS, Heartbeat
    from eo.runtime.live_tables import QUERY, claim_while_stopped, holder
    from tests.conftest import lake_settings

    settings, _ = local_s3
    table = f"eo-lease-{uuid.uuid4().hex[:8]}"  # a lease table of this test's own, keyed as the log store's
    keys = [LOG_STORE_KEYS["hash"], LOG_STORE_KEYS["range"]]
    client = DynamoLease.for_settings(settings).client
    client.create_table(
        TableName=table,
        BillingMode="PAY_PER_REQUEST",
        AttributeDefinitions=[{"AttributeName": k, "AttributeType": "S"} for k in keys],
        KeySchema=[{"AttributeName": k, "KeyType": t} for k, t in zip(keys, ("HASH", "RANGE"), strict=True)],
    )
    shared = {"lease": "dynamodb", "lease_table": table, "aws_region": settings.aws_region}
    shared["aws_endpoint"] = settings.aws_endpoint
    shared["lake_root"] = str(tmp_path / "lake")  # one lake: the lease names it (DynamoLease.key)
    machine_a, machine_b = (lake_settings(tmp_path / name, **shared) for name in ("a", "b"))
    assert environment(machine_a).lock_root != environment(machine_b).lock_root

    # Machine a: the stream takes its epoch and holds it, as take_over does, and renews it.
    stream = Fence.start(environment(machine_a).lease(), QUERY, holder(), HOLD_SECONDS)
    heartbeat = Heartbeat(stream)
    assert heartbeat.beat()
    assert ActiveLock.for_job(machine_b, [QUERY]).try_acquire()  # machine b's local lock knows nothing of it
    with pytest.raises(NotReady, match=r"holds the stream.s live tables: stop it \(make stream-stop\) before a reset"):
        claim_while_stopped(machine_b, "a reset")
    assert environment(machine_b).lease().current(QUERY) == stream.epoch  # refused: no epoch taken
    another_lake = lake_settings(tmp_path / "c", **{**shared, "lake_root": str(tmp_path / "another-lake")})
    claim_while_stopped(another_lake, "a reset")  # the same account and table, another lake: its own lease
    stream.check()  # not fenced by it

    heartbeat.stop()  # a clean stop lets go
    fence = claim_while_stopped(machine_b, "a reset")
    assert fence.epoch == stream.epoch + 1
    with pytest.raises(Fenced):
        stream.check()

    # A stream that died without letting go: its last renewal was longer ago than the hold lasts.
    lapsed = DynamoLease(table, client, machine_b.lake_root, clock=lambda: time.time() - HOLD_SECONDS - 1)
    dead = Fence.start(lapsed, QUERY, "host-a pid 9", HOLD_SECONDS)
    assert environment(machine_b).lease().held(QUERY) is None
    assert claim_while_stopped(machine_b, "rebuilding --target main").epoch == dead.epoch + 1
