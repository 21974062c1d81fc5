"""Where a job's executor threads spend their JVM time, from a Java Flight Recorder file (make
bench's investigations only; docs/hot-path.md "Where a guarded batch's JVM time goes").

    SPARK_SUBMIT_OPTS="-XX:StartFlightRecording=filename=/tmp/jfr/,settings=profile" \\
        python -m lab.bench --phases pipeline --pipeline-events 2M --run-id jfr
    python -m lab.bench.jvm_profile /tmp/jfr/<the guarded job's file>.jfr [--since HH:MM:SS]

Each execution sample of a task thread (`Executor task launch worker`) is charged to the first
frame, from the innermost out, that belongs to a known kind of work (`KINDS`): a UTF-8 compare
inside a sort's comparison counts as the sort. A sample that reaches a whole-stage generated
iterator first is charged to it (projections, filters, hashing). JFR sees Java only: the Python
workers' own time is not here, but a task thread waiting on them is (under "Arrow and the
Python workers").
"""

from __future__ import annotations

import argparse
import re
import subprocess
from collections import Counter
from collections.abc import Iterable, Iterator

GENERATED = "generated code (projections, filters)"
# Innermost match wins; the order below only breaks ties within one frame. Library frames
# (UTF8String, HashMap, ...) match none and are passed through to their caller.
KINDS: tuple[tuple[str, str], ...] = (
    ("RocksDB (engine state)", r"rocksdb|RocksDB"),
    (
        "sort before a state",
        r"UnsafeExternalRowSorter|UnsafeInMemorySorter|UnsafeExternalSorter|TimSort|SpecificOrdering",
    ),
    ("rows to Java objects and back", r"SafeProjection|createExternalRow|deserializeRowToObject|serializefromobject"),
    (
        "the state operators' own code",
        # FirstCopy and NewTuple (Java, both gone since 2026-11-28): recordings made before it.
        r"StreamingDeduplicate|FlatMapGroupsWithState|GroupedIterator|GroupStateImpl"
        r"|effectivelyonce\.reader\.(FirstCopy|NewTuple|Coordinates)",
    ),
    ("strict reading (JSON)", r"effectivelyonce\.reader|jackson"),
    ("Kafka consumer", r"\.kafka"),
    ("Arrow and the Python workers", r"arrow|Arrow|PythonRunner|PythonWorker"),
    ("shuffle write", r"ShuffleWriter|ShuffleExternalSorter|DiskBlockObjectWriter|ShuffleInMemorySorter"),
    ("shuffle read", r"ShuffleBlockFetcher|ShuffleReader|BlockStoreShuffle"),
    ("compression", r"lz4|LZ4|zstd|Zstd|snappy"),
    ("class loading", r"ClassLoader|ZipFile|JarFile"),
    (GENERATED, r"GeneratedIteratorForCodegenStage\d+\.processNext|SpecificUnsafeProjection"),
)
TASK_THREAD = "Executor task launch worker"
SAMPLE = "jdk.ExecutionSample {"
_FRAME = re.compile(r"^\s+([\w$.<>/]+)\(", re.M)
_THREAD = re.compile(r'sampledThread = "([^"]*)"')
_TIME = re.compile(r"startTime = (\d\d:\d\d:\d\d)")


def printed(path: str) -> str:
    """The recording's execution samples as `jfr print` writes them (the JDK's own tool)."""
    command = ["jfr", "print", "--events", "jdk.ExecutionSample", "--stack-depth", "96", path]
    return subprocess.run(command, check=True, capture_output=True, text=True).stdout


def samples(text: str, since: str | None = None) -> Iterator[tuple[str, list[str]]]:
    """(thread, frames innermost first) of each sample in `jfr print` output, from `since` (HH:MM:SS)."""
    for chunk in text.split(SAMPLE)[1:]:
        found = _TIME.search(chunk)
        if since and found and found.group(1) < since:
            continue
        thread = _THREAD.search(chunk)
        yield (thread.group(1) if thread else "?"), _FRAME.findall(chunk)


def kind_of(frames: list[str]) -> str:
    for frame in frames:
        for kind, pattern in KINDS:
            if re.search(pattern, frame):
                return kind
    return "other"


def split(found: Iterable[tuple[str, list[str]]]) -> Counter:
    """Task threads' samples per kind of work."""
    return Counter(kind_of(frames) for thread, frames in found if thread.startswith(TASK_THREAD))


def table(kinds: Counter) -> str:
    total = sum(kinds.values()) or 1
    lines = ["| kind of work | samples | share |", "| --- | --- | --- |"]
    lines += [f"| {kind} | {count} | {100 * count / total:.1f}% |" for kind, count in kinds.most_common()]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("recording", help="a .jfr file")
    parser.add_argument("--since", help="only samples from this time of day on (HH:MM:SS, as jfr prints it)")
    args = parser.parse_args(argv)
    kinds = split(samples(printed(args.recording), args.since))
    print(f"{sum(kinds.values())} samples of task threads in {args.recording}")
    print(table(kinds))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
