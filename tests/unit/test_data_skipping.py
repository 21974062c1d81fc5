"""Data skipping never drops a row: every live table of a stream run, read by Spark under predicates
on each column its files have statistics for, gives the same rows with Delta's data skipping on and
off. The statistics of the files the tasks write come from eo/runtime/data_files.py `file_stats`
(bronze, silver, gold), the others' from delta-rs (quarantine, source_gaps); a min or max that lies
makes Spark skip a file holding matching rows, silently.

The run is chosen for its statistics: three micro-batches and a replay (several files a table,
sessions and minute metrics rewritten), three days (partitions), prices at DECIMAL(10,2)'s bounds
(bounds kept as doubles, rounded outwards), ids over the 32 characters a string statistic keeps
(a cut max is no bound; a cut min is a prefix), nulls where the reading allows them, and
quarantined records."""

from __future__ import annotations

from contextlib import contextmanager
from decimal import Decimal
from functools import reduce

import pyarrow as pa
import pytest
from deltalake import DeltaTable
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from eo.core.source_gaps import Gap
from eo.core.tables import LIVE
from eo.runtime import source_gaps
from eo.runtime.data_files import STRING_STATS
from tests.helpers import PRODUCED_AT, event, forget_last_commit, prepare_lake, records, resume, stream

pytestmark = pytest.mark.unit

SKIPPING = "spark.databricks.delta.stats.skipping"  # Delta's DeltaSQLConf.DELTA_STATS_SKIPPING

# Ids over the 32 characters kept (ids may hold 64, docs/bad-input.md), sharing their first 32.
PREFIX = "user-0123456789-abcdefghijklmnop"
assert len(PREFIX) == STRING_STATS
ALPHA, BETA, ZULU = f"{PREFIX}-alpha", f"{PREFIX}-beta", "zz-" + "9" * 50
SHORT = "u1"
DAY = 24 * 60


def eid(n: int) -> str:
    return f"evt-{n:04d}-" + "e" * 40  # 49 characters


def sid(user: str, n: int) -> str:
    return f"{user[:20]}-session-{n}-" + "s" * 30


def ev(n: int, minute: float, user: str, kind: str = "impression", price=None, **extra) -> dict:
    return event(eid(n), minute, user=user, kind=kind, price=price, session_id=sid(user, int(minute // DAY)), **extra)


def batches() -> list[list[tuple]]:
    first = [
        ev(1, 10, ALPHA),
        ev(2, 11, ALPHA, "click"),
        ev(3, 12, ALPHA, "purchase", "99999999.99"),
        ev(4, 12.5, BETA, "purchase", "0.01"),
        ev(5, 13, SHORT),
        ev(6, DAY + 5, ZULU, "purchase", "12345678.91"),
        ev(7, DAY + 6, PREFIX),
        ev(8, 14, SHORT, "impression", "3.00"),  # a price on an impression: quarantined
        "{not json",  # quarantined, no event id
    ]
    second = [
        ev(9, 25, ALPHA, "purchase", "99999999.99"),  # continues ALPHA's session, same campaign minute
        ev(10, 12.7, BETA, "purchase", "99999999.99"),
        ev(11, 2 * DAY + 1, SHORT, "purchase", "0.00"),
        ev(12, 2 * DAY + 2, BETA, "click"),
        ev(13, DAY + 20, ZULU, "purchase", "99999999.98"),
        '{"event_id": "half',
    ]
    third = [
        ev(14, 12.9, ALPHA, "purchase", "99999999.99"),  # the minute's revenue: 3 x the max price
        ev(15, 2 * DAY + 15, SHORT, "click"),
        ev(16, DAY + 7, PREFIX, "purchase", "50000000.00"),
        ev(17, 2 * DAY + 30, ALPHA),
    ]
    rows = [records(b) for b in (first, second, third)]
    # A record Kafka holds without a key: bronze's key is null there.
    keyless = (None, b'{"no": "event"}', "t", 0, 100, PRODUCED_AT)
    rows[1].append(keyless)
    return rows


@contextmanager
def skipping(spark, on: bool):
    before = spark.conf.get(SKIPPING, None)
    spark.conf.set(SKIPPING, "true" if on else "false")
    try:
        yield
    finally:
        if before is None:
            spark.conf.unset(SKIPPING)
        else:
            spark.conf.set(SKIPPING, before)


def stats_columns(path: str) -> dict[str, bool]:
    """The columns the table's add actions have statistics for: name -> has a min or max."""
    actions = pa.table(DeltaTable(path).get_add_actions(flatten=True))
    found: dict[str, bool] = {}
    for name in actions.column_names:
        kind, _, column = name.partition(".")
        if kind not in ("min", "max", "null_count") or actions[name].null_count == actions.num_rows:
            continue
        found[column] = found.get(column, False) or kind != "null_count"
    return found


def beside(value) -> list:
    """For a string over the 32 characters kept, values sharing its first 32: its cut (a prefix,
    shorter) and one longer, past it."""
    if isinstance(value, str) and len(value) > STRING_STATS:
        cut = value[:STRING_STATS]
        return [cut, cut + "z" * 8]
    return []


def predicates(column: str, values: list, bounded: bool) -> list:
    """IS NULL, IS NOT NULL and, where the files have bounds, each comparison with the least, the
    middle and the greatest value (and the strings beside the least and the greatest)."""
    col = F.col(column)
    found = [col.isNull(), col.isNotNull()]
    if not bounded or not values:
        return found
    chosen = {values[0], values[-1], values[len(values) // 2], *beside(values[0]), *beside(values[-1])}
    for value in sorted(chosen):
        literal = F.lit(value)
        found += [col == literal, col < literal, col > literal, col <= literal, col >= literal]
    return found


def matches(spark, path: str, chosen: list) -> list[list[tuple[str, object]]]:
    """With skipping off, the whole table read once: for each predicate, its rows as (file, row)."""
    found: list[list] = [[] for _ in chosen]
    with skipping(spark, False):
        frame = spark.read.format("delta").load(path)
        row = F.struct(*frame.columns).alias("_row")
        for start in range(0, len(chosen), 200):
            part = chosen[start : start + 200]
            tests = [F.coalesce(p, F.lit(False)).alias(f"_p{i}") for i, p in enumerate(part)]
            for read in frame.select(row, F.input_file_name().alias("_file"), *tests).collect():
                for i in range(len(part)):
                    if read[f"_p{i}"]:
                        found[start + i].append((name_of(read["_file"]), read["_row"]))
    return found


def read_skipping(spark, path: str, chosen: list[tuple[int, object]]) -> dict[int, list]:
    """With skipping on, each predicate's rows as (file, row), sorted, for `chosen` (index,
    predicate) pairs: one Spark job a chunk, a union with one scan a predicate (Delta skips files
    scan by scan, each by its own filter). A file skipped that holds a matching row shows as a
    row missing here."""
    found: dict[int, list] = {i: [] for i, _ in chosen}
    with skipping(spark, True):
        for start in range(0, len(chosen), 50):
            scans = []
            for i, predicate in chosen[start : start + 50]:
                frame = spark.read.format("delta").load(path).where(predicate)
                row = F.struct(*frame.columns).alias("_row")
                scans.append(frame.select(F.lit(i).alias("_i"), F.input_file_name().alias("_file"), row))
            for read in reduce(DataFrame.unionAll, scans).collect():
                found[read["_i"]].append((name_of(read["_file"]), read["_row"]))
    return {i: sorted(rows, key=key) for i, rows in found.items()}


def files_read(spark, path: str, predicate) -> set[str]:
    """With skipping on, the files the reading of `predicate` takes."""
    with skipping(spark, True):
        return {name_of(f) for f in spark.read.format("delta").load(path).where(predicate).inputFiles()}


def name_of(uri: str) -> str:
    return uri.rsplit("/", 1)[-1]


def key(pair: tuple[str, object]) -> str:
    file, row = pair
    return repr((file, tuple(row)))


@pytest.mark.unit
@pytest.mark.slow  # a stream run, then each predicate some row matches read with skipping on
def test_data_skipping_keeps_every_row_of_every_live_table(spark, lake):
    prepare_lake(spark, lake)
    first, second, third = batches()
    batch = stream(spark, lake, [first, second, third])
    forget_last_commit(lake)
    resume(spark, lake, batch)  # the last batch replayed: its gold rows rewritten
    gaps = [Gap(lake.topic, 0, 1000, 1005), Gap(lake.topic, 1, 2000, 2100)]
    source_gaps.record(lake, gaps[:1], "someone-with-a-name-longer-than-thirty-two", "lost at the source " * 3)
    source_gaps.record(lake, gaps[1:], "a", "retention")

    # What the statistics are to meet: prices at the bound, nulls where the reading allows them.
    prices = DeltaTable(lake.table_path("silver")).to_pyarrow_table()["price"].to_pylist()
    assert Decimal("99999999.99") in prices and None in prices
    assert None in DeltaTable(lake.table_path("quarantine")).to_pyarrow_table()["event_id"].to_pylist()
    assert None in DeltaTable(lake.table_path("bronze")).to_pyarrow_table()["key"].to_pylist()

    checked = skipped = vacuous = 0
    report = {}
    for table in LIVE:
        path = lake.table_path(table.name)
        files = len(DeltaTable(path).file_uris())
        assert files >= 2, f"{table.name}: {files} file(s), nothing to skip"
        columns = stats_columns(path)
        assert columns, f"{table.name} has no statistics"
        with skipping(spark, False):
            everything = spark.read.format("delta").load(path).collect()
        chosen, least = [], []
        for column, bounded in columns.items():
            values = sorted({r[column] for r in everything if r[column] is not None})
            if bounded and values:  # equal to the least value: a predicate most files can be skipped for
                least.append(F.col(column) == F.lit(values[0]))
            chosen += predicates(column, values, bounded)
        stats = {name_of(a["path"]): a for a in pa.table(DeltaTable(path).get_add_actions(flatten=True)).to_pylist()}
        expected = dict(enumerate(matches(spark, path, chosen)))
        asked = [(i, chosen[i]) for i, matching in expected.items() if matching]  # no row: nothing to lose
        vacuous += len(chosen) - len(asked)
        for i, got in read_skipping(spark, path, asked).items():
            want = sorted(expected[i], key=key)
            missing = [pair for pair in want if pair not in got]
            assert not missing, (
                f"{table.name}: {chosen[i]} skipped the file(s) holding {missing}; their stats: "
                f"{[stats[file] for file, _ in missing]}"
            )
            assert got == want, f"{table.name}: {chosen[i]}"
            checked += 1
        skipped += sum(files - len(files_read(spark, path, predicate)) for predicate in least)
        report[table.name] = (files, len(chosen), sorted(columns))
    print(f"\n{checked} predicates read ({vacuous} no row matches), {skipped} files skipped on the least values")
    print(report)
    assert skipped > 0
