"""What a streaming job's log says about its micro-batches.

streaming/microbatch.py prints one line per committed micro-batch:

    [events] batch 12: 1000 records -> quarantine 10, silver +960, ... (0.84 s: read 0.51 commit 0.33)

The seconds are the job's own, from the start of the foreachBatch call to its last commit
(Spark's planning before it and its state commit after it are not in them).
"""

from __future__ import annotations

import re
import statistics

BATCH_LINE = re.compile(
    r"^\[(?P<query>[\w-]+)\] batch (?P<batch>\d+): (?P<records>\d+) records\b.*"
    r"\((?P<seconds>\d+(?:\.\d+)?) s: (?P<steps>[^()]*)\)\s*$"
)
SILVER_PART = re.compile(r"\bsilver \+(?P<silver>\d+)")
SEED_LINE = re.compile(r"seed read into the engine state in (?P<seconds>\d+(?:\.\d+)?) s")
READY_LINE = re.compile(r"\[streaming\] ready in (?P<seconds>\d+(?:\.\d+)?) s")


def _steps(text: str) -> dict[str, float]:
    words = text.split()
    return {name: float(value) for name, value in zip(words[::2], words[1::2], strict=False)}


def batches(text: str, query: str = "events") -> dict[int, dict]:
    """batch id -> {records, silver, seconds, steps} for each micro-batch line of `query` (the last
    one wins if a batch was logged twice; silver: the rows it added, None if the line has none)."""
    found = {}
    for line in text.splitlines():
        match = BATCH_LINE.match(line.strip())
        if match and match["query"] == query:
            silver = SILVER_PART.search(line)
            found[int(match["batch"])] = {
                "batch": int(match["batch"]),
                "records": int(match["records"]),
                "silver": int(silver["silver"]) if silver else None,
                "seconds": float(match["seconds"]),
                "steps": _steps(match["steps"]),
            }
    return found


def busy_batches(text: str, query: str = "events") -> list[dict]:
    """The micro-batches that read records, in order."""
    return [b for _, b in sorted(batches(text, query).items()) if b["records"] > 0]


def median_seconds(rows: list[dict]) -> float | None:
    return round(statistics.median(r["seconds"] for r in rows), 3) if rows else None


def seed_seconds(text: str) -> float | None:
    match = SEED_LINE.search(text)
    return float(match["seconds"]) if match else None


def ready_seconds(text: str) -> float | None:
    match = READY_LINE.search(text)
    return float(match["seconds"]) if match else None
