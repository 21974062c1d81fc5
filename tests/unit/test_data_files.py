"""Files written by a task, committed by the driver as metadata (eo/runtime/data_files.py,
commits.append_files): the table reads as if delta-rs had written the rows itself."""

import datetime as dt
import decimal
import json

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from deltalake import DeltaTable, write_deltalake
from pyarrow import fs

from eo.runtime import commits, data_files
from eo.runtime.fencing import Fenced

pytestmark = pytest.mark.unit

UTC = dt.UTC
SCHEMA = pa.schema(
    [
        ("event_id", pa.string()),
        ("event_time", pa.timestamp("us", tz="UTC")),
        ("event_date", pa.date32()),
        ("price", pa.decimal128(10, 2)),
        ("value", pa.binary()),
    ]
)
ROWS = pa.table(
    {
        "event_id": ["a", "b", "c" * 40, "d"],
        "event_time": [dt.datetime(2026, 11, 5, 1, tzinfo=UTC), dt.datetime(2026, 11, 6, 2, tzinfo=UTC), None, None],
        "event_date": [dt.date(2026, 11, 5), dt.date(2026, 11, 6), None, dt.date(2026, 11, 5)],
        "price": [decimal.Decimal("1.50"), None, decimal.Decimal("2.25"), decimal.Decimal("0.10")],
        "value": [b"x", b"y", b"z", None],
    },
    schema=SCHEMA,
)


def empty_table(path) -> commits.Table:
    write_deltalake(str(path), ROWS.slice(0, 0), partition_by=["event_date"])
    return commits.Table(str(path))


def write(path, rows=ROWS, tag="1-00000-7") -> list:
    return data_files.add_actions(
        data_files.write_files(fs.SubTreeFileSystem(str(path), fs.LocalFileSystem()), rows, ["event_date"], tag)
    )


def stats_by_partition(table: DeltaTable) -> dict:
    rows = pa.table(table.get_add_actions(flatten=True)).to_pylist()
    keep = (
        "num_records",
        "min.event_time",
        "max.event_time",
        "min.price",
        "max.price",
        "null_count.price",
    )
    return {str(r["partition.event_date"]): {k: r[k] for k in keep} for r in rows}


def test_committed_files_read_as_delta_rs_own_writes_with_the_same_statistics(tmp_path):
    write_deltalake(str(tmp_path / "reference"), ROWS, partition_by=["event_date"])
    table = empty_table(tmp_path / "tasks")
    assert commits.append_files(table, write(tmp_path / "tasks"), commits.Txn("app", 0, 1))
    ours, reference = DeltaTable(str(tmp_path / "tasks")), DeltaTable(str(tmp_path / "reference"))
    assert (
        pa.table(ours.to_pyarrow_table())
        .sort_by("event_id")
        .equals(pa.table(reference.to_pyarrow_table()).sort_by("event_id"))
    )
    assert stats_by_partition(ours) == stats_by_partition(reference)  # files skipped alike
    assert sorted(ours.partitions(), key=str) == sorted(reference.partitions(), key=str)
    flat = pa.table(ours.get_add_actions(flatten=True)).to_pylist()
    (cut,) = [r for r in flat if r["partition.event_date"] is None]
    assert cut["min.event_id"] == "c" * 32 and cut["max.event_id"] is None  # a cut string is no upper bound


def test_a_replay_commits_nothing_and_files_no_commit_names_are_never_read(tmp_path):
    table = empty_table(tmp_path / "t")
    first = write(tmp_path / "t")
    assert commits.append_files(table, first, commits.Txn("app", 0, 1))
    # The batch again after a crash: its files are written anew, the commit is skipped.
    assert not commits.append_files(table, write(tmp_path / "t", tag="1-00000-9"), commits.Txn("app", 0, 1))
    # A killed batch: files on disk, no commit.
    write(tmp_path / "t", tag="2-00000-11")
    assert DeltaTable(str(tmp_path / "t")).to_pyarrow_table().num_rows == ROWS.num_rows
    assert len(list((tmp_path / "t").rglob("*.parquet"))) == 3 * len(first)
    assert DeltaTable(str(tmp_path / "t")).transaction_version("app") == commits.Txn("app", 0, 1).version


def test_an_empty_batch_still_records_its_position_and_a_newer_epoch_fences(tmp_path):
    table = empty_table(tmp_path / "t")
    assert commits.append_files(table, [], commits.Txn("app", 0, 1))
    assert DeltaTable(str(tmp_path / "t")).transaction_version("app") == commits.Txn("app", 0, 1).version
    assert commits.append_files(table, write(tmp_path / "t"), commits.Txn("app", 1, 2))
    with pytest.raises(Fenced):
        commits.append_files(table, write(tmp_path / "t"), commits.Txn("app", 0, 3))


def test_only_dates_partition_files_written_by_tasks(tmp_path):
    rows = pa.table({"k": ["a b/c"], "v": [1]})
    with pytest.raises(ValueError, match="only dates"):
        data_files.write_files(fs.SubTreeFileSystem(str(tmp_path), fs.LocalFileSystem()), rows, ["k"], "t")


def by_first_letter(values: pa.ChunkedArray, count: int) -> np.ndarray:
    return np.array([ord(v[0]) % count for v in values.to_pylist()])


def test_files_laid_out_by_bucket_hold_one_bucket_each_and_say_which(tmp_path):
    """Buckets: a file per partition and bucket, each noting its bucket, together the rows and
    counts a plain write gives; a reader of another count, or of a plain file, learns nothing."""
    rows = pa.concat_tables([ROWS] * 5)
    buckets = data_files.Buckets("event_id", 2, by_first_letter)
    folder = fs.SubTreeFileSystem(str(tmp_path), fs.LocalFileSystem())
    laid_out = data_files.write_files(folder, rows, ["event_date"], "b", buckets)
    plain = data_files.write_files(folder, rows, ["event_date"], "p")
    held = {}
    for action in laid_out:
        table = pq.read_table(tmp_path / action["path"])
        noted = pq.read_metadata(tmp_path / action["path"]).metadata
        assert set(by_first_letter(table["event_id"], 2)) == {buckets.bucket_of(noted)}
        assert json.loads(action["stats"])["numRecords"] == table.num_rows == action["rows"]
        assert data_files.Buckets("event_id", 3, by_first_letter).bucket_of(noted) is None
        held.setdefault(action["partition_values"], []).extend(table["event_id"].to_pylist())
    assert len(laid_out) == 4  # 2026-11-05: buckets 1 (a) and 0 (d); 2026-11-06: 0 (b); no date: 1 (c...)
    for action in plain:
        whole = pq.read_table(tmp_path / action["path"])["event_id"].to_pylist()
        assert sorted(held[action["partition_values"]]) == sorted(whole)
        assert buckets.bucket_of(pq.read_metadata(tmp_path / action["path"]).metadata) is None


def test_rows_known_to_be_one_buckets_are_written_with_its_note_unhashed(tmp_path):
    """The task that owns a bucket writes its rows as that bucket's files, a file per partition,
    without the layout's function being called."""

    def never(values, count):
        raise AssertionError("the rows were hashed again")

    buckets = data_files.Buckets("event_id", 4, never)
    folder = fs.SubTreeFileSystem(str(tmp_path), fs.LocalFileSystem())
    written = data_files.write_files(folder, ROWS, ["event_date"], "o", buckets, bucket=3)
    assert len(written) == len({r["event_date"] for r in ROWS.to_pylist()})
    for action in written:
        assert buckets.bucket_of(pq.read_metadata(tmp_path / action["path"]).metadata) == 3
    assert sum(pq.read_table(tmp_path / a["path"]).num_rows for a in written) == ROWS.num_rows


def keyed_sessions(rows: int, keys: int, distinct: int) -> pa.Table:
    """Rows each with a list of `keys` texts, drawn from `distinct` of ~30 bytes each."""
    items = np.array([f"campaign-{i:06d}|click|2026-11-29T{i % 24:02d}:00" for i in range(distinct)], dtype=object)
    picked = items[np.random.default_rng(0).integers(0, distinct, rows * keys)]
    offsets = pa.array(np.arange(0, rows * keys + 1, keys, dtype=np.int32))
    lists = pa.ListArray.from_arrays(offsets, pa.array(picked))
    return pa.table({"user_id": [f"u{i}" for i in range(rows)], "keys": lists})


def test_a_lists_items_stay_in_a_dictionary_past_parquets_default_size_and_carry_no_statistics(tmp_path):
    """~40,000 distinct items (1.3 MB of text) overflow Parquet's 1 MB dictionary: written plain,
    the file is several times larger. The tasks' writer keeps them in the dictionary, and writes
    no min and max of a list's items (Delta keeps none)."""
    rows = keyed_sessions(4_000, 100, 40_000)
    actions = data_files.write_files(fs.SubTreeFileSystem(str(tmp_path), fs.LocalFileSystem()), rows, [], "t")
    pq.write_table(rows, tmp_path / "default.parquet")
    assert actions[0]["size"] * 2 < (tmp_path / "default.parquet").stat().st_size
    chunks = pq.ParquetFile(tmp_path / actions[0]["path"]).metadata.row_group(0)
    stats = {chunks.column(i).path_in_schema: chunks.column(i).is_stats_set for i in range(chunks.num_columns)}
    assert stats == {"user_id": True, "keys.list.element": False}
    assert pq.read_table(tmp_path / actions[0]["path"]).equals(rows)


def test_unique_texts_without_lists_keep_parquets_default_dictionary(tmp_path):
    """Event ids are all distinct: a dictionary past 1 MB would be wasted work, so tables without
    lists keep the default (and the file is no larger than Parquet's own)."""
    ids = pa.table({"event_id": [f"{i:036d}" for i in range(60_000)]})
    actions = data_files.write_files(fs.SubTreeFileSystem(str(tmp_path), fs.LocalFileSystem()), ids, [], "t")
    pq.write_table(ids, tmp_path / "default.parquet")
    assert actions[0]["size"] <= (tmp_path / "default.parquet").stat().st_size * 1.01
