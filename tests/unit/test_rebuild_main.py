"""`rebuild --target main` (and so a reset) writes the live tables by the stream's own commit
protocol, delta-rs's (docs/cloud.md, "One commit protocol"): its tasks write the files, the driver
commits them as the epoch the guard took, and a newer epoch in between refuses the commit."""

from __future__ import annotations

import datetime as dt

import pytest

from batch.rebuild import rebuild
from batch.verify import verify
from eo.core.intervals import Interval
from eo.core.tables import CAMPAIGN_MINUTE_METRICS, QUARANTINE, SILVER, USER_SESSIONS
from eo.runtime import commits
from eo.runtime.cli import NotReady
from eo.runtime.environment import environment
from eo.runtime.fencing import decode_version
from eo.runtime.live_tables import app_id_of, claim_while_stopped, generation
from producer.generator import ClickstreamGenerator
from tests.conftest import lake_settings
from tests.helpers import BASE, prepare_lake, records, sorted_rows, stream

pytestmark = pytest.mark.unit

LIVE = (QUARANTINE, SILVER, CAMPAIGN_MINUTE_METRICS, USER_SESSIONS)


@pytest.fixture
def streamed(spark, tmp_path):
    settings = lake_settings(tmp_path)
    generator = ClickstreamGenerator(seed=9, start=BASE, span_hours=30, total_events=600, users=30)
    prepare_lake(spark, settings)
    stream(spark, settings, [records(m.value for m in generator.messages())])
    return settings


def last_commit(settings, name: str) -> dict:
    return environment(settings).table(name).refresh().history(1)[0]


@pytest.mark.slow  # about a minute: two rebuilds and a verify
def test_a_rebuild_into_main_commits_with_delta_rs_as_the_guards_epoch(spark, streamed):
    before = {t.name: sorted_rows(spark, streamed, t) for t in LIVE}
    fence = claim_while_stopped(streamed, "rebuilding --target main")
    app_id = app_id_of(generation(streamed))
    rebuild(spark, streamed, target="main", fence=fence)
    for table in LIVE:
        assert sorted_rows(spark, streamed, table) == before[table.name], table.name  # the same rows, rewritten
        commit = last_commit(streamed, table.name)
        assert commit["clientVersion"].startswith("delta-rs"), commit  # never Spark's log store
        epoch, _ = decode_version(environment(streamed).table(table.name).refresh().transaction_version(app_id))
        assert epoch == fence.epoch
    silver = environment(streamed).table(SILVER.name).refresh()
    assert silver.metadata().configuration["delta.appendOnly"] == "true"  # lifted for the rebuild only
    assert len(silver.get_add_actions(flatten=True)) >= 1
    rebuild(spark, streamed)  # the rebuild namespace, by Spark, for verification
    assert verify(spark, streamed)["passed"]


def test_an_interval_of_gold_is_replaced_through_delta_rs_and_nothing_outside_it(spark, streamed):
    metrics = environment(streamed).table(CAMPAIGN_MINUTE_METRICS.name)
    start = BASE.replace(tzinfo=dt.UTC) + dt.timedelta(hours=6)
    interval = Interval(start, start + dt.timedelta(hours=6))
    table = metrics.refresh().to_pyarrow_table()
    outside = sorted((r for r in table.to_pylist() if not interval.start <= r["window_start"] < interval.end), key=str)
    # Damage the interval's rows, as a bug in an old stream would have: the rebuild must restore them.
    inside = [r for r in table.to_pylist() if interval.start <= r["window_start"] < interval.end]
    assert inside and outside
    expected = sorted(inside, key=str)
    fence = claim_while_stopped(streamed, "rebuilding --target main")
    commits.replace_range(metrics, table.slice(0, 0), interval.iso_predicate("window_start"), None)
    assert len(metrics.refresh().to_pyarrow_table()) == len(outside)
    rebuild(spark, streamed, interval, target="main", fence=fence)
    rows = metrics.refresh().to_pyarrow_table().to_pylist()
    assert sorted((r for r in rows if interval.start <= r["window_start"] < interval.end), key=str) == expected
    assert sorted((r for r in rows if not interval.start <= r["window_start"] < interval.end), key=str) == outside
    assert last_commit(streamed, CAMPAIGN_MINUTE_METRICS.name)["clientVersion"].startswith("delta-rs")


def test_a_stream_that_starts_during_the_rebuild_refuses_its_commits(spark, streamed):
    fence = claim_while_stopped(streamed, "rebuilding --target main")
    app_id = app_id_of(generation(streamed))
    silver = environment(streamed).table(SILVER.name)
    version = silver.refresh().version()
    commits.claim(silver, app_id, fence.epoch + 1)  # a stream took a newer epoch and claimed silver
    with pytest.raises(NotReady, match="the stream started during the rebuild"):
        rebuild(spark, streamed, target="main", fence=fence)
    assert silver.refresh().version() == version + 1  # the claim only: the rebuild committed nothing


def test_a_claim_between_the_check_and_the_commit_refuses_it_as_fenced(spark, streamed, monkeypatch):
    """The commit itself is the last check: delta-rs refuses a commit whose app id another commit
    of a newer epoch wrote in between, and the rebuild reads that as Fenced, committing nothing."""
    fence = claim_while_stopped(streamed, "rebuilding --target main")
    owner = commits.Txn(app_id_of(generation(streamed)), fence.epoch, 0)
    quarantine = environment(streamed).table(QUARANTINE.name)
    checked = commits._as_owner

    def then_a_stream_claims(table, who, check=None):
        properties = checked(table, who, check)
        commits.claim(environment(streamed).table(table.uri.rsplit("/", 1)[-1]), who.app_id, who.epoch + 1)
        return properties

    monkeypatch.setattr(commits, "_as_owner", then_a_stream_claims)
    version = quarantine.refresh().version()
    with pytest.raises(commits.Fenced, match="during the commit"):
        commits.replace_files(quarantine, [], owner)
    assert quarantine.refresh().version() == version + 1  # the claim only


def test_a_reset_checks_the_lease_right_before_each_commit(spark, streamed):
    """After a reset moves the checkpoint away, a new stream commits under a new app id: the lease,
    checked right before each commit, is what refuses the reset's commits then."""
    from eo.runtime.fencing import Fence, Fenced

    fence = claim_while_stopped(streamed, "a reset")
    silver = environment(streamed).table(SILVER.name)
    version = silver.refresh().version()
    Fence.start(environment(streamed).lease(), "events")  # a stream of a new checkpoint takes over
    with pytest.raises(Fenced):
        commits.replace_files(silver, [], None, append_only=True, check=fence.check)
    assert silver.refresh().version() == version  # nothing committed, the guard never lifted
    assert silver.refresh().metadata().configuration["delta.appendOnly"] == "true"
