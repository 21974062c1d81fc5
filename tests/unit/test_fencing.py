"""Fencing: epochs from a lease; a superseded instance cannot commit."""

import threading

import pytest

from eo.cloud.dynamodb_lease import DynamoLease
from eo.cloud.outputs import LOG_STORE_KEYS
from eo.runtime import commits
from eo.runtime.fencing import (
    Fence,
    Fenced,
    FileLease,
    Heartbeat,
    HeldBy,
    PostgresLease,
    decode_version,
    encode_version,
)


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


class Clock:
    """Seconds that pass only when a test says so: expiries without sleeping."""

    def __init__(self, now: float = 1_800_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def holds_follow_the_epoch(lease, clock: Clock) -> None:
    """The stream's hold: recorded with its epoch, renewed and released only while that epoch is
    the newest, and not live once expired."""
    assert lease.held("events") is None
    epoch = lease.acquire("events", "host-a pid 1", 60)
    assert lease.held("events") == HeldBy("host-a pid 1", epoch, clock.now + 60)
    clock.now += 50
    assert lease.renew("events", epoch, 60)  # a heartbeat: 60 s from now
    clock.now += 59
    assert lease.held("events") == HeldBy("host-a pid 1", epoch, clock.now + 1)
    clock.now += 1
    assert lease.held("events") is None  # expired: its renewals stopped (a crash, a lost machine)
    assert lease.renew("events", epoch, 60)  # a late renewal while nobody took over holds it again
    assert lease.held("events") is not None

    rebuild = lease.acquire("events")  # a new epoch without a holder (a rebuild, a reset)
    assert rebuild == epoch + 1 and lease.held("events") is None
    assert not lease.renew("events", epoch, 60) and not lease.release("events", epoch)  # superseded
    assert lease.held("events") is None

    restarted = lease.acquire("events", "host-b pid 2", 60)
    assert lease.held("events").holder == "host-b pid 2"
    assert lease.held("other") is None  # one lease per job
    assert lease.release("events", restarted)
    assert lease.held("events") is None
    assert not lease.renew("events", restarted, 60)  # a released hold is not renewed back
    assert lease.current("events") == restarted


@pytest.mark.unit
def test_file_lease_holds_are_renewed_released_and_expire_with_the_epoch(tmp_path):
    clock = Clock()
    holds_follow_the_epoch(FileLease(str(tmp_path), clock), clock)


@pytest.mark.unit
def test_file_lease_reads_epochs_taken_before_holds_existed(tmp_path):
    lease = FileLease(str(tmp_path))
    (tmp_path / "_leases" / "events").mkdir(parents=True)
    (tmp_path / "_leases" / "events" / "3").touch()  # as the O_EXCL lease left them: empty
    assert lease.held("events") is None and lease.current("events") == 3
    assert lease.acquire("events", "host pid 1", 60) == 4 and lease.held("events").epoch == 4
    assert sorted(p.name for p in (tmp_path / "_leases" / "events").iterdir()) == ["3", "4"]  # no scratch left


@pytest.mark.unit
def test_a_heartbeat_renews_the_hold_and_lets_go_when_stopped_or_superseded(tmp_path):
    clock = Clock()
    lease = FileLease(str(tmp_path), clock)
    stream = Fence.start(lease, "events", "host pid 1", 60)
    heartbeat = Heartbeat(stream, every=3600, ttl=60).start()
    clock.now += 55
    assert heartbeat.beat() and lease.held("events").expires_at == clock.now + 60
    heartbeat.stop()  # a clean stop: released at once, not at expiry
    assert lease.held("events") is None and not heartbeat._thread.is_alive()

    lines: list[str] = []
    stream = Fence.start(lease, "events", "host pid 2", 60)
    heartbeat = Heartbeat(stream, every=0.01, ttl=60, log=lines.append).start()
    Fence.start(lease, "events")  # a reset fenced it: the heartbeat ends by itself
    heartbeat._thread.join(timeout=10)
    assert not heartbeat._thread.is_alive()
    assert lines == [f"[lease] events epoch {stream.epoch} was superseded: no more renewals"]
    heartbeat.stop()  # releasing a superseded epoch changes nothing
    assert lease.current("events") == stream.epoch + 1


@pytest.mark.unit
def test_file_lease_every_start_takes_a_new_epoch_and_supersedes_the_last(tmp_path):
    starts_supersede(FileLease(str(tmp_path)))


@pytest.mark.unit
def test_file_lease_concurrent_starts_never_share_an_epoch(tmp_path):
    concurrent_starts_never_share_an_epoch(FileLease(str(tmp_path)))


class OneRequestAtATime:
    """A DynamoDB client whose requests the server handles one at a time, as DynamoDB serialises
    writes to an item. moto's in-process mock does not: two threads' ADDs can both read epoch 0.
    Threads still interleave between requests, so a read-then-write lease would still fail."""

    def __init__(self, client) -> None:
        self.client, self.lock = client, threading.Lock()

    def __getattr__(self, name: str):
        call = getattr(self.client, name)

        def serialised(*args, **kwargs):
            with self.lock:
                return call(*args, **kwargs)

        return serialised


@pytest.fixture
def dynamo_lease():
    """The lease in the Delta log store's table (as Terraform creates it), on moto's DynamoDB."""
    import boto3
    from moto import mock_aws

    with mock_aws():
        client = boto3.client("dynamodb", region_name="eu-west-1")
        keys = [LOG_STORE_KEYS["hash"], LOG_STORE_KEYS["range"]]
        client.create_table(
            TableName="eo-delta-log",
            BillingMode="PAY_PER_REQUEST",
            AttributeDefinitions=[{"AttributeName": k, "AttributeType": "S"} for k in keys],
            KeySchema=[{"AttributeName": k, "KeyType": t} for k, t in zip(keys, ("HASH", "RANGE"), strict=True)],
        )
        # an entry of Delta's S3DynamoDBLogStore, which the lease must leave alone
        log_entry = {LOG_STORE_KEYS["hash"]: {"S": "s3://lake/silver"}, LOG_STORE_KEYS["range"]: {"S": "0.json"}}
        client.put_item(TableName="eo-delta-log", Item=log_entry)
        yield DynamoLease("eo-delta-log", OneRequestAtATime(client), "s3a://eo-lake/lake", Clock())
        assert client.get_item(TableName="eo-delta-log", Key=log_entry)["Item"] == log_entry


@pytest.mark.unit
def test_dynamodb_lease_every_start_takes_a_new_epoch_and_supersedes_the_last(dynamo_lease):
    starts_supersede(dynamo_lease)


@pytest.mark.unit
def test_dynamodb_lease_concurrent_starts_never_share_an_epoch(dynamo_lease):
    concurrent_starts_never_share_an_epoch(dynamo_lease)


@pytest.mark.unit
def test_dynamodb_lease_holds_are_renewed_released_and_expire_with_the_epoch(dynamo_lease):
    holds_follow_the_epoch(dynamo_lease, dynamo_lease.clock)


@pytest.mark.unit
def test_dynamodb_leases_are_one_per_lake_and_start_from_the_old_shared_key(dynamo_lease):
    """Two lakes in one account (an environment, a sandbox) never share an epoch or a hold; the
    key of the release before (`lease://events`, every lake's) is read until the lake's own item
    exists, and its epoch carried over: the tables' claims may hold it, and epochs never go back."""
    client = dynamo_lease.client
    other = DynamoLease("eo-delta-log", client, "s3://eo-lake/_sandbox/lake", dynamo_lease.clock)
    same = DynamoLease("eo-delta-log", client, "s3://eo-lake/lake/", dynamo_lease.clock)
    assert dynamo_lease.key("events") == same.key("events") == "lease://events@s3://eo-lake/lake"  # s3a, s3 alike

    old = {LOG_STORE_KEYS["hash"]: {"S": "lease://events"}, LOG_STORE_KEYS["range"]: {"S": "epoch"}}
    expires = repr(dynamo_lease.clock() + 60)
    client.put_item(
        TableName="eo-delta-log",
        Item={**old, "epoch": {"N": "41"}, "holder": {"S": "the stream on h pid 1"}, "expires_at": {"N": expires}},
    )
    assert dynamo_lease.current("events") == 41  # read from the old key until the lake has its own
    assert dynamo_lease.held("events").holder == "the stream on h pid 1"  # a stream of the old release
    assert dynamo_lease.acquire("events", "a reset on h pid 2", 60) == 42
    assert other.acquire("events") == 42  # each lake starts from the old epoch, then goes its own way
    assert dynamo_lease.acquire("events") == 43 and other.current("events") == 42
    assert other.held("events") is None and dynamo_lease.current("events") == 43
    assert client.get_item(TableName="eo-delta-log", Key=old)["Item"]["epoch"] == {"N": "41"}  # left as it was
    assert DynamoLease("eo-delta-log", client, "s3://eo-lake/new-lake").acquire("other-job") == 1


@pytest.mark.unit
def test_a_zombie_with_a_dynamodb_epoch_can_neither_go_on_nor_commit(dynamo_lease, tmp_path):
    """Two job runs on different machines: the paused one wakes up after the new one started."""
    import pyarrow as pa
    from deltalake import write_deltalake

    schema = pa.schema([("k", pa.string())])
    write_deltalake(str(tmp_path / "silver"), schema.empty_table())
    zombie = Fence.start(dynamo_lease, "events")
    commits.append(
        commits.Table(str(tmp_path / "silver")), pa.table({"k": ["a"]}, schema), commits.Txn("events", zombie.epoch, 1)
    )
    successor = Fence.start(dynamo_lease, "events")
    commits.claim(commits.Table(str(tmp_path / "silver")), "events", successor.epoch)
    with pytest.raises(Fenced):
        zombie.check()  # before its next batch
    late = pa.table({"k": ["z"]}, schema)
    with pytest.raises(Fenced):  # or, had it passed the check already, at the commit
        commits.append(commits.Table(str(tmp_path / "silver")), late, commits.Txn("events", zombie.epoch, 2))


@pytest.mark.integration
def test_postgres_lease_every_start_takes_a_new_epoch_and_supersedes_the_last(pg_dsn):
    starts_supersede(PostgresLease(pg_dsn))


@pytest.mark.integration
def test_postgres_lease_concurrent_starts_never_share_an_epoch(pg_dsn):
    concurrent_starts_never_share_an_epoch(PostgresLease(pg_dsn))


@pytest.mark.integration
def test_postgres_lease_holds_are_renewed_released_and_expire_with_the_epoch(pg_dsn):
    clock = Clock()
    holds_follow_the_epoch(PostgresLease(pg_dsn, clock), clock)


@pytest.mark.integration
def test_postgres_lease_adds_the_hold_to_a_lease_table_made_before_it(pg_dsn):
    import psycopg

    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        conn.execute("CREATE TABLE job_lease (job TEXT PRIMARY KEY, epoch BIGINT NOT NULL, started_at TIMESTAMPTZ)")
        conn.execute("INSERT INTO job_lease (job, epoch) VALUES ('events', 4)")
    lease = PostgresLease(pg_dsn)
    assert lease.held("events") is None and lease.acquire("events", "host pid 1", 60) == 5
    assert lease.held("events").epoch == 5


@pytest.mark.unit
def test_versions_order_epochs_before_positions_and_decode_back():
    assert encode_version(2, 0) < encode_version(2, 10**9) < encode_version(3, 0)
    assert decode_version(encode_version(7, 123)) == (7, 123)
    with pytest.raises(ValueError):
        encode_version(1, 1 << 40)


@pytest.mark.unit
def test_the_lease_is_chosen_once_from_the_settings(tmp_path):
    from eo.runtime.config import load_settings
    from eo.runtime.environment import environment

    local = load_settings("local").with_overrides(checkpoint_root=str(tmp_path))
    assert isinstance(environment(local).lease(), FileLease)
    cloud = local.with_overrides(lease="dynamodb", lease_table="eo-delta-log", aws_region="eu-west-1")
    lease = environment(cloud).lease()
    assert isinstance(lease, DynamoLease) and lease.table == "eo-delta-log"
    assert lease.client.meta.region_name == "eu-west-1"


@pytest.mark.unit
def test_a_superseded_instance_reports_whichever_error_stopped_it_as_fenced(tmp_path):
    from streaming.takeover import refused_by

    lease = FileLease(str(tmp_path))
    zombie = Fence.start(lease, "events")
    conflict = RuntimeError("CommitFailedError: Commit failed: a concurrent transactions added new data.")
    state = RuntimeError("[CANNOT_LOAD_STATE_STORE] An error occurred during loading state.")
    assert refused_by(conflict, zombie) == "Delta's conflict checks"
    assert refused_by(state, zombie) is None  # still the newest epoch: a failure of its own
    Fence.start(lease, "events")
    assert refused_by(state, zombie) == "the epoch lease (after RuntimeError)"
    assert refused_by(Fenced("events: epoch 1 was superseded"), zombie) == "the epoch lease"
