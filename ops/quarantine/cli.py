"""See, export and re-send quarantined records.

    python -m ops.quarantine list [--reason PATTERN] [--since TS] [--until TS] [--samples N] [--json]
    python -m ops.quarantine export --reason PATTERN [--since TS] [--until TS] [--limit N] --out FILE
    python -m ops.quarantine republish (--reason PATTERN | --coordinates T:P:O[,...]) [--since TS]
        [--until TS] [--limit N] [--dry-run] [--yes]

Exports and re-sends use the exact bytes bronze holds at the record's Kafka coordinates, never the
lossy `raw_value` text, so a record flows again exactly as its producer sent it (docs/quarantine.md).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from typing import NoReturn, TypeVar

from pyspark.sql import SparkSession

from eo.runtime.cli import NOT_READY, USAGE, NotReady
from eo.runtime.config import ConfigError, Settings, load_settings
from eo.runtime.jars import MissingJarsError
from eo.runtime.spark import build_session
from ops.quarantine.export import export_command
from ops.quarantine.filters import ReasonPattern, iso_arg, parse_coordinates, parse_timestamp
from ops.quarantine.listing import list_command
from ops.quarantine.republish import CONFIRM_ABOVE, republish_command
from ops.quarantine.stderr import fail

EPILOG = """\
PATTERN is a reason (missing_field:user_id), a family with a trailing * or :* (bad_value:*), or * for all.
TS is ISO 8601 (2026-11-05, 2026-11-05T10:00:00+01:00), UTC when it has no offset; on kafka_timestamp,
--since inclusive, --until exclusive.

exit codes:
  0  success, including "nothing matched"
  1  some re-sent records were not acknowledged by Kafka
  2  usage: bad arguments, timestamps or coordinates; too many records without --yes; --out exists
  3  not ready: no quarantine or bronze table yet (run the stream first), Kafka not reachable, jars missing
"""

Command = Callable[[SparkSession, Settings, argparse.Namespace], int]
T = TypeVar("T")


class Parser(argparse.ArgumentParser):
    """Usage errors in one line on stderr, exit 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(USAGE, f"{self.prog}: error: {message} (see --help)\n")


def _arg(parse: Callable[[str], T], name: str) -> Callable[[str], T]:
    """A parse function as an argparse type: its ValueError becomes a one-line usage error."""

    def convert(text: str) -> T:
        try:
            return parse(text)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    convert.__name__ = name  # argparse names the type by it in its messages
    return convert


def _count(minimum: int) -> Callable[[str], int]:
    def parse(text: str) -> int:
        if not text.strip().isdecimal() or int(text) < minimum:
            raise ValueError(f"want a whole number >= {minimum}, got {text!r}")
        return int(text)

    return _arg(parse, "count")


def parser() -> Parser:
    cli = Parser(
        prog="python -m ops.quarantine",
        description=__doc__.split("\n")[0],
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    commands = cli.add_subparsers(dest="command", required=True, metavar="{list,export,republish}")
    pattern, timestamp = _arg(ReasonPattern.parse, "pattern"), _arg(parse_timestamp, "timestamp")

    def command(name: str, run: Command, summary: str) -> Parser:
        sub = commands.add_parser(
            name, help=summary, description=summary, epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter
        )
        sub.set_defaults(run=run)
        return sub

    listing = command("list", list_command, "count quarantined records by reason and family, with samples")
    export = command("export", export_command, "write the records' exact bytes as JSON lines, for producer replay")
    republish = command("republish", republish_command, "re-send the records' exact bytes to the Kafka topic")
    listing.add_argument("--reason", type=pattern, metavar="PATTERN", help="a reason, or a family: bad_value:*")
    export.add_argument("--reason", type=pattern, metavar="PATTERN", required=True, help="a reason or a family")
    which = republish.add_mutually_exclusive_group(required=True)
    which.add_argument("--reason", type=pattern, metavar="PATTERN", help="a reason or a family")
    which.add_argument(
        "--coordinates", type=_arg(parse_coordinates, "coordinates"), metavar="T:P:O[,...]",
        help="records by their Kafka coordinates, topic:partition:offset",
    )  # fmt: skip
    for sub in (listing, export, republish):
        sub.add_argument("--since", type=timestamp, metavar="TS", help="kafka_timestamp >= TS")
        sub.add_argument("--until", type=timestamp, metavar="TS", help="kafka_timestamp < TS")
    for sub in (export, republish):
        sub.add_argument("--limit", type=_count(1), metavar="N", help="the first N, in coordinate order")
    listing.add_argument("--samples", type=_count(0), default=3, metavar="N", help="records shown per reason (3)")
    listing.add_argument("--json", action="store_true", help="print JSON instead of tables")
    export.add_argument("--out", type=Path, required=True, metavar="FILE", help="the JSON-lines file to write")
    export.add_argument("--force", action="store_true", help="replace FILE if it exists")
    republish.add_argument("--dry-run", action="store_true", help="list what would be sent, send nothing")
    republish.add_argument("--yes", action="store_true", help=f"allow more than {CONFIRM_ABOVE} records")
    return cli


def main(argv: list[str] | None = None, *, settings: Settings | None = None, spark: SparkSession | None = None) -> int:
    """`settings` and `spark` are for tests; normally the environment's own (EO_ENV) are used."""
    cli = parser()
    args = cli.parse_args(argv)
    if args.since and args.until and args.since >= args.until:
        cli.error(f"--since {iso_arg(args.since)} is not before --until {iso_arg(args.until)}")
    if args.command == "export" and args.out.exists() and not args.force:  # before Spark's start-up
        cli.error(f"{args.out} exists: choose another --out, or add --force to replace it")
    # Known failures in quarantine's own words (a missing jar's message already says `make jars`, which
    # explain() would add again); anything else goes on to guarded() in __main__.py, which explains what it knows.
    try:
        settings = settings or load_settings()
        spark = spark or build_session("eo-quarantine", settings)
        return args.run(spark, settings, args)
    except (NotReady, MissingJarsError) as exc:
        return fail(NOT_READY, str(exc))
    except ConfigError as exc:  # a bad EO_ENV or setting: the person's to fix, like an argument
        return fail(USAGE, str(exc))
