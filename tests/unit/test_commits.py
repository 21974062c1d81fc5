"""Exactly-once commits with delta-rs: a replay is skipped, a zombie is refused, atomically."""

import threading

import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake
from deltalake.exceptions import CommitFailedError

from eo.runtime import commits, hooks
from eo.runtime.commits import Table, Txn
from eo.runtime.fencing import Fenced
from eo.runtime.hooks import Hooks

pytestmark = pytest.mark.unit

SCHEMA = pa.schema([("k", pa.string()), ("n", pa.int64())])


def rows(*pairs) -> pa.Table:
    return pa.Table.from_pylist([{"k": k, "n": n} for k, n in pairs], SCHEMA)


@pytest.fixture
def table(tmp_path) -> Table:
    write_deltalake(str(tmp_path / "t"), SCHEMA.empty_table())
    return Table(str(tmp_path / "t"))


def content(table: Table) -> list[tuple]:
    return sorted((r["k"], r["n"]) for r in DeltaTable(table.uri).to_pyarrow_table().to_pylist())


def test_a_replayed_batch_is_skipped(table):
    assert commits.append(table, rows(("a", 1)), Txn("job", 1, 1))
    assert not commits.append(table, rows(("a", 1)), Txn("job", 1, 1))  # the same batch again
    assert commits.append(table, rows(("b", 2)), Txn("job", 1, 2))
    assert content(table) == [("a", 1), ("b", 2)]


def test_a_new_epoch_keeps_the_position_and_skips_what_the_old_one_committed(table):
    commits.append(table, rows(("a", 1)), Txn("job", 1, 1))
    assert commits.claim(table, "job", 2) == 1  # a new instance: batch 1 is done already
    assert not commits.append(table, rows(("a", 1)), Txn("job", 2, 1))  # its replay of batch 1
    assert commits.append(table, rows(("b", 2)), Txn("job", 2, 2))
    assert content(table) == [("a", 1), ("b", 2)]


def test_a_zombie_cannot_commit_after_a_newer_epoch_claimed_the_table(table):
    commits.append(table, rows(("a", 1)), Txn("job", 1, 1))
    commits.claim(table, "job", 2)
    with pytest.raises(Fenced, match="epoch 1 was superseded by epoch 2"):
        commits.append(table, rows(("z", 9)), Txn("job", 1, 2))
    assert content(table) == [("a", 1)]


class ClaimAt(Hooks):
    """At the named point inside a write (the lease checked, nothing committed), a newer epoch
    claims the table."""

    def __init__(self, table: Table, at: str, app_id: str | None) -> None:
        self.table, self.at, self.app_id, self.claimed = table, at, app_id, False

    def point(self, name: str) -> None:
        if name == self.at and not self.claimed:
            self.claimed = True
            commits.claim(Table(self.table.uri), self.app_id, 2)


WRITES = {
    "delta.append": lambda table: commits.append(table, rows(("z", 9)), Txn("job", 1, 2)),
    "delta.merge": lambda table: commits.accumulate(table, rows(("a", 9)), ["k"], ["n"], Txn("job", 1, 2)),
    "delta.append ": lambda table: commits.append_files(table, [], Txn("job", 1, 2)),  # files the tasks wrote
}


@pytest.mark.parametrize("claimed_for", ["job", "another-job", None])
@pytest.mark.parametrize("point", list(WRITES))
def test_a_zombie_that_read_the_table_before_the_claim_is_refused_at_commit(table, monkeypatch, point, claimed_for):
    """Check and commit are atomic: a claim that lands in between makes the commit fail, whatever
    app id it claims for (a reset of a lost checkpoint names none): it changes the table's metadata."""
    commits.append(table, rows(("a", 1)), Txn("job", 1, 1))
    claim = ClaimAt(table, point.strip(), claimed_for)
    monkeypatch.setattr(hooks, "_installed", claim)
    with pytest.raises(CommitFailedError, match="Metadata changed since last commit"):
        WRITES[point](Table(table.uri))
    assert claim.claimed
    assert content(table) == [("a", 1)]
    assert [e["operation"] for e in DeltaTable(table.uri).history()][:2] == ["SET TBLPROPERTIES", "WRITE"]


def test_accumulate_adds_once_per_batch(table):
    key, values = ["k"], ["n"]
    commits.accumulate(table, rows(("a", 1), ("b", 2)), key, values, Txn("job", 1, 1))
    commits.accumulate(table, rows(("a", 10)), key, values, Txn("job", 1, 2))
    commits.accumulate(table, rows(("a", 10)), key, values, Txn("job", 1, 2))  # replay: skipped
    assert content(table) == [("a", 11), ("b", 2)]


def test_concurrent_writers_of_one_app_id_never_both_commit_a_position(table):
    """One writer commits the position; every other one either finds it committed (a replay,
    skipped) or is refused by delta-rs's conflict check on the app id's transaction."""
    outcomes: dict[int, object] = {}
    gate = threading.Barrier(4)

    def write(n: int) -> None:
        gate.wait()
        try:
            outcomes[n] = commits.append(Table(table.uri), rows((f"w{n}", n)), Txn("job", 1, 1))
        except Exception as exc:  # noqa: BLE001 - asserted on below: only a conflict may lose the race
            outcomes[n] = exc

    threads = [threading.Thread(target=write, args=(n,), daemon=True) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not any(t.is_alive() for t in threads), "a writer hung"
    assert sorted(outcomes) == [0, 1, 2, 3], outcomes
    winners = [n for n, outcome in outcomes.items() if outcome is True]
    assert len(winners) == 1, outcomes
    for n, outcome in outcomes.items():
        if n in winners or outcome is False:
            continue
        assert isinstance(outcome, CommitFailedError), f"writer {n}: {outcome!r}"
        assert "concurrent transaction" in str(outcome).lower(), f"writer {n}: {outcome!r}"
    assert content(table) == [(f"w{winners[0]}", winners[0])]


def test_an_empty_table_is_known_from_its_log(table, tmp_path):
    assert table.surely_empty()  # created without a file
    commits.append(table, rows(("a", 1)), Txn("job", 1, 1))
    assert not table.surely_empty()
    dt = DeltaTable(table.uri)
    dt.delete()  # every row gone: the log removes the file
    assert table.surely_empty()
    # A file of no rows still counts none.
    write_deltalake(str(tmp_path / "e"), SCHEMA.empty_table())
    write_deltalake(str(tmp_path / "e"), SCHEMA.empty_table(), mode="append")
    assert Table(str(tmp_path / "e")).surely_empty()


def test_a_file_without_statistics_leaves_emptiness_unknown(table, monkeypatch):
    """A log whose file counts no records (a writer that keeps no statistics): never said empty."""

    class Log:
        def get_add_actions(self, flatten):
            return pa.table({"path": ["part-0.parquet"], "num_records": pa.array([None], pa.int64())})

    monkeypatch.setattr(table, "refresh", lambda: Log())
    assert not table.surely_empty()
