"""`python -m ops.source_gaps`: records lost at the source, listed, and accepted by a person.

    python -m ops.source_gaps list [--json]
    python -m ops.source_gaps accept --by NAME --reason TEXT [--ranges P:FROM-TO,...]

Kafka deletes old records (retention, `delete-records`). Records the stream had not read when
they went are lost for good, and the stream stops rather than read past them
(streaming/source_loss.py). `list` shows the gaps before the stream's next read and the ones
accepted before; `accept` records in the lake's `source_gaps` table, with who accepted them and
why, exactly the ranges that were shown: those given (`--ranges`, as the refusal's line and
`list` name them), else those the stream's last refusal recorded. Kafka's retention goes on
deleting meanwhile: when more is gone than was shown, `accept` records nothing and says so in one
line, naming the command for what is lost now. The stream then reads past exactly the accepted
offsets, and verify reports them against the producers' acknowledgements as lost at the source,
never as a silent pass.
"""

from __future__ import annotations

import argparse
import json
import sys

from eo.core.source_gaps import Gap, described, parse_ranges, uncovered
from eo.runtime import source_gaps
from eo.runtime.cli import EXIT_CODES, NotReady, guarded
from eo.runtime.config import load_settings
from streaming.source_loss import ACCEPT, accept_command


def _list(settings, as_json: bool) -> int:
    gaps, missing = source_gaps.current(settings)
    accepted = source_gaps.accepted_rows(settings)
    if as_json:
        report = {
            "topic": settings.topic,
            "before_next_read": [vars(g) | {"records": g.records} for g in gaps],
            "not_accepted": [vars(g) | {"records": g.records} for g in missing],
            "accept_command": accept_command(missing) if missing else None,
            "accepted": [dict(r, accepted_at=r["accepted_at"].isoformat()) for r in accepted],
        }
        print(json.dumps(report, indent=2))
        return 0
    print(f"topic {settings.topic}")
    print(f"  lost before the stream's next read, not accepted: {described(missing) if missing else 'none'}")
    if missing:
        print(f"  to accept exactly these: {accept_command(missing)}")
    if gaps and not missing:
        print(f"  lost before the stream's next read, accepted: {described(gaps)}")
    for row in accepted:
        print(
            f"  accepted: partition {row['kafka_partition']} offsets [{row['from_offset']}, {row['to_offset']}) "
            f"({row['records']:,} records) by {row['accepted_by']} at {row['accepted_at']:%Y-%m-%d %H:%M UTC}: "
            f"{row['reason']}"
        )
    return 0


def shown_ranges(settings, ranges: str | None) -> list[Gap]:
    """The ranges to accept: given, else the stream's last refusal's (NotReady when there is none)."""
    if ranges is not None:
        return parse_ranges(settings.topic, ranges)
    refused = source_gaps.read_refused(settings)
    if refused is None:
        raise NotReady(
            f"no refusal of the stream recorded which records of {settings.topic} are lost: run "
            "`python -m ops.source_gaps list`, then accept the ranges it shows with "
            f"`{ACCEPT} --ranges P:FROM-TO,...`"
        )
    gaps, when = refused
    print(f"the stream's refusal at {when} named {described(gaps)}")
    return gaps


def to_record(shown: list[Gap], gaps: list[Gap], accepted: list[Gap]) -> list[Gap]:
    """What `accept` records: the parts of `shown` no one accepted yet. NotReady, nothing recorded,
    when part of `shown` is not lost (Kafka still holds it, or the stream read past it), or when
    more is lost now than `shown` and the accepted gaps cover (retention went on deleting)."""
    not_lost = uncovered(shown, gaps)
    if not_lost:
        raise NotReady(
            f"{described(not_lost)} is not lost at the source before the stream's next read (Kafka holds it, or the "
            "stream read it): nothing accepted. `python -m ops.source_gaps list` shows what is lost"
        )
    more = uncovered(gaps, [*accepted, *shown])
    if more:
        raise NotReady(
            f"more is lost now than was shown: {described(more)} went since, besides {described(shown)}; nothing "
            f"accepted. If that loss is accepted too: `{accept_command(uncovered(gaps, accepted))}`"
        )
    return uncovered(shown, accepted)


def _accept(settings, by: str, reason: str, ranges: str | None) -> int:
    shown = shown_ranges(settings, ranges)
    new = to_record(shown, source_gaps.found_before(settings), source_gaps.accepted(settings))
    if not new:
        print(f"nothing to accept: {described(shown)} is accepted already")
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
    accept = commands.add_parser("accept", help="record the gaps that were shown as accepted losses")
    accept.add_argument("--by", required=True, help="who accepts the loss (recorded in the lake)")
    accept.add_argument("--reason", required=True, help="why (recorded in the lake)")
    accept.add_argument(
        "--ranges",
        help="exactly these, as the refusal's line or `list` names them: P:FROM-TO,... (offsets [FROM, TO) of "
        "partition P); default: the ranges the stream's last refusal recorded",
    )
    args = parser.parse_args(argv)
    settings = load_settings()
    if args.command == "list":
        return _list(settings, args.json)
    if not args.by.strip() or not args.reason.strip():
        parser.error("--by and --reason must say something")
    if args.ranges is not None:
        try:
            parse_ranges(settings.topic, args.ranges)
        except ValueError as error:
            parser.error(f"--ranges: {error}")
    return _accept(settings, args.by.strip(), args.reason.strip(), args.ranges)


if __name__ == "__main__":
    sys.exit(guarded(main))
