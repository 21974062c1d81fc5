"""The `list` command: quarantined records counted by reason and family, with the latest samples,
as JSON or as tables that never let the data drive the terminal."""

from __future__ import annotations

import argparse
import json
from collections import Counter

from pyspark.sql import DataFrame, SparkSession, Window
from pyspark.sql import functions as F

from eo.core.sources import unknown_field_lines
from eo.core.tables import SOURCE_KEY
from eo.runtime import unknown_fields
from eo.runtime.cli import OK
from eo.runtime.config import Settings
from ops.quarantine.escape import SAMPLE_CHARS, printable
from ops.quarantine.filters import coordinate_text, family_of, iso, iso_arg
from ops.quarantine.selection import describe, selection


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


def list_command(spark: SparkSession, settings: Settings, args: argparse.Namespace) -> int:
    reasons = summarize(selection(spark, settings, args), args.samples)
    total = sum(r["count"] for r in reasons)
    # Keys the declaration lacks, kept or quarantined: whatever the filters, never left unseen.
    unknown = unknown_fields.counted(settings)
    if args.json:
        filters = {
            "reason": args.reason and str(args.reason),
            "since": iso_arg(args.since),
            "until": iso_arg(args.until),
        }
        report = {
            "filters": filters,
            "total": total,
            "families": families(reasons),
            "reasons": reasons,
            "unknown_fields": unknown,
        }
        print(json.dumps(report, indent=2, ensure_ascii=True))  # ASCII: hostile bytes arrive as \u escapes
    elif not total:
        print(f"no quarantined records match ({describe(args)})")
    else:
        show(reasons, total, args)
    if not args.json:
        for line in unknown_field_lines(unknown):
            print(printable(line))
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
