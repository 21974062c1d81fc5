"""An explanation (batch/explain.py) as text for a person: the row, its events, what was dropped or
refused, the verdict and the row's history."""

from __future__ import annotations

EVENT_COLUMNS = ("event_id", "event_type", "event_time", "user_id", "price")


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
        f"{len(found['events'])} events (silver), {found['duplicates_dropped']} copies dropped as duplicates:",
    ]
    rows = [
        (
            *(_value(e.get(c)) for c in EVENT_COLUMNS),
            _at(e["coordinates"]) + ("" if e["in_bronze"] else " (NOT IN BRONZE)"),
            ", ".join(_at(d["coordinates"]) for d in e["duplicates_dropped"]) or "-",
        )
        for e in found["events"]
    ]
    lines += _table((*EVENT_COLUMNS, "kafka", "copies dropped"), rows)
    lines += ["", f"{len(found['refused'])} refused records in its range:"]
    lines += _table(
        ("kafka", "reason", "event_time", "raw"),
        [
            (_at(r["coordinates"]), r["reason"], _value(r["event_time"]), (r["raw_value"] or "")[:60])
            for r in found["refused"]
        ],
    )
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
