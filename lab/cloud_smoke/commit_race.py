"""One commit protocol for every writer of a live table (docs/cloud.md, "One commit protocol"): the
stream's commits (eo.runtime.commits.append) race the weekly maintenance's OPTIMIZE
(batch.maintenance.optimize_table) on one table of the environment's. Every commit a writer saw
succeed must be in the table's log: no version written twice, no row lost, none doubled.

Run by `make cloud-smoke` (commit_race in its report) and tests/integration/test_commit_protocol.py."""

from __future__ import annotations

import threading
import time

import pyarrow as pa

from batch.maintenance import optimize_table
from eo.core.tables import BRONZE
from eo.runtime import commits
from eo.runtime.config import Settings
from eo.runtime.environment import environment

MIN_COMMITS = 20  # of each writer


def rows(writer: str, seq: int) -> pa.Table:
    return pa.table({"writer": [writer], "seq": pa.array([seq], pa.int64())})


def race(settings: Settings, min_commits: int = MIN_COMMITS, table_name: str = "bronze") -> dict:
    """Appends (4 x min_commits) against OPTIMIZE run again and again (at least min_commits that
    compact something) on a new table at `table_name`'s path of `settings`; what each saw and what the log kept."""
    from deltalake import write_deltalake

    env = environment(settings)
    created = env.table(table_name)
    write_deltalake(created.uri, rows("create", 0).slice(0, 0), storage_options=created.storage_options)
    appended: list[int] = []
    compactions: list[dict] = []
    refused: list[str] = []
    appending = threading.Event()
    appending.set()

    def stream() -> None:  # the stream's writer: one append per micro-batch
        table = env.table(table_name)
        for seq in range(1, 4 * min_commits + 1):
            try:
                if commits.append(table, rows("stream", seq), commits.Txn("commit-race", 1, seq)):
                    appended.append(seq)
            except Exception as error:  # noqa: BLE001 (a refused commit is not a reported one)
                refused.append(f"stream {seq}: {type(error).__name__}: {str(error)[:160]}")
        appending.clear()

    def maintenance() -> None:  # the weekly OPTIMIZE, run again and again while the stream appends
        table = env.table(table_name)
        while appending.is_set() or len(compactions) < min_commits:
            try:
                done = optimize_table(table, BRONZE)
            except Exception as error:  # noqa: BLE001
                refused.append(f"optimize: {type(error).__name__}: {str(error)[:160]}")
                continue
            refused.extend(f"optimize: left {part} after conflicts" for part in done.left)
            if done.files_added:
                compactions.append(done)
            elif not appending.is_set():
                break  # nothing left to compact
            time.sleep(0.05)

    threads = [threading.Thread(target=stream), threading.Thread(target=maintenance)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=300)

    final = env.table(table_name).refresh()
    found = [(row["writer"], row["seq"]) for row in final.to_pyarrow_table().to_pylist()]
    operations = [entry["operation"] for entry in final.history()]
    return {
        "commits": {"stream": len(appended), "optimize": len(compactions)},
        "commits_lost": len({("stream", s) for s in appended} - set(found)),
        "rows_doubled": len(found) - len(set(found)),
        "rows_unreported": len(set(found) - {("stream", s) for s in appended}),
        # Every reported commit is a version of its own: the create, then one per commit.
        "version": final.version(),
        "writes_in_log": operations.count("WRITE"),
        "optimizes_in_log": operations.count("OPTIMIZE"),
        "refused": refused[:10],
    }


def passed(result: dict, min_commits: int = MIN_COMMITS) -> bool:
    made = result["commits"]
    return (
        min(made.values()) >= min_commits
        and result["commits_lost"] == result["rows_doubled"] == result["rows_unreported"] == 0
        and result["version"] == made["stream"] + made["optimize"]
        and result["optimizes_in_log"] == made["optimize"]
    )
