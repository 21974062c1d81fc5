"""An explanation (batch/explain.py) as text for a person: the row, its events, what was dropped or
refused, the verdict and the row's history."""

from __future__ import annotations

import json

from eo.core.lineage import batch_name
from eo.core.tables import SOURCE

EVENT_COLUMNS = SOURCE.field_names  # an event as its source declares it


def _value(value: object) -> str:
    if value is None:
        return "-"
    return value.isoformat() if hasattr(value, "isoformat") else str(value)


def _row(row: dict | None) -> str:
    return "(none)" if row is None else ", ".join(f"{k}={_value(v)}" for k, v in row.items())


def _at(coordinates: dict) -> str:
    return f"{coordinates['topic']}:{coordinates['partition']}:{coordinates['offset']}"


def _table(header: tuple[str, ...], rows: list[tuple[str, ...]]) -> list[str]:
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(header)]
    line = "  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True))
    return [f"  {line}", *("  " + "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) for r in rows)]


def _copies(count: int, what: str) -> str:
    return f"{count} {'copy' if count == 1 else 'copies'} {what}"


def late(seconds: float | None) -> str:
    """A lateness for people: "+2.5 s", "+3 d 04:12:09", "-1.2 s" (the record's clock ran ahead)."""
    if seconds is None:
        return "-"
    sign, left = ("-" if seconds < 0 else "+"), abs(seconds)
    if left < 60:
        return f"{sign}{left:.1f} s"
    days, rest = divmod(int(left), 86400)
    hours, rest = divmod(rest, 3600)
    clock = f"{hours:02d}:{rest // 60:02d}:{rest % 60:02d}"
    return f"{sign}{days} d {clock}" if days else f"{sign}{clock}"


def _payload(copy: dict, kept: dict | None) -> str:
    """A copy's payload against the kept copy's: the fields that differ (--json has them whole)."""
    if copy is kept:
        return "the event's (above)"
    mine, theirs = copy["payload"], (kept or {}).get("payload")
    if not isinstance(mine, dict) or not isinstance(theirs, dict):
        return json.dumps(mine, separators=(",", ":"), default=str)[:80]
    changed = [
        f"{field} {json.dumps(mine.get(field))} (kept: {json.dumps(theirs.get(field))})"
        for field in dict.fromkeys([*mine, *theirs])
        if mine.get(field) != theirs.get(field)
    ]
    return "; ".join(changed) or "the same as kept"


def _records(count: int) -> str:
    return f"{count} refused {'record' if count == 1 else 'records'}"


def _refused(records: list[dict]) -> list[str]:
    return _table(
        ("kafka", "reason", "event_time", "raw"),
        [(_at(r["coordinates"]), r["reason"], _value(r["event_time"]), (r["raw_value"] or "")[:60]) for r in records],
    )


def render(found: dict) -> str:
    key = ", ".join(f"{k}={_value(v)}" for k, v in found["key"].items())
    batch = found["micro_batch"]
    made_by = f"; last written by {batch['app_id']} epoch {batch['epoch']} batch {batch['position']}" if batch else ""
    lines = [
        f"{found['table']} ({found['namespace']}) {key}",
        f"  at version {found['version']}{made_by}",
        f"  stored:     {_row(found['row'])}",
        f"  recomputed: {_row(found['recomputed'])}",
        "  " + ("ADDS UP" if found["adds_up"] else f"DOES NOT ADD UP: {', '.join(found['differing_columns'])}"),
        *([f"  ({found['note']})"] if found.get("note") else []),
        "",
        f"{len(found['events'])} events ({found.get('events_from', 'silver')}), "
        f"{_copies(found['duplicates_dropped'], 'dropped as a duplicate')}, "
        f"{_copies(found.get('copies_refused', 0), 'refused (listed with the refused records)')}",
        f"  the rule: {found['rule']}",
    ]
    rows = [
        (
            *(_value(e.get(c)) for c in EVENT_COLUMNS),
            _at(e["coordinates"]) + ("" if e["in_bronze"] else " (NOT IN BRONZE)"),
            batch_name(e["ingest_batch"]) if e.get("copies") else "-",
            late(e.get("lateness_seconds")),
            ", ".join(_at(d["coordinates"]) for d in e["duplicates_dropped"]) or "-",
        )
        for e in found["events"]
    ]
    lines += _table((*EVENT_COLUMNS, "kafka", "ingest batch", "late by", "copies dropped"), rows)
    for e in found["events"]:
        kept = next((c for c in e.get("copies", []) if c["fate"] == "kept"), None)
        if len(e.get("copies", [])) > 1:
            lines += [f"  copies of {e[SOURCE.event_id]}, in first-copy order: {e['won_by']}"]
            lines += _table(
                ("  fate", "kafka", "ingest batch", "kafka timestamp", "late by", "payload", "why"),
                [
                    (
                        "  " + c["fate"] + (f" ({c['reason']})" if c.get("reason") else ""),
                        _at(c["coordinates"]),
                        batch_name(c["ingest_batch"]),
                        _value(c["kafka_timestamp"]),
                        late(c.get("lateness_seconds")),
                        _payload(c, kept),
                        c.get("why", "-"),
                    )
                    for c in e["copies"]
                ],
            )
    lines += ["", f"{_records(len(found['refused']))} in its range:", *_refused(found["refused"])]
    unreadable = found.get("refused_unreadable", [])
    if unreadable:
        lines += ["", f"{_records(len(unreadable))} naming it whose event time cannot be read (in no range):"]
        lines += _refused(unreadable)
    history = found["history"]
    lines += ["", f"history ({history['source']}, {history['versions_read']} versions read), newest last:"]
    lines += _table(
        ("version", "committed", "batch", "before", "after"),
        [
            (
                str(c["version"]),
                c["committed_at"][:19],
                f"{c['app_id']} e{c['epoch']} b{c['position']}" if c["app_id"] else c["operation"] or "-",
                _row(c["before"]),
                _row(c["after"]) + (f"  (merged {len(c['merged'])} sessions)" if c.get("merged") else ""),
            )
            for c in history["changes"]
        ],
    )
    lines.append(f"\n({found['seconds']} s)")
    return "\n".join(lines)
