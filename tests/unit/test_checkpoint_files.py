"""A damaged checkpoint is named before Spark reads it: the file, and what is wrong with it
(streaming/checkpoint_files.py), on checkpoints the real query wrote, in both of the state
store's checkpoint formats the pinned Spark writes (1, the default, and 2)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from eo.core.tables import SEED, SILVER
from eo.runtime import lake
from eo.runtime.cli import NotReady
from eo.runtime.storage import LocalFiles
from ops.reset import write_seed
from producer.generator import ClickstreamGenerator
from streaming.checkpoint_files import Damaged, check, state_failure
from streaming.run import QUERY, _seeding
from tests.conftest import lake_settings, restore_conf
from tests.helpers import BASE, prepare_lake, records, stream

pytestmark = pytest.mark.unit


@pytest.fixture(scope="module")
def streamed(spark, tmp_path_factory):
    """A lake and checkpoint of three committed batches, kept pristine: each test damages a copy."""
    settings = lake_settings(tmp_path_factory.mktemp("checkpoint"))
    prepare_lake(spark, settings)
    generator = ClickstreamGenerator(seed=4, start=BASE, span_hours=2, total_events=300, users=10)
    rows = records(m.value for m in generator.messages())
    stream(spark, settings, [rows[:100], rows[100:200], rows[200:]])
    return settings


FORMAT = "spark.sql.streaming.stateStore.checkpointFormatVersion"
CHANGELOG = "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled"


def _streamed_with(spark, tmp_path_factory, name: str, key: str, value: str, seed: int, events: int) -> Path:
    """The checkpoint of `events` events streamed in batches of 30 with the session's `key` set to
    `value` meanwhile (set back after, restore_conf), kept pristine."""
    before = dict(spark.conf.getAll)
    spark.conf.set(key, value)
    try:
        settings = lake_settings(tmp_path_factory.mktemp(name))
        prepare_lake(spark, settings)
        generator = ClickstreamGenerator(seed=seed, start=BASE, span_hours=2, total_events=events, users=5)
        rows = records(m.value for m in generator.messages())
        stream(spark, settings, [rows[start : start + 30] for start in range(0, len(rows), 30)])
    finally:
        restore_conf(spark, before)
    return Path(settings.checkpoint_path(QUERY))


@pytest.fixture(scope="module")
def streamed_v2(spark, tmp_path_factory):
    """A checkpoint of three committed batches in the state store's checkpoint format 2, whose
    files carry a unique id (`<version>_<id>.changelog`), kept pristine."""
    return _streamed_with(spark, tmp_path_factory, "checkpoint_v2", FORMAT, "2", seed=5, events=90)


@pytest.fixture(scope="module")
def streamed_snapshots(spark, tmp_path_factory):
    """A checkpoint whose state has snapshots (a zip and its SST files): with the changelog off,
    each commit uploads one. With it on, as deployed, the maintenance thread uploads them every
    few seconds, and a run of short queries may end before it has (the test then had no snapshot
    to damage and was skipped, depending on the load)."""
    return _streamed_with(spark, tmp_path_factory, "checkpoint_snapshots", CHANGELOG, "false", seed=6, events=60)


def _copy(checkpoint: Path, tmp_path: Path) -> Path:
    """A copy of a written checkpoint, to damage."""
    copy = tmp_path / "events"
    shutil.copytree(checkpoint, copy)
    return copy


@pytest.fixture
def root_v2(streamed_v2, tmp_path) -> Path:
    return _copy(streamed_v2, tmp_path)


@pytest.fixture
def written(streamed) -> Path:
    return Path(streamed.checkpoint_path(QUERY))


@pytest.fixture
def root(written, tmp_path) -> Path:
    return _copy(written, tmp_path)


def damage(root: Path) -> str:
    with pytest.raises(Damaged) as found:
        check(LocalFiles(), str(root))
    return str(found.value)


def newest(folder: Path, suffix: str = "") -> Path:
    return max((p for p in folder.iterdir() if p.name.removesuffix(suffix).isdigit() and p.name.endswith(suffix)),
               key=lambda p: int(p.name.removesuffix(suffix)))  # fmt: skip


def partition(root: Path) -> Path:
    return root / "state" / "0" / "1"


def every_changelog_needed(root: Path) -> Path:
    """The partition with its snapshots gone, so that a restart reads every changelog (whether the
    state's maintenance uploaded a snapshot in time depends on the machine's load); its folder."""
    for snapshot in partition(root).glob("*.zip"):
        snapshot.unlink()
    return partition(root)


def test_a_whole_checkpoint_passes(root):
    check(LocalFiles(), str(root))


def test_no_checkpoint_at_all_has_nothing_to_check(tmp_path):
    check(LocalFiles(), str(tmp_path / "nothing"))


def test_a_garbled_offset_file_is_named(root):
    target = newest(root / "offsets")
    target.write_text('v1\n{"batchWatermarkMs":0,garbled\n')
    (root / "offsets" / f".{target.name}.crc").unlink()
    assert damage(root).startswith(f"{target}: not readable JSON")


def test_a_file_that_disagrees_with_its_checksum_is_named(root):
    target = newest(root / "commits")
    target.write_text('v1\n{"nextBatchWatermarkMs":1}\n')  # well formed, but not what was written
    assert damage(root) == f"{target}: its bytes do not match its checksum file (.{target.name}.crc)"


def test_a_missing_state_folder_is_named(root):
    shutil.rmtree(root / "state")
    assert damage(root).startswith(f"{root / 'state'}: missing, though batch ")


def test_a_garbled_changelog_without_its_checksum_is_named_by_its_framing(root):
    target = newest(every_changelog_needed(root), ".changelog")
    target.write_bytes(b"garbage")
    (partition(root) / f".{target.name}.crc").unlink()
    assert damage(root) == f"{target}: an LZ4 block is damaged or cut short at byte 0"


def test_a_changelog_cut_short_is_named(root):
    target = newest(every_changelog_needed(root), ".changelog")
    target.write_bytes(target.read_bytes()[:-5])
    (partition(root) / f".{target.name}.crc").unlink()
    assert damage(root).startswith(f"{target}: ")


def test_a_missing_changelog_the_restart_needs_is_named(root):
    target = every_changelog_needed(root) / "1.changelog"
    target.unlink()
    assert damage(root) == f"{target}: missing"


def test_a_snapshots_missing_sst_file_is_named(streamed_snapshots, tmp_path):
    root = _copy(streamed_snapshots, tmp_path)
    check(LocalFiles(), str(root))  # whole, it passes
    assert sorted(partition(root).glob("*.zip")), "no snapshot in this checkpoint"
    for sst in (partition(root) / "SSTs").iterdir():
        sst.unlink()
    assert "SSTs/" in damage(root) and ": missing (named by " in damage(root)


def test_an_empty_metadata_file_is_named(root):
    (root / "metadata").write_text("")
    (root / ".metadata.crc").unlink(missing_ok=True)
    assert damage(root).startswith(f"{root / 'metadata'}: not readable JSON")


def committed_id(root: Path, partition: int = 1) -> tuple[int, str]:
    """The state version the newest commit names for operator 0's `partition`, and its id."""
    commit = newest(root / "commits")
    entry = json.loads(commit.read_text().splitlines()[1])
    return int(commit.name) + 1, entry["stateUniqueIds"]["0"][partition][0]


def test_a_whole_format_2_checkpoint_passes(root_v2):
    version, unique_id = committed_id(root_v2)
    assert (partition(root_v2) / f"{version}_{unique_id}.changelog").exists()  # it is format 2
    assert not list(partition(root_v2).glob("[0-9].changelog"))
    check(LocalFiles(), str(root_v2))


def test_format_2_reads_only_the_ids_the_commit_names(root_v2):
    """A retried batch leaves files of the same version under another id: never read."""
    version, _ = committed_id(root_v2)
    (partition(root_v2) / f"{version}_00000000-0000-0000-0000-000000000000.changelog").write_bytes(b"garbage")
    (partition(root_v2) / f"{version}_00000000-0000-0000-0000-000000000000.zip").write_bytes(b"garbage")
    check(LocalFiles(), str(root_v2))


def test_format_2_a_missing_changelog_the_commit_names_is_named(root_v2):
    version, unique_id = committed_id(root_v2)
    target = every_changelog_needed(root_v2) / f"{version}_{unique_id}.changelog"
    target.unlink()
    assert damage(root_v2) == f"{target}: missing"


def test_format_2_a_missing_changelog_of_the_lineage_is_named(root_v2):
    (target,) = every_changelog_needed(root_v2).glob("1_*.changelog")
    target.unlink()
    assert damage(root_v2) == f"{target}: missing"


def test_format_2_a_garbled_changelog_is_named_by_its_framing(root_v2):
    version, unique_id = committed_id(root_v2)
    target = every_changelog_needed(root_v2) / f"{version}_{unique_id}.changelog"
    target.write_bytes(b"garbage")
    (partition(root_v2) / f".{target.name}.crc").unlink()
    assert damage(root_v2) == f"{target}: an LZ4 block is damaged or cut short at byte 0"


def test_format_2_a_commit_without_the_state_ids_is_named(root_v2):
    commit = newest(root_v2 / "commits")
    commit.write_text('v2\n{"nextBatchWatermarkMs":0,"stateUniqueIds":{}}\n')
    (root_v2 / "commits" / f".{commit.name}.crc").unlink()
    assert damage(root_v2) == f"{commit}: names no state id of each of operator 0's 2 partitions"


def test_sparks_state_failures_are_recognised():
    assert state_failure(RuntimeError("[CANNOT_LOAD_STATE_STORE.UNCATEGORIZED] An error occurred")) == (
        "CANNOT_LOAD_STATE_STORE"
    )
    assert state_failure(RuntimeError("[DELTA_CONCURRENT_APPEND] another writer")) is None


def test_a_new_checkpoint_on_a_lake_with_events_is_refused_in_one_line(spark, streamed, tmp_path):
    elsewhere = streamed.with_overrides(checkpoint_root=str(tmp_path / "wrong"))  # lost, or the wrong place
    with pytest.raises(NotReady) as refused:
        _seeding(spark, elsewhere)
    line = str(refused.value)
    assert line.startswith(f"the stream's checkpoint at {elsewhere.checkpoint_path(QUERY)} has no batch, but silver ")
    assert "`python -m ops.reset`" in line and "EO_CHECKPOINT_ROOT" in line and "\n" not in line


def test_a_current_seed_is_read_and_a_stale_one_refused(spark, streamed, tmp_path):
    settings = streamed.with_overrides(checkpoint_root=str(tmp_path / "after-reset"))
    seeded = write_seed(spark, settings)  # as a reset leaves it
    assert _seeding(spark, settings) is True
    silver = lake.read(spark, settings, SILVER)
    lake.overwrite(silver.limit(seeded - 3).select(*SEED.columns), settings.table_path(SEED.name))  # an old seed
    with pytest.raises(NotReady, match=rf"silver holds {seeded:,} events \(the seed holds {seeded - 3:,} ids"):
        _seeding(spark, settings)


def test_a_first_start_on_an_empty_lake_seeds_nothing(spark, tmp_path):
    settings = lake_settings(tmp_path)
    prepare_lake(spark, settings)
    assert _seeding(spark, settings) is False
