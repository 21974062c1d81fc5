"""The fence at commit: a stream instance paused after its batch began (the lease checked, its
files written) commits nothing once a reset took the lease, even when the reset could not claim
the tables under the paused instance's app id (its checkpoint was lost, so nothing names it)."""

from __future__ import annotations

import threading

import pyarrow as pa
import pytest

from eo.core.tables import BRONZE, CAMPAIGN_MINUTE_METRICS, SILVER, USER_SESSIONS
from eo.runtime import commits, hooks, live_tables
from eo.runtime.environment import environment
from eo.runtime.fencing import Fence, Fenced
from eo.runtime.hooks import Hooks
from streaming import takeover
from streaming.microbatch import WRITES
from streaming.run import QUERY
from tests.helpers import event, prepare_lake, records, sorted_rows, stream


class ResetWhilePaused(Hooks):
    """At `point`, the instance pauses; meanwhile a reset takes a new epoch and a new stream
    claims the tables under a new checkpoint's app id (the old app id is never claimed)."""

    def __init__(self, settings, point: str) -> None:
        self.settings, self.at, self.reset_epoch = settings, point, None

    def point(self, name: str) -> None:
        if name != self.at or self.reset_epoch is not None:
            return
        lease = environment(self.settings).lease()
        self.reset_epoch = Fence.start(lease, QUERY).epoch  # the reset
        successor = Fence.start(lease, QUERY)  # the stream after it, on a new checkpoint
        for definition in WRITES:
            commits.claim(environment(self.settings).table(definition.name), "new-checkpoint", successor.epoch)


def zombie_commits(settings, app_id: str) -> list[str]:
    """The live tables' commits made under `app_id` after its first batch."""
    found = []
    for definition in WRITES:
        table = environment(settings).table(definition.name).refresh()
        for entry in table.history():
            if entry.get("app_id") == app_id and entry.get("position") not in (None, "1"):
                found.append(f"{definition.name}@{entry['position']}")
    return found


@pytest.mark.unit
def test_a_zombie_paused_across_a_reset_commits_nothing(spark, lake, monkeypatch):
    prepare_lake(spark, lake)
    batch = stream(spark, lake, [records([event("e1", 1)])])
    paused = ResetWhilePaused(lake, "events.after_files_written")  # its files written, none committed
    monkeypatch.setattr(hooks, "_installed", paused)

    with pytest.raises(Exception) as stopped:
        stream(spark, lake, [records([event("e2", 2, user="u2"), event("e3", 3)])], batch)

    assert paused.reset_epoch is not None, "the pause never happened"
    assert "was superseded by epoch" in str(stopped.value), stopped.value
    assert zombie_commits(lake, batch.app_id) == []  # not one table took the zombie's batch
    assert [r.event_id for r in sorted_rows(spark, lake, SILVER)] == ["e1"]
    assert len(sorted_rows(spark, lake, BRONZE)) == 1


@pytest.mark.unit
def test_every_commit_of_a_txn_checks_its_fence_first(tmp_path):
    """The table alone cannot see an epoch taken under another app id: the Txn's fence does."""
    from deltalake import write_deltalake

    schema = pa.schema([("k", pa.string()), ("n", pa.int64())])
    write_deltalake(str(tmp_path / "t"), schema.empty_table())
    table = commits.Table(str(tmp_path / "t"))
    superseded = False

    def fence() -> None:
        if superseded:
            raise Fenced("events: epoch 1 was superseded by epoch 2; stopping")

    rows = pa.table({"k": ["a"], "n": [1]}, schema)
    assert commits.append(table, rows, commits.Txn("old-app", 1, 1, fence=fence))
    commits.claim(table, "new-app", 2)  # what a reset of a lost checkpoint can claim
    superseded = True
    assert commits.should_commit(table, commits.Txn("old-app", 1, 2))  # the table sees nothing
    for commit in (
        lambda txn: commits.append(table, rows, txn),
        lambda txn: commits.accumulate(table, rows, ["k"], ["n"], txn),
        lambda txn: commits.append_files(table, [], txn),
    ):
        with pytest.raises(Fenced):
            commit(commits.Txn("old-app", 1, 2, fence=fence))
    assert table.refresh().to_pyarrow_table().num_rows == 1


class ClaimedInsideTheWrite(Hooks):
    """At `point` inside a write of the stream (its lease checked, its commit not made), the
    instance pauses; meanwhile the real claim of a reset (`claim_while_stopped`, under the
    checkpoint's app id, not the one the zombie commits with) or of a stream taking over
    (`take_over`, the zombie's own app id) runs."""

    def __init__(self, settings, point: str, by: str, app_id: str) -> None:
        self.settings, self.at, self.by, self.app_id = settings, point, by, app_id
        self.epoch: int | None = None
        self.lock = threading.Lock()

    def point(self, name: str) -> None:
        with self.lock:
            if name != self.at or self.epoch is not None:
                return
            if self.by == "reset":
                self.epoch = live_tables.claim_while_stopped(self.settings, "a reset").epoch
            else:
                self.epoch = takeover.take_over(self.settings, self.app_id)[0].epoch


def late_commits(settings, app_id: str, position: str) -> list[str]:
    """The commits of `app_id` at `position` that landed after a claim of the table."""
    found = []
    for definition in WRITES:
        history = sorted(environment(settings).table(definition.name).refresh().history(), key=lambda e: e["version"])
        claimed = [e["version"] for e in history if e.get("claim") == "1"]
        for entry in history:
            if entry.get("app_id") == app_id and entry.get("position") == position and entry["version"] > claimed[-1]:
                found.append(f"{definition.name}@{entry['version']}")
    return found


@pytest.mark.unit
@pytest.mark.parametrize("by", ["reset", "take-over"])
@pytest.mark.parametrize("point", ["delta.append", "delta.merge", "delta.remove_and_add"])
def test_a_zombie_paused_inside_a_write_commits_nothing_once_claimed(spark, lake, monkeypatch, point, by):
    """The fence at the write itself: the claim lands between the zombie's lease check and its
    commit, and delta-rs refuses the commit (the claim changed the table's metadata)."""
    prepare_lake(spark, lake)
    batch = stream(spark, lake, [records([event("e1", 1)])])
    paused = ClaimedInsideTheWrite(lake, point, by, batch.app_id)
    monkeypatch.setattr(hooks, "_installed", paused)

    with pytest.raises(Exception) as stopped:  # the layer that stops it varies: asserted below
        stream(spark, lake, [records([event("e2", 2, user="u2"), event("e3", 3)])], batch)

    assert paused.epoch is not None, "the pause never happened"
    assert takeover.refused_by(stopped.value, batch.fence) is not None, stopped.value  # said as fenced
    assert late_commits(lake, batch.app_id, "2") == []  # no table took the zombie's batch after a claim
    table = {"delta.merge": CAMPAIGN_MINUTE_METRICS, "delta.remove_and_add": USER_SESSIONS}.get(point)
    if table is not None:  # the paused write's table never took the batch at all
        positions = [e.get("position") for e in environment(lake).table(table.name).refresh().history()]
        assert "2" not in positions, positions
    assert [r.event_id for r in sorted_rows(spark, lake, SILVER)] in (["e1"], ["e1", "e2", "e3"])
