"""One commit protocol for every writer of a live table (docs/cloud.md, "One commit protocol"): on
the local S3 server, the stream's commits (eo.runtime.commits.append on the environment's table)
race the weekly maintenance's (batch.maintenance.optimize_table, the same environment's table).
Every commit either writer saw succeed must be in the table's log: no version written twice, no
row lost, none doubled."""

from __future__ import annotations

import os
import threading
import time
import uuid
from unittest.mock import patch

import pyarrow as pa
import pytest

from batch.maintenance import optimize_table
from eo.runtime import commits
from eo.runtime.config import load_settings
from eo.runtime.environment import environment
from infra.s3 import LocalS3

pytestmark = [pytest.mark.integration, pytest.mark.slow]  # about 70 s

MIN_COMMITS = 20  # of each writer
PORT = int(os.environ.get("EO_COMMIT_RACE_S3_PORT", "5088"))


@pytest.fixture(scope="module")
def s3_settings(tmp_path_factory):
    """local-s3 settings on a server of this module's own port (S3 and DynamoDB)."""
    server = LocalS3.default(PORT)
    env = {"EO_ENV": "local-s3", "EO_TF_OUTPUTS": str(tmp_path_factory.mktemp("tf") / "local-s3.json")}
    env["EO_AWS_ENDPOINT"] = server.endpoint
    with patch.dict(os.environ, env):  # restored on the way out
        started = server.start()
        try:
            settings = load_settings("local-s3")
            conf = {**settings.spark_conf, "spark.hadoop.fs.s3a.endpoint": server.endpoint}
            lake_root = f"{settings.lake_root}/race-{uuid.uuid4().hex[:8]}"
            yield settings.with_overrides(lake_root=lake_root, spark_conf=conf)
        finally:
            if started:
                server.stop()


def rows(writer: str, seq: int) -> pa.Table:
    return pa.table({"writer": [writer], "seq": pa.array([seq], pa.int64())})


def test_the_streams_and_the_maintenances_commits_are_all_kept(s3_settings):
    from deltalake import write_deltalake

    env = environment(s3_settings)
    created = env.table("bronze")
    write_deltalake(created.uri, rows("create", 0).slice(0, 0), storage_options=created.storage_options)

    appended: list[int] = []
    compactions: list[dict] = []
    refused: list[str] = []
    appending = threading.Event()
    appending.set()

    def stream() -> None:  # the stream's writer: one append per micro-batch
        table = env.table("bronze")
        for seq in range(1, 4 * MIN_COMMITS + 1):
            try:
                if commits.append(table, rows("stream", seq), commits.Txn("commit-race", 1, seq)):
                    appended.append(seq)
            except Exception as error:  # noqa: BLE001 (a refused commit is not a reported one)
                refused.append(f"stream {seq}: {type(error).__name__}: {str(error)[:160]}")
        appending.clear()

    def maintenance() -> None:  # the weekly OPTIMIZE, run again and again while the stream appends
        table = env.table("bronze")
        while appending.is_set() or len(compactions) < MIN_COMMITS:
            try:
                metrics = optimize_table(table)
            except Exception as error:  # noqa: BLE001
                refused.append(f"optimize: {type(error).__name__}: {str(error)[:160]}")
                continue
            if metrics["numFilesAdded"]:
                compactions.append(metrics)
            elif not appending.is_set():
                break  # nothing left to compact
            time.sleep(0.05)

    threads = [threading.Thread(target=stream), threading.Thread(target=maintenance)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=300)

    final = env.table("bronze").refresh()
    found = [(row["writer"], row["seq"]) for row in final.to_pyarrow_table().to_pylist()]
    lost = sorted({("stream", s) for s in appended} - set(found))
    history = final.history()
    operations = [entry["operation"] for entry in history]
    report = (
        f"stream committed {len(appended)}, optimize committed {len(compactions)}, refused {len(refused)};"
        f" table version {final.version()} ({operations.count('WRITE')} writes,"
        f" {operations.count('OPTIMIZE')} optimizes), rows {len(found)}; lost {len(lost)}: {lost[:10]}"
    )
    print(report)
    assert len(appended) >= MIN_COMMITS and len(compactions) >= MIN_COMMITS, (report, refused[:5])
    assert not lost, report
    assert len(found) == len(set(found)) == len(appended), report  # none lost, none doubled
    # Every reported commit is a version of its own: the create, then one per commit.
    assert final.version() == len(appended) + len(compactions), report
    assert operations.count("OPTIMIZE") == len(compactions), report
