"""The agreement check: streamed tables equal their batch recomputation, row by row, exactly.

    python -m batch.verify [--start TS --end TS | --interval START/END[,START/END...]|all]

Run `python -m batch.rebuild` (same range) first. Checks, all with Great Expectations:
- each gold table: stream == rebuild (no key missing, extra or different);
- silver and quarantine: stream == rebuild (full runs);
- domains: unique keys, no null keys, values in range;
- reconciliation: accepted records = silver + quarantine + duplicates removed, and every
  record the broker acknowledged is in silver or quarantine; over an interval, of the records
  whose events fall in it (eo/core/quality/reconcile.py says where each record counts).
Event time nobody rebuilt, or rebuilt with no row in any table, is answered from the Delta logs
without starting Spark (eo/runtime/quality/verdicts.py `answer_without_spark`).
Writes reports/verify/latest.json and the GX Data Docs; exits 1 when any check fails.
"""

from __future__ import annotations

import argparse
import datetime as dt
from pathlib import Path

from pyspark.sql import functions as F

from batch.interval_args import add_interval_args, intervals_from
from batch.rebuild import classify_log
from batch.verdict_text import describe
from batch.verify_explain import explain_differences
from eo.core.intervals import BEFORE_ANY_EVENT, Interval, as_text, compact, covered, human, predicate
from eo.core.lineage import EXPLAINED
from eo.core.quality.diff import BATCH, STREAM, diff_counts, table_diff, value_columns
from eo.core.quality.reconcile import (
    account_for_acks,
    acks_in_scope,
    in_scope,
    read_acks,
    record_fates,
    scoped_counts,
)
from eo.core.tables import GOLD, POISON_PREFIX, QUARANTINE, SILVER, SOURCE_KEY
from eo.runtime import lake, source_gaps, unknown_fields
from eo.runtime.cli import EXIT_CODES, NOT_READY, Progress, guarded
from eo.runtime.config import Settings, load_settings
from eo.runtime.coverage import rebuilt_intervals
from eo.runtime.environment import environment
from eo.runtime.lake_report import lake_report
from eo.runtime.quality.evidence import Evidence
from eo.runtime.quality.site import data_docs_root, gx_project, localize
from eo.runtime.quality.verdicts import (
    NOT_REBUILT,
    answer_without_spark,
    run_verdict_path,
    write_verdict,
)
from eo.runtime.spark import build_session
from eo.runtime.storage import files_under

SAMPLE_KEYS = 10


def _text(value: object) -> str:
    """A key value as text; PySpark hands timestamps back naive, in this process's time zone."""
    return value.astimezone(dt.UTC).isoformat() if isinstance(value, dt.datetime) else str(value)


def _sample(row, key: tuple[str, ...], values: list[str]) -> dict:
    """A differing key as the verdict names it: its columns, `status` and, when both sides hold it,
    `values`: each column that differs with the stream's and the batch rebuild's value."""
    found = {**{k: _text(row[k]) for k in key}, "status": row.status}
    if row.status == "different":
        found["values"] = {
            c: {"stream": _value(row[STREAM + c]), "batch": _value(row[BATCH + c])}
            for c in values
            if row[STREAM + c] != row[BATCH + c]
        }
    return found


def _value(value: object) -> str | None:
    return None if value is None else _text(value)


def _compare(spark, settings: Settings, evidence: Evidence, table, where: str | None, scope: str) -> dict:
    from eo.core.quality import expectations as expect

    stream = lake.read(spark, settings, table)
    batch = lake.read(spark, settings, table, "rebuild")
    if where:
        stream, batch = stream.where(where), batch.where(where)
    diff = table_diff(stream, batch, table.key).persist()
    counts = diff_counts(diff)
    unexpected = counts["missing"] + counts["extra"] + counts["different"]
    values = value_columns(batch, table.key)
    sides = [F.col(side + c) for c in values for side in (STREAM, BATCH)]
    differing = diff.where(F.col("status") != "match").select(*table.key, "status", *sides)
    counts["sample"] = [  # a Spark job only when there is something to show
        _sample(row, table.key, values) for row in (differing.limit(SAMPLE_KEYS).collect() if unexpected else [])
    ]
    if counts["sample"] and table.name in EXPLAINED:
        counts["explained"] = explain_differences(settings, table, counts["sample"], evidence.run_id.run_name)
    gx_passed = evidence.check(
        f"agreement_{table.name}",
        diff.drop("status"),
        expect.agreement(values, counts["batch_rows"], scope),
        # Naming the failing rows costs GX a Spark job per check; with nothing unexpected, none fail.
        index_columns=table.key if unexpected else (),
        unexpected_rows=unexpected,
        rows=counts["stream_rows"] + counts["missing"],  # a row per key of either side
        asset=f"{table.name}: stream vs batch rebuild, {scope}",
        notes=[
            f"**{table.name}** over {scope}: stream {counts['stream_rows']:,} rows, batch rebuild "
            f"{counts['batch_rows']:,} rows; missing {counts['missing']:,}, extra {counts['extra']:,}, "
            f"different {counts['different']:,}. Differing keys, e.g.: {counts['sample'][:5] or 'none'}",
            *(
                f"Key {e['key']}: {e.get('diagnosis') or e.get('error')} (explanation: {e.get('file', '-')})"
                for e in counts.get("explained", [])
            ),
        ],
    )
    # Both must hold: GX's column checks skip a null facing a value, the null-safe status does not.
    counts["passed"] = gx_passed and unexpected == 0
    diff.unpersist()
    domain = expect.domain_of(table.name)
    if domain:
        counts["domain_passed"] = evidence.check(
            f"domain_{table.name}", stream, domain, asset=f"{table.name}: stream, {scope}", rows=counts["stream_rows"]
        )
        counts["passed"] = counts["passed"] and counts["domain_passed"]
    return counts


def reconcile(spark, settings: Settings, evidence: Evidence, intervals: list[Interval] | None = None) -> dict:
    """accepted = silver + quarantine + duplicates removed (+ lost at the source, accepted), and every
    acknowledged record accounted for, over the records whose events fall in `intervals` (None: the
    whole log). What is counted where: eo/core/quality/reconcile.py."""
    from eo.core.quality import expectations as expect

    silver = lake.read(spark, settings, SILVER)
    quarantine = lake.read(spark, settings, QUARANTINE)
    classified = classify_log(spark, settings).persist()
    acks = read_acks(spark, files_under(environment(settings).ack_files, settings.acks_root, ".csv"), settings.topic)
    tally = record_fates(classified, quarantine, acks).agg(*scoped_counts(intervals)).first().asDict()
    tally = {k: v or 0 for k, v in tally.items()}
    gaps = source_gaps.accepted(settings)  # lost at the source, accepted by a person: reported, not skipped
    found = account_for_acks(acks, classified, silver, quarantine, gaps).persist() if acks is not None else None
    counted = found.where(acks_in_scope(intervals)) if found is not None else None
    acked = _ack_counts(found, intervals) if found is not None else {}
    row = {
        "acked": acked.get("acked"),
        "unacked": tally["unacked"] if found is not None else None,
        "bronze": tally["bronze"],
        "silver": silver.where(in_scope(intervals)).count(),
        "quarantine": tally["quarantine"],
        "duplicates_removed": tally["duplicates_removed"],
        "lost_at_source": acked.get("lost_at_source", 0),
    }
    row["poison"] = tally["poison"]  # part of quarantine
    if intervals is None:  # the whole table: a row of neither bronze nor the log shows too
        row["quarantine"] = quarantine.count()
        row["poison"] = quarantine.where(F.col("reason").startswith(POISON_PREFIX)).count()
    # What was accepted: every acknowledged record, and what bronze holds that no ack log names (a
    # producer without one). Without any ack log, what bronze holds: the counts still reconcile,
    # but nothing proves that an acknowledged record reached bronze, and the verdict says so.
    row["accepted"] = row["acked"] + row["unacked"] if found is not None else row["bronze"]
    row["accounted"] = row["silver"] + row["quarantine"] + row["duplicates_removed"] + row["lost_at_source"]
    frame = spark.createDataFrame([row], ", ".join(f"{k} BIGINT" for k in row))
    passed = evidence.check(
        "reconciliation", frame, expect.counts_reconcile(), asset=f"record counts, {human(intervals)}", rows=1
    )
    result = dict(row, passed=passed, scope=human(intervals))
    if intervals is not None:
        result["no_event_time"] = tally["no_event_time"]  # in no interval: counted over all event time
        result["not_read_yet"] = acked.get("not_read_yet", 0)
    if gaps:
        result["source_gaps"] = [
            dict(r, accepted_at=r["accepted_at"].isoformat()) for r in source_gaps.accepted_rows(settings)
        ]
    if found is None:
        result["no_loss"] = f"not checked: no producer ack logs under {settings.acks_root}"
    else:
        result["lost"] = acked["lost"]
        result["lost_not_in_bronze"] = acked["lost_not_in_bronze"]
        no_loss = evidence.check(
            "no_loss",
            counted,
            expect.accounted(),
            index_columns=[*SOURCE_KEY, "kind"],
            unexpected_rows=result["lost"],  # names every lost record, up to COMPLETE_UP_TO
            asset=f"acknowledged records, {human(intervals)}",
            rows=row["acked"],  # a row per acknowledged record: each has one place in bronze
        )
        result["passed"] = result["passed"] and no_loss
        result["no_loss"] = "passed" if no_loss else "FAILED"
        found.unpersist()
    classified.unpersist()
    return result


def _ack_counts(found, intervals: list[Interval] | None) -> dict[str, int]:
    """The acknowledged records a check of `intervals` counts, by fate, in one Spark job; and those it
    leaves: not yet read by the stream."""
    counted = acks_in_scope(intervals)

    def count(condition, name: str):
        return F.sum(F.when(condition, 1).otherwise(0)).cast("bigint").alias(name)

    status = F.col("status")
    row = found.agg(
        count(counted, "acked"),
        count(counted & (status == "lost"), "lost"),
        count(counted & (status == "lost") & ~F.col("in_bronze"), "lost_not_in_bronze"),
        count(counted & (status == "lost_at_source"), "lost_at_source"),
        count(~counted & F.col("unread"), "not_read_yet"),
    ).first()
    return {k: v or 0 for k, v in row.asDict().items()}


def verify(
    spark,
    settings: Settings,
    intervals: list[Interval] | None = None,
    verdict_file: str | None = None,
    run_name: str | None = None,
    rebuilt: list[Interval] | None = None,
) -> dict:
    """Compare the stream's tables with the rebuild's, over the event time of `intervals` (None:
    all) that was rebuilt (eo/runtime/coverage.py); the rest is reported as not rebuilt, never
    as rows that disagree. `run_name` (the Airflow run id) names the validations in the Data Docs;
    `rebuilt`: the coverage, when the caller has read it already."""
    rebuilt = rebuilt_intervals(settings) if rebuilt is None else rebuilt
    answered = answer_without_spark(settings, intervals, verdict_file, rebuilt)  # nothing rebuilt, or no rows
    if answered is not None:
        return answered
    compared, not_rebuilt = covered(intervals, rebuilt)
    checks = [(table, predicate(compared, table.range_column)) for table in GOLD]
    if intervals is None and any(i.start == BEFORE_ANY_EVENT for i in rebuilt):  # a full rebuild
        checks += [(SILVER, None), (QUARANTINE, None)]
    progress = Progress("verify", len(checks) + 1)  # each table, then the reconciliation
    scope = human(compared)
    if not_rebuilt:
        print(f"[verify] not rebuilt, not compared: {human(not_rebuilt)}", flush=True)
    evidence = Evidence(gx_project(settings), f"{run_name or 'batch.verify'}_{compact(intervals)}")
    tables = {}
    for table, where in checks:
        progress.step(table.name)
        tables[table.name] = _compare(spark, settings, evidence, table, where, scope)
    progress.step("reconciliation")
    # Asked for all event time: the whole log; else the event time compared.
    reconciliation = reconcile(spark, settings, evidence, None if intervals is None else compared)
    passed = all(t["passed"] for t in tables.values()) and reconciliation["passed"]
    verdict = {
        "passed": passed,
        "status": "passed" if passed else "failed",
        "not_rebuilt": human(not_rebuilt) if not_rebuilt else None,
        "checked_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "env": settings.env,
        "run_name": evidence.run_id.run_name,
        "scope": scope,
        "intervals": None if intervals is None else [[i.start.isoformat(), i.end.isoformat()] for i in intervals],
        "tables": tables,
        "reconciliation": reconciliation,
        "expectations": evidence.results,
        "data_docs": publish_docs(settings, evidence),
        "data_docs_url": f"{settings.data_docs_url.rstrip('/')}/index.html" if settings.data_docs_url else None,
        "seconds": round(progress.elapsed(), 1),
        "lake": lake_report(settings),  # a partial batch named, and how the lake began
        "unknown_fields": unknown_fields.counted(settings),  # keys the declaration lacks, per record count
    }
    write_verdict(settings, verdict, verdict_file)
    return verdict


def publish_docs(settings: Settings, evidence: Evidence) -> str:
    site = Path(evidence.publish().removeprefix("file://")).parent
    if not localize(site):
        print("[verify] the Data Docs need the network for their styles: run `make setup`", flush=True)
    uri = data_docs_root(settings)
    environment(settings).report_files.put_tree(site, uri)
    return f"{uri.rstrip('/')}/index.html"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m batch.verify", description=__doc__.split("\n")[0], epilog=EXIT_CODES
    )
    add_interval_args(parser, many=True)
    parser.add_argument("--run-name", help="also keep the verdict as reports/verify/runs/<name>.json (Airflow)")
    parser.add_argument(
        "--verdict-only",
        action="store_true",
        help="exit 0 once the verdict is written, whatever it says (Airflow fails the run from the verdict, "
        "without retrying a disagreement)",
    )
    args = parser.parse_args(argv)
    intervals = intervals_from(args, many=True)
    settings = load_settings()
    print(f"[verify] comparing {as_text(intervals)}", flush=True)
    run_file = run_verdict_path(settings, args.run_name) if args.run_name else None
    rebuilt = rebuilt_intervals(settings)
    verdict = answer_without_spark(settings, intervals, run_file, rebuilt)  # nothing rebuilt, or no rows
    if verdict is None:
        spark = build_session("eo-verify", settings)
        verdict = verify(spark, settings, intervals, run_file, args.run_name, rebuilt)
    print(describe(verdict), flush=True)
    if args.verdict_only:
        return 0
    if verdict["status"] == NOT_REBUILT:
        return NOT_READY
    return 0 if verdict["passed"] else 1


def cli(argv: list[str] | None = None) -> int:
    """The process's entry point (`python -m batch.verify`, `spark-submit jobs/verify.py`)."""
    return guarded(main, argv)


if __name__ == "__main__":
    raise SystemExit(cli())
