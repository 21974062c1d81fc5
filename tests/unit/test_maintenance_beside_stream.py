"""Maintenance and the stream commit to the same tables at once (delta-rs, no Spark): a commit of
either that the other's landed before is made again on the new version, never failed, and a
partition the stream keeps rewriting is left for the next run, said so; a table's trouble skips
neither VACUUM nor the other tables."""

from __future__ import annotations

import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake

from batch import maintenance
from eo.core.tables import TableDef
from eo.runtime import commits

pytestmark = pytest.mark.unit

METRICS = TableDef(name="m", ddl="k STRING, d STRING, n BIGINT", key=("k",), partition_by=("d",))


def rows(*pairs) -> pa.Table:
    return pa.table({"k": [k for k, _ in pairs], "d": ["2026-12-01"] * len(pairs), "n": [n for _, n in pairs]})


@pytest.fixture
def table(tmp_path) -> commits.Table:
    uri = str(tmp_path / "m")
    for pair in (("a", 1), ("b", 2), ("c", 3)):  # three small files in one partition
        write_deltalake(uri, rows(pair), mode="append", partition_by=["d"])
    return commits.Table(uri)


def stored(table) -> dict[str, int]:
    return {r["k"]: r["n"] for r in table.refresh().to_pyarrow_table().to_pylist()}


def test_the_streams_merge_is_made_again_after_a_compaction_landed_first(table, monkeypatch):
    build = commits._merge
    compacted = []

    def compaction_lands_first(target, *args):
        merger = build(target, *args)  # built on the version the batch refreshed
        if not compacted:
            compacted.append(DeltaTable(target.uri).optimize.compact())  # weekly maintenance, meanwhile
        return merger

    monkeypatch.setattr(commits, "_merge", compaction_lands_first)
    assert commits.accumulate(table, rows(("a", 10), ("z", 5)), ["k"], ["n"], commits.Txn("stream", 1, 7))
    assert compacted and compacted[0]["numFilesRemoved"] == 3
    assert stored(table) == {"a": 11, "b": 2, "c": 3, "z": 5}  # added once
    assert [h["operation"] for h in table.current.history(2)] == ["MERGE", "OPTIMIZE"]
    assert table.reached("stream") == (1, 7)


def test_a_merge_refused_after_another_writer_is_not_made_again(table, monkeypatch):
    from deltalake.exceptions import CommitFailedError

    build = commits._merge
    written = []

    def another_writer_first(target, *args):
        merger = build(target, *args)
        if not written:  # not maintenance: a write that changed rows
            written.append(write_deltalake(target.uri, rows(("a", 100)), mode="overwrite", partition_by=["d"]))
        return merger

    monkeypatch.setattr(commits, "_merge", another_writer_first)
    with pytest.raises(CommitFailedError):
        commits.accumulate(table, rows(("a", 10)), ["k"], ["n"], commits.Txn("stream", 1, 7))
    assert stored(table) == {"a": 100}


def test_a_compaction_refused_by_the_streams_commit_is_tried_again(table, monkeypatch):
    compact = maintenance._compact
    calls = []

    def stream_commits_first(target, definition, partition):
        current = target.refresh()
        if not calls:  # the stream's batch rewrites the partition's files while OPTIMIZE reads them
            commits.accumulate(commits.Table(target.uri), rows(("b", 1)), ["k"], ["n"], commits.Txn("s", 1, 1))
        calls.append(partition)
        return compact(target, definition, partition) if len(calls) > 1 else current.optimize.compact()

    monkeypatch.setattr(maintenance, "_compact", stream_commits_first)
    monkeypatch.setattr(maintenance, "BACKOFF_SECONDS", 0.0)
    done = maintenance.optimize_table(table, METRICS)
    assert len(calls) == 2 and done.compacted == 1 and not done.left, done
    assert stored(table) == {"a": 1, "b": 3, "c": 3}


def test_a_partition_the_stream_keeps_rewriting_is_left_and_said(table, monkeypatch, capsys):
    from deltalake.exceptions import CommitFailedError

    def always_refused(target, definition, partition):
        raise CommitFailedError("a concurrent transaction deleted data this operation read")

    monkeypatch.setattr(maintenance, "_compact", always_refused)
    monkeypatch.setattr(maintenance, "BACKOFF_SECONDS", 0.0)
    done = maintenance.optimize_table(table, METRICS)
    assert done.left == ["d=2026-12-01"] and done.compacted == 0
    assert "1 left for the next run (the stream rewrote them 5 times while compacting: d=2026-12-01)" in done.line("m")


def test_one_tables_failure_skips_neither_vacuum_nor_the_other_tables(lake, monkeypatch, capsys):
    from eo.core.tables import ALL

    for definition in ALL.values():  # every table there, a file each
        write_deltalake(lake.table_path(definition.name), pa.table({"x": [1]}))

    def broken(target, definition, done=None):
        if definition.name == "silver":
            raise OSError("No space left on device")
        return maintenance.Done()

    vacuumed = []
    monkeypatch.setattr(maintenance, "optimize_table", broken)
    monkeypatch.setattr(maintenance, "vacuum_table", lambda target, hours: vacuumed.append(target.uri) or 0)
    report = maintenance.maintain(lake, optimize=True, retention_hours=168)
    assert report["silver"].failed == ["optimize: OSError: No space left on device"]
    assert len(vacuumed) == len(ALL)  # silver's included
    printed = capsys.readouterr().out
    assert "[maintenance] silver: " in printed and "FAILED: optimize: OSError" in printed
    assert all(f"[maintenance] {name}: " in printed for name in ALL)
