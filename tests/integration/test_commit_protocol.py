"""One commit protocol for every writer of a live table (docs/cloud.md, "One commit protocol"): on
the local S3 server, the stream's commits race the weekly maintenance's OPTIMIZE on one table
(lab/cloud_smoke/commit_race.py, which make cloud-smoke runs too)."""

from __future__ import annotations

import os
import uuid
from unittest.mock import patch

import pytest

from eo.runtime.config import load_settings
from infra.s3 import LocalS3
from lab.cloud_smoke.commit_race import MIN_COMMITS, passed, race

pytestmark = [pytest.mark.integration, pytest.mark.slow]  # about 70 s

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


def test_the_streams_and_the_maintenances_commits_are_all_kept(s3_settings):
    result = race(s3_settings, MIN_COMMITS)
    print(result)
    made = result["commits"]
    assert min(made.values()) >= MIN_COMMITS, result
    assert result["commits_lost"] == 0, result
    assert result["rows_doubled"] == result["rows_unreported"] == 0, result  # none lost, none doubled
    assert result["version"] == made["stream"] + made["optimize"], result  # one version per commit
    assert result["optimizes_in_log"] == made["optimize"], result
    assert passed(result)
