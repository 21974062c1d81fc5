"""Fencing: epochs from a lease; a superseded instance cannot commit to PostgreSQL or Delta."""

import threading

import pytest

from jobs import lake
from jobs.fencing import Fence, Fenced, FileLease, PostgresLease, claim_version, txn_version
from jobs.tables import SILVER, ensure_table
from tests.conftest import lake_settings

pytestmark = pytest.mark.unit


@pytest.mark.parametrize("kind", ["file", "postgres"])
def test_every_start_takes_a_new_epoch_and_supersedes_the_last(kind, tmp_path, request):
    lease = FileLease(str(tmp_path)) if kind == "file" else PostgresLease(request.getfixturevalue("pg_dsn"))
    first = Fence.start(lease, "refine")
    first.check()
    second = Fence.start(lease, "refine")
    assert second.epoch == first.epoch + 1
    second.check()
    with pytest.raises(Fenced, match=f"epoch {first.epoch} was superseded by epoch {second.epoch}"):
        first.check()
    assert Fence.start(lease, "ingest").epoch == 1  # one lease per job


def test_concurrent_starts_never_share_an_epoch(pg_dsn, tmp_path):
    for lease in (PostgresLease(pg_dsn), FileLease(str(tmp_path))):
        epochs: list[int] = []
        threads = [
            threading.Thread(target=lambda lease=lease, out=epochs: out.append(lease.acquire("job"))) for _ in range(8)
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert sorted(epochs) == list(range(1, 9))


def test_versions_order_epochs_before_batches():
    assert claim_version(2) < txn_version(2, 0) < txn_version(2, 10**9) < claim_version(3) < txn_version(3, 0)


def test_a_claimed_delta_table_refuses_the_older_epochs_writes(spark, tmp_path):
    settings = lake_settings(tmp_path)
    path = ensure_table(spark, settings, SILVER)
    session = spark.newSession()
    rows = session.createDataFrame([], SILVER.ddl)
    lake.insert_missing(session, path, rows, SILVER.key, txn=("refine", txn_version(1, 5)))
    lake.claim(session, SILVER, path, ("refine", claim_version(2)))  # a newer instance starts
    with pytest.raises(Fenced, match="newer instance claimed it"):
        lake.insert_missing(session, path, rows, SILVER.key, txn=("refine", txn_version(1, 6)))
    lake.insert_missing(session, path, rows, SILVER.key, txn=("refine", txn_version(2, 0)))  # the new one may
