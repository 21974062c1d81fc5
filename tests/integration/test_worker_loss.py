"""The same streaming job on a real Spark standalone cluster (a master, two 1-core workers):
one worker is SIGKILLed mid-stream with its executors; the job goes on with the other, and
afterwards nothing is lost, nothing doubled, and stream == batch."""

import signal
import subprocess
import time

import pytest

from batch.rebuild import rebuild
from batch.verify import verify
from eo.runtime.submit import submit_command, submit_env
from infra.spark_cluster import SparkCluster
from lab.bench.pipeline import caught_up
from lab.instances import committed_batches
from tests.conftest import settings_env
from tests.integration.producing import produce

pytestmark = [pytest.mark.integration, pytest.mark.slow]

EXECUTORS = {"spark.cores.max": "2", "spark.executor.cores": "1", "spark.executor.memory": "1g"}


@pytest.fixture
def cluster(tmp_path):
    cluster = SparkCluster(port=17077, workers=2, worker_memory="2g", home=tmp_path / "cluster")
    cluster.start()
    yield cluster
    cluster.stop()


def wait_until(check, timeout: float, what: str, proc=None) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert proc is None or proc.poll() is None, f"the streaming job exited with {proc.returncode}"
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.5)


def test_losing_a_worker_mid_stream_loses_and_doubles_nothing(spark, pipeline, cluster, tmp_path):
    settings = pipeline.with_overrides(spark_master=cluster.master_url)
    env = {**settings_env(settings), "EO_SPARK_MASTER": cluster.master_url}
    produce(pipeline, 20_000)
    args = ["run", "--trigger-seconds", "1", "--max-offsets-per-trigger", "2500"]
    with open(tmp_path / "stream.log", "wb") as log:
        job = subprocess.Popen(
            submit_command("jobs/stream.py", args, settings, EXECUTORS),
            env=submit_env(env), stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
    try:
        wait_until(lambda: cluster.status()["applications"] == 1, 120, "the job on the cluster", job)
        wait_until(lambda: committed_batches(settings) >= 1, 240, "a first micro-batch", job)
        before = committed_batches(settings)
        assert cluster.kill_worker(1) is not None
        wait_until(lambda: cluster.status()["workers"] == 1, 120, "the master to notice the loss")
        # The job goes on with the surviving worker's executor, to the end of the log: the same
        # job commits every batch after the loss (no second driver finishes for it).
        wait_until(lambda: committed_batches(settings) >= before + 4, 300, "batches after the loss", job)
        wait_until(lambda: caught_up(settings), 300, "the job to catch up after the loss", job)
    finally:
        job.send_signal(signal.SIGTERM)
        job.wait(60)
    rebuild(spark, pipeline)
    verdict = verify(spark, pipeline)
    assert verdict["passed"], [e for e in verdict["expectations"] if not e["success"]]
    assert verdict["reconciliation"]["lost"] == 0 and verdict["reconciliation"]["acked"] == 20_000
