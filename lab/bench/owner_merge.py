"""One sessions' owner's merge, alone, against sessions of growing length (no Spark, no server).

An owner (streaming/session_merge.py `merge_owned`) reads its own user_sessions file whole, merges
its users' new intervals, and writes the file again. Each session keeps its metric keys, so on a
live lake whose users never pause for the gap (the bench's continuous phase) its cost grows with
the sessions' length. This times one owner's merge on a local Delta table: `--users` sessions of
the owner, each holding `--keys` keys, `--touched` of them reached by one new interval each.

`--pipeline`: instead, an owner shaped like the pipeline phase's: short sessions of 92,000
events of its 25,000 users over 5 hours (1,000 campaigns: few repeated keys), and 120,000 new
events over the same hours, most of them reaching a stored session.

    python -m lab.bench.owner_merge [--users 25000] [--keys 10,50,150] [--touched 8000] [--pipeline]
"""

from __future__ import annotations

import argparse
import datetime as dt
import random
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from deltalake import write_deltalake
from pyarrow import fs

from eo.core.transforms.sessions import INTERVALS, USER_SESSIONS_SCHEMA, as_intervals, sessionize
from eo.runtime.commits import Table, commit_files
from eo.runtime.data_files import add_actions, write_files
from streaming.session_merge import merge_owned, user_buckets, user_partition
from streaming.stored_sessions import Owner, pinned

OWNERS = 4
T0 = dt.datetime(2026, 11, 29, 12, tzinfo=dt.UTC)
TYPES = ["impression", "click", "purchase"]


def _minute(n: int) -> str:
    return (T0 + dt.timedelta(minutes=n)).strftime("%Y-%m-%dT%H:%M")


def owned_users(count: int) -> np.ndarray:
    """`count` users that owner 0 of OWNERS owns."""
    users = np.array([f"user-{i:07d}" for i in range(count * OWNERS * 2)], dtype=object)
    return users[user_partition(pa.array(users), OWNERS) == 0][:count]


def sessions(users: np.ndarray, keys: int) -> pa.Table:
    """One session per user, each over `keys` minutes with one key a minute."""
    n = len(users)
    lists = [sorted(f"camp-{(i * 7 + j) % 100:04d}|{TYPES[j % 3]}|{_minute(j)}" for j in range(keys)) for i in range(n)]
    start = pa.array([T0] * n, pa.timestamp("us", tz="UTC"))
    return pa.table(
        {
            "user_id": pa.array(users, pa.string()),
            "session_start": start,
            "session_end": pa.array([T0 + dt.timedelta(minutes=keys)] * n, pa.timestamp("us", tz="UTC")),
            "session_date": pc.cast(start, pa.date32()),
            "events": pa.array([keys] * n, pa.int64()),
            "revenue": pa.nulls(n, USER_SESSIONS_SCHEMA.field("revenue").type),
            "metric_keys": pa.array(lists, pa.list_(pa.string())),
        },
        schema=USER_SESSIONS_SCHEMA,
    )


def intervals(users: list, keys: int) -> pa.Table:
    """One new event for each of `users`, half a minute after their sessions' last."""
    when = pa.array([T0 + dt.timedelta(minutes=keys, seconds=30)] * len(users), pa.timestamp("us", tz="UTC"))
    return pa.table(
        {
            "user_id": pa.array(users, pa.string()),
            "start": when,
            "end": when,
            "events": pa.array([1] * len(users), pa.int64()),
            "revenue": pa.nulls(len(users), INTERVALS.field("revenue").type),
            "metric_keys": pa.array([[f"camp-0001|click|{_minute(keys)}"]] * len(users), pa.list_(pa.string())),
        },
        schema=INTERVALS,
    )


def events(users: np.ndarray, count: int, seed: int) -> pa.Table:
    """`count` events of `users` at random over 5 hours, of 1,000 campaigns."""
    rng = np.random.default_rng(seed)
    times = [T0 + dt.timedelta(seconds=int(s)) for s in rng.integers(0, 5 * 3600, count)]
    return pa.table(
        {
            "user_id": pa.array(users[rng.integers(0, len(users), count)], pa.string()),
            "event_time": pa.array(times, pa.timestamp("us", tz="UTC")),
            "event_type": pa.array(np.array(TYPES, dtype=object)[rng.integers(0, 3, count)], pa.string()),
            "price": pa.nulls(count, pa.decimal128(10, 2)),
            "campaign_id": pa.array([f"camp-{c:05d}" for c in rng.integers(0, 1_000, count)], pa.string()),
        }
    )


def time_merge(folder: Path, stored: pa.Table, new: pa.Table, name: str, repeats: int = 3) -> dict:
    """Seconds of owner 0's merge of `new` intervals with its `stored` sessions (best of `repeats`,
    after one warm-up), and its file's size."""
    path = folder / name
    write_deltalake(str(path), stored.slice(0, 0), partition_by=["session_date"])
    table = Table(str(path))
    root = fs.SubTreeFileSystem(table.uri, fs.LocalFileSystem())
    files = write_files(root, stored, ["session_date"], "stored", user_buckets(OWNERS), bucket=0)
    commit_files(table.refresh(), add_actions(files))
    (folder / "out").mkdir(exist_ok=True)
    out = fs.SubTreeFileSystem(str(folder / "out"), fs.LocalFileSystem())
    at, owner = pinned(Table(str(path))), Owner(user_buckets(OWNERS), 0)
    merge_owned(at, new, owner, root, out, "warm")
    seconds = []
    for run in range(repeats):
        began = time.perf_counter()
        merge_owned(at, new, owner, root, out, f"run{run}")
        seconds.append(time.perf_counter() - began)
    return {"file_mb": round(sum(f["size"] for f in files) / 1e6, 2), "merge_s": round(min(seconds), 3)}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--users", type=int, default=25_000, help="sessions the owner holds")
    parser.add_argument("--keys", default="10,50,150", help="metric keys per stored session, comma-separated")
    parser.add_argument("--touched", type=int, default=8_000, help="sessions one new interval each reaches")
    parser.add_argument("--pipeline", action="store_true", help="an owner shaped like the pipeline phase's")
    args = parser.parse_args(argv)
    owned = owned_users(args.users)
    with tempfile.TemporaryDirectory(prefix="owner-merge-") as folder:
        if args.pipeline:
            stored = sessionize(as_intervals(events(owned, 92_000, 1)))
            print(f"[owner_merge] pipeline-shaped: {stored.num_rows} stored sessions, 120,000 new events ...")
            result = time_merge(Path(folder), stored, as_intervals(events(owned, 120_000, 2)), "pipeline", repeats=5)
            print(f"[owner_merge] {result}", flush=True)
            return
        for keys in (int(k) for k in args.keys.split(",")):
            print(f"[owner_merge] {args.users} sessions of {keys} keys, {args.touched} touched ...", flush=True)
            new = intervals(random.Random(keys).sample(list(owned), args.touched), keys)
            result = time_merge(Path(folder), sessions(owned, keys), new, f"keys-{keys}")
            print(f"[owner_merge] { ({'keys': keys} | result) }", flush=True)


if __name__ == "__main__":
    main()
