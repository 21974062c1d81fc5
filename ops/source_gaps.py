"""`python -m ops.source_gaps`: records lost at the source, listed, and accepted by a person.

    python -m ops.source_gaps list [--json]
    python -m ops.source_gaps accept --by NAME --reason TEXT [--partition P ...]

Kafka deletes old records (retention, `delete-records`). Records the stream had not read when
they went are lost for good, and the stream stops rather than read past them
(streaming/source_loss.py). `list` shows the gaps before the stream's next read and the ones
accepted before; `accept` records the current ones (or those of the given partitions) in the
lake's `source_gaps` table with who accepted them and why. The stream then reads past exactly
those offsets, and verify reports them against the producers' acknowledgements as lost at the
source, never as a silent pass.
"""

from __future__ import annotations

import argparse
import json

from eo.core.source_gaps import described, uncovered
from eo.runtime import source_gaps
from eo.runtime.cli import EXIT_CODES, exit_with, guarded
from eo.runtime.config import load_settings


def _list(settings, as_json: bool) -> int:
    gaps, missing = source_gaps.current(settings)
    accepted = source_gaps.accepted_rows(settings)
    if as_json:
        report = {
            "topic": settings.topic,
            "before_next_read": [vars(g) | {"records": g.records} for g in gaps],
            "not_accepted": [vars(g) | {"records": g.records} for g in missing],
            "accepted": [dict(r, accepted_at=r["accepted_at"].isoformat()) for r in accepted],
        }
        print(json.dumps(report, indent=2))
        return 0
    print(f"topic {settings.topic}")
    print(f"  lost before the stream's next read, not accepted: {described(missing) if missing else 'none'}")
    if gaps and not missing:
        print(f"  lost before the stream's next read, accepted: {described(gaps)}")
    for row in accepted:
        print(
            f"  accepted: partition {row['kafka_partition']} offsets [{row['from_offset']}, {row['to_offset']}) "
            f"({row['records']:,} records) by {row['accepted_by']} at {row['accepted_at']:%Y-%m-%d %H:%M UTC}: "
            f"{row['reason']}"
        )
    return 0


def _accept(settings, by: str, reason: str, partitions: list[int] | None) -> int:
    gaps, _ = source_gaps.current(settings)
    if partitions:
        gaps = [g for g in gaps if g.partition in partitions]
    new = uncovered(gaps, source_gaps.accepted(settings))
    if not new:
        print(f"nothing to accept: no records lost at the source before the stream's next read of {settings.topic}")
        return 0
    source_gaps.record(settings, new, by, reason)
    print(f"accepted as lost at the source by {by}: {described(new)}")
    print("the stream reads past them when it starts; verify reports them against the acknowledgements")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m ops.source_gaps", description=__doc__.split("\n")[0], epilog=EXIT_CODES
    )
    commands = parser.add_subparsers(dest="command", required=True)
    listing = commands.add_parser("list", help="the gaps before the stream's next read, and those accepted")
    listing.add_argument("--json", action="store_true")
    accept = commands.add_parser("accept", help="record the current gaps as accepted losses")
    accept.add_argument("--by", required=True, help="who accepts the loss (recorded in the lake)")
    accept.add_argument("--reason", required=True, help="why (recorded in the lake)")
    accept.add_argument("--partition", type=int, action="append", help="only this partition's gaps (repeatable)")
    args = parser.parse_args(argv)
    settings = load_settings()
    if args.command == "list":
        return _list(settings, args.json)
    if not args.by.strip() or not args.reason.strip():
        parser.error("--by and --reason must say something")
    return _accept(settings, args.by.strip(), args.reason.strip(), args.partition)


if __name__ == "__main__":
    exit_with(guarded, main)
