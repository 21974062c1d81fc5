"""Where a micro-batch's time goes inside the engine, from Spark's own progress report.

The job's batch line (streaming/microbatch.py) times its foreachBatch call: the Spark job that
reads, dedups and moves the rows to Arrow ("read"), then the commits. Spark's progress report
(`StreamingQueryProgress`, one per batch) adds what that line cannot see:

- the engine's work around the call: planning, the offset log (`walCommit`), the commit log;
- the engine's state (streaming/plan.py: event ids): keys written, copies
  dropped (where Spark counts them), and RocksDB's own time in lookups, writes and its commit.

State times are task seconds summed over the state's partitions (4 tasks share 2 cores here), so
they add up to more than the wall time they take.
"""

from __future__ import annotations

# Spark lists state operators from the sink back to the source; streaming/plan.py has one.
STATES = ("event ids",)
AROUND = {"queryPlanning": "planning", "walCommit": "offset log", "commitOffsets": "commit log"}


def _seconds(ms: float | int | None) -> float:
    return round((ms or 0) / 1000, 3)


def batch_profile(progress: dict) -> dict:
    """One micro-batch's engine figures, from its progress report as JSON (`StreamingQueryProgress.json`)."""
    durations = progress.get("durationMs", {})
    around = {name: _seconds(durations.get(key)) for key, name in AROUND.items()}
    states = []
    for number, operator in enumerate(reversed(progress.get("stateOperators", [])), start=1):
        custom = operator.get("customMetrics", {})
        states.append({
            "state": number,
            "keys": STATES[number - 1] if number <= len(STATES) else operator.get("operatorName"),
            "written": operator.get("numRowsUpdated", 0),
            # Spark's dropDuplicates counts the copies it drops; the first-copy operator (state 1)
            # has no such metric: the batch line's "duplicates" counts them.
            "dropped": custom.get("numDroppedDuplicateRows"),
            "lookup_s": _seconds(custom.get("rocksdbGetLatency")),
            "write_s": _seconds(custom.get("rocksdbPutLatency")),
            "commit_s": _seconds(operator.get("commitTimeMs")),
        })  # fmt: skip
    return {
        "batch": progress.get("batchId"),
        "records": progress.get("numInputRows", 0),
        "batch_s": _seconds(durations.get("addBatch")),
        "around_s": around,
        "states": states,
    }


def profile_line(query: str, profile: dict) -> str:
    """The job's log line for one batch's engine figures."""
    around = ", ".join(f"{name} {seconds:.2f}" for name, seconds in profile["around_s"].items())
    states = "; ".join(
        f"state {s['state']} ({s['keys']}): {s['written']:,} written, "
        + ("" if s["dropped"] is None else f"{s['dropped']:,} dropped, ")
        + f"RocksDB lookups {s['lookup_s']:.2f} writes {s['write_s']:.2f} commit {s['commit_s']:.2f}"
        for s in profile["states"]
    )
    return (
        f"[{query}] batch {profile['batch']} in the engine: foreachBatch {profile['batch_s']:.2f} s, "
        f"around it {around} s; {states or 'no state'} (task seconds)"
    )


def new_profiles(progresses: list[dict], after: int) -> list[dict]:
    """Profiles of the batches after batch `after` that read records, oldest first."""
    fresh = [p for p in progresses if p.get("batchId", -1) > after and p.get("numInputRows")]
    return [batch_profile(p) for p in sorted(fresh, key=lambda p: p["batchId"])]
