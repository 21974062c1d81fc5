"""The lake and the stream's checkpoint agree, or the start is refused in one line naming both
paths and the command that goes on (streaming/lake_match.py, DESIGN invariant 14), on a lake and
checkpoint the real query wrote (a Delta table standing in for the topic)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from eo.runtime import lake_origin
from eo.runtime.cli import NotReady
from producer.generator import ClickstreamGenerator
from streaming import lake_match
from streaming.run import QUERY, _checked_before_spark
from tests.conftest import lake_settings
from tests.helpers import BASE, forget_last_commit, micro_batch, prepare_lake, records, stream

pytestmark = pytest.mark.unit


def _rows(seed: int) -> list[tuple]:
    generator = ClickstreamGenerator(seed=seed, start=BASE, span_hours=2, total_events=200, users=10)
    return records(m.value for m in generator.messages())


@pytest.fixture(scope="module")
def lakes(spark, tmp_path_factory) -> dict:
    """A lake of two batches and its checkpoint, as the job's commits leave them; copies of both
    after the first batch kept as backups."""
    a = lake_settings(tmp_path_factory.mktemp("lake-a"))
    prepare_lake(spark, a)
    rows = _rows(5)
    batch = stream(spark, a, [rows[:100]], micro_batch(a, live=True, log_progress=False))
    backup = tmp_path_factory.mktemp("backup-a")
    shutil.copytree(a.lake_root, backup / "lake")
    shutil.copytree(a.checkpoint_root, backup / "checkpoints")
    stream(spark, a, [rows[100:]], batch)
    return {"a": a, "backup": backup}


def copy_of(settings, tmp_path: Path, lake_from: str | None = None, checkpoints_from: str | None = None):
    """A copy of a lake and a checkpoint root, to damage: by default lake A's own."""
    shutil.copytree(lake_from or settings.lake_root, tmp_path / "lake")
    shutil.copytree(checkpoints_from or settings.checkpoint_root, tmp_path / "checkpoints")
    return settings.with_overrides(lake_root=str(tmp_path / "lake"), checkpoint_root=str(tmp_path / "checkpoints"))


def refusal(settings, new_lake: bool = False) -> str:
    with pytest.raises(NotReady) as refused:
        lake_match.check(settings, new_lake)
    line = str(refused.value)
    assert "\n" not in line
    return line


def names_both(line: str, settings) -> bool:
    return settings.lake_root in line and settings.checkpoint_path(QUERY) in line


def test_a_lake_and_its_own_checkpoint_agree(lakes, tmp_path):
    assert lake_match.check(copy_of(lakes["a"], tmp_path)) is None


def test_a_lost_lake_is_refused_naming_both_paths_and_new_lake(lakes, tmp_path):
    settings = copy_of(lakes["a"], tmp_path)
    shutil.rmtree(settings.lake_root)  # the prefix deleted; the checkpoint survives
    line = refusal(settings)
    assert line.startswith(f"the lake at {settings.lake_root} has no tables, but the stream's checkpoint at ")
    assert names_both(line, settings) and "batches up to 1" in line
    assert "`python -m streaming run --new-lake`" in line and "EO_LAKE_ROOT" in line


def test_a_lost_lake_whose_checkpoint_did_not_commit_its_newest_batch_says_so(lakes, tmp_path):
    settings = copy_of(lakes["a"], tmp_path)
    forget_last_commit(settings)  # a crash after the tables' commits, before the checkpoint's
    shutil.rmtree(settings.lake_root)
    assert "holds batches up to 1 (up to 0 committed): the lake was lost" in refusal(settings)


def test_a_wrong_lake_root_is_refused_like_a_lost_lake(lakes, tmp_path):
    settings = lakes["a"].with_overrides(lake_root=str(tmp_path / "typo"))  # an empty place
    assert refusal(settings).startswith(f"the lake at {tmp_path / 'typo'} has no tables, but the stream's checkpoint")


def test_a_checkpoint_copied_to_a_new_lake_root_is_refused(lakes, tmp_path):
    settings = lakes["a"].with_overrides(lake_root=str(tmp_path / "new-lake"))
    Path(settings.lake_root).mkdir()
    assert "has no tables" in refusal(settings)


def test_a_lake_without_its_bronze_is_refused(lakes, tmp_path):
    settings = copy_of(lakes["a"], tmp_path)
    shutil.rmtree(settings.table_path("bronze"))
    line = refusal(settings)
    assert line.startswith(f"the lake at {settings.lake_root} has no bronze (only ")
    assert names_both(line, settings)


def test_another_lakes_checkpoint_is_refused(lakes, tmp_path):
    settings = copy_of(lakes["a"], tmp_path)
    metadata = Path(settings.checkpoint_path(QUERY), "metadata")  # another lake's: its own stream id
    metadata.write_text('{"id":"0b0b0b0b-1111-2222-3333-444444444444"}\n')
    Path(metadata.parent, ".metadata.crc").unlink(missing_ok=True)
    line = refusal(settings)
    assert line.startswith(f"the stream's checkpoint at {settings.checkpoint_path(QUERY)} belongs to another lake: ")
    assert names_both(line, settings) and "(app id events-0b0b0b0b, batches up to 1)" in line
    assert "EO_CHECKPOINT_ROOT" in line and "`python -m ops.reset`" in line


def test_a_lake_older_than_its_checkpoint_is_refused(lakes, tmp_path):
    backup = lakes["backup"]
    settings = copy_of(lakes["a"], tmp_path, lake_from=str(backup / "lake"))  # the lake restored from a backup
    line = refusal(settings)
    assert line.startswith(f"the lake at {settings.lake_root} is behind the stream's checkpoint at ")
    assert "committed batch 1, but bronze at batch 0" in line and "`python -m ops.reset`" in line


def test_a_checkpoint_older_than_its_lake_is_refused(lakes, tmp_path):
    backup = lakes["backup"]
    settings = copy_of(lakes["a"], tmp_path, checkpoints_from=str(backup / "checkpoints"))
    line = refusal(settings)
    assert line.startswith(f"the stream's checkpoint at {settings.checkpoint_path(QUERY)} is behind the lake at ")
    assert "bronze holds batch 1 of it, the checkpoint's newest is batch 0" in line
    assert "`python -m ops.reset`" in line


def test_a_gold_table_missing_beside_bronze_is_refused(lakes, tmp_path):
    settings = copy_of(lakes["a"], tmp_path)
    shutil.rmtree(settings.table_path("user_sessions"))
    line = refusal(settings)
    assert line.startswith(f"user_sessions missing from the lake at {settings.lake_root}, while the stream's ")
    assert "`python -m batch.rebuild --target main`" in line


def test_a_first_start_begins_a_lake_and_an_emptied_one_is_refused(lakes, tmp_path):
    settings = lake_settings(tmp_path)  # an empty lake, no checkpoint
    assert lake_match.check(settings) == lake_origin.FIRST_START
    lake_origin.record(settings, lake_origin.FIRST_START, "a test", {0: 0, 1: 0})
    line = refusal(settings)  # a beginning recorded, no bronze: the lake was emptied
    assert line.startswith(f"the lake at {settings.lake_root} was begun ")
    assert "by a test (a first start: an empty lake, no checkpoint), reading " in line
    assert "`python -m streaming run --new-lake`" in line
    assert lake_match.check(settings, new_lake=True) == lake_origin.NEW_LAKE


def test_new_lake_is_refused_where_a_lake_is(lakes, tmp_path):
    settings = copy_of(lakes["a"], tmp_path)
    line = refusal(settings, new_lake=True)
    assert line.startswith(f"--new-lake begins a lake where there is none, but the lake at {settings.lake_root} holds")
    assert lake_match.check(settings) is None  # without it, the lake goes on


def test_new_lake_keeps_the_old_checkpoint_aside_and_is_recorded(spark, lakes, tmp_path):
    settings = copy_of(lakes["a"], tmp_path)
    shutil.rmtree(settings.lake_root)
    assert _checked_before_spark(settings, new_lake=True) == lake_origin.NEW_LAKE
    aside = lake_match.keep_aside(spark, settings)
    assert aside and Path(aside, "commits", "1").exists() and not Path(settings.checkpoint_path(QUERY)).exists()
    lake_origin.record(settings, lake_origin.NEW_LAKE, "the stream on here", {0: 3}, f"moved to {aside}")
    (begun,) = lake_origin.begun(settings)
    assert begun["how"] == "`python -m streaming run --new-lake`" and begun["from_offsets"] == {"0": 3}
    assert aside in begun["note"]
    assert "was begun" in refusal(settings)  # bronze not made yet, a beginning recorded: only --new-lake goes on


def partial(settings) -> None:
    """What a failure between a batch's commits leaves (a kill, a full disk): batch 2 planned and
    committed to bronze, quarantine and silver, not to the two gold tables."""
    from eo.runtime import commits
    from eo.runtime.environment import environment
    from eo.runtime.live_tables import app_id_of, generation

    offsets = Path(settings.checkpoint_path(QUERY)) / "offsets"
    shutil.copy(offsets / "1", offsets / "2")
    app_id = app_id_of(generation(settings))
    for name in ("bronze", "quarantine", "silver"):
        table = environment(settings).table(name)
        table.refresh()
        epoch, _ = table.reached(app_id)
        commits.append_files(table, [], commits.Txn(app_id, epoch, 3))


def test_a_partial_batch_is_named_by_status_and_verify_and_the_start_goes_on(lakes, tmp_path):
    from batch.verdict_text import lake_lines
    from eo.runtime.lake_report import lake_report
    from infra.streaming import lake_state

    settings = copy_of(lakes["a"], tmp_path)
    assert (
        lake_report(settings)["tables_line"] == "every live table at batch 1 (the checkpoint's last committed batch: 1)"
    )
    partial(settings)
    assert lake_match.check(settings) is None  # its next start completes it
    report, rows = lake_state(settings)
    assert report["partial"] and report["positions"]["bronze"] == 3 and report["positions"]["user_sessions"] == 2
    (line,) = [value for name, value in rows if name == "tables"]
    from eo.core.tables import GOLD

    behind = ", ".join(f"{table.name} (at batch 1)" for table in GOLD)  # every declared gold table
    assert line.startswith(
        f"a crash left batch 2 partial: committed to bronze, quarantine, silver, not to {behind}. "
        "Readers see batch 2 in the first and not in the others until "
    ), line
    assert f"  live tables: {line}" in lake_lines(report)


def test_status_sees_a_stream_started_by_hand(lakes, tmp_path):
    """No pid file of `make stream-start`: the lease's holder says a stream runs, and since when."""
    from eo.runtime.environment import environment
    from eo.runtime.fencing import HOLD_SECONDS, Fence
    from eo.runtime.live_tables import holder
    from infra import streaming as service

    settings = copy_of(lakes["a"], tmp_path)
    assert not service.running(settings) and service.by_lease(settings) is None
    fence = Fence.start(environment(settings).lease(), QUERY, holder("the stream"), HOLD_SECONDS)
    try:
        assert service.running(settings) and service.by_lease(settings).epoch == fence.epoch
        assert abs(service.started_at(settings) - lake_match_started()) < 2
    finally:
        fence.lease.release(QUERY, fence.epoch)
    assert not service.running(settings)


def lake_match_started() -> float:
    from eo.runtime import live_tables

    return int(live_tables._STARTED)


def test_a_gold_table_declared_since_the_lake_recorded_its_tables_is_created_not_refused(
    spark, lakes, tmp_path, capsys
):
    """docs/extending.md: a table added to a running platform joins on the same checkpoint, with no
    reset. Declared since the last start (never recorded), it is created empty and joins after the
    checkpoint's last batch: neither a deleted table nor a lake behind its checkpoint. A recorded
    table that goes missing is still refused."""
    from eo.core.gold import DECLARED
    from eo.runtime import lake_tables
    from eo.runtime.environment import environment
    from eo.runtime.lake import ensure_tables
    from eo.runtime.lake_report import lake_report
    from eo.runtime.monitoring import last_committed_batch

    settings = copy_of(lakes["a"], tmp_path)
    added = next(name for name in DECLARED if name not in ("campaign_minute_metrics", "user_sessions"))
    present = lake_match.present_tables(settings)
    committed = last_committed_batch(settings.checkpoint_path(QUERY), environment(settings).lake_files)
    assert lake_tables.record(settings, present, present, committed) == []  # there all along
    shutil.rmtree(settings.table_path(added))  # as if declared only now: no table, no record
    (tmp_path / "lake" / "_lake_tables" / f"{added}.json").unlink()

    assert lake_match.check(settings) is None
    said = capsys.readouterr().out
    assert f"[lake] {added} is declared but not in the lake at {settings.lake_root}: this start creates it" in said
    found_before = lake_match.present_tables(settings)
    ensure_tables(spark, settings)  # what the start's prepare does
    assert lake_tables.record(settings, found_before, lake_match.present_tables(settings), committed) == [added]
    assert lake_tables.joined(settings)[added] == committed

    assert lake_match.check(settings) is None  # started again before any batch: not behind
    report = lake_report(settings)
    assert report["partial"] is None and added not in report["positions"], report

    shutil.rmtree(settings.table_path("user_sessions"))  # recorded, then deleted: refused as before
    line = refusal(settings)
    assert line.startswith(f"user_sessions missing from the lake at {settings.lake_root}")


def test_comparable_positions_leave_out_only_a_table_that_joined_after_the_newest_batch():
    from eo.runtime.lake_tables import comparable

    recorded = {"bronze": None, "silver": None, "new": 4}
    assert comparable({"bronze": 5, "silver": 5, "new": 0}, recorded) == {"bronze": 5, "silver": 5}
    # a batch after it joined, missing from it: a partial batch, reported as one
    assert comparable({"bronze": 6, "silver": 6, "new": 0}, recorded) == {"bronze": 6, "silver": 6, "new": 0}
    assert comparable({"bronze": 6, "silver": 6, "new": 6}, recorded)["new"] == 6
    assert comparable({"bronze": 5, "old": 0}, {"bronze": None, "old": None}) == {"bronze": 5, "old": 0}
