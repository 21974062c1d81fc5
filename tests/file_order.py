"""The order the xdist workers take the test files in: longest first, by each file's seconds in
the last full run kept in tests/file_seconds.json (`make test-durations` refreshes it from
reports/tests/durations.json). Each worker takes the next file as it runs short (--dist loadfile,
--no-loadscope-reorder), so the long files start first and the short ones fill in at the end: the
two workers finish close together (docs/testing.md, "The budget").

Only the order changes: every file runs, its tests in their own order."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from statistics import median

ESTIMATES = Path(__file__).with_name("file_seconds.json")


def load_estimates(path: Path = ESTIMATES) -> dict[str, float]:
    """file -> seconds; empty when the file is missing or unreadable (then collection order holds)."""
    try:
        return {str(k): float(v) for k, v in json.loads(path.read_text()).items()}
    except (OSError, ValueError, AttributeError):
        return {}


def longest_first(paths: Sequence[str], seconds: dict[str, float]) -> list[int]:
    """The indices of `paths` (one per test, its file's path) ordered by their file's seconds, longest
    first. A file with no estimate (new since the last refresh) counts as the median file; equal
    files keep their first-seen order, and a file's tests keep theirs."""
    default = median(seconds.values()) if seconds else 0.0
    first_seen: dict[str, int] = {}
    for path in paths:
        first_seen.setdefault(path, len(first_seen))
    return sorted(range(len(paths)), key=lambda i: (-seconds.get(paths[i], default), first_seen[paths[i]], i))


def from_durations(report: dict) -> dict[str, float]:
    """tests/file_seconds.json's content from a run's reports/tests/durations.json."""
    return {entry["file"]: entry["seconds"] for entry in report["files"]}


def main(argv: list[str] | None = None) -> int:
    """`make test-durations`: tests/file_seconds.json from the last run's reports/tests/durations.json
    (or the durations file named first in `argv`, a fresh clone's)."""
    import sys

    from eo.runtime.config import REPO_ROOT
    from tests.timing import OUT

    args = sys.argv[1:] if argv is None else argv
    report = Path(args[0]) if args else OUT
    if not report.exists():
        print(f"no {report}: run `make test` first")
        return 1
    measured = from_durations(json.loads(report.read_text()))
    # A partial run (-m unit, one file) updates what it ran; a file gone from the tree goes.
    seconds = {f: s for f, s in {**load_estimates(), **measured}.items() if (REPO_ROOT / f).exists()}
    ESTIMATES.write_text(json.dumps(dict(sorted(seconds.items())), indent=1) + "\n")
    total = sum(seconds.values())
    print(f"{ESTIMATES.name}: {len(measured)} files measured, {len(seconds)} kept, {total:,.0f} s in all")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
