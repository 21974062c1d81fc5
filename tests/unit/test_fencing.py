"""Fencing: epochs from a lease; a superseded instance cannot commit."""

import threading

import pytest

from jobs.fencing import Fence, Fenced, FileLease, PostgresLease, decode_version, encode_version


def starts_supersede(lease) -> None:
    first = Fence.start(lease, "events")
    first.check()
    second = Fence.start(lease, "events")
    assert second.epoch == first.epoch + 1
    second.check()
    with pytest.raises(Fenced, match=f"epoch {first.epoch} was superseded by epoch {second.epoch}"):
        first.check()
    assert Fence.start(lease, "other").epoch == 1  # one lease per job


def concurrent_starts_never_share_an_epoch(lease) -> None:
    epochs: list[int] = []
    threads = [threading.Thread(target=lambda: epochs.append(lease.acquire("job"))) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(epochs) == list(range(1, 9))


@pytest.mark.unit
def test_file_lease_every_start_takes_a_new_epoch_and_supersedes_the_last(tmp_path):
    starts_supersede(FileLease(str(tmp_path)))


@pytest.mark.unit
def test_file_lease_concurrent_starts_never_share_an_epoch(tmp_path):
    concurrent_starts_never_share_an_epoch(FileLease(str(tmp_path)))


@pytest.mark.integration
def test_postgres_lease_every_start_takes_a_new_epoch_and_supersedes_the_last(pg_dsn):
    starts_supersede(PostgresLease(pg_dsn))


@pytest.mark.integration
def test_postgres_lease_concurrent_starts_never_share_an_epoch(pg_dsn):
    concurrent_starts_never_share_an_epoch(PostgresLease(pg_dsn))


@pytest.mark.unit
def test_versions_order_epochs_before_positions_and_decode_back():
    assert encode_version(2, 0) < encode_version(2, 10**9) < encode_version(3, 0)
    assert decode_version(encode_version(7, 123)) == (7, 123)
    with pytest.raises(ValueError):
        encode_version(1, 1 << 40)
