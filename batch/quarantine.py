"""See, export and re-send quarantined records.

    python -m batch.quarantine list [--reason PATTERN] [--since TS] [--until TS] [--samples N] [--json]
    python -m batch.quarantine export --reason PATTERN [--since TS] [--until TS] [--limit N] --out FILE
    python -m batch.quarantine republish (--reason PATTERN | --coordinates T:P:O[,...]) [--since TS]
        [--until TS] [--limit N] [--dry-run] [--yes]

Exports and re-sends use the exact bytes bronze holds at the record's Kafka coordinates, never the
lossy `raw_value` text, so a record flows again exactly as its producer sent it (docs/quarantine.md).
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import json
import os
import re
import sys
import unicodedata
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn

from pyspark.sql import Column, DataFrame, Row, SparkSession, Window
from pyspark.sql import functions as F

from jobs import lake
from jobs.cli import FAILED, NOT_READY, OK, USAGE, guarded
from jobs.config import ConfigError, Settings, load_settings
from jobs.spark import MissingJarsError, build_session
from jobs.tables import BRONZE, QUARANTINE, SOURCE_KEY, TableDef

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
SAMPLE_CHARS = 120  # a sample's raw text is cut here, after escaping
CONFIRM_ABOVE = 1000  # republish asks for --yes above this many records
KAFKA_TIMEOUT = 5.0  # seconds to wait for the broker's metadata before saying it is not reachable
# Kafka's legal topic names; partitions and offsets are plain decimal numbers.
COORDINATE = re.compile(r"(?P<topic>[A-Za-z0-9._-]{1,249}):(?P<partition>[0-9]{1,9}):(?P<offset>[0-9]{1,18})")
EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)

Coordinate = tuple[str, int, int]  # kafka_topic, kafka_partition, kafka_offset


class Failure(Exception):
    """A known failure: one line on stderr and its exit code."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code


# -- pure selection logic -------------------------------------------------------------------------


@dataclass(frozen=True)
class ReasonPattern:
    """A reason exactly, or a whole family (the part before the colon); `value` None means all."""

    value: str | None
    family: bool = False

    @classmethod
    def parse(cls, text: str) -> ReasonPattern:
        text = text.strip()
        if text == "*":
            return cls(None, family=True)
        family = text.endswith("*")
        value = text.removesuffix("*").removesuffix(":") if family else text
        if not value or "*" in value or (family and ":" in value):
            raise ValueError(f"bad reason pattern {text!r}: give a reason (bad_type:price) or a family (bad_type:*)")
        return cls(value, family)

    def column(self) -> Column:
        """The Spark filter: a Column, never SQL text, so a pattern cannot inject anything."""
        if self.value is None:
            return F.lit(True)
        if self.family:
            return F.substring_index(F.col("reason"), ":", 1) == self.value
        return F.col("reason") == self.value

    def __str__(self) -> str:
        return "*" if self.value is None else f"{self.value}:*" if self.family else self.value


def family_of(reason: str) -> str:
    return reason.split(":", 1)[0]


def parse_timestamp(text: str) -> dt.datetime:
    """ISO 8601, UTC when no offset is given: a bare date is its midnight."""
    try:
        value = dt.datetime.fromisoformat(text.strip())
    except ValueError:
        raise ValueError(f"bad timestamp {text!r}: use ISO 8601, e.g. 2026-11-05T10:00:00Z") from None
    return (value if value.tzinfo else value.replace(tzinfo=dt.UTC)).astimezone(dt.UTC)


def parse_coordinates(text: str) -> list[Coordinate]:
    """topic:partition:offset[,...] -> distinct coordinates, in the given order."""
    found: list[Coordinate] = []
    for item in filter(None, (part.strip() for part in text.split(","))):
        match = COORDINATE.fullmatch(item)
        if not match:
            raise ValueError(f"bad coordinate {item!r}: want topic:partition:offset, e.g. clickstream:2:1041")
        coordinate = (match["topic"], int(match["partition"]), int(match["offset"]))
        if coordinate not in found:
            found.append(coordinate)
    if not found:
        raise ValueError("no coordinates given: want topic:partition:offset[,...]")
    return found


ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
# Control (C0, DEL, C1 such as CSI), format (bidi overrides, zero-width), line/paragraph separators
# and lone surrogates: what can move a terminal's cursor, recolour it or reorder what it shows.
UNSAFE_CATEGORIES = {"Cc", "Cf", "Zl", "Zp", "Cs"}


def _escaped(char: str) -> str:
    if char in ESCAPES:
        return ESCAPES[char]
    if unicodedata.category(char) not in UNSAFE_CATEGORIES:
        return char
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def printable(text: str, limit: int | None = None) -> str:
    """Text that is safe on a terminal: unsafe characters escaped, cut to `limit` with an ellipsis."""
    out, used = [], 0
    for char in text:
        piece = _escaped(char)
        if limit is not None and used + len(piece) > limit:
            return "".join(out) + "…"
        out.append(piece)
        used += len(piece)
    return "".join(out)


def export_problem(value: bytes | None) -> str | None:
    """Why these bytes cannot be one line that `producer replay` reads back unchanged (None: they can)."""
    if value is None:
        return "has no value"
    if b"\n" in value:
        return "contains a newline"
    if value.endswith(b"\r"):  # replay strips it
        return "ends with a carriage return"
    if not value.strip():  # replay skips it
        return "is blank"
    return None


def message_key(value: bytes | None, event_id: str | None, original_key: str | None) -> bytes:
    """Keyed like the producer: by event_id when the record has one, so every copy shares a partition."""
    try:
        payload_id = json.loads(value).get("event_id")  # as `producer replay` keys an exported file
    except (TypeError, ValueError, AttributeError):
        payload_id = None
    for key in (payload_id, event_id, original_key):
        if isinstance(key, str) and key:
            return key.encode()
    return hashlib.sha1(value or b"").hexdigest()[:16].encode()


def coordinate_text(topic: str, partition: int, offset: int) -> str:
    return f"{topic}:{partition}:{offset}"


def iso(micros: int | None) -> str | None:
    """Epoch microseconds (Spark's unix_micros, free of any time zone) -> ISO 8601 in UTC."""
    if micros is None:
        return None
    return (EPOCH + dt.timedelta(microseconds=micros)).isoformat(timespec="milliseconds").replace("+00:00", "Z")


# -- Spark: choosing records ----------------------------------------------------------------------


def open_table(spark: SparkSession, settings: Settings, table: TableDef) -> DataFrame:
    from delta.tables import DeltaTable

    path = settings.table_path(table.name)
    if not DeltaTable.isDeltaTable(spark, path):
        raise Failure(
            NOT_READY,
            f"no {table.name} table at {path} yet: run the stream first "
            "(make stream-start, or python -m streaming run --until-caught-up)",
        )
    return lake.read(spark, settings, table)


def in_time(frame: DataFrame, since: dt.datetime | None, until: dt.datetime | None) -> DataFrame:
    """kafka_timestamp in [since, until), compared as epoch microseconds: no session time zone involved."""
    for bound, keep in ((since, lambda c, b: c >= b), (until, lambda c, b: c < b)):
        if bound is not None:
            micros = (bound - EPOCH) // dt.timedelta(microseconds=1)
            frame = frame.where(keep(F.col("kafka_timestamp"), F.timestamp_micros(F.lit(micros))))
    return frame


def choose(
    quarantine: DataFrame,
    pattern: ReasonPattern | None = None,
    coordinates: list[Coordinate] | None = None,
    since: dt.datetime | None = None,
    until: dt.datetime | None = None,
) -> DataFrame:
    chosen = in_time(quarantine, since, until)
    if pattern is not None:
        chosen = chosen.where(pattern.column())
    if coordinates:
        wanted = quarantine.sparkSession.createDataFrame(
            coordinates, "kafka_topic STRING, kafka_partition INT, kafka_offset BIGINT"
        )
        chosen = chosen.join(F.broadcast(wanted), list(SOURCE_KEY), "left_semi")
    return chosen


def summarize(chosen: DataFrame, samples: int) -> list[dict]:
    """Per reason: count, first/last kafka_timestamp and the latest `samples` records; largest first."""
    stats = chosen.groupBy("reason").agg(
        F.count(F.lit(1)).alias("count"),
        F.min(F.unix_micros("kafka_timestamp")).alias("first"),
        F.max(F.unix_micros("kafka_timestamp")).alias("last"),
    )
    latest = Window.partitionBy("reason").orderBy(F.col("kafka_timestamp").desc(), *SOURCE_KEY)
    picked = chosen.select(
        "reason",
        *SOURCE_KEY,
        F.unix_micros("kafka_timestamp").alias("ts"),
        F.substring("raw_value", 1, SAMPLE_CHARS + 1).alias("raw"),  # one more, to know it was cut
        F.row_number().over(latest).alias("n"),
    ).where(F.col("n") <= samples)
    reasons = {
        row.reason: {
            "reason": row.reason,
            "family": family_of(row.reason or ""),
            "count": row["count"],
            "first_kafka_timestamp": iso(row.first),
            "last_kafka_timestamp": iso(row.last),
            "samples": [],
        }
        for row in stats.collect()
    }
    for row in picked.orderBy("reason", "n").collect() if samples else []:
        raw = row.raw or ""
        reasons[row.reason]["samples"].append(
            {
                "coordinates": coordinate_text(row.kafka_topic, row.kafka_partition, row.kafka_offset),
                "kafka_timestamp": iso(row.ts),
                "raw_value": raw[:SAMPLE_CHARS],
                "truncated": len(raw) > SAMPLE_CHARS,
            }
        )
    return sorted(reasons.values(), key=lambda r: (-r["count"], r["reason"] or ""))


def families(reasons: list[dict]) -> list[dict]:
    counts: Counter = Counter()
    for r in reasons:
        counts[r["family"]] += r["count"]
    return [{"family": f, "count": c} for f, c in sorted(counts.items(), key=lambda fc: (-fc[1], fc[0]))]


def with_bronze(bronze: DataFrame, chosen: DataFrame, args: argparse.Namespace) -> DataFrame:
    """The chosen records in coordinate order (the first --limit), each with bronze's exact bytes.

    Bronze's row carries the same kafka_timestamp, so the time bounds also let Delta skip its files.
    """
    chosen = chosen.select(*SOURCE_KEY, "reason", "event_id").orderBy(*SOURCE_KEY)
    if args.limit:
        chosen = chosen.limit(args.limit)
    raw = in_time(bronze, args.since, args.until).select(
        *SOURCE_KEY, F.col("key").alias("bronze_key"), "value", F.lit(True).alias("in_bronze")
    )
    return chosen.join(raw, list(SOURCE_KEY), "left").orderBy(*SOURCE_KEY)


def selection(spark: SparkSession, settings: Settings, args: argparse.Namespace) -> DataFrame:
    coordinates = getattr(args, "coordinates", None)
    return choose(open_table(spark, settings, QUARANTINE), args.reason, coordinates, args.since, args.until)


def describe(args: argparse.Namespace) -> str:
    parts = [f"reason {args.reason}" if args.reason else ""]
    parts += [f"coordinates {len(args.coordinates)}" if getattr(args, "coordinates", None) else ""]
    parts += [
        f"since {iso_arg(args.since)}" if args.since else "",
        f"until {iso_arg(args.until)}" if args.until else "",
    ]
    return ", ".join(p for p in parts if p) or "no filter"


def iso_arg(value: dt.datetime | None) -> str | None:
    return value and value.isoformat().replace("+00:00", "Z")


# -- the commands ---------------------------------------------------------------------------------


def list_command(spark: SparkSession, settings: Settings, args: argparse.Namespace) -> int:
    reasons = summarize(selection(spark, settings, args), args.samples)
    total = sum(r["count"] for r in reasons)
    if args.json:
        filters = {
            "reason": args.reason and str(args.reason),
            "since": iso_arg(args.since),
            "until": iso_arg(args.until),
        }
        report = {"filters": filters, "total": total, "families": families(reasons), "reasons": reasons}
        print(json.dumps(report, indent=2, ensure_ascii=True))  # ASCII: hostile bytes arrive as \u escapes
    elif not total:
        print(f"no quarantined records match ({describe(args)})")
    else:
        show(reasons, total, args)
    return OK


def preview(raw: str, truncated: bool) -> str:
    """A sample's text for the terminal: escaped, and marked when cut (here or by the query)."""
    text = printable(raw, SAMPLE_CHARS)
    cut_here = text != printable(raw)
    return text + "…" if truncated and not cut_here else text


def show(reasons: list[dict], total: int, args: argparse.Namespace) -> None:
    """Readable tables; text from the data goes in escaped and as rich Text, never as markup."""
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    console = Console(highlight=False)
    if not console.is_terminal:  # piped or redirected: no 80-column wrapping of the tables
        console.width = max(console.width, 160)
    console.print(Text(f"{total:,} quarantined records ({describe(args)})"))
    by_family = Table("family", "records", title="by family", title_justify="left")
    for f in families(reasons):
        by_family.add_row(Text(printable(f["family"])), f"{f['count']:,}")
    by_reason = Table("reason", "records", "first kafka_timestamp", "last kafka_timestamp")
    by_reason.title, by_reason.title_justify = "by reason", "left"
    for r in reasons:
        times = (r["first_kafka_timestamp"] or "", r["last_kafka_timestamp"] or "")
        by_reason.add_row(Text(printable(r["reason"] or "")), f"{r['count']:,}", *times)
    for table in (by_family, by_reason):
        table.columns[1].justify = "right"
        console.print(table)
    for r in (r for r in reasons if r["samples"]):
        console.print(Text(f"latest {printable(r['reason'] or '')}:", style="bold"))
        for s in r["samples"]:
            line = f"  {s['coordinates']}  {s['kafka_timestamp']}  {preview(s['raw_value'], s['truncated'])}"
            console.print(Text(line), soft_wrap=True)


def records(rows: DataFrame, missing: list[str]) -> Iterator[tuple[str, Row, bytes | None]]:
    """(coordinates, row, exact bronze bytes) per chosen record; those bronze lacks go to `missing`."""
    for row in rows.toLocalIterator():
        where = coordinate_text(row.kafka_topic, row.kafka_partition, row.kafka_offset)
        if not row.in_bronze:
            missing.append(where)
            continue
        yield where, row, None if row.value is None else bytes(row.value)


def write_lines(values: Iterable[tuple[str, bytes | None]], out: Path) -> tuple[int, dict[str, list[str]]]:
    """Each record's exact bytes as one line; the ones that cannot be a line are left out, by problem.

    Written aside and renamed, so a failed export never leaves half a file where a user edits one.
    """
    written, skipped = 0, {}
    out.parent.mkdir(parents=True, exist_ok=True)
    part = out.with_name(out.name + ".part")
    try:
        with open(part, "wb") as fh:
            for where, value in values:
                problem = export_problem(value)
                if problem:
                    skipped.setdefault(problem, []).append(where)
                    continue
                fh.write(value + b"\n")
                written += 1
        if written:
            os.replace(part, out)
    finally:
        part.unlink(missing_ok=True)
    return written, skipped


def some(coordinates: list[str], at_most: int = 20) -> str:
    more = f" (first {at_most} of {len(coordinates)})" if len(coordinates) > at_most else ""
    return ",".join(coordinates[:at_most]) + more


def warn_missing(missing: list[str]) -> None:
    if missing:
        print(
            f"quarantine: warning: {len(missing)} records have no bronze row, skipped: {some(missing)}", file=sys.stderr
        )


def export_command(spark: SparkSession, settings: Settings, args: argparse.Namespace) -> int:
    rows = with_bronze(open_table(spark, settings, BRONZE), selection(spark, settings, args), args)
    missing: list[str] = []
    written, skipped = write_lines(((where, value) for where, _, value in records(rows, missing)), args.out)
    warn_missing(missing)
    if skipped:
        why = ", ".join(f"{len(c)} {problem}" for problem, c in skipped.items())
        every = [c for coordinates in skipped.values() for c in coordinates]
        print(
            f"quarantine: warning: skipped {len(every)} records that cannot be one line ({why}); re-send them "
            f"unchanged with: python -m batch.quarantine republish --coordinates {some(every)}",
            file=sys.stderr,
        )
    if not written:
        print(f"nothing written: no quarantined records {'could be' if skipped else 'match'} ({describe(args)})")
        return OK
    print(f"[quarantine] wrote {written} records to {args.out}, one per line, exactly as they were sent")
    print(f"[quarantine] after fixing them: python -m producer replay --file {args.out}")
    return OK


def check_kafka(settings: Settings) -> None:
    """Fail in one line, naming the address, before anything is sent."""
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AdminClient

    from jobs.kafka_admin import client_config

    advice = (
        f"Kafka is not reachable at {settings.kafka_bootstrap or '(no address configured)'}: "
        "start it with `make kafka-start`, or point EO_KAFKA_BOOTSTRAP at your broker"
    )
    if not settings.kafka_bootstrap:
        raise Failure(NOT_READY, advice)
    try:
        AdminClient(client_config(settings)).list_topics(timeout=KAFKA_TIMEOUT)
    except KafkaException:
        raise Failure(NOT_READY, advice) from None


def republish_command(spark: SparkSession, settings: Settings, args: argparse.Namespace) -> int:
    quarantined = selection(spark, settings, args)
    if args.coordinates:
        found = {tuple(r) for r in quarantined.select(*SOURCE_KEY).collect()}
        absent = [coordinate_text(*c) for c in args.coordinates if c not in found]
        if absent:
            print(
                f"quarantine: warning: {len(absent)} coordinates match no quarantined record: {some(absent)}",
                file=sys.stderr,
            )
    rows = with_bronze(open_table(spark, settings, BRONZE), quarantined, args)
    chosen = rows.count()
    if not chosen:
        print(f"nothing to re-send: no quarantined records match ({describe(args)})")
        return OK
    if not (args.dry_run or args.yes) and chosen > CONFIRM_ABOVE:
        raise Failure(
            USAGE,
            f"{chosen:,} records chosen, more than {CONFIRM_ABOVE:,}: add --yes to send them all, "
            "or narrow the choice (--limit, --since/--until, --reason); --dry-run lists them",
        )
    missing: list[str] = []
    if args.dry_run:
        for where, row, value in records(rows, missing):
            key = message_key(value, row.event_id, row.bronze_key).decode("utf-8", "replace")
            text = "(no value)" if value is None else printable(value.decode("utf-8", "backslashreplace"), SAMPLE_CHARS)
            size = len(value or b"")
            print(f"{where}  {printable(row.reason or '')}  key={printable(key)}  {size} bytes  {text}")
        warn_missing(missing)
        print(
            f"[quarantine] dry run: would re-send {chosen - len(missing)} of {chosen} chosen records to topic "
            f"{settings.topic} at {settings.kafka_bootstrap}; nothing sent"
        )
        return OK
    return send(rows, chosen, settings, missing)


def send(rows: DataFrame, chosen: int, settings: Settings, missing: list[str]) -> int:
    """Through the producer's own path: its publish function and an ack log that verification counts."""
    from jobs.kafka_admin import ensure_topic
    from producer.__main__ import default_ack_log
    from producer.generator import Message
    from producer.publish import publish

    check_kafka(settings)
    ensure_topic(settings)
    ack_log = default_ack_log(settings, "quarantine-republish")
    messages = (
        Message(message_key(value, row.event_id, row.bronze_key), value, "republish")
        for _, row, value in records(rows, missing)
    )
    stats = publish(messages, settings, ack_log)
    warn_missing(missing)
    print(f"[quarantine] chosen {chosen}, sent {stats.sent}, acked {stats.acked} to topic {settings.topic}")
    print(f"[quarantine] ack log: {ack_log}")
    if stats.acked < stats.sent:
        errors = "; ".join(f"{e} ({n})" for e, n in stats.errors.items())
        raise Failure(
            FAILED,
            f"{stats.sent - stats.acked} of {stats.sent} re-sent records were not acknowledged ({errors}): "
            "check the broker and run the same command again (copies with an event_id are deduplicated)",
        )
    print("[quarantine] the stream checks them again: records that still fail are quarantined at their new coordinates")
    return OK


# -- command line ---------------------------------------------------------------------------------


class Parser(argparse.ArgumentParser):
    """Usage errors in one line on stderr, exit 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(USAGE, f"{self.prog}: error: {message} (see --help)\n")


def _arg(parse: Callable[[str], object], name: str) -> Callable[[str], object]:
    """A parse function as an argparse type: its ValueError becomes a one-line usage error."""

    def convert(text: str) -> object:
        try:
            return parse(text)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    convert.__name__ = name
    return convert


def _count(minimum: int) -> Callable[[str], int]:
    def parse(text: str) -> int:
        if not text.strip().isdecimal() or int(text) < minimum:
            raise ValueError(f"want a whole number >= {minimum}, got {text!r}")
        return int(text)

    return _arg(parse, "count")


def parser() -> Parser:
    cli = Parser(
        prog="python -m batch.quarantine",
        description=__doc__.split("\n")[0],
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    commands = cli.add_subparsers(dest="command", required=True, metavar="{list,export,republish}")
    pattern, timestamp = _arg(ReasonPattern.parse, "pattern"), _arg(parse_timestamp, "timestamp")

    def command(name: str, run, summary: str) -> Parser:
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
    try:
        settings = settings or load_settings()
        spark = spark or build_session("eo-quarantine", settings)
        return args.run(spark, settings, args)
    except Failure as exc:
        print(f"quarantine: {exc}", file=sys.stderr)
        return exc.code
    except ConfigError as exc:
        print(f"quarantine: {exc}", file=sys.stderr)
        return USAGE
    except MissingJarsError as exc:
        print(f"quarantine: {exc}", file=sys.stderr)
        return NOT_READY


if __name__ == "__main__":
    sys.exit(guarded(main))
