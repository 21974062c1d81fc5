"""A verdict as people read it: the summary `python -m batch.verify`, `make demo` and the lab print
(one line per table, the reconciliation, what a scoped check counted, the lake's state)."""

from __future__ import annotations

from batch.verify_explain import lines as explained_lines
from eo.core.sources import unknown_field_lines
from eo.runtime.quality.verdicts import NOT_REBUILT, answered_line, docs_link, not_rebuilt_line


def describe(verdict: dict) -> str:
    if verdict.get("status") == NOT_REBUILT:
        return not_rebuilt_line(verdict)
    if verdict.get("empty"):
        return answered_line(verdict) + (
            f"\n  not rebuilt, not compared: {verdict['not_rebuilt']}" if verdict.get("not_rebuilt") else ""
        )
    lines = [f"verification {'PASSED' if verdict['passed'] else 'FAILED'} over {verdict['scope']}"]
    if verdict.get("not_rebuilt"):
        lines.append(f"  not rebuilt, not compared: {verdict['not_rebuilt']}")
    for name, t in verdict["tables"].items():
        lines.append(
            f"  {name:<25} stream {t['stream_rows']:>9}  batch {t['batch_rows']:>9}  "
            f"missing {t['missing']}  extra {t['extra']}  different {t['different']}"
            f"{'' if t['passed'] else '  <- FAILED'}"
        )
        if t.get("sample"):
            lines.append(f"    differing keys, e.g. {t['sample'][:3]}")
        lines += explained_lines(t.get("explained", []))
    r = verdict["reconciliation"]
    if r["acked"] is None:
        accepted = "in bronze"
    elif r.get("unacked"):
        accepted = f"acknowledged {r['acked']} + in bronze without an ack {r['unacked']}"
    else:
        accepted = "acknowledged"
    at_source = f" + lost at the source, accepted {r['lost_at_source']}" if r.get("lost_at_source") else ""
    lost = ""
    if "lost" in r:
        unplaced = r.get("lost_not_in_bronze")
        lost = f"; lost {r['lost']}" + (f" ({unplaced} not in bronze: event time unknown)" if unplaced else "")
    lines.append(
        f"  accepted ({accepted}) {r['accepted']} = silver {r['silver']} + quarantine {r['quarantine']} "
        f"(poison {r.get('poison', 0)}) + "
        f"duplicates removed {r['duplicates_removed']}{at_source} ({r['accounted']})"
        f"{lost}{'' if r['passed'] else '  <- FAILED'}"
    )
    lines += _scope_lines(r)
    if "no_loss" in r:
        lines.append(f"  loss against the producers' acks: {r['no_loss']}")
    for gap in r.get("source_gaps", []):
        lines.append(
            f"  lost at the source: partition {gap['kafka_partition']} offsets [{gap['from_offset']}, "
            f"{gap['to_offset']}) ({gap['records']:,} records), accepted by {gap['accepted_by']} at "
            f"{gap['accepted_at'][:16]}: {gap['reason']}"
        )
    failed = [e for e in verdict["expectations"] if not e["success"]]
    for e in failed[:10]:
        lines.append(
            f"  failed: {e['suite']}: {e['expectation']} unexpected={e['unexpected_count']} e.g. {e['examples'][:2]}"
        )
    lines += lake_lines(verdict.get("lake"))
    lines += [f"  {line}" for line in unknown_field_lines(verdict.get("unknown_fields") or {})]
    lines.append(f"  data docs: {docs_link(verdict)}")
    return "\n".join(lines)


def lake_lines(report: dict | None) -> list[str]:
    """The live tables against the stream's checkpoint (a partial batch and the tables behind it)
    and each recorded beginning of the lake (eo/runtime/lake_report.py)."""
    if not report:
        return []
    return [f"  live tables: {report['tables_line']}", *(f"  lake {line}" for line in report["begun_lines"])]


def _scope_lines(r: dict) -> list[str]:
    """What a reconciliation of some event time counted, and what it left to others."""
    lines = []
    if r.get("scope") not in (None, "all event time"):
        lines.append(
            f"  counted: the records whose events fall in {r['scope']}; {r.get('no_event_time', 0):,} in bronze "
            "have no readable event time, in no interval (a verification of all event time counts them)"
        )
    if r.get("unacked"):
        lines.append(
            f"  in bronze without a producer's ack log: {r['unacked']:,} (accepted as bronze holds them; "
            "no ack to check them against)"
        )
    if r.get("not_read_yet"):
        lines.append(
            f"  acknowledged, not read by the stream yet: {r['not_read_yet']:,} (past the last offset bronze "
            "holds of their partition; no interval can count them yet)"
        )
    return lines
